// Properties of the real concept hierarchy (concepts/*.toml) that the rest of mlsem
// relies on: rules and CUDA checks name these ids, learning paths follow `requires`,
// `mlsem explain` walks `parents`, and findings link to the kernels named here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace mlsem {
namespace {

class ConceptsData : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    engine_ = Engine::load(MLSEM_SOURCE_DIR, load_errors_);
  }

  static const std::vector<Concept>& concepts() { return engine_->concepts(); }

  void SetUp() override {
    std::string messages;
    for (const auto& e : load_errors_) messages += e.path + ":" + std::to_string(e.line) + ": " + e.message + "\n";
    ASSERT_TRUE(engine_.has_value()) << "concepts/, patterns/ or rules/ failed to load:\n" << messages;
  }

  static std::map<std::string, const Concept*> by_id() {
    std::map<std::string, const Concept*> index;
    for (const auto& c : concepts()) index.emplace(c.id, &c);
    return index;
  }

  // Fails the test if following `edges` from any concept comes back to it.
  static void expect_acyclic(const std::string& edge_name,
                             const std::function<const std::vector<std::string>&(const Concept&)>& edges) {
    auto index = by_id();
    enum class State { unseen, on_path, done };
    std::map<std::string, State> state;
    std::vector<std::string> path;
    std::function<void(const std::string&)> visit = [&](const std::string& id) {
      auto& s = state[id];
      if (s == State::done) return;
      if (s == State::on_path) {
        std::string cycle;
        for (const auto& p : path) cycle += p + " -> ";
        ADD_FAILURE() << edge_name << " cycle: " << cycle << id;
        return;
      }
      auto it = index.find(id);
      if (it == index.end()) return;  // dangling edges are reported by their own test
      s = State::on_path;
      path.push_back(id);
      for (const auto& next : edges(*it->second)) visit(next);
      path.pop_back();
      state[id] = State::done;
    };
    for (const auto& c : concepts()) visit(c.id);
  }

  static inline std::optional<Engine> engine_;
  static inline std::vector<FileError> load_errors_;
};

TEST_F(ConceptsData, HasAtLeastSixtyConcepts) {
  EXPECT_GE(concepts().size(), 60u);
}

TEST_F(ConceptsData, IdsAreKebabCaseAndUnique) {
  const std::regex kebab("[a-z0-9]+(-[a-z0-9]+)*");
  std::set<std::string> seen;
  for (const auto& c : concepts()) {
    EXPECT_TRUE(std::regex_match(c.id, kebab)) << c.file << ":" << c.line << ": id '" << c.id << "'";
    EXPECT_TRUE(seen.insert(c.id).second) << c.file << ":" << c.line << ": duplicate id '" << c.id << "'";
  }
}

// Rules (Python and CUDA) and the frontends' documentation refer to these ids.
TEST_F(ConceptsData, IdsThatRulesReferToExist) {
  const char* required[] = {
      "scaled-dot-product-attention", "grouped-query-attention", "online-softmax", "flash-attention",
      "layer-norm", "rms-norm", "single-pass-statistics", "gelu", "gated-linear-unit",
      "gemm-epilogue-fusion", "elementwise-fusion", "kernel-fusion", "reduction-fusion",
      "rotary-position-embedding", "cross-entropy-loss", "host-device-sync", "memory-coalescing",
      "vectorized-memory-access", "pointer-aliasing", "data-reuse", "warp-shuffle-reduction",
      "tiled-matmul", "shared-memory-bank-conflicts", "barrier-synchronization", "warp-divergence",
      "softmax", "matrix-multiplication", "attention", "fusion", "normalization", "memory-bandwidth",
      "torch-compile"};
  auto index = by_id();
  for (const char* id : required) EXPECT_TRUE(index.count(id)) << "missing concept '" << id << "'";
}

TEST_F(ConceptsData, EveryEdgeNamesAnExistingConcept) {
  auto index = by_id();
  for (const auto& c : concepts()) {
    for (const auto& p : c.parents)
      EXPECT_TRUE(index.count(p)) << c.file << ":" << c.line << ": " << c.id << " has unknown parent '" << p << "'";
    for (const auto& r : c.requires_)
      EXPECT_TRUE(index.count(r)) << c.file << ":" << c.line << ": " << c.id << " requires unknown '" << r << "'";
  }
}

TEST_F(ConceptsData, ParentEdgesAreAcyclic) {
  expect_acyclic("parents", [](const Concept& c) -> const std::vector<std::string>& { return c.parents; });
}

TEST_F(ConceptsData, PrerequisiteEdgesAreAcyclic) {
  expect_acyclic("requires", [](const Concept& c) -> const std::vector<std::string>& { return c.requires_; });
}

// Walking down from the roots (concepts without parents) must reach every concept,
// so `mlsem concepts` can show the whole hierarchy as a tree from its roots.
TEST_F(ConceptsData, EveryConceptIsReachableFromARoot) {
  std::multimap<std::string, std::string> children;
  std::vector<std::string> frontier;
  for (const auto& c : concepts()) {
    if (c.parents.empty()) frontier.push_back(c.id);
    for (const auto& p : c.parents) children.emplace(p, c.id);
  }
  ASSERT_FALSE(frontier.empty()) << "no root concept (every concept has a parent)";
  std::set<std::string> reached(frontier.begin(), frontier.end());
  while (!frontier.empty()) {
    std::string id = frontier.back();
    frontier.pop_back();
    auto [begin, end] = children.equal_range(id);
    for (auto it = begin; it != end; ++it)
      if (reached.insert(it->second).second) frontier.push_back(it->second);
  }
  for (const auto& c : concepts())
    EXPECT_TRUE(reached.count(c.id)) << c.file << ":" << c.line << ": " << c.id << " is not reachable from a root";
}

// `mlsem explain` and learning paths show these; an empty one is a data bug.
TEST_F(ConceptsData, EveryConceptHasNameSummaryAndReading) {
  for (const auto& c : concepts()) {
    EXPECT_FALSE(c.name.empty()) << c.file << ":" << c.line << ": " << c.id << " has no name";
    EXPECT_GE(c.summary.size(), 80u) << c.file << ":" << c.line << ": " << c.id << " summary too short";
    EXPECT_LE(c.summary.size(), 700u) << c.file << ":" << c.line << ": " << c.id << " summary too long";
    EXPECT_FALSE(c.reading.empty()) << c.file << ":" << c.line << ": " << c.id << " has no reading";
  }
}

TEST_F(ConceptsData, EveryRuleConceptExists) {
  auto index = by_id();
  for (const auto& rule : engine_->rules())
    EXPECT_TRUE(index.count(rule.concept_id))
        << rule.file << ":" << rule.line << ": rule " << rule.id << " names unknown concept '" << rule.concept_id << "'";
}

TEST_F(ConceptsData, EveryKernelNamesAKernelsDirectory) {
  const std::filesystem::path kernels_dir = std::filesystem::path(MLSEM_SOURCE_DIR) / "kernels";
  for (const auto& c : concepts())
    for (const auto& k : c.kernels)
      EXPECT_TRUE(std::filesystem::is_directory(kernels_dir / k))
          << c.file << ":" << c.line << ": concept " << c.id << " names kernel '" << k
          << "' but " << (kernels_dir / k).string() << " does not exist";
}

}  // namespace
}  // namespace mlsem

namespace mlsem {
namespace {

// Editors link each finding's code to docs/rules/<ID>.md (`mlsem lsp`, findings.h):
// every rule has its page, headed with its id and name, and no page outlives its rule.
TEST(RuleDocs, EveryRuleHasItsPage) {
  std::vector<FileError> errors;
  std::optional<Engine> engine = Engine::load(MLSEM_SOURCE_DIR, errors);
  ASSERT_TRUE(engine.has_value());
  namespace fs = std::filesystem;
  fs::path dir = fs::path(MLSEM_SOURCE_DIR) / "docs" / "rules";
  std::set<std::string> ids;
  for (const Rule& rule : engine->rules()) {
    ids.insert(rule.id);
    fs::path page = dir / (rule.id + ".md");
    std::ifstream in(page);
    ASSERT_TRUE(in.good()) << page << " is missing: bash scripts/rule_docs.sh writes it";
    std::string heading;
    std::getline(in, heading);
    EXPECT_EQ(heading, "# " + rule.id + " " + rule.name) << page;
    std::string body((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(body.find("## Why"), std::string::npos) << page << " has no Why section";
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name == "README.md" || !name.ends_with(".md")) continue;
    EXPECT_TRUE(ids.contains(name.substr(0, name.size() - 3))) << entry.path() << " documents no rule";
  }
}

}  // namespace
}  // namespace mlsem
