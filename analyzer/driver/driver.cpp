#include "driver/driver.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <thread>
#include <tuple>

#include "config/config.h"
#include "driver/cache.h"
#include "driver/files.h"
#include "driver/torch_version.h"
#include "driver/notebook.h"
#include "driver/references.h"
#include "driver/suppress.h"
#include "kernels/catalog.h"
#include "python/context_usage.h"
#include "python/frontend.h"

namespace mlsem {
namespace {

struct FileResult {
  std::vector<Finding> findings;
  std::vector<FileError> errors;
  bool analyzed = false;
  std::string pinned;                  // the project's torch, when it turns rules off here
  std::vector<std::string> torch_off;  // those rules
};

// The settings one file is analyzed with: from its configuration file, else the options.
struct Effective {
  const std::set<std::string>* only_rules = nullptr;
  double min_confidence = 0.0;
  const std::map<std::string, std::string>* severity = nullptr;
  std::string torch_version;
  bool pinned = false;  // torch_version is the project's pin, not the option's or configuration's
  std::string key;
};

// The confidence below which `path`'s findings are hidden: its configuration's, else the option's.
double min_confidence_for(const std::string& path, const DriverOptions& options) {
  return options.config ? options.config->settings_for(path).min_confidence : options.min_confidence;
}

// The torch pins found so far, shared by every analysis of the process.
driver::TorchVersionFinder& torch_pins() {
  static driver::TorchVersionFinder versions;
  return versions;
}

Effective effective_settings(const std::string& path, const DriverOptions& options) {
  Effective e;
  if (options.config) {
    const config::FileSettings& s = options.config->settings_for(path);
    e = {&s.rules, s.min_confidence, &s.severity, s.torch_version, false, s.key};
  } else {
    e.only_rules = options.only_rules ? &*options.only_rules : nullptr;
    e.min_confidence = options.min_confidence;
    e.severity = &options.severity;
    e.torch_version = options.torch_version;
    e.key = "rules=";
    if (e.only_rules)
      for (const std::string& id : *e.only_rules) e.key += id + ",";
    else
      e.key += "*";
    e.key += ";min=" + std::to_string(e.min_confidence) + ";torch=" + e.torch_version + ";severity=";
    for (const auto& [rule, level] : options.severity) e.key += rule + ":" + level + ",";
  }
  e.key += options.report_unused_suppressions ? ";unused" : "";
  // The target torch: the option or configuration, else the project's pin.
  if (e.torch_version.empty())
    e.torch_version = torch_pins().for_file(path), e.pinned = true, e.key += ";pin=" + e.torch_version;
  e.key += options.show_demoted ? ";demoted" : "";
  for (const std::string& kind : options.keep_contexts) e.key += ";keep=" + kind;
  // A modular source's findings depend on the file generated from it (context_usage.h).
  if (auto generated = python::generated_sibling(path)) e.key += ";generated=" + *generated;
  // A modeling file's off-by-default facts depend on its configuration file's defaults.
  if (auto config = python::configuration_sibling(path)) {
    std::error_code ec;
    auto size = std::filesystem::file_size(*config, ec);
    auto time = std::filesystem::last_write_time(*config, ec).time_since_epoch().count();
    e.key += ";config=" + *config + ":" + std::to_string(ec ? 0 : size) + ":" + std::to_string(ec ? 0 : time);
  }
  return e;
}

// The catalog's one-line measurement of a finding's kernel ("kernels/attention_fwd"),
// "" when it has none: a finding shows only numbers that were measured. A finding in a
// CUDA kernel is compared with the reference's naive CUDA form, the code the user wrote,
// not with eager PyTorch.
std::string measurement(const std::string& kernel, std::string_view language, const kernels::Catalog& catalog) {
  if (!catalog.find(kernel)) return "";
  std::string summary = catalog.speedup_summary(kernel, {}, kernels::against_for(language));
  return summary.starts_with("no measurement") ? "" : summary;
}

// Where each line of a text starts (0-based index: line 1 first), so that a line is
// found without scanning the text from its start (SourceFile::line does: quadratic over
// a file's findings).
class LineIndex {
 public:
  explicit LineIndex(const std::string& text) : text_(text) {
    starts_.push_back(0);
    for (size_t i = text.find('\n'); i != std::string::npos; i = text.find('\n', i + 1)) starts_.push_back(i + 1);
  }
  // As SourceFile::line: the 1-based line without its newline (or "\r\n"); empty past the end.
  std::string_view line(uint32_t n) const {
    if (n == 0 || n > starts_.size()) return {};
    size_t pos = starts_[n - 1];
    size_t end = n < starts_.size() ? starts_[n] - 1 : text_.size();
    if (end > pos && text_[end - 1] == '\r') --end;
    return std::string_view(text_).substr(pos, end - pos);
  }

 private:
  const std::string& text_;
  std::vector<size_t> starts_;
};

// The matched text without whitespace and comments: reformatting, comments and
// moving the code leave it unchanged.
std::string normalized_text(const SourceFile& file, const LineIndex& lines, const Range& range) {
  bool cuda = driver::language_of(file.path) == "cuda";
  std::string out;
  for (uint32_t line = range.begin.line; line <= range.end.line && line != 0; ++line) {
    std::string_view text = lines.line(line);
    size_t from = line == range.begin.line && range.begin.column ? range.begin.column - 1 : 0;
    size_t to = line == range.end.line && range.end.column ? std::min<size_t>(range.end.column - 1, text.size()) : text.size();
    for (size_t i = std::min(from, text.size()); i < to; ++i) {
      char c = text[i];
      if ((!cuda && c == '#') || (cuda && c == '/' && i + 1 < to && text[i + 1] == '/')) break;
      if (c != ' ' && c != '\t' && c != '\r') out += c;
    }
  }
  return out;
}

void set_fingerprints(std::vector<Finding>& findings, const SourceFile& file) {
  std::map<std::string, size_t> seen;
  if (findings.empty()) return;
  LineIndex lines(file.text);
  for (Finding& f : findings) {
    std::string hash = driver::content_hash(f.rule + '\0' + f.function + '\0' + normalized_text(file, lines, f.range)).substr(0, 16);
    f.fingerprint = hash + ":" + std::to_string(++seen[hash]);
  }
}

// Frontend, then engine, then the file's settings and suppressions, for a text that
// passed driver::check_text. Never throws: an unexpected failure becomes an error entry.
void analyze_text(const SourceFile& file, const Engine& engine, const DriverOptions& options,
                  const Effective& settings, FileResult& result) {
  try {
    DriverOptions file_options = options;
    file_options.torch_version = settings.torch_version;
    ir::Module module = build_module(file, file_options);
    for (const Diagnostic& diagnostic : module.diagnostics)
      result.errors.push_back({diagnostic.path.empty() ? file.path : diagnostic.path,
                               diagnostic.message, diagnostic.range.begin.line,
                               diagnostic.range.begin.column});
    // Suppressions are applied here, where unused ones can be told apart.
    std::map<uint32_t, std::vector<std::string>> directives = std::move(module.suppressions);
    module.suppressions.clear();
    AnalyzeOptions analyze;
    analyze.only_rules = settings.only_rules;
    analyze.source = file.text;
    analyze.torch_version = settings.torch_version;
    analyze.keep_contexts = options.keep_contexts;
    std::vector<Finding> findings = engine.analyze(module, analyze);
    for (Finding& finding : findings)
      if (auto it = settings.severity->find(finding.rule); it != settings.severity->end()) finding.severity = it->second;
    driver::apply_suppressions(findings, file, directives, engine, options.report_unused_suppressions);
    for (Finding& finding : findings)
      if (finding.confidence >= settings.min_confidence || (options.show_demoted && !finding.context.empty()))
        result.findings.push_back(std::move(finding));
    std::stable_sort(result.findings.begin(), result.findings.end(), [](const Finding& a, const Finding& b) {
      return std::tie(a.range.begin.line, a.range.begin.column, a.rule) <
             std::tie(b.range.begin.line, b.range.begin.column, b.rule);
    });
    result.analyzed = true;
  } catch (const std::exception& e) {
    result.errors.push_back({file.path, std::string("internal error, file not analyzed: ") + e.what()});
  }
}

// One read file: notebook conversion, the cache, analysis, fingerprints, measurements.
// `program` receives the text the findings' ranges refer to.
void analyze_file(const SourceFile& read, const Engine& engine, const DriverOptions& options,
                  FileResult& result, SourceFile& program, NotebookIndex* notebook) {
  program = read;
  const std::string_view language = driver::language_of(read.path);
  if (driver::is_notebook(read.path)) {
    NotebookIndex index;
    if (auto error = driver::notebook_program(read, program, index)) {
      result.errors.push_back(std::move(*error));
      return;
    }
    if (notebook) *notebook = std::move(index);
  }
  // A lone CR ends a line for Python and for editors (old Mac line ends); tree-sitter
  // only knows LF. The same byte count keeps every offset and column.
  for (size_t cr = program.text.find('\r'); cr != std::string::npos; cr = program.text.find('\r', cr + 1))
    if (cr + 1 == program.text.size() || program.text[cr + 1] != '\n') program.text[cr] = '\n';
  Effective settings = effective_settings(read.path, options);
  // The selected rules the project's pin turns off here, for the report's note.
  if (settings.pinned && language == "python")
    for (const Rule& rule : engine.rules())
      if ((!settings.only_rules || settings.only_rules->count(rule.id)) && needs_newer_torch(rule, settings.torch_version))
        result.torch_off.push_back(rule.id), result.pinned = settings.torch_version;
  std::optional<driver::Cache> cache;
  std::string key;
  // A CUDA file's findings also depend on the headers it includes (a project's
  // common.cuh, the toolkit), which the key does not hold: CUDA files are not cached.
  if (!options.cache_dir.empty() && language != "cuda") {
    cache.emplace(options.cache_dir);
    key = driver::content_hash(std::string(version()) + '\0' + options.cache_salt + '\0' + settings.key + '\0' +
                               read.path + '\0' + program.text);
    if (auto hit = cache->load(key)) {
      result.findings = std::move(hit->findings);
      result.errors = std::move(hit->errors);
      result.analyzed = hit->analyzed;
    } else {
      analyze_text(program, engine, options, settings, result);
      cache->store(key, {result.findings, result.errors, result.analyzed});
    }
  } else {
    analyze_text(program, engine, options, settings, result);
  }
  set_fingerprints(result.findings, program);
  for (Finding& finding : result.findings)
    if (finding.kernel && options.catalog)
      if (const kernels::Catalog* catalog = options.catalog())
        finding.measured = measurement(*finding.kernel, language, *catalog);
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
  if (result.analyzed && !result.torch_off.empty()) {
    Report::TorchOff& off = report.torch_off[result.pinned];
    ++off.files;
    off.rules.insert(result.torch_off.begin(), result.torch_off.end());
  }
  std::move(result.findings.begin(), result.findings.end(), std::back_inserter(report.findings));
  std::move(result.errors.begin(), result.errors.end(), std::back_inserter(report.errors));
}

// A whole report into another (stdin's, analyzed alone, into the run's).
void merge(Report& one, Report& report) {
  report.files_analyzed += one.files_analyzed;
  for (auto& [version, off] : one.torch_off) {
    report.torch_off[version].files += off.files;
    report.torch_off[version].rules.insert(off.rules.begin(), off.rules.end());
  }
  std::move(one.findings.begin(), one.findings.end(), std::back_inserter(report.findings));
  std::move(one.errors.begin(), one.errors.end(), std::back_inserter(report.errors));
}

void keep_source(FileResult& result, SourceFile& program, NotebookIndex& notebook, Sources* sources) {
  if (!sources || result.findings.empty()) return;
  if (!notebook.cell.empty()) sources->notebooks[program.path] = std::move(notebook);
  sources->texts[program.path] = std::move(program);
}

}  // namespace

Report analyze_paths(const std::vector<std::string>& paths, const Engine& engine,
                     const DriverOptions& options) {
  return analyze_paths(paths, engine, options, nullptr);
}

Report analyze_paths(const std::vector<std::string>& paths, const Engine& engine,
                     const DriverOptions& options, Sources* sources, const std::string& stdin_name) {
  Report report;
  bool read_stdin = std::find(paths.begin(), paths.end(), "-") != paths.end();
  std::vector<std::string> named;
  std::copy_if(paths.begin(), paths.end(), std::back_inserter(named), [](const std::string& p) { return p != "-"; });
  driver::Exclusion exclusion;
  if (options.config)
    exclusion = [&options](const std::filesystem::path& path, bool is_directory) {
      return options.config->excluded(path, is_directory);
    };
  std::vector<std::string> files = driver::collect_files(named, report.errors, exclusion);
  std::string shown_stdin = stdin_name.empty() ? "-" : stdin_name;
  if (options.config) {
    std::vector<std::string> all = files;
    if (read_stdin) all.push_back(shown_stdin);
    if (!options.config->prepare(all)) return report;  // the caller reports why
  }
  if (read_stdin) {
    SourceFile file{shown_stdin, std::string(std::istreambuf_iterator<char>(std::cin), {})};
    Report one = analyze_source(file, engine, options, sources);
    merge(one, report);
  }
  std::vector<FileResult> results(files.size());
  std::vector<SourceFile> texts(files.size());
  std::vector<NotebookIndex> notebooks(files.size());
  parallel_for(files.size(), options.jobs, [&](size_t i) {
    SourceFile file;
    if (auto error = read_source_file(files[i], options.max_file_bytes, file)) {
      results[i].errors.push_back(std::move(*error));
      return;
    }
    analyze_file(file, engine, options, results[i], texts[i], &notebooks[i]);
    if (!sources || results[i].findings.empty()) texts[i] = {}, notebooks[i] = {};
  });
  for (size_t i = 0; i < files.size(); ++i) {
    keep_source(results[i], texts[i], notebooks[i], sources);
    merge(results[i], report);
  }
  // Code nothing else in its project names, code it uses only as the fallback of a fused
  // implementation, and fusions a project that compiles its model gets from torch.compile
  // (driver/references.h); demoted findings the run does not show go.
  auto kept = [&](const char* kind) { return options.keep_contexts.count(kind) || options.keep_contexts.count("all"); };
  driver::ProjectPass pass;
  pass.unused = !kept("unused");
  pass.examples = !kept("example");
  auto lists = [](const Rule& rule, const char* kind) {
    return std::find(rule.demote_in.begin(), rule.demote_in.end(), kind) != rule.demote_in.end();
  };
  for (const Rule& rule : engine.rules()) {
    if (!kept("compiled") && lists(rule, "compiled")) pass.compiled_rules.insert(rule.id);
    if (!kept("fallback") && lists(rule, "fallback")) pass.fallback_rules.insert(rule.id);
    if (!kept("configured") && !rule.configured_by.empty()) pass.configured_by[rule.id] = rule.configured_by;
  }
  if (pass.unused || pass.examples || !pass.compiled_rules.empty() || !pass.fallback_rules.empty() ||
      !pass.configured_by.empty()) {
    driver::Demoted demoted = driver::demote_by_project(report.findings, pass);
    if (demoted.total() > 0 && !options.show_demoted)
      std::erase_if(report.findings, [&](const Finding& f) {
        return (f.context_kind == "unused" || f.context_kind == "fallback" || f.context_kind == "compiled" ||
                f.context_kind == "example" || f.context_kind == "configured") &&
               !f.context.empty() && f.confidence < min_confidence_for(f.path, options);
      });
  }
  sort_report(report);
  return report;
}

void forget_torch_pins() { torch_pins().forget(); }

Report analyze_source(const SourceFile& file, const Engine& engine, const DriverOptions& options, Sources* sources) {
  Report report;
  FileResult result;
  SourceFile program;
  NotebookIndex notebook;
  if (driver::language_of(file.path).empty() && (file.path.ends_with(".cu") || file.path.ends_with(".cuh")))
    result.errors.push_back({file.path, driver::kNoCuda});
  else if (auto error = driver::check_text(file, options.max_file_bytes))
    result.errors.push_back(std::move(*error));
  else
    analyze_file(file, engine, options, result, program, &notebook);
  keep_source(result, program, notebook, sources);
  merge(result, report);
  sort_report(report);
  return report;
}

ir::Module build_module(const SourceFile& file, [[maybe_unused]] const DriverOptions& options) {
#ifdef MLSEM_WITH_CUDA
  if (driver::language_of(file.path) == "cuda") return cuda::build_ir(file, options.cuda);
#endif
  if (options.python_tree && !driver::is_notebook(file.path)) return python::build_ir(file, options.python_tree);
  return python::build_ir(file);
}

std::string_view version() { return MLSEM_VERSION; }

std::string_view homepage() { return MLSEM_HOMEPAGE_URL; }

}  // namespace mlsem
