// Bad inputs: each gets a clear error or the right result, and the other files are
// still analyzed (docs/hardening.md lists them and where else they are tested).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "driver/driver.h"
#include "driver/files.h"
#include "engine/engine.h"
#include "report/report.h"
#include "repo_engine.h"
#include "temp_dir.h"

namespace mlsem {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;

// Hand-written attention, its finding on lines 6..8 (line 6 is `scores = ...`).
const char* kAttention = R"(import math
import torch.nn.functional as F


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = F.softmax(scores, dim=-1)
    return probs @ v
)";

// The repo's own rules, loaded once for the tests that analyze.
using BadInputs = test_support::RepoEngine;

using Place = std::tuple<std::string, uint32_t, uint32_t, uint32_t, uint32_t>;

std::vector<Place> places(const Report& report) {
  std::vector<Place> out;
  for (const Finding& f : report.findings)
    out.emplace_back(f.rule, f.range.begin.line, f.range.begin.column, f.range.end.line, f.range.end.column);
  return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
  return text;
}

Report analyze_text(const Engine& engine, const std::string& path, const std::string& text, Sources* sources = nullptr) {
  SourceFile file{path, text};
  return analyze_source(file, engine, {}, sources);
}

TEST_F(BadInputs, CrlfAndAByteOrderMarkGiveTheSameFindingsAsPlainText) {
  Report plain = analyze_text(engine(), "a.py", kAttention);
  ASSERT_EQ(plain.findings.size(), 1u);
  EXPECT_EQ(plain.findings[0].rule, "ATT001");
  Sources sources;
  Report crlf = analyze_text(engine(), "a.py", "\xEF\xBB\xBF" + replace_all(kAttention, "\n", "\r\n"), &sources);
  EXPECT_EQ(places(crlf), places(plain));
  EXPECT_TRUE(crlf.errors.empty()) << crlf.errors[0].line << ": " << crlf.errors[0].message;
  // The excerpt shows the line without its carriage return.
  std::string text = report::to_text(crlf, sources, {});
  EXPECT_NE(text.find("6 |     scores = q @ k.transpose(-2, -1)"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  // CR alone (old Mac line ends) is one line per CR as well.
  Report cr = analyze_text(engine(), "a.py", replace_all(kAttention, "\n", "\r"));
  EXPECT_EQ(places(cr), places(plain));
}

TEST_F(BadInputs, TabsMixedWithSpacesIndentLikePython) {
  // The body indented by a tab, a nested block by a tab and four spaces: Python reads
  // both consistently (tab size 8 and 1 agree), and so must the frontend.
  std::string mixed = R"(import math
import torch.nn.functional as F


def attention(q, k, v, flag):
	if flag:
	    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
	    probs = F.softmax(scores, dim=-1)
	    return probs @ v
	return q
)";
  Sources sources;
  Report report = analyze_text(engine(), "a.py", mixed, &sources);
  ASSERT_EQ(report.findings.size(), 1u);
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.rule, "ATT001");
  EXPECT_EQ(f.range.begin.line, 7u);
  EXPECT_EQ(f.range.begin.column, 15u);  // bytes: tab, 4 spaces, "scores = " -> column 15
  EXPECT_EQ(f.range.end.line, 9u);
  // Carets line up under the expanded tab.
  std::string text = report::to_text(report, sources, {});
  size_t shown = text.find("7 |");
  ASSERT_NE(shown, std::string::npos) << text;
  size_t line_end = text.find('\n', shown);
  size_t caret_line = line_end + 1;
  std::string code = text.substr(shown, line_end - shown);
  std::string carets = text.substr(caret_line, text.find('\n', caret_line) - caret_line);
  EXPECT_EQ(code.find('\t'), std::string::npos) << code;
  EXPECT_EQ(code.find("q @ k"), carets.find('^')) << code << "\n" << carets;
}

TEST_F(BadInputs, AOneMegabyteLineAndAHundredThousandLineFile) {
  TempDir dir;
  dir.write("long_line.py", "DATA = '" + std::string(1 << 20, 'a') + "'\n" + kAttention);
  std::string many;
  for (int i = 0; i < 100000; ++i) many += "x" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  dir.write("many_lines.py", many + kAttention);
  dir.write("small.py", kAttention);
  Report report = analyze_paths({dir.str()}, engine(), {});
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].path << ": " << report.errors[0].message;
  EXPECT_EQ(report.files_analyzed, 3u);
  ASSERT_EQ(report.findings.size(), 3u);
  EXPECT_EQ(report.findings[0].path, dir / "long_line.py");
  EXPECT_EQ(report.findings[0].range.begin.line, 7u);
  EXPECT_EQ(report.findings[1].path, dir / "many_lines.py");
  EXPECT_EQ(report.findings[1].range.begin.line, 100006u);
  EXPECT_EQ(report.findings[2].range.begin.line, 6u);
}

TEST_F(BadInputs, AFindingOnAMegabyteLineShowsAWindowOfIt) {
  // Minified code: one line holding everything. The excerpt shows the part around the
  // finding, not a megabyte of text and a megabyte of spaces.
  std::string pad = "x = [" + std::string(1 << 20, '1') + "]; ";
  pad = replace_all(pad, "11", "1,");
  Sources sources;
  Report report = analyze_text(engine(), "min.py",
                               "import torch.nn.functional as F\ndef f(q, k, v): " + pad +
                                   "return F.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1) @ v\n",
                               &sources);
  ASSERT_EQ(report.findings.size(), 1u);
  std::string text = report::to_text(report, sources, {});
  EXPECT_LT(text.size(), 4096u);
  EXPECT_NE(text.find("q @ k.transpose(-2, -1)"), std::string::npos) << text.substr(0, 2000);
}

TEST(BadInputsRead, AFileThatGrowsAfterItsSizeWasTakenIsReadToTheLimitOnly) {
  // /proc files report a size of 0 and then read as text: to the reader, a file that
  // grew between stat and read. The limit still holds.
  SourceFile file;
  auto error = read_source_file("/proc/self/status", 64, file);
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("too large"), std::string::npos) << error->message;
  error = read_source_file("/proc/self/status", 1 << 20, file);
  EXPECT_FALSE(error) << error->message;
  EXPECT_NE(file.text.find("Name:"), std::string::npos);
}

TEST_F(BadInputs, AFileThatDisappearsBeforeItIsReadIsAnErrorAndTheRestIsAnalyzed) {
  // The walk lists the files, then one is deleted before the reads: the same state a
  // file deleted while mlsem runs leaves.
  TempDir dir;
  dir.write("a.py", kAttention);
  dir.write("gone.py", kAttention);
  std::vector<FileError> walk_errors;
  std::vector<std::string> files = driver::collect_files({dir.str()}, walk_errors);
  ASSERT_EQ(files.size(), 2u);
  fs::remove(dir / "gone.py");
  SourceFile file;
  auto error = read_source_file(dir / "gone.py", 1 << 20, file);
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("no such file"), std::string::npos) << error->message;
  Report report = analyze_paths(files, engine(), {});
  EXPECT_EQ(report.files_analyzed, 1u);
  EXPECT_EQ(report.findings.size(), 1u);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].path, dir / "gone.py");
}

TEST_F(BadInputs, ADirectoryWithUnreadableEntries) {
  TempDir dir;
  dir.write("good.py", kAttention);
  dir.write("locked/inner.py", kAttention);
  std::string secret = dir.write("secret.py", kAttention);
  fs::permissions(dir / "locked", fs::perms::none);
  fs::permissions(secret, fs::perms::none);
  Report report = analyze_paths({dir.str()}, engine(), {});
  // Whatever the permissions do, the readable file is analyzed.
  bool good = false;
  for (const Finding& f : report.findings) good = good || f.path == dir / "good.py";
  EXPECT_TRUE(good);
  if (access((dir / "locked").c_str(), R_OK) == 0 || access(secret.c_str(), R_OK) == 0)
    GTEST_SKIP() << "running as root: chmod 000 does not stop reads, so the unreadable entries cannot be tested here";
  EXPECT_EQ(report.files_analyzed, 1u);
  ASSERT_EQ(report.errors.size(), 2u);
  EXPECT_EQ(report.errors[0].path, dir / "locked");
  EXPECT_NE(report.errors[0].message.find("cannot read directory"), std::string::npos) << report.errors[0].message;
  EXPECT_EQ(report.errors[1].path, secret);
  EXPECT_NE(report.errors[1].message.find("cannot read"), std::string::npos) << report.errors[1].message;
}

TEST_F(BadInputs, NulBytesInACudaFile) {
  TempDir dir;
  const char kernel[] = "__global__ void k(float* x) {\n  x[0] = 1;\0\n}\n";
  std::string cu = dir.write("k.cu", std::string(kernel, sizeof kernel - 1));
  std::string py = dir.write("a.py", kAttention);
  SourceFile file;
  auto error = read_source_file(cu, 1 << 20, file);
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("binary file (contains a NUL byte)"), std::string::npos) << error->message;
  EXPECT_EQ(error->line, 2u);
  Report report = analyze_paths({cu, py}, engine(), {});
  EXPECT_EQ(report.files_analyzed, 1u);
  EXPECT_EQ(report.findings.size(), 1u);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].path, cu);
#ifdef MLSEM_WITH_CUDA
  EXPECT_NE(report.errors[0].message.find("NUL byte"), std::string::npos) << report.errors[0].message;
#endif
}

}  // namespace
}  // namespace mlsem
