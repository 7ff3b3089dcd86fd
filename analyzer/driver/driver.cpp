#include "driver/driver.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <tuple>

#include "driver/files.h"
#include "driver/torch_version.h"
#include "kernels/catalog.h"
#include "python/frontend.h"

namespace mlsem {
namespace {

struct FileResult {
  std::vector<Finding> findings;
  std::vector<FileError> errors;
  bool analyzed = false;
};


// The catalog's one-line measurement of a finding's kernel ("kernels/attention_fwd"),
// "" when it has none: a finding shows only numbers that were measured.
std::string measurement(const std::string& kernel, const kernels::Catalog& catalog) {
  if (!catalog.find(kernel)) return "";
  std::string summary = catalog.speedup_summary(kernel);
  return summary.starts_with("no measurement") ? "" : summary;
}

// Frontend, then engine, for a text that passed driver::check_text. Never throws: an
// unexpected failure in either becomes an error entry for this file and the run goes on.
void analyze_text(const SourceFile& file, const Engine& engine, const DriverOptions& options,
                  driver::TorchVersionFinder* versions, FileResult& result) {
  try {
    ir::Module module = build_module(file, options);
    for (const Diagnostic& diagnostic : module.diagnostics)
      result.errors.push_back({diagnostic.path.empty() ? file.path : diagnostic.path,
                               diagnostic.message, diagnostic.range.begin.line,
                               diagnostic.range.begin.column});
    AnalyzeOptions analyze;
    analyze.only_rules = options.only_rules ? &*options.only_rules : nullptr;
    analyze.source = file.text;
    analyze.torch_version = options.torch_version;
    if (analyze.torch_version.empty() && versions) analyze.torch_version = versions->for_file(file.path);
    analyze.keep_contexts = options.keep_contexts;
    for (Finding& finding : engine.analyze(module, analyze)) {
      if (finding.confidence < options.min_confidence && !(options.show_demoted && !finding.context.empty())) continue;
      if (options.catalog && finding.kernel) finding.measured = measurement(*finding.kernel, *options.catalog);
      result.findings.push_back(std::move(finding));
    }
    result.analyzed = true;
  } catch (const std::exception& e) {
    result.errors.push_back({file.path, std::string("internal error, file not analyzed: ") + e.what()});
  }
}

// Runs fn(0..count-1) on `jobs` threads (0 = all cores) pulling indexes from one counter.
template <class Fn>
void parallel_for(size_t count, unsigned jobs, Fn fn) {
  size_t threads = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, count);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) fn(i);
  };
  if (threads <= 1) return worker();
  std::vector<std::jthread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
}

// The order every report uses, whatever the job count.
void sort_report(Report& report) {
  std::stable_sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.path, a.range.begin.line, a.range.begin.column, a.rule) <
           std::tie(b.path, b.range.begin.line, b.range.begin.column, b.rule);
  });
  std::stable_sort(report.errors.begin(), report.errors.end(), [](const FileError& a, const FileError& b) {
    return std::tie(a.path, a.line) < std::tie(b.path, b.line);
  });
}

void merge(FileResult& result, Report& report) {
  report.files_analyzed += result.analyzed;
  std::move(result.findings.begin(), result.findings.end(), std::back_inserter(report.findings));
  std::move(result.errors.begin(), result.errors.end(), std::back_inserter(report.errors));
}

}  // namespace

Report analyze_paths(const std::vector<std::string>& paths, const Engine& engine,
                     const DriverOptions& options) {
  return analyze_paths(paths, engine, options, nullptr);
}

Report analyze_paths(const std::vector<std::string>& paths, const Engine& engine,
                     const DriverOptions& options, SourceTexts* sources) {
  Report report;
  std::vector<std::string> files = driver::collect_files(paths, report.errors);
  std::vector<FileResult> results(files.size());
  std::vector<SourceFile> texts(sources ? files.size() : 0);
  driver::TorchVersionFinder versions;
  parallel_for(files.size(), options.jobs, [&](size_t i) {
    SourceFile file;
    if (auto error = read_source_file(files[i], options.max_file_bytes, file)) {
      results[i].errors.push_back(std::move(*error));
      return;
    }
    analyze_text(file, engine, options, &versions, results[i]);
    if (sources && !results[i].findings.empty()) texts[i] = std::move(file);
  });
  for (size_t i = 0; i < files.size(); ++i) {
    merge(results[i], report);
    if (sources && !texts[i].path.empty()) sources->emplace(texts[i].path, std::move(texts[i]));
  }
  sort_report(report);
  return report;
}

Report analyze_source(const SourceFile& file, const Engine& engine, const DriverOptions& options) {
  Report report;
  FileResult result;
  if (driver::language_of(file.path).empty() && (file.path.ends_with(".cu") || file.path.ends_with(".cuh")))
    result.errors.push_back({file.path, driver::kNoCuda});
  else if (auto error = driver::check_text(file, options.max_file_bytes))
    result.errors.push_back(std::move(*error));
  else
    analyze_text(file, engine, options, nullptr, result);
  merge(result, report);
  sort_report(report);
  return report;
}

ir::Module build_module(const SourceFile& file, [[maybe_unused]] const DriverOptions& options) {
#ifdef MLSEM_WITH_CUDA
  if (driver::language_of(file.path) == "cuda") return cuda::build_ir(file, options.cuda);
#endif
  return python::build_ir(file);
}

std::string_view version() { return MLSEM_VERSION; }

}  // namespace mlsem
