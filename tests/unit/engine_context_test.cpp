// The engine's context policy: findings in tests, references, parity variants and
// fallbacks are demoted to info below the default threshold, per the rule's
// `demote_in`; a helper reached only from fallbacks is demoted too; `requires_torch`
// turns a rule off for older targets.
#include <gtest/gtest.h>

#include "driver/driver.h"
#include "engine/engine.h"
#include "engine_test_util.h"

namespace mlsem {
namespace {

using test_support::FunctionBuilder;
using test_support::TempDir;

const char* kConcepts = R"(
[[concept]]
id = "attention"
name = "Attention"
summary = "s"
)";

const char* kPatterns = R"toml(
[[pattern]]
id = "att"
language = "python"
match = "@out:matmul(@probs:softmax(matmul($q, $k)), $v)"
base = 0.9
)toml";

std::string rule(const char* id, const char* name, const char* extra) {
  return std::string("id = \"") + id + "\"\nname = \"" + name +
         "\"\nlanguage = \"python\"\nconcept = \"attention\"\nseverity = \"warning\"\n"
         "patterns = [\"att\"]\nmessage = \"m\"\nfix = \"f\"\n" + extra + "[docs]\nsummary = \"s\"\nwhy = \"w\"\n";
}

struct Data : TempDir {
  std::optional<Engine> engine;
  explicit Data(const char* extra = "demote_in = [\"test\", \"fallback\"]\nrequires_torch = \"2.0\"\n") {
    write("concepts/c.toml", kConcepts);
    write("patterns/p.toml", kPatterns);
    write("rules/ATT900.toml", rule("ATT900", "att", extra));
    std::vector<FileError> errors;
    engine = Engine::load(path(), errors);
    if (!engine) ADD_FAILURE() << (errors.empty() ? "" : errors[0].path + ": " + errors[0].message);
  }
};

// softmax(q @ k) @ v in function `name`, its nodes on lines `first`.. (byte offsets
// follow the lines), in region `region`.
ir::Function attention(std::string name, uint32_t first_line = 1, uint32_t region_attrs_fallback = 0) {
  FunctionBuilder b;
  b.fn.name = std::move(name);
  uint32_t r = 0;
  if (region_attrs_fallback) r = b.region("branch", {{"fallback", std::string("eager fallback: the other branch calls SDPA")}});
  auto q = b.add("input", {}, {{"name", std::string("q")}});
  auto k = b.add("input", {}, {{"name", std::string("k")}});
  auto v = b.add("input", {}, {{"name", std::string("v")}});
  auto s = b.add("matmul", {q, k}, {}, r);
  auto p = b.add("softmax", {s}, {{"dim", int64_t{-1}}}, r);
  b.add("matmul", {p, v}, {}, r);
  for (auto& n : b.fn.nodes) {
    n.range.begin.line += first_line - 1;
    n.range.end.line += first_line - 1;
    n.range.begin_byte += (first_line - 1) * 100;
    n.range.end_byte += (first_line - 1) * 100;
  }
  b.fn.range = {{first_line, 1}, {first_line + 6, 1}, first_line * 100, (first_line + 6) * 100 + 50};
  return b.fn;
}

ir::Module module_of(std::vector<ir::Function> fns) {
  ir::Module m;
  m.path = "model.py";
  m.language = "python";
  m.functions = std::move(fns);
  return m;
}

TEST(EngineContext, FindingsInAContextTheRuleListsAreDemotedToHiddenInfo) {
  Data d;
  ir::Module m = module_of({attention("f")});
  auto plain = d.engine->analyze(m);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].severity, "warning");
  EXPECT_TRUE(plain[0].context.empty());
  EXPECT_GT(plain[0].confidence, kDefaultMinConfidence);

  m.attrs["file_kind"] = std::string("test");
  m.attrs["file_kind_reason"] = std::string("in a test file (tests/)");
  auto demoted = d.engine->analyze(m);
  ASSERT_EQ(demoted.size(), 1u);
  EXPECT_EQ(demoted[0].severity, "info");
  EXPECT_EQ(demoted[0].context_kind, "test");
  EXPECT_EQ(demoted[0].context, "in a test file (tests/)");
  EXPECT_LT(demoted[0].confidence, kDefaultMinConfidence);

  // Kept as user code on request, per kind or for all.
  AnalyzeOptions keep;
  keep.keep_contexts = {"test"};
  EXPECT_EQ(d.engine->analyze(m, keep)[0].severity, "warning");
  keep.keep_contexts = {"all"};
  EXPECT_TRUE(d.engine->analyze(m, keep)[0].context.empty());
  keep.keep_contexts = {"fallback"};
  EXPECT_EQ(d.engine->analyze(m, keep)[0].severity, "info");
}

TEST(EngineContext, OnlyTheKindsTheRuleListsDemote) {
  Data d("demote_in = [\"fallback\"]\n");
  ir::Module m = module_of({attention("f")});
  m.attrs["file_kind"] = std::string("test");
  EXPECT_EQ(d.engine->analyze(m)[0].severity, "warning");
  m.functions[0].attrs["fallback"] = std::string("eager fallback: registered as the eager default");
  auto f = d.engine->analyze(m);
  EXPECT_EQ(f[0].severity, "info");
  EXPECT_EQ(f[0].context, "eager fallback: registered as the eager default");

  // Without demote_in a rule is demoted in tests, references, parity variants,
  // fallbacks and cold code, not where it returns its weights.
  Data defaults("");
  EXPECT_EQ(defaults.engine->analyze(m)[0].context_kind, "test");
  m.attrs.clear();
  EXPECT_EQ(defaults.engine->analyze(m)[0].context_kind, "fallback");
  m.functions[0].attrs.erase("fallback");
  m.functions[0].attrs["cold"] = std::string("cold: every call passes a pooled vector");
  EXPECT_EQ(defaults.engine->analyze(m)[0].context_kind, "cold");
  m.functions[0].attrs.erase("cold");
  m.functions[0].attrs["returns-weights"] = std::string("returns its attention probabilities");
  EXPECT_EQ(defaults.engine->analyze(m)[0].severity, "warning");
}

// A modular source's copy and dead code demote every rule, whatever it lists; the
// command line can still keep them.
TEST(EngineContext, ModularAndUnusedDemoteEveryRule) {
  Data d("demote_in = [\"returns-weights\"]\n");
  ir::Module m = module_of({attention("f")});
  m.attrs["file_kind"] = std::string("modular");
  m.attrs["file_kind_reason"] = std::string("modular source: modeling_x.py is generated from it");
  auto f = d.engine->analyze(m);
  EXPECT_EQ(f[0].context_kind, "modular");
  EXPECT_EQ(f[0].severity, "info");
  m.attrs.clear();
  m.functions[0].attrs["unused"] = std::string("unused: never called");
  EXPECT_EQ(d.engine->analyze(m)[0].context_kind, "unused");
  AnalyzeOptions keep;
  keep.keep_contexts = {"unused"};
  EXPECT_EQ(d.engine->analyze(m, keep)[0].severity, "warning");
}

TEST(EngineContext, RegionFactsApplyToMatchesRootedInside) {
  Data d;
  auto f = d.engine->analyze(module_of({attention("Attention.forward", 1, 1)}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].context_kind, "fallback");
}

// The helper's own match and the same match inlined into a caller: demoted when every
// caller's instance is demoted, kept when one caller uses it on the hot path.
TEST(EngineContext, AHelperReachedOnlyFromFallbacksIsDemoted) {
  Data d;
  ir::Function helper = attention("Attention._manual", 1);
  ir::Function caller = attention("Attention.forward", 1, 1);
  caller.range = {{20, 1}, {30, 1}, 2000, 3000};  // the matched nodes lie in the helper's text
  auto f = d.engine->analyze(module_of({helper, caller}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, "info");
  EXPECT_NE(f[0].context.find("reached only from Attention.forward"), std::string::npos) << f[0].context;

  ir::Function hot = attention("Block.forward", 1);
  hot.range = {{40, 1}, {50, 1}, 4000, 5000};
  f = d.engine->analyze(module_of({helper, caller, hot}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, "warning");
}

// A caller that inlines a helper whose own facts demote it (it returns its weights, it
// is a registered eager entry) reports the helper's code with the helper's context.
TEST(EngineContext, CallersInheritTheHelpersFunctionFacts) {
  Data d("demote_in = [\"returns-weights\"]\n");
  ir::Function helper = attention("SelfAttention.forward", 1);
  helper.attrs["returns-weights"] = std::string("returns its attention probabilities");
  ir::Function caller = attention("Layer.forward", 1);
  caller.range = {{20, 1}, {30, 1}, 2000, 3000};
  auto f = d.engine->analyze(module_of({helper, caller}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].context_kind, "returns-weights");
  // Alone, the caller's instance is not demoted: the fact belongs to the helper.
  f = d.engine->analyze(module_of({caller}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, "warning");
}

// Two matches of one rule in one function that share matched code (q and k rotated
// through one inlined helper) are one finding covering both; evidence away from the
// reported range names where it is instead of carrying a far location.
TEST(EngineContext, ParallelMatchesSharingAHelperAreOneFinding) {
  Data d("");
  FunctionBuilder b;
  b.fn.name = "apply";
  b.fn.range = {{10, 1}, {20, 1}, 1000, 2000};
  auto q = b.add("input", {}, {{"name", std::string("q")}});
  auto k = b.add("input", {}, {{"name", std::string("k")}});
  auto v = b.add("input", {}, {{"name", std::string("v")}});
  auto shared = b.add("matmul", {q, k});  // line 4, bytes 400..410: the helper's text
  auto p1 = b.add("softmax", {shared}, {{"dim", int64_t{-1}}});
  auto o1 = b.add("matmul", {p1, v});
  auto p2 = b.add("softmax", {shared}, {{"dim", int64_t{-1}}});
  auto o2 = b.add("matmul", {p2, k});
  for (auto id : {p1, o1, p2, o2}) {  // the caller's own lines 12..15
    auto& r = b.fn.nodes[id].range;
    uint32_t line = 12 + (id - p1);
    r = {{line, 1}, {line, 10}, line * 100, line * 100 + 10};
  }
  ir::Function helper;
  helper.name = "helper";
  helper.range = {{3, 1}, {5, 1}, 300, 500};
  helper.regions.push_back({"function", 0, {}, {}});
  auto f = d.engine->analyze(module_of({helper, b.fn}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].range.begin.line, 12u);
  EXPECT_EQ(f[0].range.end.line, 15u);
}

TEST(EngineContext, RequiresTorchTurnsTheRuleOffForOlderTargets) {
  Data d;
  ir::Module m = module_of({attention("f")});
  AnalyzeOptions o;
  EXPECT_EQ(d.engine->analyze(m, o).size(), 1u);  // unknown target: on
  o.torch_version = "1.13";
  EXPECT_TRUE(d.engine->analyze(m, o).empty());
  o.torch_version = "2.0";
  EXPECT_EQ(d.engine->analyze(m, o).size(), 1u);
  o.torch_version = "2.11";
  EXPECT_EQ(d.engine->analyze(m, o).size(), 1u);
}

TEST(EngineContext, VersionsCompareNumerically) {
  EXPECT_TRUE(version_less("2.4", "2.10"));
  EXPECT_TRUE(version_less("1.13", "2.0"));
  EXPECT_TRUE(version_less("2", "2.1"));
  EXPECT_FALSE(version_less("2.1", "2.1.0"));
  EXPECT_FALSE(version_less("2.5", "2.4"));
  EXPECT_FALSE(version_less("x", "2.4"));
  EXPECT_TRUE(valid_version("2.11.0"));
  EXPECT_FALSE(valid_version("2..1"));
  EXPECT_FALSE(valid_version("2.1rc"));
  EXPECT_FALSE(valid_version(""));
}

TEST(EngineContext, LoadRejectsUnknownContextsAndBadVersions) {
  for (const char* extra : {"demote_in = [\"tests\"]\n", "requires_torch = \"two\"\n"}) {
    TempDir dir;
    dir.write("concepts/c.toml", kConcepts);
    dir.write("patterns/p.toml", kPatterns);
    dir.write("rules/ATT900.toml", rule("ATT900", "att", extra));
    std::vector<FileError> errors;
    EXPECT_FALSE(Engine::load(dir.path(), errors)) << extra;
    ASSERT_FALSE(errors.empty());
    EXPECT_GT(errors[0].line, 1u) << errors[0].message;
  }
}

}  // namespace
}  // namespace mlsem
