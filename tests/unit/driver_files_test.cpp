// The driver's file handling: which files a walk finds, which reads fail and how,
// and that analyze_paths turns every failure into an error entry and goes on.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "driver/driver.h"
#include "driver/files.h"
#include "engine/engine.h"
#include "repo_engine.h"
#include "temp_dir.h"

namespace mlsem {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

const char* kAttention = R"(import math
import torch.nn.functional as F


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = F.softmax(scores, dim=-1)
    return probs @ v
)";

// The repo's own rules, loaded once for the tests that analyze.
using DriverAnalyze = test_support::RepoEngine;

std::optional<FileError> read(const std::string& path, size_t max_bytes = 1 << 20) {
  SourceFile file;
  return read_source_file(path, max_bytes, file);
}

TEST(DriverRead, AcceptsUtf8TextAndKeepsItExactly) {
  TempDir dir;
  std::string text = "# h\xc3\xa9llo \xe2\x86\x92 \xf0\x9f\x94\xa5\nx = 1\n";
  std::string path = dir.write("ok.py", text);
  SourceFile file;
  EXPECT_EQ(read_source_file(path, 1 << 20, file), std::nullopt);
  EXPECT_EQ(file.text, text);
  EXPECT_EQ(file.path, path);
}

TEST(DriverRead, BinaryFileIsAnErrorAtItsNulByte) {
  TempDir dir;
  std::string path = dir.write("blob.py", std::string("x = 1\nab\0cd\n", 12));
  auto error = read(path);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->path, path);
  EXPECT_NE(error->message.find("binary"), std::string::npos) << error->message;
  EXPECT_EQ(error->line, 2u);
  EXPECT_EQ(error->column, 3u);
}

TEST(DriverRead, NonUtf8FileIsAnErrorAtTheFirstBadByte) {
  TempDir dir;
  // Latin-1 "é" (0xE9) followed by ASCII is not UTF-8.
  auto error = read(dir.write("latin1.py", "x = 1\ns = 'caf\xe9'\n"));
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("UTF-8"), std::string::npos) << error->message;
  EXPECT_EQ(error->line, 2u);
  EXPECT_EQ(error->column, 9u);
  // Overlong encodings and UTF-16 surrogates are not UTF-8 either.
  EXPECT_TRUE(read(dir.write("overlong.py", "a = '\xc0\xaf'\n")));
  EXPECT_TRUE(read(dir.write("surrogate.py", "a = '\xed\xa0\x80'\n")));
  EXPECT_TRUE(read(dir.write("truncated.py", "a = '\xe2\x86")));
}

TEST(DriverRead, FileOverTheSizeLimitIsAnError) {
  TempDir dir;
  EXPECT_EQ(read(dir.write("at_limit.py", std::string(100, '#')), 100), std::nullopt);
  auto error = read(dir.write("over_limit.py", std::string(101, '#')), 100);
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("too large"), std::string::npos) << error->message;
}

TEST(DriverRead, MissingPathIsAnError) {
  TempDir dir;
  auto error = read(dir / "nowhere.py");
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("no such file"), std::string::npos) << error->message;
}

TEST(DriverRead, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  std::string path = dir / "pipe.py";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto error = read(path);
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("not a regular file"), std::string::npos) << error->message;
}

TEST(DriverRead, UnreadableFileIsAnError) {
  TempDir dir;
  std::string path = dir.write("secret.py", "x = 1\n");
  fs::permissions(path, fs::perms::none);
  if (access(path.c_str(), R_OK) == 0) GTEST_SKIP() << "running as root: chmod 000 does not stop reads";
  auto error = read(path);
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("cannot read"), std::string::npos) << error->message;
}

// Every directory a walk must not enter, each holding a .py file.
const std::vector<std::string> kSkipped = {
    ".git/c.py",          ".hg/c.py",         ".svn/c.py",          "venv/c.py",
    ".venv/c.py",         "env/c.py",         "build/c.py",         "build-release/c.py",
    "node_modules/c.py",  "__pycache__/c.py", ".tox/c.py",          ".mypy_cache/c.py",
    "lib/site-packages/c.py", "my_environment/c.py"};

TEST(DriverWalk, FindsSourcesAndSkipsToolingDirectories) {
  TempDir dir;
  dir.write("a.py", "");
  dir.write("pkg/b.py", "");
  dir.write("pkg/notes.txt", "");
  dir.write("pkg/stub.pyi", "");
  for (const std::string& file : kSkipped) dir.write(file, "");
  dir.write("my_environment/pyvenv.cfg", "home = /usr/bin\n");  // a venv by its marker, not its name
  std::vector<FileError> errors;
  std::vector<std::string> files = driver::collect_files({dir.path().string()}, errors);
  EXPECT_TRUE(errors.empty());
  std::vector<std::string> expected = {dir / "a.py", dir / "pkg/b.py"};
  EXPECT_EQ(files, expected);
}

TEST(DriverWalk, ExplicitlyNamedSkippedDirectoryIsWalked) {
  TempDir dir;
  dir.write("build/gen.py", "");
  std::vector<FileError> errors;
  EXPECT_EQ(driver::collect_files({dir / "build"}, errors), std::vector<std::string>{dir / "build/gen.py"});
}

TEST(DriverWalk, SymlinkedDirectoriesAreNotFollowed) {
  TempDir dir, outside;
  dir.write("pkg/b.py", "");
  outside.write("x.py", "");
  fs::create_directory_symlink(dir.path(), dir.path() / "pkg/loop");  // a cycle back to the root
  fs::create_directory_symlink(outside.path(), dir.path() / "elsewhere");
  std::vector<FileError> errors;
  std::vector<std::string> files = driver::collect_files({dir.path().string()}, errors);
  EXPECT_EQ(files, std::vector<std::string>{dir / "pkg/b.py"});
  EXPECT_TRUE(errors.empty());
}

TEST(DriverWalk, NamedFilesAreTakenOnceAndOthersAreErrors) {
  TempDir dir;
  std::string a = dir.write("a.py", "");
  std::string text = dir.write("readme.txt", "");
  std::vector<FileError> errors;
  std::vector<std::string> files = driver::collect_files({a, dir / "missing", text, dir.path().string(), a}, errors);
  EXPECT_EQ(files, std::vector<std::string>{a});
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].path, dir / "missing");
  EXPECT_NE(errors[0].message.find("no such file"), std::string::npos);
  EXPECT_EQ(errors[1].path, text);
  EXPECT_NE(errors[1].message.find("not a Python"), std::string::npos);
}

TEST(DriverWalk, CudaSourcesOnlyWhenCudaSupportIsBuilt) {
  TempDir dir;
  std::string kernel = dir.write("k.cu", ""), header = dir.write("k.cuh", "");
  std::vector<FileError> errors;
  std::vector<std::string> walked = driver::collect_files({dir.path().string()}, errors);
  std::vector<std::string> named = driver::collect_files({kernel}, errors);
#ifdef MLSEM_WITH_CUDA
  EXPECT_EQ(walked, (std::vector<std::string>{kernel, header}));
  EXPECT_EQ(named, std::vector<std::string>{kernel});
  EXPECT_TRUE(errors.empty());
#else
  EXPECT_TRUE(walked.empty());
  EXPECT_TRUE(named.empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("CUDA support is not built"), std::string::npos);
#endif
}

TEST(DriverWalk, PathsUnderADotDirectoryAreShownRelative) {
  TempDir dir;
  dir.write("pkg/b.py", "");
  fs::path previous = fs::current_path();
  fs::current_path(dir.path());
  std::vector<FileError> errors;
  std::vector<std::string> files = driver::collect_files({"."}, errors);
  fs::current_path(previous);
  EXPECT_EQ(files, std::vector<std::string>{"pkg/b.py"});
}

TEST_F(DriverAnalyze, BadFilesBecomeErrorsAndTheRestIsAnalyzed) {
  TempDir dir;
  std::string good = dir.write("good.py", "x = 1\n");
  dir.write("bin.py", std::string("\0\1\2", 3));
  dir.write("big.py", std::string(200, '#'));
  DriverOptions options;
  options.max_file_bytes = 100;
  Report report = analyze_paths({dir.path().string(), dir / "missing.py"}, engine(), options);
  EXPECT_EQ(report.files_analyzed, 1u);
  ASSERT_EQ(report.errors.size(), 3u);
  // Sorted by path.
  EXPECT_EQ(report.errors[0].path, dir / "big.py");
  EXPECT_EQ(report.errors[1].path, dir / "bin.py");
  EXPECT_EQ(report.errors[2].path, dir / "missing.py");
}

TEST_F(DriverAnalyze, SyntaxErrorsAreErrorEntriesWithAPosition) {
  TempDir dir;
  std::string path = dir.write("broken.py", "x = 1\ndef f(:\n    return 2\n");
  Report report = analyze_paths({path}, engine(), {});
  EXPECT_EQ(report.files_analyzed, 1u);
  ASSERT_FALSE(report.errors.empty());
  EXPECT_EQ(report.errors[0].path, path);
  EXPECT_GE(report.errors[0].line, 2u);
}

TEST_F(DriverAnalyze, FindsHandWrittenAttentionOverItsWholeSpan) {
  TempDir dir;
  std::string path = dir.write("attn.py", kAttention);
  Report report = analyze_paths({path}, engine(), {});
  ASSERT_EQ(report.findings.size(), 1u);
  const Finding& finding = report.findings[0];
  EXPECT_EQ(finding.rule, "ATT001");
  EXPECT_EQ(finding.path, path);
  // Without a focus the location spans the matched nodes: from `q @ k...` on line 6
  // (after "    scores = ", column 14) to the end of `probs @ v` on line 8 (column 21).
  EXPECT_EQ(finding.range.begin, (Position{6, 14}));
  EXPECT_EQ(finding.range.end, (Position{8, 21}));
  EXPECT_EQ(finding.function, "attention");
}

TEST_F(DriverAnalyze, MinConfidenceAndRuleSelectionFilterFindings) {
  TempDir dir;
  std::string path = dir.write("attn.py", kAttention);
  DriverOptions options;
  ASSERT_FALSE(analyze_paths({path}, engine(), options).findings.empty());
  options.min_confidence = 1.01;  // above any confidence
  EXPECT_TRUE(analyze_paths({path}, engine(), options).findings.empty());
  options.min_confidence = 0;
  options.only_rules = std::set<std::string>{};
  EXPECT_TRUE(analyze_paths({path}, engine(), options).findings.empty());
  options.only_rules = std::set<std::string>{"ATT001"};
  EXPECT_FALSE(analyze_paths({path}, engine(), options).findings.empty());
}

TEST_F(DriverAnalyze, OutputOrderDoesNotDependOnTheJobCount) {
  TempDir dir;
  // Files of different sizes so that threads finish them out of order.
  for (int i = 0; i < 24; ++i)
    dir.write("m" + std::to_string(i % 5) + "/f" + std::to_string(i) + ".py",
              std::string(static_cast<size_t>(i * 37 % 11), '\n') + kAttention + (i % 3 ? kAttention : ""));
  dir.write("m1/broken.py", "def f(:\n");
  auto run = [&](unsigned jobs) {
    DriverOptions options;
    options.jobs = jobs;
    return analyze_paths({dir.path().string()}, engine(), options);
  };
  Report one = run(1), four = run(4);
  ASSERT_GE(one.findings.size(), 24u);
  ASSERT_EQ(one.findings.size(), four.findings.size());
  for (size_t i = 0; i < one.findings.size(); ++i) {
    EXPECT_EQ(one.findings[i].path, four.findings[i].path);
    EXPECT_EQ(one.findings[i].range, four.findings[i].range);
    EXPECT_EQ(one.findings[i].rule, four.findings[i].rule);
  }
  for (size_t i = 1; i < one.findings.size(); ++i) {
    const Finding &a = one.findings[i - 1], &b = one.findings[i];
    EXPECT_LE(std::tie(a.path, a.range.begin.line), std::tie(b.path, b.range.begin.line));
  }
  ASSERT_EQ(one.errors.size(), four.errors.size());
  for (size_t i = 0; i < one.errors.size(); ++i) EXPECT_EQ(one.errors[i].path, four.errors[i].path);
  EXPECT_EQ(one.files_analyzed, 25u);
  EXPECT_EQ(four.files_analyzed, 25u);
}

TEST_F(DriverAnalyze, InMemorySourceIsCheckedLikeAFile) {
  SourceFile binary{"mem.py", std::string("a\0b", 3)};
  Report report = analyze_source(binary, engine(), {});
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.files_analyzed, 0u);
  SourceFile attention{"mem.py", kAttention};
  EXPECT_EQ(analyze_source(attention, engine(), {}).findings.size(), 1u);
}

}  // namespace
}  // namespace mlsem
