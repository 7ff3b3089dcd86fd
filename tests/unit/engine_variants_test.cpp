// Engine: a pattern's own message and fix (numeric variants), and rules reported once
// per function.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "temp_dir.h"

namespace mlsem {
namespace {

using test_support::FunctionBuilder;
using test_support::TempDir;

const char* kConcepts = R"(
[[concept]]
id = "fusion"
name = "Fusion"
summary = "Doing several ops in one kernel."
)";

const char* kPatterns = R"toml(
[[pattern]]
id = "plain"
language = "python"
match = "tanh(exp(_))"
base = 0.8

[[pattern]]
id = "variant"
language = "python"
match = "tanh(exp(neg(_)))"
base = 0.8
message = "the variant's message"
fix = "the variant's fix"
)toml";

std::string rule(const char* id, const char* extra) {
  return std::string("id = \"") + id +
         "\"\nname = \"r\"\nlanguage = \"python\"\nconcept = \"fusion\"\nseverity = \"warning\"\n"
         "patterns = [\"plain\", \"variant\"]\nmessage = \"rule message\"\nfix = \"rule fix\"\n" +
         extra + "[docs]\nsummary = \"s\"\nwhy = \"w\"\n";
}

struct Data : TempDir {
  explicit Data(const char* extra) {
    write("concepts/c.toml", kConcepts);
    write("patterns/p.toml", kPatterns);
    write("rules/FUS910.toml", rule("FUS910", extra));
  }
};

ir::Module module_of(ir::Function fn) {
  ir::Module m;
  m.path = "x.py";
  m.language = "python";
  m.functions.push_back(std::move(fn));
  return m;
}

// tanh(exp(x)) on lines 2-3, tanh(exp(neg(y))) on lines 5-7.
ir::Module two_matches() {
  FunctionBuilder b;
  ir::NodeId x = b.add("input");
  ir::NodeId e1 = b.add("exp", {x});
  b.add("tanh", {e1});
  ir::NodeId y = b.add("input");
  ir::NodeId n = b.add("neg", {y});
  ir::NodeId e2 = b.add("exp", {n});
  b.add("tanh", {e2});
  return module_of(b.fn);
}

TEST(EngineVariants, APatternsMessageAndFixReplaceTheRules) {
  Data dir("");
  std::vector<FileError> errors;
  auto engine = Engine::load(dir.path(), errors);
  ASSERT_TRUE(engine) << (errors.empty() ? "" : errors[0].message);
  auto findings = engine->analyze(two_matches());
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].message, "rule message");
  EXPECT_EQ(findings[0].fix, "rule fix");
  // The variant's match contains the plain one's: only the variant is reported there.
  EXPECT_EQ(findings[1].range.begin.line, 5u);
  EXPECT_EQ(findings[1].message, "the variant's message");
  EXPECT_EQ(findings[1].fix, "the variant's fix");
}

TEST(EngineVariants, PerFunctionRulesJoinTheirFindingsInOneFunction) {
  Data dir("per_function = true\n");
  std::vector<FileError> errors;
  auto engine = Engine::load(dir.path(), errors);
  ASSERT_TRUE(engine) << (errors.empty() ? "" : errors[0].message);
  auto findings = engine->analyze(two_matches());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].range.begin.line, 2u);
  EXPECT_EQ(findings[0].range.end.line, 7u);
}

TEST(EngineVariants, PerFunctionMustBeABoolean) {
  Data dir("per_function = \"yes\"\n");
  std::vector<FileError> errors;
  EXPECT_FALSE(Engine::load(dir.path(), errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message.find("per_function"), std::string::npos);
}

}  // namespace
}  // namespace mlsem
