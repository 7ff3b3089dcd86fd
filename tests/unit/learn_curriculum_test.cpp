// The concept hierarchy as a curriculum (analyzer/learn/): properties of the ordering
// over every concept of the real data, completeness of the curriculum content, the
// loader's validation of the curriculum keys and of rule levels, and learning paths
// built from findings.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "kernels/catalog.h"
#include "learn/curriculum.h"
#include "learn/levels.h"
#include "learn/path.h"
#include "learn/render.h"
#include "temp_dir.h"

namespace mlsem::learn {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;

class RealCurriculum : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { engine_ = Engine::load(MLSEM_SOURCE_DIR, errors_); }
  void SetUp() override {
    std::string messages;
    for (const auto& e : errors_) messages += e.path + ":" + std::to_string(e.line) + ": " + e.message + "\n";
    ASSERT_TRUE(engine_.has_value()) << messages;
  }
  static const std::vector<Concept>& concepts() { return engine_->concepts(); }
  static std::vector<std::string> all_ids() {
    std::vector<std::string> ids;
    for (const Concept& c : concepts()) ids.push_back(c.id);
    return ids;
  }
  // Fails unless every prerequisite of every concept in `order` comes before it.
  static void expect_prerequisites_first(const Curriculum& curriculum, const std::vector<std::string>& order,
                                         const std::string& context) {
    std::map<std::string, size_t> position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    for (size_t i = 0; i < order.size(); ++i) {
      for (const auto& p : curriculum.prerequisites(order[i])) {
        auto it = position.find(p);
        if (it == position.end()) continue;
        EXPECT_LT(it->second, i) << context << ": " << p << " must come before " << order[i];
      }
      if (i > 0) EXPECT_LE(curriculum.stage(order[i - 1]), curriculum.stage(order[i])) << context << ": stages run backwards at " << order[i];
    }
  }
  static inline std::optional<Engine> engine_;
  static inline std::vector<FileError> errors_;
};

TEST_F(RealCurriculum, TheWholeHierarchyOrdersWithoutCycles) {
  Curriculum curriculum(concepts());
  const std::vector<std::string> all = all_ids();
  std::set<std::string> ids(all.begin(), all.end());
  std::vector<std::string> order = curriculum.order(ids);
  // Kahn's algorithm places every concept only when the prerequisite graph has no cycle.
  ASSERT_EQ(order.size(), concepts().size());
  EXPECT_EQ(std::set<std::string>(order.begin(), order.end()), ids);
  expect_prerequisites_first(curriculum, order, "all concepts");
}

// The property test: for every concept, the path to it holds it and all it needs,
// prerequisites first, the concept itself last, and the same order on every call.
TEST_F(RealCurriculum, EveryConceptsPathPutsPrerequisitesFirst) {
  Curriculum curriculum(concepts());
  for (const Concept& c : concepts()) {
    std::set<std::string> closure = curriculum.closure({c.id});
    for (const auto& id : closure)
      for (const auto& p : curriculum.prerequisites(id)) EXPECT_TRUE(closure.count(p)) << c.id << ": closure misses " << p;
    std::vector<std::string> order = curriculum.order(closure);
    ASSERT_EQ(order.size(), closure.size()) << c.id;
    EXPECT_EQ(order.back(), c.id) << "the path to " << c.id << " must end with it";
    expect_prerequisites_first(curriculum, order, c.id);
    EXPECT_EQ(order, curriculum.order(closure)) << c.id << ": order is not stable";
  }
}

TEST_F(RealCurriculum, StagesNeverDecreaseAlongAnEdgeAndFollowDepth) {
  Curriculum curriculum(concepts());
  std::map<int, int> per_stage;
  for (const Concept& c : concepts()) {
    ++per_stage[curriculum.stage(c.id)];
    for (const auto& p : curriculum.prerequisites(c.id)) {
      EXPECT_LE(curriculum.stage(p), curriculum.stage(c.id)) << p << " -> " << c.id;
      EXPECT_LT(curriculum.depth(p), curriculum.depth(c.id)) << p << " -> " << c.id;
    }
    if (c.stage.empty() && curriculum.depth(c.id) >= kAdvancedDepth) EXPECT_EQ(curriculum.stage(c.id), 2) << c.id;
    for (int s = 0; s < 3; ++s)  // an explicit stage can only be raised, by a later prerequisite
      if (c.stage == kStages[s]) EXPECT_GE(curriculum.stage(c.id), s) << c.id;
  }
  for (int s = 0; s < 3; ++s) EXPECT_GE(per_stage[s], 10) << "stage " << kStages[s] << " is nearly empty";
}

TEST_F(RealCurriculum, EveryConceptIsReachableFromARootAndDocumented) {
  Curriculum curriculum(concepts());
  std::set<std::string> reached;
  std::vector<std::string> todo;
  for (const Concept& c : concepts())
    if (c.parents.empty()) todo.push_back(c.id);
  while (!todo.empty()) {
    std::string id = todo.back();
    todo.pop_back();
    if (!reached.insert(id).second) continue;
    for (const auto& child : curriculum.children(id)) todo.push_back(child);
  }
  for (const Concept& c : concepts()) {
    const std::string at = c.file + ":" + std::to_string(c.line) + ": " + c.id;
    EXPECT_TRUE(reached.count(c.id)) << at << " is not under any root of the hierarchy";
    EXPECT_GE(curriculum.explanation(c.id).size(), 80u) << at << ": explanation too short";
    EXPECT_GE(c.checkpoint.size(), 30u) << at << ": no checkpoint";
    EXPECT_GT(c.minutes, 0) << at << ": no minutes";
    for (const auto& lesson : c.lessons)
      EXPECT_TRUE(fs::exists(fs::path(MLSEM_SOURCE_DIR) / lesson)) << at << ": lesson " << lesson << " is missing";
  }
}

// The topics the curriculum promises, each with a lesson to study.
TEST_F(RealCurriculum, CoversTheTopicsOfTheLadder) {
  Curriculum curriculum(concepts());
  for (const char* id :
       {"gpu-architecture", "memory-hierarchy", "memory-coalescing", "vectorized-memory-access", "vector-addition",
        "parallel-reduction", "kernel-fusion", "fused-softmax", "online-softmax", "tiled-matmul", "layer-norm",
        "low-memory-dropout", "flash-attention", "mixed-precision-training", "quantization", "autotuning",
        "triton-programming", "grouped-gemm", "data-parallelism", "torch-compile", "graph-break"}) {
    const Concept* c = curriculum.find(id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_FALSE(c->lessons.empty()) << id << " has no lesson";
  }
  // Flash attention needs online softmax and tiling; the path to it teaches them first.
  auto order = curriculum.order(curriculum.closure({"flash-attention"}));
  auto at = [&](const char* id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
  EXPECT_LT(at("online-softmax"), at("flash-attention"));
  EXPECT_LT(at("tiling"), at("flash-attention"));
  EXPECT_LT(at("memory-hierarchy"), at("tiling"));
}

TEST_F(RealCurriculum, EveryRuleNamesAnOptimizationLevel) {
  for (const Rule& rule : engine_->rules()) {
    EXPECT_TRUE(std::any_of(kLevels.begin(), kLevels.end(), [&](const Level& l) { return l.id == rule.level; }))
        << rule.file << ": level '" << rule.level << "'";
  }
  EXPECT_EQ(engine_->rule("ATT001")->level, "library");
  EXPECT_EQ(engine_->rule("CU006")->level, "cuda");
}

TEST_F(RealCurriculum, FundamentalsAreTheLessonKernelsConcepts) {
  Curriculum curriculum(concepts());
  auto targets = curriculum.fundamentals();
  EXPECT_NE(std::find(targets.begin(), targets.end(), "memory-coalescing"), targets.end());
  EXPECT_NE(std::find(targets.begin(), targets.end(), "tiled-matmul"), targets.end());
  EXPECT_EQ(std::find(targets.begin(), targets.end(), "flash-attention"), targets.end());
  // Advanced concepts that cite a lesson kernel are not fundamentals.
  EXPECT_EQ(std::find(targets.begin(), targets.end(), "grouped-gemm"), targets.end());
  Report empty;
  kernels::Catalog catalog;
  LearningPath path = build_path(empty, curriculum, catalog, true);
  EXPECT_TRUE(path.fundamentals);
  EXPECT_EQ(path.steps.size(), curriculum.closure(targets).size());
  EXPECT_TRUE(build_path(empty, curriculum, catalog).steps.empty());
}

// A path from findings: the finding's concept, all it needs, the finding under its
// concept's step with its level, and prerequisites listed before the step.
TEST_F(RealCurriculum, PathFromFindingsCarriesWhyAndLevels) {
  Curriculum curriculum(concepts());
  Report report;
  report.files_analyzed = 1;
  Finding online;
  online.rule = "CU006";
  online.concept_id = "online-softmax";
  online.level = "cuda";
  online.path = "k.cu";
  online.range.begin = {12, 3};
  report.findings.push_back(online);
  Finding sdpa = online;
  sdpa.rule = "ATT001";
  sdpa.concept_id = "scaled-dot-product-attention";
  sdpa.level = "library";
  sdpa.path = "m.py";
  report.findings.push_back(sdpa);
  std::vector<FileError> errors;
  kernels::Catalog catalog = kernels::Catalog::load(fs::path(MLSEM_SOURCE_DIR) / "kernels", errors);
  LearningPath path = build_path(report, curriculum, catalog);
  EXPECT_EQ(path.targets, (std::vector<std::string>{"online-softmax", "scaled-dot-product-attention"}));
  EXPECT_EQ(path.steps.size(), curriculum.closure(path.targets).size());
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < path.steps.size(); ++i) position[path.steps[i].concept_id] = i;
  int total = 0;
  for (const Step& step : path.steps) {
    total += step.minutes;
    for (const auto& p : step.prerequisites) EXPECT_LT(position.at(p), position.at(step.concept_id));
    for (const auto& n : step.needed_by) EXPECT_GT(position.at(n), position.at(step.concept_id));
  }
  EXPECT_EQ(path.total_minutes(), total);
  const Step& step = path.steps[position.at("online-softmax")];
  ASSERT_EQ(step.findings.size(), 1u);
  EXPECT_EQ(step.findings[0].path, "k.cu");
  EXPECT_EQ(step.levels, std::vector<std::string>{"cuda"});
  EXPECT_FALSE(step.kernels.empty());
  EXPECT_TRUE(path.steps[position.at("softmax")].findings.empty());
}

// A step prints its first findings and counts the rest; every format says when there are none.
TEST_F(RealCurriculum, RenderingCapsLongFindingListsAndHandlesNone) {
  Curriculum curriculum(concepts());
  kernels::Catalog catalog;
  Report report;
  report.files_analyzed = 3;
  for (uint32_t line = 1; line <= 7; ++line) {
    Finding f;
    f.rule = "NRM001";
    f.concept_id = "layer-norm";
    f.level = "library";
    f.path = "m.py";
    f.message = "layer norm by hand";
    f.fix = "F.layer_norm(x)";
    f.range.begin = {line, 1};
    report.findings.push_back(f);
  }
  LearningPath path = build_path(report, curriculum, catalog);
  std::string text = path_text(path);
  EXPECT_NE(text.find("m.py:5:1: NRM001 layer norm by hand"), std::string::npos) << text;
  EXPECT_EQ(text.find("m.py:6:1:"), std::string::npos);
  EXPECT_NE(text.find("... and 2 more"), std::string::npos);
  EXPECT_NE(text.find("fix (library call): F.layer_norm(x)"), std::string::npos);
  EXPECT_NE(text.find("Learning path for 7 findings in 3 files"), std::string::npos);
  EXPECT_NE(path_markdown(path).find("`m.py:7` NRM001"), std::string::npos) << "Markdown shows up to ten";

  Report none;
  none.files_analyzed = 2;
  LearningPath empty = build_path(none, curriculum, catalog);
  EXPECT_NE(path_text(empty).find("No findings in 2 files"), std::string::npos);
  EXPECT_NE(path_markdown(empty).find("mlsem learn --fundamentals"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(path_json(empty))["steps"].size(), 0u);
}

// Ladders come from the results' variants at the measurement findings quote; a
// variant that was not run (Triton here) or was wrong stays unmeasured.
TEST(LearnLadder, RungsFromResultsVariants) {
  TempDir dir;
  dir.write("kernels/k/README.md", "# K, fused\n");
  dir.write("kernels/results/gpu.json", R"({"device": "GPU X", "runs": [
    {"kernel": "k", "shape": "10x10", "dtype": "bfloat16", "variant": "fused", "ms": 1.0, "correct": true},
    {"kernel": "k", "shape": "10x10", "dtype": "bfloat16", "variant": "torch_eager", "ms": 8.0, "correct": true},
    {"kernel": "k", "shape": "100x100", "dtype": "bfloat16", "variant": "fused", "ms": 2.0, "correct": true},
    {"kernel": "k", "shape": "100x100", "dtype": "bfloat16", "variant": "baseline", "ms": 20.0, "correct": true},
    {"kernel": "k", "shape": "100x100", "dtype": "bfloat16", "variant": "torch_eager", "ms": 16.0, "correct": true},
    {"kernel": "k", "shape": "100x100", "dtype": "bfloat16", "variant": "torch_library", "ms": 4.0, "correct": true},
    {"kernel": "k", "shape": "100x100", "dtype": "bfloat16", "variant": "torch_compile", "ms": 3.0, "correct": false}
  ]})");
  std::vector<FileError> errors;
  kernels::Catalog catalog = kernels::Catalog::load(dir / "kernels", errors);
  ASSERT_TRUE(errors.empty()) << errors[0].message;
  KernelLesson lesson = kernel_lesson("kernels/k", catalog);
  EXPECT_EQ(lesson.title, "K, fused");
  EXPECT_EQ(lesson.shape, "100x100");  // the largest, as findings quote
  EXPECT_EQ(lesson.naive_ms, 20.0);
  EXPECT_EQ(lesson.optimized_ms, 2.0);
  std::vector<std::string> levels;
  for (const Rung& r : lesson.ladder) levels.push_back(r.level);
  EXPECT_EQ(levels, (std::vector<std::string>{"eager", "library", "torch-compile", "triton", "cuda"}));
  EXPECT_EQ(lesson.ladder[0].ms, 16.0);
  EXPECT_EQ(lesson.ladder[1].ms, 4.0);
  EXPECT_FALSE(lesson.ladder[2].ms) << "an incorrect run is not a measurement";
  EXPECT_FALSE(lesson.ladder[3].ms);
  EXPECT_EQ(lesson.ladder[4].ms, 2.0);
  EXPECT_TRUE(kernel_lesson("kernels/none", catalog).ladder.empty());
}

TEST(LearnFormat, MinutesAndMilliseconds) {
  EXPECT_EQ(format_minutes(45), "45 min");
  EXPECT_EQ(format_minutes(60), "1 h");
  EXPECT_EQ(format_minutes(125), "2 h 5 min");
  EXPECT_EQ(format_ms(0.14518), "0.145 ms");
  EXPECT_EQ(format_ms(31.84), "31.8 ms");
  EXPECT_EQ(format_ms(123.4), "123 ms");
}

// The loader accepts the curriculum keys and refuses bad values with file:line.
struct CurriculumData : TempDir {
  explicit CurriculumData(const std::string& concept_extra, const std::string& rule_extra = "") {
    write("concepts/c.toml", "[[concept]]\nid = \"a\"\nname = \"A\"\nsummary = \"s\"\n\n[[concept]]\nid = \"b\"\n"
                             "name = \"B\"\nrequires = [\"a\"]\nsummary = \"s\"\n" + concept_extra);
    write("patterns/p.toml", "[[pattern]]\nid = \"p\"\nlanguage = \"python\"\nmatch = \"tanh(exp(_))\"\n");
    write("rules/X.toml", "id = \"FUS900\"\nname = \"x\"\nlanguage = \"python\"\nconcept = \"b\"\nseverity = \"warning\"\n"
                          "patterns = [\"p\"]\nmessage = \"m\"\nfix = \"f\"\n" + rule_extra +
                          "[docs]\nsummary = \"s\"\nwhy = \"w\"\n");
    write("kernels/k/README.md", "# K\n");
    write("samples/s.py", "x = 1\n");
  }
  std::vector<FileError> load() const {
    std::vector<FileError> errors;
    Engine::load(path(), errors);
    return errors;
  }
};

TEST(LearnData, CurriculumKeysLoad) {
  CurriculumData data("explanation = \"e\"\ncheckpoint = \"c\"\nminutes = 30\nstage = \"advanced\"\n"
                      "lessons = [\"kernels/k\", \"samples/s.py\"]\n", "level = \"torch-compile\"\n");
  std::vector<FileError> errors;
  auto engine = Engine::load(data.path(), errors);
  ASSERT_TRUE(engine) << errors[0].path << ":" << errors[0].line << ": " << errors[0].message;
  const Concept* b = engine->concept_by_id("b");
  EXPECT_EQ(b->explanation, "e");
  EXPECT_EQ(b->checkpoint, "c");
  EXPECT_EQ(b->minutes, 30);
  EXPECT_EQ(b->lessons, (std::vector<std::string>{"kernels/k", "samples/s.py"}));
  EXPECT_EQ(engine->rule("FUS900")->level, "torch-compile");
  Curriculum curriculum(engine->concepts());
  EXPECT_EQ(curriculum.stage_name("b"), "advanced");
  EXPECT_EQ(curriculum.stage_name("a"), "beginner");
  EXPECT_EQ(curriculum.minutes("a"), 15);  // the beginner default
}

TEST(LearnData, BadCurriculumValuesNameTheirLine) {
  struct Case {
    std::string concept_extra, rule_extra, message;
    uint32_t line;
  };
  // Concept "b" starts on line 6; its extra keys start on line 11 (the rule's on line 9).
  for (const Case& c : std::vector<Case>{
           {"minutes = 0\n", "", "'minutes' must be a whole number", 11},
           {"minutes = 2.5\n", "", "'minutes' must be a whole number", 11},
           {"stage = \"expert\"\n", "", "stage must be", 11},
           {"lessons = [\"kernels/nope\"]\n", "", "lesson 'kernels/nope' does not exist", 11},
           {"lessons = [\"docs/x.md\"]\n", "", "must be kernels/<name> or samples/<path>", 11},
           {"checkpoint = 3\n", "", "'checkpoint' must be a string", 11},
           {"", "level = \"assembly\"\n", "level must be", 9},
       }) {
    CurriculumData data(c.concept_extra, c.rule_extra);
    std::vector<FileError> errors = data.load();
    ASSERT_EQ(errors.size(), 1u) << c.message;
    EXPECT_NE(errors[0].message.find(c.message), std::string::npos) << errors[0].message;
    EXPECT_EQ(errors[0].line, c.line) << c.message;
    EXPECT_EQ(fs::path(errors[0].path).parent_path().filename(), c.rule_extra.empty() ? "concepts" : "rules");
  }
}

}  // namespace
}  // namespace mlsem::learn
