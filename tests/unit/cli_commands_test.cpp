// The `mlsem` binary as a user runs it: exit codes, output formats, usage errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "driver/driver.h"
#include "mlsem_cli.h"
#include "temp_dir.h"

namespace mlsem {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using test_support::TempDir;

using test_support::Outcome;
using test_support::contains;

Outcome mlsem(const std::string& args, const std::string& dir = ".", const std::string& env = "") {
  return test_support::run_mlsem(args, dir, env);
}

// The ATT001 finding spans the matched nodes: from `q @ k` on line 6 (column 14,
// after "    scores = ") to the end of `probs @ v` on line 8 (column 21, exclusive).
const char* kAttention = R"(import math
import torch.nn.functional as F


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = F.softmax(scores, dim=-1)
    return probs @ v
)";

const char* kClean = "def add(a, b):\n    return a + b\n";

TEST(CliUsage, VersionAndHelp) {
  Outcome shown = mlsem("--version");
  EXPECT_EQ(shown.code, 0);
  EXPECT_EQ(shown.out, "mlsem " + std::string(mlsem::version()) + "\n");
  for (const char* args : {"--help", "help", "help analyze", "analyze --help", "kernels -h", "help ir"}) {
    Outcome help = mlsem(args);
    EXPECT_EQ(help.code, 0) << args;
    EXPECT_TRUE(contains(help.out, "usage: mlsem")) << args << "\n" << help.out;
  }
  EXPECT_TRUE(contains(mlsem("analyze --help").out, "--min-confidence"));
}

TEST(CliUsage, MistakesExitTwoWithAMessage) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {Case{"", "no command given"},
                        Case{"frobnicate", "unknown command 'frobnicate'"},
                        Case{"--frobnicate", "unknown option '--frobnicate'"},
                        Case{"analyze --bogus x.py", "unknown option '--bogus'"},
                        Case{"analyze", "no paths given"},
                        Case{"analyze --format xml x.py", "--format: expected one of"},
                        Case{"analyze --min-confidence 2 x.py", "--min-confidence"},
                        Case{"analyze -j many x.py", "-j"},
                        Case{"analyze --color sometimes x.py", "--color"},
                        Case{"analyze x.py --output", "needs a value"},
                        Case{"analyze --select NOPE999 x.py", "no rule 'NOPE999'"},
                        Case{"explain NOPE999", "no rule 'NOPE999'"},
                        Case{"explain", "expected one rule"},
                        Case{"help frobnicate", "unknown command 'frobnicate'"},
                        Case{"kernels frob", "unknown action 'frob'"},
                        Case{"kernels show no_such_kernel", "no kernel 'no_such_kernel'"},
                        Case{"ir notes.txt", "not a .py file"}}) {
    Outcome run = mlsem(c.args);
    EXPECT_EQ(run.code, 2) << c.args;
    EXPECT_TRUE(contains(run.err, c.message)) << c.args << "\n" << run.err;
    EXPECT_TRUE(run.out.empty()) << c.args;
  }
}

TEST(CliAnalyze, CleanFileExitsZero) {
  TempDir dir;
  dir.write("clean.py", kClean);
  Outcome run = mlsem("analyze clean.py", dir.str());
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "no findings in 1 file\n");
}

TEST(CliAnalyze, FindingExitsOneWithACompilerStyleReport) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  Outcome run = mlsem("analyze attn.py", dir.str());
  EXPECT_EQ(run.code, 1) << run.err;
  EXPECT_TRUE(run.out.starts_with("attn.py:6:14: ATT001 [scaled-dot-product-attention] ")) << run.out;
  // The first line of the range is marked from column 14 to its last character:
  // `q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))` is 47 characters.
  EXPECT_TRUE(contains(run.out, "\n6 |     scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n  | " +
                                    std::string(13, ' ') + std::string(47, '^') + "\n"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "\n  + softmax over the last dim")) << run.out;
  EXPECT_TRUE(contains(run.out, "\n  kernel: kernels/attention_fwd")) << run.out;
  EXPECT_TRUE(contains(run.out, "\n1 finding (1 warning) in 1 file\n")) << run.out;
  EXPECT_FALSE(contains(run.out, "\x1b[")) << "no colour into a pipe";
  EXPECT_TRUE(contains(mlsem("analyze --color always attn.py", dir.str()).out, "\x1b["));
}

TEST(CliAnalyze, RulesThePinTurnsOffAreNamedInANote) {
  TempDir dir;
  dir.write(".git/HEAD", "ref: refs/heads/main\n");
  dir.write("README.md", "# Model\n\nTested on PyTorch 1.10.\n");
  dir.write("attn.py", kAttention);
  dir.write("clean.py", kClean);
  // ATT001's fix (SDPA) needs torch 2.0: off for both files, and the note says so.
  Outcome pinned = mlsem("analyze attn.py clean.py", dir.str());
  EXPECT_EQ(pinned.code, 0) << pinned.out << pinned.err;
  EXPECT_TRUE(contains(pinned.out, "no findings in 2 files\nnote: 2 files target torch 1.10 (the project's requirements, CI or README): "))
      << pinned.out;
  // ACT001's fix needs 1.12, ATT001's 2.0; preview rules run only with --preview, and then
  // OPT001 (2.0) is off while PRC001 (1.10, what the project has) is not.
  EXPECT_TRUE(contains(pinned.out, "): ACT001, ATT001, ")) << pinned.out;
  EXPECT_FALSE(contains(pinned.out, "OPT001")) << pinned.out;
  Outcome preview = mlsem("analyze --preview attn.py clean.py", dir.str());
  EXPECT_TRUE(contains(preview.out, ", OPT001, ")) << preview.out;
  EXPECT_FALSE(contains(preview.out, "PRC001")) << preview.out;
  // Only the rules that run are named: a selection leaves the others out.
  Outcome selected = mlsem("analyze --select ATT001 attn.py", dir.str());
  EXPECT_TRUE(contains(selected.out, "note: 1 file targets torch 1.10 (the project's requirements, CI or README): ATT001 need"))
      << selected.out;
  // A version the user chose is no surprise: no note, and the rule runs where it may.
  Outcome chosen = mlsem("analyze --torch-version 2.4 attn.py", dir.str());
  EXPECT_EQ(chosen.code, 1);
  EXPECT_FALSE(contains(chosen.out, "note:")) << chosen.out;
  EXPECT_FALSE(contains(mlsem("analyze --torch-version 1.8 attn.py", dir.str()).out, "note:"));

  // The machine formats carry the same note: JSON's "notes", a JSON line of type "note",
  // SARIF's tool configuration notifications.
  auto json_run = nlohmann::json::parse(mlsem("analyze --format json --select ATT001 attn.py", dir.str()).out);
  ASSERT_EQ(json_run["notes"].size(), 1u) << json_run.dump();
  const auto& note = json_run["notes"][0];
  EXPECT_EQ(note["kind"], "torch-pin");
  EXPECT_EQ(note["torch"], "1.10");
  EXPECT_EQ(note["files"], 1);
  EXPECT_EQ(note["rules"], nlohmann::json::array({"ATT001"}));
  EXPECT_TRUE(contains(note["message"].get<std::string>(), "ATT001 need a newer torch")) << note.dump();
  EXPECT_TRUE(nlohmann::json::parse(mlsem("analyze --format json --torch-version 2.4 attn.py", dir.str()).out)["notes"].empty());
  std::string lines = mlsem("analyze --format json-lines --select ATT001 attn.py", dir.str()).out;
  bool note_line = false;
  for (size_t start = 0, end; start < lines.size(); start = end + 1) {
    end = lines.find('\n', start);
    if (end == std::string::npos) end = lines.size();
    if (end == start) continue;
    auto line = nlohmann::json::parse(lines.substr(start, end - start));
    if (line["type"] == "note") note_line = line["torch"] == "1.10" && line["rules"] == nlohmann::json::array({"ATT001"});
  }
  EXPECT_TRUE(note_line) << lines;
  auto sarif = nlohmann::json::parse(mlsem("analyze --format sarif --select ATT001 attn.py", dir.str()).out);
  const auto& invocation = sarif["runs"][0]["invocations"][0];
  ASSERT_TRUE(invocation.contains("toolConfigurationNotifications")) << invocation.dump();
  const auto& notification = invocation["toolConfigurationNotifications"][0];
  EXPECT_EQ(notification["level"], "note");
  EXPECT_EQ(notification["descriptor"]["id"], "torch-pin");
  EXPECT_EQ(notification["properties"]["rules"], nlohmann::json::array({"ATT001"}));
  EXPECT_TRUE(contains(notification["message"]["text"].get<std::string>(), "torch 1.10")) << notification.dump();
  std::string github = mlsem("analyze --format github --select ATT001 attn.py", dir.str()).out;
  EXPECT_TRUE(contains(github, "::notice title=mlsem::1 file targets torch 1.10 (the project's requirements, CI or README)"))
      << github;
}

TEST(CliAnalyze, FileErrorsExitOneAndTheRestIsReported) {
  TempDir dir;
  dir.write("clean.py", kClean);
  dir.write("bin.py", std::string("\0\0", 2));
  Outcome run = mlsem("analyze . missing.py", dir.str());
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(contains(run.out, "bin.py:1:1: error: binary file")) << run.out;
  EXPECT_TRUE(contains(run.out, "missing.py: error: no such file or directory")) << run.out;
  EXPECT_TRUE(contains(run.out, "no findings in 1 file; 2 file errors")) << run.out;
}

TEST(CliAnalyze, JsonReport) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  Outcome run = mlsem("analyze --format json attn.py", dir.str());
  EXPECT_EQ(run.code, 1) << run.err;
  json root = json::parse(run.out);
  ASSERT_EQ(root["findings"].size(), 1u);
  EXPECT_EQ(root["findings"][0]["rule"], "ATT001");
  EXPECT_EQ(root["findings"][0]["path"], "attn.py");
  EXPECT_EQ(root["findings"][0]["line"], 6);
  EXPECT_EQ(root["findings"][0]["column"], 14);
  EXPECT_EQ(root["findings"][0]["end_line"], 8);
  EXPECT_EQ(root["findings"][0]["end_column"], 21);
  EXPECT_EQ(root["findings"][0]["function"], "attention");
  EXPECT_TRUE(root["errors"].empty());
}

TEST(CliAnalyze, SarifReportToAnOutputFile) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  Outcome run = mlsem("analyze --format=sarif -o out.sarif attn.py", dir.str());
  EXPECT_EQ(run.code, 1) << run.err;
  EXPECT_TRUE(run.out.empty()) << "the report goes to the file only";
  std::ifstream file(dir.str() + "/out.sarif");
  json log = json::parse(file);
  EXPECT_EQ(log["version"], "2.1.0");
  const json& result = log["runs"][0]["results"][0];
  EXPECT_EQ(result["ruleId"], "ATT001");
  EXPECT_EQ(result["locations"][0]["physicalLocation"]["region"]["startLine"], 6);
  // The rule each result names is described in tool.driver.rules at ruleIndex.
  EXPECT_EQ(log["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"].get<size_t>()]["id"], "ATT001");
}

TEST(CliAnalyze, UnwritableOutputExitsTwo) {
  TempDir dir;
  dir.write("clean.py", kClean);
  Outcome run = mlsem("analyze clean.py --output no/such/dir/out.txt", dir.str());
  EXPECT_EQ(run.code, 2);
  EXPECT_TRUE(contains(run.err, "cannot write")) << run.err;
}

TEST(CliAnalyze, SelectIgnoreAndMinConfidence) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  EXPECT_EQ(mlsem("analyze --select ATT001 attn.py", dir.str()).code, 1);
  EXPECT_EQ(mlsem("analyze --select hand-written-attention attn.py", dir.str()).code, 1);
  Outcome ignored = mlsem("analyze --ignore ATT001 attn.py", dir.str());
  EXPECT_EQ(ignored.code, 0);
  EXPECT_EQ(ignored.out, "no findings in 1 file\n");
  // A finding is kept at exactly its own confidence and dropped just above it.
  double confidence = json::parse(mlsem("analyze --format json attn.py", dir.str()).out)["findings"][0]["confidence"];
  char at[32], above[32];
  std::snprintf(at, sizeof at, "%.17g", confidence);
  std::snprintf(above, sizeof above, "%.17g", confidence + 1e-6);
  EXPECT_EQ(mlsem(std::string("analyze --min-confidence ") + at + " attn.py", dir.str()).code, 1);
  if (confidence + 1e-6 <= 1.0) EXPECT_EQ(mlsem(std::string("analyze --min-confidence ") + above + " attn.py", dir.str()).code, 0);
}

TEST(CliAnalyze, JobCountDoesNotChangeTheOutput) {
  TempDir dir;
  for (int i = 0; i < 12; ++i) dir.write("pkg" + std::to_string(i % 3) + "/m" + std::to_string(i) + ".py", kAttention);
  dir.write("pkg1/bad.py", "def f(:\n");
  Outcome one = mlsem("analyze -j 1 --format json .", dir.str());
  Outcome four = mlsem("analyze -j4 --format json .", dir.str());
  EXPECT_EQ(one.code, 1);
  EXPECT_EQ(json::parse(one.out)["findings"].size(), 12u);
  EXPECT_EQ(one.out, four.out);
}

TEST(CliData, BadRuleDataExitsTwoNamingTheFile) {
  TempDir data, dir;
  data.write("concepts/c.toml", "");
  data.write("patterns/p.toml", "");
  data.write("rules/broken.toml", "id = \"X001\"\nname = [unclosed\n");
  dir.write("clean.py", kClean);
  Outcome run = mlsem("--data '" + data.str() + "' analyze clean.py", dir.str());
  EXPECT_EQ(run.code, 2);
  EXPECT_TRUE(contains(run.err, "broken.toml:")) << run.err;
  // $MLSEM_DATA names the data directory too; --data wins over it.
  Outcome from_env = mlsem("rules", dir.str(), "MLSEM_DATA='" + data.str() + "'");
  EXPECT_EQ(from_env.code, 2);
  EXPECT_TRUE(contains(from_env.err, "broken.toml:")) << from_env.err;
  EXPECT_EQ(mlsem("--data '" MLSEM_SOURCE_DIR "' rules", dir.str(), "MLSEM_DATA='" + data.str() + "'").code, 0);
}

TEST(CliDocs, RulesExplainConcepts) {
  Outcome rules = mlsem("rules");
  EXPECT_EQ(rules.code, 0) << rules.err;
  EXPECT_TRUE(rules.out.starts_with("ID")) << rules.out;
  EXPECT_TRUE(contains(rules.out, "ATT001")) << rules.out;
  json list = json::parse(mlsem("rules --format json").out);
  ASSERT_TRUE(list.is_array());
  bool listed = false;
  for (const json& rule : list) listed |= rule["id"] == "ATT001" && rule["name"] == "hand-written-attention";
  EXPECT_TRUE(listed);

  Outcome by_id = mlsem("explain ATT001"), by_name = mlsem("explain hand-written-attention");
  EXPECT_EQ(by_id.code, 0);
  EXPECT_EQ(by_id.out, by_name.out);
  EXPECT_TRUE(by_id.out.starts_with("ATT001 hand-written-attention (warning")) << by_id.out;
  EXPECT_TRUE(contains(by_id.out, "\nConcept\n")) << by_id.out;

  Outcome concepts = mlsem("concepts");
  EXPECT_EQ(concepts.code, 0);
  EXPECT_TRUE(contains(concepts.out, "scaled-dot-product-attention")) << concepts.out;
}

TEST(CliIr, DumpsTheIrOfAFile) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  Outcome run = mlsem("ir attn.py", dir.str());
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "softmax")) << run.out;
  EXPECT_TRUE(contains(run.out, "matmul")) << run.out;
  Outcome missing = mlsem("ir missing.py", dir.str());
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(contains(missing.err, "no such file")) << missing.err;
}

TEST(CliKernels, ListAndShow) {
  Outcome list = mlsem("kernels list");
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_TRUE(contains(list.out, "attention_fwd")) << list.out;
  Outcome show = mlsem("kernels show attention_fwd");
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_TRUE(contains(show.out, "Measured ladder")) << show.out;
  EXPECT_TRUE(contains(show.out, "NVIDIA H100 80GB HBM3")) << show.out;  // a committed results file
  EXPECT_FALSE(contains(show.out, "results:begin")) << show.out;  // the README's tables, replaced
}

}  // namespace
}  // namespace mlsem

namespace mlsem {
namespace {

// FUS003 is a preview rule: off by default, on with --preview or when selected by name.
TEST(CliPreview, PreviewRulesRunOnlyWhenAskedFor) {
  test_support::TempDir dir;
  dir.write("chain.py", "import torch\n\n\ndef f(x: torch.Tensor):\n    return torch.exp(torch.tanh(x) * 2.0 + 1.0)\n");
  // FUS003 is a preview rule and a hint (below the default --min-confidence): even with
  // every confidence shown, it runs only under --preview or --select.
  EXPECT_EQ(mlsem("analyze --min-confidence 0 chain.py", dir.str()).code, 0);
  EXPECT_EQ(mlsem("analyze --preview chain.py", dir.str()).code, 0);
  Outcome preview = mlsem("analyze --preview --min-confidence 0 chain.py", dir.str());
  EXPECT_EQ(preview.code, 1);
  EXPECT_NE(preview.out.find("FUS003"), std::string::npos) << preview.out;
  EXPECT_NE(mlsem("analyze --select FUS003 --min-confidence 0 chain.py", dir.str()).out.find("FUS003"), std::string::npos);
}

}  // namespace
}  // namespace mlsem
