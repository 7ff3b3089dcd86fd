// `mlsem analyze` output formats end to end: GitHub annotations, JSON lines, JUnit,
// SARIF details (help, tags, related locations, fingerprints), statistics, exit codes,
// notebooks and stdin. Positions follow from the sources written here.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/engine.h"
#include "mlsem_cli.h"
#include "report/report.h"

namespace mlsem {
namespace {

using nlohmann::json;
using test_support::contains;
using test_support::Outcome;
using test_support::read_text;
using test_support::TempDir;

Outcome mlsem(const std::string& args, const std::string& dir, const std::string& env = "") {
  return test_support::run_mlsem("analyze --no-cache " + args, dir, env);
}

// ATT001 spans `q @ k` on line 6 (column 14, after "    scores = ") to the end of
// `probs @ v` on line 8 (column 21, exclusive); a second, distinct attention follows.
const char* kAttention = R"(import math
import torch.nn.functional as F


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = F.softmax(scores, dim=-1)
    return probs @ v
)";

const char* kGelu = "import math\nimport torch\n\n\ndef gelu(x):\n"
                    "    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))\n";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(CliFormats, GithubAnnotationCarriesTheFullRange) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  Outcome run = mlsem("--format github attn.py", dir.str());
  EXPECT_EQ(run.code, 1) << run.err;
  std::vector<std::string> lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 1u) << run.out;
  EXPECT_TRUE(lines[0].starts_with(
      "::warning file=attn.py,line=6,endLine=8,col=14,endColumn=21,title=ATT001 hand-written-attention::"))
      << lines[0];
  // The fix is on a second line of the message: escaped, so still one command line.
  EXPECT_TRUE(contains(lines[0], "%0Afix: ")) << lines[0];
}

TEST(CliFormats, GithubEscaping) {
  EXPECT_EQ(report::github_escape_data("50% a:b,c\r\nd"), "50%25 a:b,c%0D%0Ad");
  EXPECT_EQ(report::github_escape_property("dir:x/a,b%.py"), "dir%3Ax/a%2Cb%25.py");
  TempDir dir;
  dir.write("a,b:c.py", kAttention);
  Outcome run = mlsem("--format github 'a,b:c.py'", dir.str());
  EXPECT_TRUE(run.out.starts_with("::warning file=a%2Cb%3Ac.py,line=6,")) << run.out;
}

TEST(CliFormats, JsonLinesHasOneObjectPerFindingAndError) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  dir.write("gelu.py", kGelu);
  dir.write("broken.py", "def f(:\n");
  Outcome run = mlsem("--format json-lines .", dir.str());
  json report = json::parse(mlsem("--format json .", dir.str()).out);
  std::vector<std::string> lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), report["findings"].size() + report["errors"].size());
  ASSERT_EQ(report["findings"].size(), 2u);
  for (size_t i = 0; i < lines.size(); ++i) {
    json item = json::parse(lines[i]);
    bool finding = i < report["findings"].size();
    EXPECT_EQ(item["type"], finding ? "finding" : "error");
    item.erase("type");
    EXPECT_EQ(item, finding ? report["findings"][i] : report["errors"][i - report["findings"].size()]);
  }
}

TEST(CliFormats, JunitFailsOneCasePerFinding) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  Outcome run = mlsem("--format junit attn.py", dir.str());
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(contains(run.out, "<testsuites name=\"mlsem\" tests=\"1\" failures=\"1\" errors=\"0\">")) << run.out;
  EXPECT_TRUE(contains(run.out, "<testcase name=\"ATT001 attn.py:6:14\" classname=\"attn.py\">")) << run.out;
  EXPECT_TRUE(contains(run.out, "<failure type=\"ATT001\"")) << run.out;
  dir.write("clean.py", "x = 1\n");
  Outcome clean = mlsem("--format junit clean.py", dir.str());
  EXPECT_EQ(clean.code, 0);
  EXPECT_TRUE(contains(clean.out, "failures=\"0\"")) << clean.out;
  EXPECT_FALSE(contains(clean.out, "<failure")) << clean.out;
}

TEST(CliFormats, SarifRulesCarryHelpTagsAndResultsTheirEvidence) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  json log = json::parse(mlsem("--format sarif attn.py", dir.str()).out);
  json report = json::parse(mlsem("--format json attn.py", dir.str()).out);
  const json& driver = log["runs"][0]["tool"]["driver"];
  EXPECT_EQ(driver["name"], "mlsem");
  EXPECT_TRUE(driver.contains("informationUri"));
  const json& result = log["runs"][0]["results"][0];
  const json& rule = driver["rules"][result["ruleIndex"].get<size_t>()];
  EXPECT_EQ(rule["id"], "ATT001");
  EXPECT_TRUE(contains(rule["help"]["markdown"], "```python")) << rule["help"];
  EXPECT_TRUE(rule["helpUri"].get<std::string>().ends_with("rules/python/ATT001-hand-written-attention.toml"));
  // Tags: the rule's concept and every concept above it, from the loaded hierarchy.
  std::vector<FileError> errors;
  std::optional<Engine> engine = Engine::load(MLSEM_SOURCE_DIR, errors);
  ASSERT_TRUE(engine);
  std::vector<std::string> tags = rule["properties"]["tags"];
  std::string concept_id = engine->rule("ATT001")->concept_id;
  EXPECT_NE(std::find(tags.begin(), tags.end(), concept_id), tags.end());
  for (const std::string& above : report::concept_ancestors(concept_id, *engine))
    EXPECT_NE(std::find(tags.begin(), tags.end(), above), tags.end()) << above;
  EXPECT_TRUE(rule["properties"].contains("precision"));
  // A related location per present evidence item, at the item's line.
  size_t present = 0;
  for (const json& e : report["findings"][0]["evidence"]) present += e["present"].get<bool>();
  ASSERT_EQ(result["relatedLocations"].size(), present);
  const json& region = result["locations"][0]["physicalLocation"]["region"];
  EXPECT_EQ(region, json({{"startLine", 6}, {"startColumn", 14}, {"endLine", 8}, {"endColumn", 21}}));
  EXPECT_EQ(result["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"], "%SRCROOT%");
  EXPECT_EQ(result["partialFingerprints"]["mlsem/v1"], report["findings"][0]["fingerprint"]);
}

TEST(CliFormats, FingerprintsSurviveMovesButNotChangesToTheMatch) {
  TempDir dir;
  dir.write("attn.py", kAttention);
  auto fingerprint = [&] { return json::parse(mlsem("--format json attn.py", dir.str()).out)["findings"][0]["fingerprint"]; };
  json before = fingerprint();
  // Lines added above, a comment and different spacing inside the match: same identity.
  std::string moved = std::string("import os\n\n\n") + kAttention;
  moved.replace(moved.find("q @ k"), 5, "q  @  k");
  moved.replace(moved.find("probs @ v"), 9, "probs @ v  # the output");
  dir.write("attn.py", moved);
  EXPECT_EQ(fingerprint(), before);
  std::string changed = kAttention;
  changed.replace(changed.find("dim=-1)\n"), 8, "dim=3)\n");
  dir.write("attn.py", changed);
  EXPECT_NE(fingerprint(), before);
}

TEST(CliFormats, StatisticsCountFindingsPerRule) {
  TempDir dir;
  dir.write("a.py", kAttention);
  dir.write("b.py", kAttention);
  dir.write("g.py", kGelu);
  Outcome run = mlsem("--statistics .", dir.str());
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.out, "2  ATT001  hand-written-attention\n1  ACT001  gelu-by-formula\n");
}

TEST(CliFormats, ExitZeroAndFailOn) {
  TempDir dir;
  dir.write("attn.py", kAttention);  // ATT001 is a warning
  EXPECT_EQ(mlsem("attn.py", dir.str()).code, 1);
  EXPECT_EQ(mlsem("--exit-zero attn.py", dir.str()).code, 0);
  EXPECT_EQ(mlsem("--fail-on warning attn.py", dir.str()).code, 1);
  EXPECT_EQ(mlsem("--fail-on error attn.py", dir.str()).code, 0);
  dir.write("mlsem.toml", "severity = { ATT001 = \"error\" }\n");
  EXPECT_EQ(mlsem("--fail-on error attn.py", dir.str()).code, 1);
  Outcome bad = mlsem("--fail-on fatal attn.py", dir.str());
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(contains(bad.err, "--fail-on: expected one of error, info, warning")) << bad.err;
}

// The sample notebook's cells, read here to know where each finding must be shown.
struct NotebookLine {
  uint32_t cell = 0, line = 0;
};
NotebookLine find_in_notebook(const std::string& path, const std::string& text) {
  json notebook = json::parse(read_text(path));
  uint32_t cell = 0;
  for (const json& c : notebook["cells"]) {
    ++cell;
    uint32_t line = 0;
    for (const json& part : c["source"]) {
      ++line;
      if (contains(part.get<std::string>(), text)) return {cell, line};
    }
  }
  return {};
}

TEST(CliInputs, NotebookFindingsNameTheCellAndTheLineInIt) {
  std::string notebook = std::string(MLSEM_SOURCE_DIR) + "/samples/notebooks/attention.ipynb";
  NotebookLine scores = find_in_notebook(notebook, "scores = q @ k");
  NotebookLine gelu = find_in_notebook(notebook, "0.044715");
  ASSERT_GT(scores.cell, 0u);
  ASSERT_GT(gelu.cell, 0u);
  Outcome text = mlsem("samples/notebooks/attention.ipynb", MLSEM_SOURCE_DIR);
  EXPECT_EQ(text.code, 1) << text.err;
  std::string at = "samples/notebooks/attention.ipynb:cell " + std::to_string(scores.cell) + ":" +
                   std::to_string(scores.line) + ":";
  EXPECT_TRUE(contains(text.out, at)) << text.out;
  EXPECT_TRUE(contains(text.out, "no findings") == false);
  json report = json::parse(mlsem("--format json samples/notebooks/attention.ipynb", MLSEM_SOURCE_DIR).out);
  ASSERT_EQ(report["findings"].size(), 2u) << report.dump(1);
  EXPECT_TRUE(report["errors"].empty()) << "magics, shell lines and a %%cell are skipped: " << report["errors"].dump();
  for (const json& f : report["findings"]) {
    NotebookLine expected = f["rule"] == "ATT001" ? scores : gelu;
    EXPECT_EQ(f["cell"], expected.cell) << f.dump();
    EXPECT_EQ(f["line"], expected.line) << f.dump();
  }
  Outcome github = mlsem("--format github samples/notebooks/attention.ipynb", MLSEM_SOURCE_DIR);
  EXPECT_TRUE(contains(github.out, "line=" + std::to_string(gelu.line) + ",")) << github.out;
  EXPECT_TRUE(contains(github.out, "(cell " + std::to_string(gelu.cell) + ")")) << github.out;
}

TEST(CliInputs, BrokenNotebookIsAFileError) {
  TempDir dir;
  dir.write("nb.ipynb", "{\"cells\": [");
  Outcome run = mlsem("nb.ipynb", dir.str());
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(contains(run.out, "nb.ipynb: error: not a Jupyter notebook")) << run.out;
}

TEST(CliInputs, StdinIsAnalyzedUnderItsGivenName) {
  TempDir dir;
  dir.write("src.txt", kAttention);
  Outcome run = mlsem("--format json --stdin-filename pkg/attn.py - < src.txt", dir.str());
  EXPECT_EQ(run.code, 1) << run.err;
  json report = json::parse(run.out);
  ASSERT_EQ(report["findings"].size(), 1u);
  EXPECT_EQ(report["findings"][0]["path"], "pkg/attn.py");
  EXPECT_EQ(report["findings"][0]["line"], 6);
  // The configuration for that name applies.
  dir.write("pkg/mlsem.toml", "ignore = [\"ATT\"]\n");
  EXPECT_EQ(mlsem("--stdin-filename pkg/attn.py - < src.txt", dir.str()).code, 0);
  Outcome unnamed = mlsem("- < src.txt", dir.str());
  EXPECT_TRUE(unnamed.out.starts_with("-:6:14: ATT001")) << unnamed.out;
  EXPECT_EQ(mlsem("--stdin-filename x.py src.txt", dir.str()).code, 2);
}

}  // namespace
}  // namespace mlsem
