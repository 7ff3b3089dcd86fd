// Across a project (driver/references.h): where the project, outside its tests, hands its
// model to torch.compile by default, a finding whose fix torch.compile makes (a hand-written
// RMSNorm) is demoted as `compiled` and names the place; behind a switch that is off unless
// set, the finding stays and its evidence names the switch. A finding compile does not fix
// (attention) stays, and a project that compiles only a loss, an attention function, a
// test's model or an example's keeps every finding.
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

// The RMSNorm module and a hand-written attention (ATT001, which `compiled` does not demote).
const std::string kModel = std::string(test_support::kRmsNormModule) + R"(
import math
import torch.nn.functional as F


def attend(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return F.softmax(scores, dim=-1) @ v
)";

class DriverCompiledProject : public test_support::RepoEngine {
 protected:
  // The finding of `rule`, or nullptr.
  static const Finding* of(const Report& r, const std::string& rule) {
    auto it = std::find_if(r.findings.begin(), r.findings.end(), [&](const Finding& f) { return f.rule == rule; });
    return it == r.findings.end() ? nullptr : &*it;
  }
  // The NRM002 finding of the project in `dir`, analyzed with demoted findings shown.
  const Finding* shown_norm(TempDir& dir) {
    DriverOptions options;
    options.show_demoted = true;
    report_ = analyze_paths({dir.path().string()}, engine(), options);
    return of(report_, "NRM002");
  }
  // Whether an evidence line of `f` holds `a` and `b`.
  static bool says(const Finding& f, std::string_view a, std::string_view b = "") {
    return std::any_of(f.evidence.begin(), f.evidence.end(), [&](const Evidence& e) {
      return e.text.find(a) != std::string::npos && e.text.find(b) != std::string::npos;
    });
  }
  Report report_;
  // A project: the model module, imported by a training script holding `train`.
  static void project(TempDir& dir, const std::string& train, const std::string& test = "") {
    dir.write(".git/HEAD", "ref: refs/heads/main\n");
    dir.write("pkg/model.py", kModel);
    dir.write("pkg/train.py", "import torch\nfrom pkg.model import RMSNorm, attend\n\nnorm = RMSNorm(8)\ny = attend(1, 2, 3)\n" + train);
    if (!test.empty()) dir.write("tests/test_model.py", test);
  }
};

TEST_F(DriverCompiledProject, ACompileByDefaultDemotesWhatItFuses) {
  TempDir dir;
  project(dir, "\n\nmodel = torch.compile(\n    model, mode=\"max-autotune\")\n");
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  options.show_demoted = true;
  Report r = analyze_paths({dir.path().string()}, engine(), options);
  const Finding* norm = of(r, "NRM002");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->context_kind, "compiled");
  EXPECT_EQ(norm->severity, "info");
  EXPECT_NE(norm->context.find("pkg/train.py:8"), std::string::npos) << norm->context;
  EXPECT_NE(norm->context.find("torch.compile("), std::string::npos) << norm->context;
  // Attention is not what Inductor's fusion gives: ATT001 does not list `compiled`.
  ASSERT_NE(of(r, "ATT001"), nullptr);
  EXPECT_TRUE(of(r, "ATT001")->context.empty()) << of(r, "ATT001")->context;

  // Not shown by default; shown with --keep-context compiled.
  options.show_demoted = false;
  EXPECT_EQ(of(analyze_paths({dir.path().string()}, engine(), options), "NRM002"), nullptr);
  // The model file alone gets the same answer: its project is read.
  EXPECT_EQ(of(analyze_paths({(dir.path() / "pkg/model.py").string()}, engine(), options), "NRM002"), nullptr);
  options.keep_contexts = {"compiled"};
  Report kept_report = analyze_paths({dir.path().string()}, engine(), options);
  const Finding* kept = of(kept_report, "NRM002");
  ASSERT_NE(kept, nullptr);
  EXPECT_TRUE(kept->context.empty());
}

TEST_F(DriverCompiledProject, AnOptInCompileKeepsTheFindingAndSaysSo) {
  for (const std::string& train :
       {std::string("if args.compile:\n    model = torch.compile(model)\n"),
        std::string("def maybe_compile(m, fast):\n    if fast == 0:\n        return m\n    return torch.compile(m)\n"),
        std::string("try:\n    model = torch.compile(model)\nexcept RuntimeError:\n    pass\n")}) {
    TempDir dir;
    project(dir, train);
    const Finding* norm = shown_norm(dir);
    ASSERT_NE(norm, nullptr) << train;
    EXPECT_TRUE(norm->context.empty()) << train << norm->context;
    EXPECT_TRUE(says(*norm, "compiles its model behind a switch (pkg/train.py:")) << train;
  }
  // A switch on by default (`compile = True` at the top, nanoGPT's form) or the script's
  // main guard is no opt-in.
  for (const std::string& train : {std::string("compile = True\nif compile:\n    model = torch.compile(model)\n"),
                                   std::string("if __name__ == \"__main__\":\n    model = torch.compile(model)\n")}) {
    TempDir dir;
    project(dir, train);
    const Finding* norm = shown_norm(dir);
    ASSERT_NE(norm, nullptr) << train;
    EXPECT_EQ(norm->context_kind, "compiled") << train;
  }
}

TEST_F(DriverCompiledProject, ASwitchAtTheCallerOfTheCompilingFunctionCounts) {
  const std::string helper = "def apply_compile(model):\n    for block in model.blocks:\n        block.compile()\n";
  for (const auto& [call, opt_in] : std::vector<std::pair<std::string, bool>>{
           {"from pkg.compiling import apply_compile\n\nif cfg.compile.enable:\n    apply_compile(model)\n", true},
           {"from pkg import compiling\n\nif cfg.compile.enable:\n    compiling.apply_compile(model)\n", true},
           {"from pkg.compiling import apply_compile\n\napply_compile(model)\n", false},
           // another module's function of the same name, called unconditionally, is not this one
           {"from pkg.compiling import apply_compile\nfrom other.compile import apply_compile as ac\n\n"
            "if cfg.compile.enable:\n    apply_compile(model)\n", true}}) {
    TempDir dir;
    project(dir, call);
    dir.write("pkg/compiling.py", helper);
    dir.write("other/compile.py", "def apply_compile(model):\n    return model\n");
    dir.write("other/run.py", "from other.compile import apply_compile\n\napply_compile(None)\n");
    const Finding* norm = shown_norm(dir);
    ASSERT_NE(norm, nullptr) << call;
    if (!opt_in) {
      EXPECT_EQ(norm->context_kind, "compiled") << call;
      continue;
    }
    EXPECT_TRUE(norm->context.empty()) << call << norm->context;
    EXPECT_TRUE(says(*norm, "through `apply_compile` called at pkg/train.py:", "under `if cfg.compile.enable:`")) << call;
  }
}

TEST_F(DriverCompiledProject, ModuleCompileOfItsBlocksCounts) {
  TempDir dir;
  project(dir, "for block in model.layers:\n    block.compile(backend=\"inductor\")\n");
  const Finding* norm = shown_norm(dir);
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->context_kind, "compiled");
  EXPECT_NE(norm->context.find("block.compile(backend"), std::string::npos) << norm->context;
}

TEST_F(DriverCompiledProject, CompilingALossAnAttentionKernelOrATestsModelIsNot) {
  for (const std::string& train : {std::string("loss_fn = torch.compile(self.loss_fn)\n"),
                                   std::string("flex = torch.compile(flex_attention)\n"),
                                   std::string("mask = torch.compile(create_block_mask)\n"),
                                   std::string("# model = torch.compile(model)\n"),
                                   std::string("\"\"\"\nmodel = torch.compile(model)\n\"\"\"\n"),
                                   std::string("step = torch.compile(mode=\"reduce-overhead\")(step)\n"),
                                   std::string("pattern = re.compile(\"model\")\n"),
                                   std::string("SEED = \"model = torch.compile(model)\\n\"\n")}) {
    TempDir dir;
    project(dir, train, "import torch\nfrom pkg.model import RMSNorm\n\nmodel = RMSNorm(8)\nmodel = torch.compile(model)\n");
    const Finding* norm = shown_norm(dir);
    ASSERT_NE(norm, nullptr) << train;
    EXPECT_TRUE(norm->context.empty()) << train << norm->context;
  }
  // An example compiles the model it builds for the demonstration, not the project's.
  TempDir dir;
  project(dir, "");
  dir.write("examples/demo.py", "import torch\nfrom pkg.model import RMSNorm\n\nmodel = torch.compile(RMSNorm(8).cuda())\nmodel = torch.compile(model)\n");
  const Finding* norm = shown_norm(dir);
  ASSERT_NE(norm, nullptr);
  EXPECT_TRUE(norm->context.empty()) << norm->context;
}

TEST(CompileSites, WhatNamesAModel) {
  for (const char* e : {"model", "self.model", "model.module", "m", "transformer_block", "model_ae.encoder",
                        "self.trainable_module", "model.blocks[i]", "net"})
    EXPECT_TRUE(driver::project::names_a_model(e)) << e;
  for (const char* e : {"self.fn", "loss", "flex_attention", "create_block_mask", "next_token", "opt.step",
                        "self.training_forward", "re", "", "x"})
    EXPECT_FALSE(driver::project::names_a_model(e)) << e;
  auto sites = driver::project::compile_sites(
      "import torch\n\nif cfg.compile:\n    model = torch.compile(model)\nfor m in layers:\n    m.compile()\n");
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].line, 3u);
  EXPECT_EQ(sites[0].code, "model = torch.compile(model)");
  EXPECT_EQ(sites[0].under, "if cfg.compile:");
  EXPECT_EQ(sites[1].line, 5u);
  EXPECT_EQ(sites[1].under, "");  // a loop is no switch
  // A Keras model's compile(optimizer, loss) is not torch's.
  EXPECT_TRUE(driver::project::compile_sites("import keras\nmodel.compile(optimizer='adam')\n").empty());
}

}  // namespace
}  // namespace mlsem
