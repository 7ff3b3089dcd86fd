// Golden test: every sample under samples/ is analyzed with the repo's rule data and
// its findings are compared with the marks in its source (samples/README.md).
// One test per file, so a failure names the file, the line and the rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "engine/engine.h"
#include "marks.h"

namespace mlsem::golden {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = MLSEM_SOURCE_DIR;

// Every sample, sorted, as paths relative to the repo root (test names and messages
// use these; analysis uses the absolute path).
std::vector<std::string> sample_files() {
  std::vector<std::string> files;
  auto collect = [&](const fs::path& dir, const std::vector<std::string>& extensions) {
    std::error_code ec;
    if (!fs::is_directory(kRoot / dir, ec)) return;
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / dir, ec)) {
      std::string ext = entry.path().extension().string();
      if (entry.is_regular_file() && std::ranges::find(extensions, ext) != extensions.end())
        files.push_back(fs::relative(entry.path(), kRoot).generic_string());
    }
  };
  collect("samples/python", {".py"});
#ifdef MLSEM_WITH_CUDA
  collect("samples/cuda", {".cu", ".cuh"});
#endif
  std::ranges::sort(files);
  return files;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The engine, loaded once from the repo's rule data.
struct LoadedEngine {
  std::vector<FileError> errors;
  std::optional<Engine> engine;
};

const LoadedEngine& loaded_engine() {
  static const LoadedEngine result = [] {
    LoadedEngine l;
    l.engine = Engine::load(kRoot, l.errors);
    return l;
  }();
  return result;
}

std::string load_errors_text() {
  std::string text;
  for (const FileError& e : loaded_engine().errors)
    text += e.path + ":" + std::to_string(e.line) + ": " + e.message + "\n";
  return text;
}

// Each sample is analyzed on its own, once per process: ctest runs every test in its
// own process, and a CUDA file takes about a second to parse.
const Report& report_of(const std::string& file) {
  static std::map<std::string, Report> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    DriverOptions options;
    options.min_confidence = 0.0;
    it = cache.emplace(file, analyze_paths({(kRoot / file).string()}, *loaded_engine().engine, options)).first;
  }
  return it->second;
}

ParsedMarks marks_of(const std::string& file) {
  return parse_marks(read_file(kRoot / file), comment_prefix_for(file));
}

class GoldenTest : public testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, FindingsMatchMarks) {
  const std::string& file = GetParam();
  ASSERT_TRUE(loaded_engine().engine) << "rule data failed to load:\n" << load_errors_text();

  ParsedMarks parsed = marks_of(file);
  for (const MarkError& e : parsed.errors) ADD_FAILURE() << file << ":" << e.line << ": " << e.message;
  EXPECT_FALSE(parsed.marks.empty()) << file << ": a sample states its expectations with marks";
  if (file.ends_with(".py")) {
    EXPECT_TRUE(read_file(kRoot / file).starts_with("\"\"\""))
        << file << ": a sample starts with a docstring saying what it models and expects";
  }

  const Report& report = report_of(file);
  EXPECT_EQ(report.files_analyzed, 1u) << file << ": not analyzed";
  for (const FileError& e : report.errors)
    ADD_FAILURE() << file << ":" << e.line << ": analysis error: " << e.message;
  std::error_code ec;
  for (const Finding& f : report.findings)
    EXPECT_TRUE(fs::equivalent(f.path, kRoot / file, ec)) << "finding in another file: " << f.path;

  // Marks state what a user sees by default; quieter findings are hints, counted in
  // the calibration table's lowest band.
  std::vector<Finding> shown, quiet;
  for (const Finding& f : report.findings) (f.confidence >= kDefaultMinConfidence ? shown : quiet).push_back(f);
  for (const std::string& problem : compare(file, parsed.marks, shown, quiet).problems) ADD_FAILURE() << problem;
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  // samples/python/gpt_nanogpt.py -> python_gpt_nanogpt_py
  std::string name = info.param.substr(info.param.find('/') + 1);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Samples, GoldenTest, testing::ValuesIn(sample_files()), test_name);

// How far the confidence scale can be trusted: per band, how many findings were
// right. Printed for the docs; the top band must hold up.
TEST(Golden, CalibrationTable) {
  ASSERT_TRUE(loaded_engine().engine) << "rule data failed to load:\n" << load_errors_text();
  std::vector<std::string> files = sample_files();
  EXPECT_GE(files.size(), 25u) << "the samples must cover at least 25 files";

  struct Band {
    const char* name;
    double low, high;
    size_t findings = 0, right = 0;
  };
  Band bands[] = {{">= 0.9", 0.9, 2.0}, {"0.5 - 0.9", 0.5, 0.9}, {"< 0.5", -1.0, 0.5}};
  size_t expect_marks = 0, expect_found = 0, todo_expect_marks = 0, files_analyzed = 0;
  for (const std::string& file : files) {
    const Report& report = report_of(file);
    files_analyzed += report.files_analyzed;
    const std::vector<Finding>& findings = report.findings;
    Comparison c = compare(file, marks_of(file).marks, findings);
    for (size_t i = 0; i < findings.size(); ++i) {
      for (Band& band : bands) {
        if (findings[i].confidence >= band.low && findings[i].confidence < band.high) {
          ++band.findings;
          band.right += c.right[i];
        }
      }
    }
    expect_marks += c.expect_marks;
    expect_found += c.expect_found;
    todo_expect_marks += c.todo_expect_marks;
  }

  EXPECT_EQ(files_analyzed, files.size()) << "every sample must be analyzed";
  std::printf("\nCalibration over %zu sample files (%zu analyzed)\n", files.size(), files_analyzed);
  std::printf("%-10s %9s %6s %6s %10s\n", "confidence", "findings", "right", "wrong", "precision");
  for (const Band& band : bands) {
    if (band.findings == 0) {
      std::printf("%-10s %9zu %6zu %6zu %10s\n", band.name, band.findings, band.right, size_t{0}, "n/a");
    } else {
      std::printf("%-10s %9zu %6zu %6zu %10.3f\n", band.name, band.findings, band.right,
                  band.findings - band.right, double(band.right) / double(band.findings));
    }
  }
  size_t wanted = expect_marks + todo_expect_marks;
  std::printf("recall: %zu found of %zu expected (%zu expect + %zu todo-expect marks) = %.3f\n",
              expect_found, wanted, expect_marks, todo_expect_marks,
              wanted ? double(expect_found) / double(wanted) : 0.0);

  const Band& top = bands[0];
  if (top.findings > 0) {
    EXPECT_GE(double(top.right) / double(top.findings), 0.9)
        << "findings reported with confidence >= 0.9 must be right at least 90% of the time";
  }
}

}  // namespace
}  // namespace mlsem::golden
