// `mlsem learn` and `mlsem concepts` as a user runs them. The learning paths of sample
// projects are golden files (tests/learn/golden/): the output is the contract. They are
// produced against a frozen excerpt of the benchmark results (tests/learn/results.json)
// so that rerunning the GPU benchmark does not change them. After a deliberate change,
// regenerate with MLSEM_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "temp_dir.h"

namespace mlsem {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::TempDir;

struct Outcome {
  int code = -1;
  std::string out, err;
};

Outcome run_mlsem(const std::string& args) {
  TempDir capture;
  std::string command = "cd '" MLSEM_SOURCE_DIR "' && '" MLSEM_BINARY "' " + args + " 2>'" + capture / "err" + "'";
  Outcome run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) run.out.append(buffer, n);
  int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(capture / "err");
  run.err.assign(std::istreambuf_iterator<char>(err), {});
  return run;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The source tree's data with the frozen results in place of kernels/results.
class FrozenData {
 public:
  FrozenData() {
    const fs::path source = MLSEM_SOURCE_DIR;
    for (const char* sub : {"concepts", "patterns", "rules", "samples"})
      fs::create_directory_symlink(source / sub, fs::path(dir_.path()) / sub);
    for (const auto& entry : fs::directory_iterator(source / "kernels"))
      if (entry.is_directory() && entry.path().filename() != "results")
        fs::create_directory_symlink(entry.path(), fs::path(dir_ / "kernels") / entry.path().filename());
    dir_.write("kernels/results/nvidia-h200.json", read(source / "tests/learn/results.json"));
  }
  std::string path() const { return dir_.path().string(); }

 private:
  struct Dir : TempDir {
    Dir() { std::filesystem::create_directories(*this / "kernels"); }
  } dir_;
};

void expect_golden(const std::string& args, const std::string& golden) {
  FrozenData data;
  Outcome run = run_mlsem("--data '" + data.path() + "' " + args);
  ASSERT_EQ(run.code, 0) << run.err;
  const fs::path file = fs::path(MLSEM_SOURCE_DIR) / "tests/learn/golden" / golden;
  if (const char* update = std::getenv("MLSEM_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(file, std::ios::binary) << run.out;
    GTEST_SKIP() << "wrote " << file;
  }
  ASSERT_TRUE(fs::exists(file)) << file << " is missing: run with MLSEM_UPDATE_GOLDEN=1 and review it";
  EXPECT_EQ(run.out, read(file)) << "mlsem " << args << " differs from " << file
                                 << " (after a deliberate change: MLSEM_UPDATE_GOLDEN=1, then review the diff)";
}

TEST(LearnGolden, NanoGptText) { expect_golden("learn samples/python/gpt_nanogpt.py", "gpt_nanogpt.txt"); }
TEST(LearnGolden, NanoGptJson) { expect_golden("learn samples/python/gpt_nanogpt.py --format json", "gpt_nanogpt.json"); }
TEST(LearnGolden, LlamaMarkdown) { expect_golden("learn samples/python/llama.py --format markdown", "llama.md"); }
TEST(LearnGolden, CudaSoftmaxAndReductionText) {
#ifndef MLSEM_WITH_CUDA
  GTEST_SKIP() << "mlsem was built without the CUDA frontend (MLSEM_CUDA_FRONTEND=OFF): .cu files are not analyzed";
#endif
  expect_golden("learn samples/cuda/softmax_naive.cu samples/cuda/reduction.cu", "cuda_softmax_reduction.txt");
}

// The JSON contract, checked against the text path of the same run.
TEST(LearnCli, JsonStepsHaveTheContractFields) {
  Outcome run = run_mlsem("learn samples/python/llama.py --format json");
  ASSERT_EQ(run.code, 0) << run.err;
  json doc = json::parse(run.out);
  ASSERT_TRUE(doc["steps"].is_array());
  ASSERT_FALSE(doc["steps"].empty());
  std::set<std::string> seen;
  int minutes = 0, findings = 0;
  for (const json& step : doc["steps"]) {
    for (const char* key : {"concept", "title", "prerequisites", "why", "kernels", "minutes"})
      EXPECT_TRUE(step.contains(key)) << key;
    for (const json& p : step["prerequisites"]) EXPECT_TRUE(seen.count(p.get<std::string>())) << p << " comes later";
    seen.insert(step["concept"].get<std::string>());
    minutes += step["minutes"].get<int>();
    for (const json& why : step["why"]) {
      ++findings;
      EXPECT_TRUE(contains(why["path"].get<std::string>(), "llama.py"));
      EXPECT_GT(why["line"].get<int>(), 0);
    }
    for (const json& k : step["kernels"]) EXPECT_TRUE(fs::is_directory(fs::path(MLSEM_SOURCE_DIR) / k.get<std::string>()));
  }
  EXPECT_EQ(doc["total_minutes"].get<int>(), minutes);
  EXPECT_EQ(findings, doc["findings"].get<int>());
  Outcome analyze = run_mlsem("analyze samples/python/llama.py --format json");
  EXPECT_EQ(json::parse(analyze.out)["findings"].size(), size_t(findings));
}

TEST(LearnCli, NoFindingsSaysSoAndOffersTheFundamentals) {
  Outcome run = run_mlsem("learn samples/python/fused_forms.py");
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "No findings in 1 file")) << run.out;
  EXPECT_TRUE(contains(run.out, "mlsem learn --fundamentals")) << run.out;
  Outcome fundamentals = run_mlsem("learn --fundamentals");
  EXPECT_EQ(fundamentals.code, 0);
  EXPECT_TRUE(contains(fundamentals.out, "[memory-coalescing]")) << fundamentals.out;
  EXPECT_TRUE(contains(fundamentals.out, "kernels/lesson_coalescing")) << fundamentals.out;
}

TEST(LearnCli, UsageErrors) {
  for (const char* args : {"learn", "learn --fundamentals samples", "learn x.py --format pdf",
                           "learn samples/python/llama.py --format text -o /tmp/x.svg", "concepts nope",
                           "concepts a b", "learn x.py --min-confidence 2"}) {
    Outcome run = run_mlsem(args);
    EXPECT_EQ(run.code, 2) << args;
    EXPECT_TRUE(contains(run.err, "mlsem: ")) << args << ": " << run.err;
  }
  EXPECT_EQ(run_mlsem("learn does/not/exist.py").code, 1);
  EXPECT_EQ(run_mlsem("help learn").code, 0);
}

TEST(LearnCli, DotPictureOfThePath) {
  Outcome run = run_mlsem("learn samples/python/gpt_nanogpt.py --format dot");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("digraph concepts {", 0), 0u);
  // Every concept is a node; the path's steps are numbered.
  Outcome all = run_mlsem("concepts --format dot");
  std::regex node("\n  \"[a-z0-9-]+\" \\[label=");
  auto count = [&](const std::string& text) {
    return std::distance(std::sregex_iterator(text.begin(), text.end(), node), std::sregex_iterator());
  };
  EXPECT_EQ(count(run.out), count(all.out));
  EXPECT_TRUE(contains(run.out, "\"scaled-dot-product-attention\" [label=\"")) << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex("label=\"[0-9]+\\. Scaled dot-product attention\\\\n1 finding\"")));
}

TEST(LearnCli, SvgWhenGraphvizIsInstalled) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "Graphviz `dot` is not installed (apt-get install graphviz): SVG rendering not tested";
  TempDir out;
  Outcome run = run_mlsem("learn samples/python/gpt_nanogpt.py -o '" + out / "path.svg" + "'");
  ASSERT_EQ(run.code, 0) << run.err;
  std::string svg = read(out / "path.svg");
  EXPECT_TRUE(contains(svg, "<svg")) << svg.substr(0, 200);
  EXPECT_TRUE(contains(svg, "Scaled dot")) << "the path's concepts are drawn";
  EXPECT_FALSE(fs::exists(out / "path.svg.dot")) << "the DOT source is removed after rendering";
}

TEST(ConceptsCli, TreeAndOneConcept) {
  Outcome tree = run_mlsem("concepts");
  ASSERT_EQ(tree.code, 0) << tree.err;
  // Children are indented under their parent.
  EXPECT_TRUE(std::regex_search(tree.out, std::regex("\n  attention  Attention[^\n]*\n(    [^\n]*\n)*    scaled-dot-product-attention ")))
      << tree.out.substr(0, 2000);
  Outcome one = run_mlsem("concepts flash-attention");
  ASSERT_EQ(one.code, 0) << one.err;
  for (const char* part : {"Flash attention [flash-attention]", "parents: scaled-dot-product-attention, kernel-fusion",
                           "requires: online-softmax, tiling", "stage: advanced", "kernels/attention_fwd",
                           "checkpoint: ", "ladder: eager PyTorch"})
    EXPECT_TRUE(contains(one.out, part)) << part << "\n" << one.out;
  Outcome rule = run_mlsem("concepts online-softmax");
  EXPECT_TRUE(contains(rule.out, "rules: CU006 (custom CUDA)")) << rule.out;
  Outcome dot = run_mlsem("concepts flash-attention --format dot");
  EXPECT_TRUE(contains(dot.out, "\"flash-attention\" -> \"online-softmax\" [style=dashed]")) << dot.out;
  EXPECT_FALSE(contains(dot.out, "\"cross-entropy-loss\"")) << "only what flash attention needs";
}

TEST(AnalyzeCli, FindingsCarryTheirOptimizationLevel) {
  Outcome text = run_mlsem("analyze samples/python/gpt_nanogpt.py");
  EXPECT_TRUE(contains(text.out, "fix (library call): out = F.scaled_dot_product_attention")) << text.out;
  json doc = json::parse(run_mlsem("analyze samples/python/gpt_nanogpt.py --format json").out);
  ASSERT_FALSE(doc["findings"].empty());
  for (const json& f : doc["findings"]) EXPECT_EQ(f["level"], "library") << f["rule"];
}

}  // namespace
}  // namespace mlsem
