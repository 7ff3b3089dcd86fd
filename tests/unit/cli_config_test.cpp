// Configuration files, suppressions, baselines and the cache, end to end through the
// `mlsem` binary; each expectation follows from the files written in the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <iostream>
#include <set>

#include "config/config.h"
#include "driver/suppress.h"
#include "mlsem_cli.h"

namespace mlsem {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::contains;
using test_support::Outcome;
using test_support::read_text;
using test_support::TempDir;

// ATT001 on lines 6-8 (scores .. probs @ v).
const char* kAttention = R"(import math
import torch.nn.functional as F


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = F.softmax(scores, dim=-1)
    return probs @ v
)";

// ACT001 on line 6.
const char* kGelu = "import math\nimport torch\n\n\ndef gelu(x):\n"
                    "    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))\n";

Outcome mlsem(const std::string& args, const std::string& dir) {
  return test_support::run_mlsem("analyze " + args, dir);
}

// (path, rule) of each finding in a JSON report run.
std::set<std::pair<std::string, std::string>> found(const std::string& args, const std::string& dir) {
  Outcome run = mlsem("--no-cache --format json " + args, dir);
  EXPECT_NE(run.code, 2) << run.err;
  std::set<std::pair<std::string, std::string>> out;
  json report = json::parse(run.out);
  for (const json& f : report["findings"]) out.insert({f["path"].get<std::string>(), f["rule"].get<std::string>()});
  return out;
}

using Found = std::set<std::pair<std::string, std::string>>;

TEST(CliConfig, NearestConfigurationWinsAndMlsemTomlBeatsPyproject) {
  TempDir dir;
  for (const char* sub : {"", "a/", "a/b/"}) {
    dir.write(std::string(sub) + "attn.py", kAttention);
    dir.write(std::string(sub) + "gelu.py", kGelu);
  }
  dir.write("pyproject.toml", "[project]\nname = \"x\"\n\n[tool.mlsem]\nselect = [\"ATT001\"]\n");
  // a/: a pyproject.toml without [tool.mlsem] is not a configuration; mlsem.toml is.
  dir.write("a/pyproject.toml", "[project]\nname = \"a\"\n");
  dir.write("a/b/pyproject.toml", "[tool.mlsem]\nselect = [\"ATT001\"]\n");
  dir.write("a/b/mlsem.toml", "select = [\"ACT001\"]\n");
  EXPECT_EQ(found(".", dir.str()), (Found{{"attn.py", "ATT001"}, {"a/attn.py", "ATT001"}, {"a/b/gelu.py", "ACT001"}}));
}

TEST(CliConfig, SelectorsByPrefixConceptAndPerFileIgnores) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  dir.write("gelu.py", kGelu);
  dir.write("tests/test_attn.py", kAttention);
  // `attention` is the parent concept of ATT001's scaled-dot-product-attention.
  dir.write("mlsem.toml", "ignore = [\"attention\"]\n");
  EXPECT_EQ(found(".", dir.str()), (Found{{"gelu.py", "ACT001"}}));
  dir.write("mlsem.toml", "select = [\"ATT\", \"ACT\"]\n[per-file-ignores]\n\"tests/**\" = [\"ATT001\"]\n\"gelu.py\" = [\"gelu\"]\n");
  EXPECT_EQ(found(".", dir.str()), (Found{{"attn.py", "ATT001"}}));
}

TEST(CliConfig, CommandLineOverridesConfigurationAndSeverityAndConfidenceApply) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  dir.write("gelu.py", kGelu);
  dir.write("mlsem.toml", "select = [\"ACT001\"]\nseverity = { ACT001 = \"error\" }\n");
  EXPECT_EQ(found(".", dir.str()), (Found{{"gelu.py", "ACT001"}}));
  EXPECT_EQ(found("--select ATT001 .", dir.str()), (Found{{"attn.py", "ATT001"}}));
  json report = json::parse(mlsem("--no-cache --format json .", dir.str()).out);
  EXPECT_EQ(report["findings"][0]["severity"], "error");
  double confidence = report["findings"][0]["confidence"];
  dir.write("mlsem.toml", "select = [\"ACT001\"]\nmin-confidence = " + std::to_string(std::min(1.0, confidence + 0.01)) + "\n");
  EXPECT_EQ(found(".", dir.str()), Found{});
  EXPECT_EQ(found("--min-confidence 0.5 .", dir.str()), (Found{{"gelu.py", "ACT001"}}));
}

TEST(CliConfig, ExplicitConfigAndIsolated) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  dir.write("gelu.py", kGelu);
  dir.write("mlsem.toml", "select = [\"ACT001\"]\n");
  dir.write("other.toml", "select = [\"ATT001\"]\n");
  EXPECT_EQ(found("--config other.toml .", dir.str()), (Found{{"attn.py", "ATT001"}}));
  EXPECT_EQ(found("--isolated .", dir.str()), (Found{{"attn.py", "ATT001"}, {"gelu.py", "ACT001"}}));
  EXPECT_EQ(mlsem("--config missing.toml .", dir.str()).code, 2);
}

TEST(CliConfig, BadConfigurationExitsTwoWithFileAndLine) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  struct Case {
    std::string file, text, message;
  };
  for (const Case& c : {Case{"mlsem.toml", "select = [\"ATT001\"]\nbogus = 1\n", "mlsem.toml:2: unknown key 'bogus'"},
                        Case{"mlsem.toml", "\n\nselect = \"ATT001\"\n", "mlsem.toml:3: select: expected a list of strings, got a string"},
                        Case{"mlsem.toml", "min-confidence = 2\n", "mlsem.toml:1: min-confidence: expected a number from 0 to 1"},
                        Case{"mlsem.toml", "ignore = [\n  \"ATT001\",\n  \"NOPE42\",\n]\n", "mlsem.toml:3: no rule, rule prefix or concept 'NOPE42'"},
                        Case{"mlsem.toml", "torch-version = \"two\"\n", "mlsem.toml:1: torch-version: expected a version string"},
                        Case{"mlsem.toml", "severity = { ATT001 = \"fatal\" }\n", "mlsem.toml:1: severity.ATT001: expected"},
                        Case{"pyproject.toml", "[tool.mlsem]\nexclude = [1]\n", "pyproject.toml:2: tool.mlsem.exclude: expected a string, got an integer"},
                        Case{"mlsem.toml", "select = [\n", "mlsem.toml:1:"}}) {
    fs::remove(dir / "mlsem.toml");
    fs::remove(dir / "pyproject.toml");
    dir.write(c.file, c.text);
    Outcome run = mlsem("--no-cache attn.py", dir.str());
    EXPECT_EQ(run.code, 2) << c.text;
    EXPECT_TRUE(contains(run.err, c.message)) << c.text << "\n" << run.err;
  }
  fs::remove(dir / "mlsem.toml");
  dir.write("mlsem.toml", "torch-version = \"2.4\"\nrespect-gitignore = false\n");
  EXPECT_EQ(mlsem("--no-cache attn.py", dir.str()).code, 1);
}

TEST(CliConfig, ExcludesAndGitignore) {
  TempDir dir;
  fs::create_directories(dir / ".git");
  dir.write("attn.py", kAttention);
  dir.write("generated/attn.py", kAttention);
  dir.write("copied/lib/attn.py", kAttention);
  dir.write("scratch_attn.py", kAttention);
  dir.write("keep/scratch_keep.py", kAttention);
  dir.write(".gitignore", "generated/\nscratch_*.py\n");
  dir.write("keep/.gitignore", "!scratch_keep.py\n");
  dir.write("mlsem.toml", "extend-exclude = [\"copied\"]\n");
  EXPECT_EQ(found(".", dir.str()), (Found{{"attn.py", "ATT001"}, {"keep/scratch_keep.py", "ATT001"}}));
  dir.write("mlsem.toml", "respect-gitignore = false\n");
  EXPECT_EQ(found(".", dir.str()).size(), 5u);
  // A file named on the command line is analyzed even when ignored.
  EXPECT_EQ(found("generated/attn.py", dir.str()), (Found{{"generated/attn.py", "ATT001"}}));
}

TEST(ConfigGlob, GitignoreStyleMatching) {
  EXPECT_TRUE(config::glob_match("*.py", "a.py"));
  EXPECT_FALSE(config::glob_match("*.py", "d/a.py"));
  EXPECT_TRUE(config::glob_match("tests/**", "tests/a/b.py"));
  EXPECT_TRUE(config::glob_match("**/gen_*.py", "gen_a.py"));
  EXPECT_TRUE(config::glob_match("**/gen_*.py", "x/y/gen_a.py"));
  EXPECT_FALSE(config::glob_match("**/gen_*.py", "x/y/agen_a.py"));
  EXPECT_TRUE(config::glob_match("a?[0-9].py", "ab7.py"));
  EXPECT_FALSE(config::glob_match("a?[!0-9].py", "ab7.py"));
  EXPECT_FALSE(config::glob_match("a?.py", "a/.py"));
}

TEST(CliSuppressions, LineAndFileDirectives) {
  TempDir dir;
  std::string text = kAttention;
  // On the last line of the multi-line finding.
  text.replace(text.find("probs @ v\n"), 10, "probs @ v  # noqa: ATT001\n");
  dir.write("a.py", text);
  EXPECT_EQ(found("a.py", dir.str()), Found{});
  // A directive for another rule suppresses nothing.
  text = kAttention;
  text.replace(text.find("dim=-1)\n"), 8, "dim=-1)  # mlsem: ignore[ACT001]\n");
  dir.write("a.py", text);
  EXPECT_EQ(found("a.py", dir.str()), (Found{{"a.py", "ATT001"}}));
  dir.write("a.py", std::string("# mlsem: ignore-file[hand-written-attention]\n") + kAttention);
  dir.write("g.py", std::string("# mlsem: ignore-file\n") + kGelu);
  dir.write("h.py", std::string("# mlsem: ignore-file[ATT001]\n") + kGelu);
  EXPECT_EQ(found(".", dir.str()), (Found{{"h.py", "ACT001"}}));
}

TEST(CliSuppressions, UnusedSuppressionsAreReportedOnRequest) {
  TempDir dir;
  std::string text = std::string("# mlsem: ignore-file[ACT001]\n") + kAttention;  // ATT001 now on lines 7-9
  text.replace(text.find("probs @ v\n"), 10, "probs @ v  # noqa: ATT001, E501\n");
  text += "x = 1  # mlsem: ignore[ATT002]\ny = 2  # noqa: E501\n";
  dir.write("a.py", text);
  EXPECT_EQ(found("a.py", dir.str()), Found{});
  Outcome run = mlsem("--no-cache --format json --report-unused-suppressions a.py", dir.str());
  EXPECT_EQ(run.code, 1);
  std::set<std::pair<int, std::string>> unused;
  json report = json::parse(run.out);
  for (const json& f : report["findings"]) {
    EXPECT_EQ(f["rule"], "SUP001");
    unused.insert({f["line"].get<int>(), f["message"].get<std::string>()});
  }
  // Line 1 (ACT001 suppresses nothing) and line 10 (ATT002); not E501, another tool's code.
  EXPECT_EQ(unused, (std::set<std::pair<int, std::string>>{
                        {1, "unused suppression: ACT001 suppresses nothing here"},
                        {10, "unused suppression: ATT002 suppresses nothing here"}}));
}

TEST(DriverSuppressions, FileLevelDirectivesInPythonAndCuda) {
  auto found_codes = driver::find_file_suppressions(
      "x = 1\n# mlsem: ignore-file[ATT001, FUS]\n__global__ void k() {}  // mlsem: ignore-file\ns = 'mlsem: ignore-file'\n");
  ASSERT_EQ(found_codes.size(), 2u);
  EXPECT_EQ(found_codes[2], (std::vector<std::string>{"ATT001", "FUS"}));
  EXPECT_TRUE(found_codes[3].empty());
}

TEST(CliBaseline, RoundTripSurvivesMovesAndReportsOnlyNewFindings) {
  TempDir dir;
  dir.write("a.py", kAttention);
  dir.write("g.py", kGelu);
  Outcome write = mlsem("--no-cache --write-baseline base.json .", dir.str());
  EXPECT_EQ(write.code, 1) << "the report is still printed and fails";
  json baseline = json::parse(read_text(dir / "base.json"));
  EXPECT_EQ(baseline["findings"].size(), 2u);
  Outcome clean = mlsem("--no-cache --baseline base.json .", dir.str());
  EXPECT_EQ(clean.code, 0) << clean.out;
  // The code moves down and gets reformatted: still the accepted finding.
  std::string moved = std::string("import os\n\n\n\n") + kAttention;
  moved.replace(moved.find("q @ k"), 5, "q@k");
  dir.write("a.py", moved);
  EXPECT_EQ(mlsem("--no-cache --baseline base.json .", dir.str()).code, 0);
  // A new attention in another function is new.
  std::string added = moved + "\n\ndef attention_2(q, k, v):\n    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                              "    return F.softmax(s, dim=-1) @ v\n";
  dir.write("a.py", added);
  Outcome fresh = mlsem("--no-cache --format json --baseline base.json .", dir.str());
  EXPECT_EQ(fresh.code, 1);
  json report = json::parse(fresh.out);
  ASSERT_EQ(report["findings"].size(), 1u) << report.dump(1);
  EXPECT_EQ(report["findings"][0]["function"], "attention_2");
  dir.write("bad.json", "{\"findings\": 3}");
  Outcome bad = mlsem("--no-cache --baseline bad.json .", dir.str());
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(contains(bad.err, "--baseline: bad.json: not an mlsem baseline")) << bad.err;
}

// The cache is observed through its entries: an entry altered by the test shows up in
// the report when (and only when) the cache is used.
TEST(CliCache, HitsUntilTheFileOrTheConfigurationChanges) {
  TempDir dir;
  fs::create_directories(dir / "proj/.git");
  dir.write("proj/a.py", kAttention);
  std::string project = dir / "proj";
  Outcome first = mlsem("--format json a.py", project);
  EXPECT_EQ(first.code, 1) << first.err;
  EXPECT_TRUE(fs::exists(dir / "proj/.mlsem_cache/CACHEDIR.TAG"));
  EXPECT_TRUE(read_text(dir / "proj/.mlsem_cache/CACHEDIR.TAG").starts_with("Signature: 8a477f597d28d172789f06886806bc55"));
  std::vector<fs::path> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir / "proj/.mlsem_cache"))
    if (e.path().extension() == ".json") entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  std::string entry = read_text(entries[0].string());
  std::string message = json::parse(first.out)["findings"][0]["message"];
  ASSERT_TRUE(contains(entry, message));
  std::string marked = entry;
  marked.replace(marked.find(message), message.size(), "FROM THE CACHE");
  std::ofstream(entries[0], std::ios::binary) << marked;

  auto shown_message = [&](const std::string& args) {
    Outcome run = mlsem("--format json " + args + " a.py", project);
    return json::parse(run.out)["findings"][0]["message"].get<std::string>();
  };
  EXPECT_EQ(shown_message(""), "FROM THE CACHE");
  EXPECT_EQ(shown_message("--no-cache"), message);
  // Another configuration is another key.
  dir.write("proj/mlsem.toml", "min-confidence = 0.3\n");
  EXPECT_EQ(shown_message(""), message);
  fs::remove(dir / "proj/mlsem.toml");
  EXPECT_EQ(shown_message(""), "FROM THE CACHE");
  // An edited file is analyzed again.
  dir.write("proj/a.py", std::string(kAttention) + "\n");
  EXPECT_EQ(shown_message(""), message);
  // --cache-dir and MLSEM_CACHE_DIR move it.
  mlsem("--cache-dir " + (dir / "elsewhere") + " a.py", project);
  EXPECT_TRUE(fs::exists(dir / "elsewhere/CACHEDIR.TAG"));
  test_support::run_mlsem("analyze a.py", project, "MLSEM_CACHE_DIR='" + (dir / "env") + "'");
  EXPECT_TRUE(fs::exists(dir / "env/CACHEDIR.TAG"));
}

// A CUDA file's findings depend on its headers too: a header edited between two runs
// changes the report although the file itself did not change.
TEST(CliCache, CudaFilesFollowTheirHeaders) {
  TempDir dir;
  fs::create_directories(dir / "proj/.git");
  dir.write("proj/shape.h", "#define LANES_APART 1\n");
  dir.write("proj/k.cu",
            "#include \"shape.h\"\n"
            "__global__ void scale(float* __restrict__ y, const float* __restrict__ x, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i < n) y[i * LANES_APART] = 2.0f * x[i * LANES_APART];\n"
            "}\n");
  std::string project = dir / "proj";
  auto rules = [&]() {
    Outcome run = mlsem("--cuda-path none --format json k.cu", project);
    json report = json::parse(run.out);
    std::set<std::string> out;
    for (const auto& f : report["findings"]) out.insert(f["rule"].get<std::string>());
    return out;
  };
  EXPECT_EQ(rules(), std::set<std::string>{"CU002"});
  // Its reference kernel is measured against the naive CUDA form, the code written here.
  json report = json::parse(mlsem("--cuda-path none --format json k.cu", project).out);
  ASSERT_EQ(report["findings"].size(), 1u);
  EXPECT_TRUE(contains(report["findings"][0]["measured"].get<std::string>(), "than the naive CUDA form"))
      << report["findings"][0]["measured"];
  dir.write("proj/shape.h", "#define LANES_APART 2\n");
  EXPECT_EQ(rules(), std::set<std::string>{"CU001"});
}

}  // namespace
}  // namespace mlsem
