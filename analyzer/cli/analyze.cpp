// `mlsem analyze`: options, configuration, the run, the report in the chosen format,
// baselines and the exit code.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>

#include "cli/cli.h"
#include "config/config.h"
#include "driver/cache.h"
#include "driver/driver.h"
#include "report/baseline.h"
#include "report/report.h"

namespace fs = std::filesystem;

namespace mlsem::cli {
namespace {

unsigned parse_jobs(const std::string& text) {
  unsigned jobs = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), jobs);
  if (ec != std::errc() || end != text.data() + text.size() || jobs > 1024)
    throw UsageError("analyze", "-j: expected a number of jobs (0 = all cores), got '" + text + "'");
  return jobs;
}

double parse_confidence(const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value >= 0.0 && value <= 1.0))
    throw UsageError("analyze", "--min-confidence: expected a number from 0 to 1, got '" + text + "'");
  return value;
}

std::string read_file(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure(option + ": cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The unused-suppression pseudo-rule, described in SARIF like the others.
Rule unused_suppression_rule() {
  Rule rule;
  rule.id = kUnusedSuppression;
  rule.name = "unused-suppression";
  rule.status = "stable";
  rule.language = "python";
  rule.severity = "warning";
  rule.message = "a suppression comment that suppresses nothing";
  rule.docs.summary = "A `# mlsem: ignore[...]` or `# noqa: ...` naming mlsem rules that suppresses no finding.";
  rule.docs.why = "Stale suppressions hide future findings on the same lines; remove them once the code is fixed.";
  return rule;
}

// Where the cache lives: --cache-dir, $MLSEM_CACHE_DIR, else .mlsem_cache/ at the
// project root above the current directory; "" when --no-cache.
std::string cache_dir(const CommandLine& line) {
  if (line.flags.contains("--no-cache")) return "";
  if (auto dir = line.value("--cache-dir")) return *dir;
  if (const char* env = std::getenv("MLSEM_CACHE_DIR"); env && *env) return env;
  return (driver::project_root(fs::current_path()) / ".mlsem_cache").string();
}

int severity_rank(const std::string& severity) { return severity == "error" ? 2 : severity == "warning" ? 1 : 0; }

}  // namespace

int analyze(const std::vector<std::string>& args, const char* argv0) {
  CommandLine line = parse("analyze", args,
                           {{{"-j", "--jobs"}, {"-o", "--output"}, {"-p", "--compile-commands"}},
                            {"--jobs", "--output", "--compile-commands", "--format", "--min-confidence", "--select",
                             "--ignore", "--color", "--cuda-path", "--data", "--config", "--torch-version",
                             "--fail-on", "--baseline", "--write-baseline", "--stdin-filename", "--cache-dir",
                             "--keep-context"},
                            {"--preview", "--isolated", "--statistics", "--exit-zero", "--report-unused-suppressions",
                             "--no-cache", "--show-demoted"}});
  if (line.flags.contains("--help")) return print_help("analyze"), kClean;
  if (line.positional.empty()) throw UsageError("analyze", "no paths given (\"-\" reads stdin)");
  std::string format = choice(line, "analyze", "--format", {"text", "json", "json-lines", "sarif", "github", "junit"}, "text");
  std::string color = choice(line, "analyze", "--color", {"auto", "always", "never"}, "auto");
  std::string fail_on = choice(line, "analyze", "--fail-on", {"info", "warning", "error"}, "info");
  if (line.value("--stdin-filename") && std::count(line.positional.begin(), line.positional.end(), "-") == 0)
    throw UsageError("analyze", "--stdin-filename names the text read from stdin: add \"-\" to the paths");
  if (line.value("--config") && line.flags.contains("--isolated"))
    throw UsageError("analyze", "--config and --isolated exclude each other");
  DriverOptions options;
  options.jobs = parse_jobs(line.value("--jobs").value_or("0"));
  options.cuda.cuda_path = line.value("--cuda-path").value_or("");
  options.cuda.compile_commands_dir = line.value("--compile-commands").value_or("");
  options.report_unused_suppressions = line.flags.contains("--report-unused-suppressions");
  options.show_demoted = line.flags.contains("--show-demoted");
  if (auto kinds = line.value("--keep-context")) {
    for (const std::string& kind : split_commas(*kinds)) {
      bool known = kind == "all" || std::any_of(std::begin(kContextKinds), std::end(kContextKinds),
                                                [&](const char* k) { return kind == k; });
      if (!known)
        throw UsageError("analyze", "--keep-context: unknown context '" + kind +
                                        "' (test, reference, parity, fallback, returns-weights, cold, unused, modular, variant, comparison, compiled, vendored, example, env-bound, configured, all)");
      options.keep_contexts.insert(kind);
    }
  }

  fs::path data = data_dir(line, argv0);
  Engine engine = load_engine(data);
  for (const char* option : {"--select", "--ignore"})
    if (auto list = line.value(option))
      for (const std::string& item : split_commas(*list))
        if (config::rules_selected(item, engine).empty())
          throw UsageError("analyze", std::string(option) + ": no rule '" + item +
                                          "' (an id, name, id prefix or concept; see `mlsem rules`)");
  config::CommandLine settings;
  settings.select = line.value("--select");
  settings.ignore = line.value("--ignore");
  settings.preview = line.flags.contains("--preview");
  if (auto value = line.value("--min-confidence")) settings.min_confidence = parse_confidence(*value);
  settings.torch_version = line.value("--torch-version");
  settings.config_file = line.value("--config");
  settings.isolated = line.flags.contains("--isolated");
  config::Resolver resolver(engine, settings);
  std::vector<FileError> config_errors;
  if (!resolver.init(config_errors)) {
    print_file_errors(config_errors);
    throw Failure("bad configuration");
  }
  options.config = &resolver;
  options.cache_dir = cache_dir(line);
  if (!options.cache_dir.empty()) options.cache_salt = driver::data_hash(data);

  // The catalog is read the first time a finding names a kernel: parsing its results files
  // costs more than analyzing a small file. A catalog that fails to load only costs the
  // measured speedups; `mlsem kernels` reports why.
  std::once_flag catalog_loaded;
  std::optional<kernels::Catalog> catalog;
  options.catalog = [&] {
    std::call_once(catalog_loaded, [&] {
      std::vector<FileError> errors;
      catalog = load_catalog(data, errors);
    });
    return &*catalog;
  };

  std::optional<report::Baseline> baseline;
  if (auto file = line.value("--baseline")) {
    std::string error;
    baseline = report::read_baseline(read_file(*file, "--baseline"), error);
    if (!baseline) throw Failure("--baseline: " + *file + ": " + error);
  }

  Sources sources;
  Report report = analyze_paths(line.positional, engine, options, &sources, line.value("--stdin-filename").value_or(""));
  if (!resolver.errors().empty()) {
    print_file_errors(resolver.errors());
    throw Failure("bad configuration");
  }
  if (auto file = line.value("--write-baseline")) {
    write_output(report::baseline_json(report), *file);
    std::cerr << "mlsem: wrote " << report.findings.size() << " findings to the baseline " << *file << "\n";
  }
  if (baseline) report::apply_baseline(report, *baseline);

  std::optional<std::string> output = line.value("--output");
  std::string text;
  report::Context context;
  context.sources = &sources;
  std::set<std::string> reported;
  for (const Finding& f : report.findings) reported.insert(f.rule);
  const config::FileSettings& defaults = resolver.settings_for("");
  for (const Rule& rule : engine.rules())
    if (defaults.rules.contains(rule.id) || reported.contains(rule.id)) context.rules.push_back(rule);
  if (options.report_unused_suppressions) context.rules.push_back(unused_suppression_rule());
  context.tags = report::rule_tags(context.rules, engine);

  if (line.flags.contains("--statistics")) {
    text = report::statistics(report);
  } else if (format == "json") {
    text = report::to_json(report, &sources);
  } else if (format == "json-lines") {
    text = report::to_json_lines(report, &sources);
  } else if (format == "sarif") {
    text = report::to_sarif(report, context);
  } else if (format == "github") {
    text = report::to_github(report, &sources);
  } else if (format == "junit") {
    text = report::to_junit(report, context);
  } else {
    const char* no_color = std::getenv("NO_COLOR");
    bool terminal = !output && isatty(STDOUT_FILENO) && !(no_color && *no_color);
    text = report::to_text(report, sources, {color == "always" || (color == "auto" && terminal)});
  }
  write_output(text, output);
  if (line.flags.contains("--exit-zero")) return kClean;
  bool failing = !report.errors.empty();
  for (const Finding& f : report.findings) failing |= severity_rank(f.severity) >= severity_rank(fail_on);
  return failing ? kFound : kClean;
}

}  // namespace mlsem::cli
