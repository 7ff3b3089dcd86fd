// Loading data: a small valid data set analyzes hand-built IR end to end; broken
// files are refused with their file and line.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace mlsem {
namespace {

using test_support::FunctionBuilder;
using test_support::TempDir;

const char* kConcepts = R"(
[[concept]]
id = "fusion"
name = "Fusion"
summary = "Doing several ops in one kernel."

[[concept]]
id = "elementwise-fusion"
name = "Elementwise fusion"
parents = ["fusion"]
summary = "Pointwise ops in one pass."
)";

const char* kPatterns = R"toml(
[classes]
pointwise = ["add", "mul", "exp", "tanh", "neg"]

[[pattern]]
id = "chain"
language = "python"
match = "@top:%pointwise{3,}"
base = 0.6
[[pattern.evidence]]
label = "top"
check = "users == 1"
weight = 0.2
present = "result used once"
absent = "result used more than once"
[[pattern.evidence]]
inside = "loop[training]"
weight = 0.1
present = "inside a training loop"

[[pattern]]
id = "tanh-exp"
language = "python"
match = "tanh(exp(_))"
base = 0.9
)toml";

std::string rule(const char* id, const char* name, const char* pattern, const char* extra = "") {
  return std::string("id = \"") + id + "\"\nname = \"" + name + "\"\nlanguage = \"python\"\nconcept = \"elementwise-fusion\"\n" +
         "severity = \"warning\"\npatterns = [\"" + pattern + "\"]\nmessage = \"m\"\nfix = \"f\"\n" + extra +
         "[docs]\nsummary = \"s\"\nwhy = \"w\"\n";
}

struct DataDir : TempDir {
  DataDir() {
    write("concepts/c.toml", kConcepts);
    write("patterns/p.toml", kPatterns);
    write("rules/FUS900.toml", rule("FUS900", "chain", "chain"));
    write("rules/FUS901.toml", rule("FUS901", "tanh-exp", "tanh-exp", "supersedes = [\"FUS900\"]\n"));
  }
};

ir::Module module_of(ir::Function fn) {
  ir::Module m;
  m.path = "x.py";
  m.language = "python";
  m.functions.push_back(std::move(fn));
  return m;
}

TEST(EngineLoad, ValidDataLoads) {
  DataDir dir;
  std::vector<FileError> errors;
  auto engine = Engine::load(dir.path(), errors);
  ASSERT_TRUE(engine) << (errors.empty() ? "" : errors[0].path + ":" + std::to_string(errors[0].line) + ": " + errors[0].message);
  EXPECT_EQ(engine->rules().size(), 2u);
  EXPECT_EQ(engine->concepts().size(), 2u);
  EXPECT_NE(engine->rule("chain"), nullptr);
  EXPECT_NE(engine->rule("FUS901"), nullptr);
  EXPECT_EQ(engine->rule("nope"), nullptr);
}

TEST(EngineAnalyze, ScoresEvidenceDeduplicatesAndSupersedes) {
  DataDir dir;
  std::vector<FileError> errors;
  auto engine = Engine::load(dir.path(), errors);
  ASSERT_TRUE(engine);

  // neg(mul(exp(x), y)) in a training loop: one chain finding (not one per sub-chain),
  // confidence 0.6 + 0.2 (used once) + 0.1 (training loop).
  FunctionBuilder b;
  uint32_t loop = b.region("loop", {{"training", true}});
  ir::NodeId x = b.add("input");
  ir::NodeId y = b.add("input");
  ir::NodeId e = b.add("exp", {x}, {}, loop);
  ir::NodeId m = b.add("mul", {e, y}, {}, loop);
  ir::NodeId n = b.add("neg", {m}, {}, loop);
  b.add("call", {n});
  auto findings = engine->analyze(module_of(b.fn));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "FUS900");
  EXPECT_DOUBLE_EQ(findings[0].confidence, 0.9);
  EXPECT_EQ(findings[0].range.begin.line, 3u);  // from exp ...
  EXPECT_EQ(findings[0].range.end.line, 5u);    // ... to neg
  ASSERT_EQ(findings[0].evidence.size(), 2u);
  EXPECT_TRUE(findings[0].evidence[0].present);

  // Without the loop and with the result used twice: 0.6, and the absent text shows.
  FunctionBuilder b2;
  ir::NodeId x2 = b2.add("input");
  ir::NodeId t2 = b2.add("tanh", {x2});
  ir::NodeId e2 = b2.add("exp", {t2});
  ir::NodeId n2 = b2.add("neg", {e2});
  b2.add("call", {n2});
  b2.add("call", {n2});
  findings = engine->analyze(module_of(b2.fn));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_DOUBLE_EQ(findings[0].confidence, 0.6);
  EXPECT_EQ(findings[0].evidence[0].text, "result used more than once");
  EXPECT_FALSE(findings[0].evidence[0].present);

  // tanh(exp(neg(x))): FUS901 matches tanh(exp(_)) and supersedes the chain.
  FunctionBuilder b3;
  ir::NodeId x3 = b3.add("input");
  ir::NodeId n3 = b3.add("neg", {x3});
  ir::NodeId e3 = b3.add("exp", {n3});
  b3.add("tanh", {e3});
  findings = engine->analyze(module_of(b3.fn));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "FUS901");
}

TEST(EngineAnalyze, RulesThatAreOffAreNotRunAndSupersedeNothing) {
  DataDir dir;
  std::vector<FileError> errors;
  auto engine = Engine::load(dir.path(), errors);
  ASSERT_TRUE(engine);
  // tanh(exp(neg(x))): both rules match; FUS901 supersedes FUS900 only while it is on.
  FunctionBuilder b;
  ir::NodeId x = b.add("input");
  ir::NodeId n = b.add("neg", {x});
  ir::NodeId e = b.add("exp", {n});
  b.add("tanh", {e});
  ir::Module m = module_of(b.fn);
  const std::set<std::string> chain_only{"FUS900"}, tanh_only{"FUS901"}, none{};
  auto rules_of = [&](const std::set<std::string>* only) {
    std::vector<std::string> ids;
    for (const Finding& f : engine->analyze(m, only)) ids.push_back(f.rule);
    return ids;
  };
  EXPECT_EQ(rules_of(nullptr), std::vector<std::string>{"FUS901"});
  EXPECT_EQ(rules_of(&chain_only), std::vector<std::string>{"FUS900"});
  EXPECT_EQ(rules_of(&tanh_only), std::vector<std::string>{"FUS901"});
  EXPECT_TRUE(rules_of(&none).empty());
}

TEST(EngineLoad, ASyntaxErrorIsReportedOnce) {
  DataDir dir;
  dir.write("patterns/bad.toml", "[classes]\npointwise = [\n");
  std::vector<FileError> errors;
  EXPECT_FALSE(Engine::load(dir.path(), errors));
  size_t syntax = 0;
  for (const auto& e : errors) syntax += e.message.find("TOML syntax") != std::string::npos;
  EXPECT_EQ(syntax, 1u);
}

TEST(EngineAnalyze, SuppressionsByIdNameOrAll) {
  DataDir dir;
  std::vector<FileError> errors;
  auto engine = Engine::load(dir.path(), errors);
  ASSERT_TRUE(engine);
  FunctionBuilder b;
  ir::NodeId x = b.add("input");
  ir::NodeId t = b.add("tanh", {x});
  ir::NodeId e = b.add("exp", {t});
  b.add("neg", {e});
  for (auto [ids, expect] : std::vector<std::pair<std::vector<std::string>, size_t>>{
           {{}, 0}, {{"FUS900"}, 0}, {{"chain"}, 0}, {{"ATT001"}, 1}}) {
    ir::Module m = module_of(b.fn);
    m.suppressions[3] = ids;  // line 3 is inside the finding's range (2..4)
    EXPECT_EQ(engine->analyze(m).size(), expect);
  }
}

// Each broken variant must be refused with an error naming the file and line.
struct Broken {
  std::string file;
  std::string text;
  std::string message_part;
  uint32_t line;
};

void PrintTo(const Broken& b, std::ostream* os) { *os << b.file << " (" << b.message_part << ")"; }

class EngineLoadErrors : public ::testing::TestWithParam<Broken> {};

TEST_P(EngineLoadErrors, NameFileAndLine) {
  DataDir dir;
  const Broken& b = GetParam();
  dir.write(b.file, b.text);
  std::vector<FileError> errors;
  auto engine = Engine::load(dir.path(), errors);
  EXPECT_FALSE(engine);
  ASSERT_FALSE(errors.empty());
  bool found = false;
  for (const auto& e : errors) {
    if (e.path.find(b.file) != std::string::npos && e.message.find(b.message_part) != std::string::npos) {
      found = true;
      EXPECT_EQ(e.line, b.line) << e.message;
    }
  }
  EXPECT_TRUE(found) << "no error mentioning '" << b.message_part << "' in " << b.file << "; first: " << errors[0].path
                     << ":" << errors[0].line << ": " << errors[0].message;
}

INSTANTIATE_TEST_SUITE_P(
    Data, EngineLoadErrors,
    ::testing::Values(
        Broken{"rules/FUS901.toml", "id = \"FUS901\"\nname = [broken\n", "TOML syntax", 2},
        Broken{"patterns/bad.toml", "[[pattern]]\nid = \"bad\"\nlanguage = \"python\"\nmatch = \"matmul(softmax(_),\"\n",
               "expected", 4},
        Broken{"patterns/bad.toml",
               "[[pattern]]\nid = \"bad\"\nlanguage = \"python\"\nmatch = \"\"\"\nmatmul(\n  softmax(_)\n  oops)\n\"\"\"\n",
               "expected ')'", 7},
        Broken{"patterns/bad.toml", "[[pattern]]\nid = \"bad\"\nlanguage = \"python\"\nmatch = \"tanh(_)\"\nbase = 0.5\nwieght = 1\n",
               "unknown key 'wieght'", 6},
        Broken{"patterns/bad.toml",
               "[[pattern]]\nid = \"bad\"\nlanguage = \"python\"\nmatch = \"tanh(_)\"\n[[pattern.evidence]]\nlabel = \"nope\"\n"
               "weight = 0.1\npresent = \"x\"\n",
               "evidence label 'nope'", 5},
        Broken{"patterns/q.toml", "[[pattern]]\nid = \"chain\"\nlanguage = \"python\"\nmatch = \"tanh(_)\"\n",
               "duplicate pattern id", 1},
        Broken{"rules/FUS902.toml", "id = \"FUS902\"\nname = \"x\"\nlanguage = \"python\"\nconcept = \"nope\"\n"
               "severity = \"warning\"\npatterns = [\"chain\"]\nmessage = \"m\"\nfix = \"f\"\n[docs]\nsummary = \"s\"\nwhy = \"w\"\n",
               "unknown concept 'nope'", 4},
        Broken{"rules/FUS902.toml", "id = \"FUS902\"\nname = \"x\"\nlanguage = \"python\"\nconcept = \"fusion\"\n"
               "severity = \"loud\"\npatterns = [\"missing\"]\nmessage = \"m\"\nfix = \"f\"\n[docs]\nsummary = \"s\"\nwhy = \"w\"\n",
               "unknown pattern 'missing'", 6},
        Broken{"rules/FUS902.toml", rule("FUS900", "other", "chain"), "duplicate rule id", 1},
        Broken{"concepts/d.toml", "[[concept]]\nid = \"a\"\nname = \"A\"\nsummary = \"s\"\nparents = [\"b\"]\n\n"
               "[[concept]]\nid = \"b\"\nname = \"B\"\nsummary = \"s\"\nparents = [\"a\"]\n",
               "cycle in parents: a -> b -> a", 7},
        Broken{"concepts/d.toml", "[[concept]]\nid = \"a\"\nname = \"A\"\nsummary = \"s\"\nrequires = [\"zzz\"]\n",
               "unknown prerequisite 'zzz'", 1},
        Broken{"patterns/q.toml", "\n[[pattern]]\nid = \"orphan\"\nlanguage = \"python\"\nmatch = \"tanh(_)\"\n",
               "'orphan' is not used by any rule", 2},
        Broken{"patterns/q.toml", "[[pattern]]\nid = \"d\"\nlanguage = \"python\"\nmatch = \"mul($a, $b)\"\ndistinct = [\"a\", \"c\"]\n",
               "distinct: 'c' is not a variable or label", 1}));

}  // namespace
}  // namespace mlsem

namespace mlsem {
namespace {

// One file holding every kind of mistake: each is reported, naming the file and the line
// it is on, not just the first one met (a rule author fixes them in one pass).
struct Mistake {
  std::string message_part;
  uint32_t line;
};

void expect_all(const std::vector<FileError>& errors, const std::string& file, const std::vector<Mistake>& mistakes) {
  for (const Mistake& m : mistakes) {
    bool found = false;
    for (const auto& e : errors)
      found = found || (e.path.ends_with(file) && e.message.find(m.message_part) != std::string::npos && e.line == m.line);
    std::string all;
    for (const auto& e : errors) all += e.path + ":" + std::to_string(e.line) + ": " + e.message + "\n";
    EXPECT_TRUE(found) << file << ":" << m.line << ": no error mentioning '" << m.message_part << "'; got:\n" << all;
  }
}

TEST(EngineLoad, APatternFileWithEveryKindOfMistakeNamesEachLine) {
  DataDir dir;
  dir.write("patterns/bad.toml",
            "[[pattern]]\n"                       // 1
            "id = \"lang\"\n"                     // 2
            "language = \"fortran\"\n"            // 3
            "match = \"tanh(_)\"\n"               // 4
            "\n"                                  // 5
            "[[pattern]]\n"                       // 6
            "id = \"syntax\"\n"                   // 7
            "language = \"python\"\n"             // 8
            "match = \"matmul(softmax(_),\"\n"    // 9
            "\n"                                  // 10
            "[[pattern]]\n"                       // 11
            "id = \"typo\"\n"                     // 12
            "language = \"python\"\n"             // 13
            "match = \"tanh(_)\"\n"               // 14
            "wieght = 1\n"                        // 15
            "\n"                                  // 16
            "[[pattern]]\n"                       // 17
            "id = \"base\"\n"                     // 18
            "language = \"python\"\n"             // 19
            "match = \"exp(_)\"\n"                // 20
            "base = 1.5\n"                        // 21
            "\n"                                  // 22
            "[[pattern]]\n"                       // 23
            "id = \"op\"\n"                       // 24
            "language = \"python\"\n"             // 25
            "match = \"mul($a, $b)\"\n"           // 26
            "distinct = [\"a\", \"c\"]\n"         // 27
            "[[pattern]]\n"                       // 28
            "id = \"evidence\"\n"                 // 29
            "language = \"python\"\n"             // 30
            "match = \"@t:tanh(_)\"\n"            // 31
            "[[pattern.evidence]]\n"              // 32
            "label = \"nope\"\n"                  // 33
            "weight = 0.1\n"                      // 34
            "[[pattern.evidence]]\n"              // 35
            "label = \"t\"\n"                     // 36
            "present = \"no weight\"\n"           // 37
            "\n"                                  // 38
            "[[pattern]]\n"                       // 39
            "language = \"python\"\n"             // 40
            "match = \"neg(_)\"\n"                // 41
            "\n"                                  // 42
            "[[pattern]]\n"                       // 43
            "id = \"chain\"\n"                    // 44
            "language = \"python\"\n"             // 45
            "match = 7\n");                       // 46
  std::vector<FileError> errors;
  EXPECT_FALSE(Engine::load(dir.path(), errors));
  expect_all(errors, "patterns/bad.toml",
             {{"language must be \"python\" or \"cuda\"", 1},
              {"expected", 9},
              {"unknown key 'wieght'", 15},
              {"base must be within [0, 1]", 17},
              {"distinct: 'c' is not a variable or label", 23},
              {"evidence label 'nope' is not a label in match", 32},
              {"evidence needs a numeric 'weight'", 35},
              {"missing required key 'id'", 39},
              {"'match' must be a string", 46}});
}

TEST(EngineLoad, ARuleFileWithEveryKindOfMistakeNamesEachLine) {
  DataDir dir;
  dir.write("rules/BAD.toml",
            "id = \"bad1\"\n"                      // 1
            "name = \"Not Kebab\"\n"               // 2
            "status = \"beta\"\n"                  // 3
            "language = \"fortran\"\n"             // 4
            "concept = \"nope\"\n"                 // 5
            "severity = \"loud\"\n"                // 6
            "patterns = [\"missing\", 3]\n"        // 7
            "message = \"m\"\n"                    // 8
            "fix = \"F.x({nolabel})\"\n"           // 9
            "kernel = \"kernels/nope\"\n"          // 10
            "level = \"asm\"\n"                    // 11
            "demote_in = [\"nowhere\"]\n"          // 12
            "requires_torch = \"two\"\n"           // 13
            "per_function = \"yes\"\n"             // 14
            "mesage = \"typo\"\n"                  // 15
            "configured_by = [\"\"]\n");             // 16
  std::vector<FileError> errors;
  EXPECT_FALSE(Engine::load(dir.path(), errors));
  expect_all(errors, "rules/BAD.toml",
             {{"rule id 'bad1' must be letters then three digits", 1},
              {"rule name 'Not Kebab' must be kebab-case", 2},
              {"status must be", 3},
              {"language must be", 4},
              {"unknown concept 'nope'", 5},
              {"severity must be", 6},
              {"'patterns' must hold strings only", 7},
              {"fix: '{nolabel}' names 'nolabel'", 9},
              {"level must be", 11},
              {"demote_in: unknown context 'nowhere'", 12},
              {"requires_torch must be a version", 13},
              {"'per_function' must be true or false", 14},
              {"unknown key 'mesage'", 15},
              {"configured_by: an empty setting would match every file", 16},
              {"missing [docs] table", 1}});
}

}  // namespace
}  // namespace mlsem
