// Across a project (driver/references.h, driver/fallbacks.cpp): a hand-written RMSNorm that
// the project uses only in a branch beside a fused implementation (a fusion switch, an
// ImportError fallback) is demoted as `fallback`; one only a subclass overriding its
// `forward` names is `unused`; one used plainly anywhere, registered by a decorator, or
// whose subclass calls super().forward stays.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "driver/project.h"
#include "engine/engine.h"
#include "project_sources.h"
#include "repo_engine.h"
#include "temp_dir.h"

namespace mlsem {
namespace {

using test_support::TempDir;

using test_support::kRmsNormModule;

class DriverFallbackUses : public test_support::RepoEngine {
 protected:
  // The NRM002 finding in RMSNorm.forward of a project holding pkg/norms.py (kRmsNormModule with
  // `decorator` before the class) and pkg/build.py (`build`), shown with demoted ones.
  const Finding* norm(TempDir& dir, const std::string& build, const std::string& decorator = "") {
    dir.write(".git/HEAD", "ref: refs/heads/main\n");
    std::string text = kRmsNormModule;
    if (!decorator.empty()) text.replace(text.find("class RMSNorm"), 0, decorator);
    dir.write("pkg/norms.py", text);
    dir.write("pkg/build.py", "import torch\nfrom pkg.norms import RMSNorm\n\n\n" + build);
    dir.write("pkg/train.py", "from pkg.build import get_norm\n\nnorm = get_norm(args)\n");
    DriverOptions options;
    options.show_demoted = true;
    report_ = analyze_paths({dir.path().string()}, engine(), options);
    auto it = std::find_if(report_.findings.begin(), report_.findings.end(),
                           [](const Finding& f) { return f.rule == "NRM002" && f.function == "RMSNorm.forward"; });
    return it == report_.findings.end() ? nullptr : &*it;
  }
  Report report_;
};

TEST_F(DriverFallbackUses, ASwitchBesideAFusedNormIsAFallback) {
  TempDir dir;
  const Finding* f = norm(dir, R"(def get_norm(args):
    if args.norm == "rmsnorm":
        if args.rmsnorm_fusion:
            from apex.normalization import MixedFusedRMSNorm
            norm = MixedFusedRMSNorm
        else:
            norm = RMSNorm
    return norm
)");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->context_kind, "fallback");
  EXPECT_NE(f->context.find("pkg/build.py:11"), std::string::npos) << f->context;
  EXPECT_NE(f->context.find("`MixedFusedRMSNorm` (line 7)"), std::string::npos) << f->context;
}

TEST_F(DriverFallbackUses, AnImportErrorFallbackAndAConditionalExpressionAreToo) {
  {
    TempDir dir;
    const Finding* f = norm(dir, R"(try:
    from liger_kernel.transformers import LigerRMSNorm as Norm
except ImportError:
    Norm = RMSNorm


def get_norm(args):
    return Norm(args.dim)
)");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->context_kind, "fallback") << f->context;
  }
  {
    TempDir dir;
    const Finding* f = norm(dir, "def get_norm(args):\n    return FusedRMSNorm(8) if args.fused else RMSNorm(8)\n");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->context_kind, "fallback") << f->context;
  }
}

TEST_F(DriverFallbackUses, OnlyASubclassThatOverridesForwardIsUnused) {
  const char* sub = R"(class FusedRMSNorm(RMSNorm):
    def forward(self, x):
        return fused_rms_norm(x, self.weight, self.eps)


def get_norm(args):
    return FusedRMSNorm(8)
)";
  TempDir dir;
  const Finding* f = norm(dir, sub);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->context_kind, "unused");
  EXPECT_NE(f->context.find("`FusedRMSNorm` (pkg/build.py:5), which overrides `forward`"), std::string::npos)
      << f->context;
}

TEST_F(DriverFallbackUses, APlainUseARegistryOrASuperCallKeepsIt) {
  for (const std::string& build : {
           // beside a fused norm, but also built plainly elsewhere
           std::string("def get_norm(args):\n    if args.fused:\n        return FusedRMSNorm(8)\n    else:\n"
                       "        return RMSNorm(8)\n\n\ndef head():\n    return RMSNorm(4)\n"),
           // a subclass that calls the base's forward runs it
           std::string("class Scaled(RMSNorm):\n    def forward(self, x):\n        return super().forward(x) * 2\n\n\n"
                       "def get_norm(args):\n    return Scaled(8)\n"),
           // beside something that is not fused
           std::string("def get_norm(args):\n    if args.layer:\n        return LayerNorm(8)\n    else:\n"
                       "        return RMSNorm(8)\n")}) {
    TempDir dir;
    const Finding* f = norm(dir, build);
    ASSERT_NE(f, nullptr) << build;
    EXPECT_TRUE(f->context.empty()) << build << f->context;
  }
  TempDir dir;
  const Finding* f = norm(dir, "def get_norm(args):\n    if args.fused:\n        return FusedRMSNorm(8)\n    else:\n"
                               "        return RMSNorm(8)\n", "@NORMS.register()\n");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->context.empty()) << f->context;
}

TEST(FallbackBranches, BesideFused) {
  std::string text = R"(def f(a):
    if a.fusion:
        y = fused_op(x)
    elif a.other:
        y = other(x)
    else:
        if a.bf16:
            y = plain_bf16(x)
        else:
            y = plain(x)
    return y
)";
  auto lines = driver::project::lines_of(text);
  auto b = driver::project::beside_fused(lines, 7, "plain_bf16");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->line, 1u);
  EXPECT_EQ(b->fused, "fused_op");
  EXPECT_TRUE(driver::project::beside_fused(lines, 2, "fused_op") == std::nullopt);
  EXPECT_TRUE(driver::project::beside_fused(lines, 10, "y") == std::nullopt);
  // A conditional expression: the other value counts, not the condition.
  std::vector<std::string_view> one = {"    self.act = nn.GELU() if fused else gelu"};
  EXPECT_TRUE(driver::project::beside_fused(one, 0, "gelu") == std::nullopt);
  std::vector<std::string_view> two = {"    norm = FusedRMSNorm(d) if args.fast else RMSNorm(d)"};
  ASSERT_TRUE(driver::project::beside_fused(two, 0, "RMSNorm").has_value());
  EXPECT_EQ(driver::project::beside_fused(two, 0, "RMSNorm")->fused, "FusedRMSNorm");
  std::vector<std::string_view> three = {"    norm = RMSNorm(d) if args.slow else FusedRMSNorm(d)"};
  ASSERT_TRUE(driver::project::beside_fused(three, 0, "RMSNorm").has_value());
}

}  // namespace
}  // namespace mlsem
