// mlsem, the command line: analyze, rules, explain, concepts, ir, kernels, help.
// Exit codes: 0 nothing found, 1 findings or file errors, 2 usage or internal errors
// (a data directory that fails to load included). Writes only to stdout, stderr and
// the file named by --output / --out.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "driver/files.h"
#include "engine/engine.h"
#include "ir/print.h"
#include "kernels/catalog.h"
#include "learn/command.h"
#include "report/report.h"

namespace fs = std::filesystem;
using namespace mlsem;

namespace {

constexpr int kClean = 0, kFound = 1, kFailed = 2;

// A mistake in the command line: printed with a pointer to the help, exit 2.
struct UsageError : std::runtime_error {
  std::string command;
  UsageError(std::string cmd, const std::string& message) : std::runtime_error(message), command(std::move(cmd)) {}
};

// Exit 2 after the reason was printed (data load failures, unwritable output).
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const std::map<std::string, std::string, std::less<>> kHelp = {
    {"", R"(mlsem: performance analysis of ML source code (Python, CUDA)

usage: mlsem [--data DIR] COMMAND [ARGS]

commands:
  analyze PATH...     report performance findings in files and directories
  rules               list the rules
  explain RULE        a rule's documentation (id or name)
  concepts [ID]       the concept hierarchy, or one concept with its lessons
  learn PATH...       a learning path from the findings in PATH, prerequisites first
  ir FILE             print the semantic IR of one file
  kernels             list, show or benchmark the reference kernels
  help [COMMAND]      this help, or a command's

options:
  --data DIR          concepts/, patterns/, rules/ and kernels/ from DIR
                      (default: $MLSEM_DATA, the install's share/mlsem, the source tree)
  --version           print the version
  -h, --help          help

exit codes: 0 nothing found, 1 findings or file errors, 2 usage or internal errors
)"},
    {"analyze", R"(usage: mlsem analyze PATH... [options]

Analyzes .py files (and .cu/.cuh when CUDA support is built) in the named files and
directories. Directories are walked recursively, skipping VCS directories, virtual
environments, build*/, node_modules, caches and site-packages.

options:
  -j, --jobs N            analyze N files at once (default 0: all cores)
  --format FORMAT         text (default), json or sarif
  --min-confidence X      drop findings below confidence X, 0..1 (default 0.5)
  --select IDS            report only these rules (comma-separated ids, names or id prefixes)
  --ignore IDS            do not report these rules
  --preview               also run preview rules (off by default; --select can name one)
  -o, --output FILE       write the report to FILE instead of stdout
  --color WHEN            auto (default: when stdout is a terminal and NO_COLOR is unset),
                          always or never
  --cuda-path DIR         CUDA toolkit root for .cu files ("none": no toolkit headers)
  -p, --compile-commands BUILD_DIR
                          directory holding compile_commands.json for .cu files
  --data DIR              data directory (see `mlsem help`)

exit codes: 0 no findings and no file errors, 1 findings or file errors, 2 usage or
internal errors
)"},
    {"rules", R"(usage: mlsem rules [--format text|json] [--data DIR]

Lists every rule: id, name, concept, severity, status (stable or preview), summary.
)"},
    {"explain", R"(usage: mlsem explain RULE [--data DIR]

Prints a rule's documentation: summary, why it is slow, an example, the example fixed,
the fix, its concept with the concepts above it, and its reference kernel.
RULE is an id (ATT001) or a name (hand-written-attention).
)"},
    {"ir", R"(usage: mlsem ir FILE [--cuda-path DIR] [-p BUILD_DIR]

Prints the semantic IR the patterns are matched against (docs/IR.md), for one .py
(or .cu/.cuh) file. Syntax errors are printed to stderr; the recovered IR is printed.
)"},
    {"kernels", R"(usage: mlsem kernels list
       mlsem kernels show NAME
       mlsem kernels bench NAME [--out FILE]

The reference kernels findings point to (kernels/NAME): list them with their measured
speedups, show one's lesson (README), or benchmark one on this machine's GPU with
kernels/bench/bench.py, writing its measurements to FILE (default:
kernels/results/<device>.json, where measured speedups are read from).
)"},
    {"help", R"(usage: mlsem help [COMMAND]
)"},
};

// The command line of one command: options (with or without a value) and the
// positional arguments. `--name=value`, `--name value` and `-jN` are all accepted.
struct CommandLine {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
  std::vector<std::string> positional;

  std::optional<std::string> value(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional(it->second);
  }
};

struct OptionSpec {
  std::map<std::string, std::string> aliases;  // "-j" -> "--jobs"
  std::set<std::string> with_value;            // canonical names taking a value
  std::set<std::string> flags;
};

CommandLine parse(const std::string& command, const std::vector<std::string>& args, const OptionSpec& spec) {
  CommandLine line;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      line.positional.insert(line.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      line.positional.push_back(arg);
      continue;
    }
    std::optional<std::string> inline_value;
    if (size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (!arg.starts_with("--") && arg.size() > 2) {  // -j4
      inline_value = arg.substr(2);
      arg = arg.substr(0, 2);
    }
    if (arg == "-h") arg = "--help";
    if (auto alias = spec.aliases.find(arg); alias != spec.aliases.end()) arg = alias->second;
    if (arg == "--help" || spec.flags.contains(arg)) {
      if (inline_value) throw UsageError(command, "option " + arg + " takes no value");
      line.flags.insert(arg);
    } else if (spec.with_value.contains(arg)) {
      if (!inline_value && i + 1 == args.size()) throw UsageError(command, "option " + arg + " needs a value");
      line.values[arg] = inline_value ? *inline_value : args[++i];
    } else {
      throw UsageError(command, "unknown option '" + args[i] + "'");
    }
  }
  return line;
}

void print_help(const std::string& command) {
  auto it = kHelp.find(command);
  if (std::string text = learn::help(command); it == kHelp.end() && !text.empty()) {  // learn, concepts
    std::cout << text;
    return;
  }
  if (it == kHelp.end()) throw UsageError("", "unknown command '" + command + "'");
  std::cout << it->second;
}

fs::path data_dir(const CommandLine& line, const char* argv0) {
  if (auto dir = line.value("--data")) return *dir;
  return find_data_dir(argv0);
}

Engine load_engine(const fs::path& dir) {
  std::vector<FileError> errors;
  std::optional<Engine> engine = Engine::load(dir, errors);
  for (const FileError& e : errors)
    std::cerr << e.path << (e.line ? ":" + std::to_string(e.line) : "") << ": " << e.message << "\n";
  if (!engine) throw Failure("cannot load the rules from " + dir.string());
  return std::move(*engine);
}

kernels::Catalog load_catalog(const fs::path& dir, std::vector<FileError>& errors) {
  return kernels::Catalog::load(dir / "kernels", errors);
}

void print_file_errors(const std::vector<FileError>& errors) {
  for (const FileError& e : errors) {
    std::cerr << e.path;
    if (e.line) std::cerr << ":" << e.line << ":" << e.column;
    std::cerr << ": " << e.message << "\n";
  }
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    if (end > start) items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

// Rule ids named by --select/--ignore: an id, a name, or an id prefix ("ATT").
std::set<std::string> rules_named(const std::string& option, const std::string& list, const Engine& engine) {
  std::set<std::string> ids;
  for (const std::string& item : split_commas(list)) {
    if (const Rule* rule = engine.rule(item)) {
      ids.insert(rule->id);
      continue;
    }
    size_t before = ids.size();
    for (const Rule& rule : engine.rules())
      if (rule.id.starts_with(item)) ids.insert(rule.id);
    if (ids.size() == before) throw UsageError("analyze", option + ": no rule '" + item + "' (see `mlsem rules`)");
  }
  return ids;
}

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

std::string choice(const CommandLine& line, const std::string& command, const std::string& option,
                   const std::set<std::string>& allowed, const std::string& fallback) {
  std::string value = line.value(option).value_or(fallback);
  if (!allowed.contains(value)) {
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw UsageError(command, option + ": expected one of " + list + ", got '" + value + "'");
  }
  return value;
}

void write_output(const std::string& text, const std::optional<std::string>& file) {
  if (!file) {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(*file, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw Failure("cannot write " + *file);
}

int analyze(const std::vector<std::string>& args, const char* argv0) {
  CommandLine line = parse("analyze", args,
                           {{{"-j", "--jobs"}, {"-o", "--output"}, {"-p", "--compile-commands"}},
                            {"--jobs", "--output", "--compile-commands", "--format", "--min-confidence",
                             "--select", "--ignore", "--color", "--cuda-path", "--data"},
                            {"--preview"}});
  if (line.flags.contains("--help")) return print_help("analyze"), kClean;
  if (line.positional.empty()) throw UsageError("analyze", "no paths given");
  std::string format = choice(line, "analyze", "--format", {"text", "json", "sarif"}, "text");
  std::string color = choice(line, "analyze", "--color", {"auto", "always", "never"}, "auto");
  DriverOptions options;
  options.jobs = parse_jobs(line.value("--jobs").value_or("0"));
  options.min_confidence = line.value("--min-confidence") ? parse_confidence(*line.value("--min-confidence")) : kDefaultMinConfidence;
  options.cuda.cuda_path = line.value("--cuda-path").value_or("");
  options.cuda.compile_commands_dir = line.value("--compile-commands").value_or("");

  fs::path data = data_dir(line, argv0);
  Engine engine = load_engine(data);
  // Preview rules run only when asked for, by --preview or by name in --select.
  std::set<std::string> selected;
  for (const Rule& rule : engine.rules())
    if (rule.status == "stable" || line.flags.contains("--preview")) selected.insert(rule.id);
  if (auto select = line.value("--select")) selected = rules_named("--select", *select, engine);
  if (auto ignore = line.value("--ignore"))
    for (const std::string& id : rules_named("--ignore", *ignore, engine)) selected.erase(id);
  options.only_rules = selected;

  // A catalog that fails to load only costs the measured speedups; `mlsem kernels` reports why.
  std::vector<FileError> catalog_errors;
  kernels::Catalog catalog = load_catalog(data, catalog_errors);
  options.catalog = &catalog;

  SourceTexts sources;
  Report report = analyze_paths(line.positional, engine, options, format == "text" ? &sources : nullptr);
  std::optional<std::string> output = line.value("--output");
  std::string text;
  if (format == "json") {
    text = report::to_json(report);
  } else if (format == "sarif") {
    std::vector<Rule> rules;
    for (const Rule& rule : engine.rules())
      if (selected.contains(rule.id)) rules.push_back(rule);
    text = report::to_sarif(report, rules);
  } else {
    const char* no_color = std::getenv("NO_COLOR");
    bool terminal = !output && isatty(STDOUT_FILENO) && !(no_color && *no_color);
    text = report::to_text(report, sources, {color == "always" || (color == "auto" && terminal)});
  }
  write_output(text, output);
  return report.findings.empty() && report.errors.empty() ? kClean : kFound;
}

int rules(const std::vector<std::string>& args, const char* argv0) {
  CommandLine line = parse("rules", args, {{}, {"--format", "--data"}, {}});
  if (line.flags.contains("--help")) return print_help("rules"), kClean;
  if (!line.positional.empty()) throw UsageError("rules", "unexpected argument '" + line.positional[0] + "'");
  std::string format = choice(line, "rules", "--format", {"text", "json"}, "text");
  Engine engine = load_engine(data_dir(line, argv0));
  std::cout << (format == "json" ? report::rules_json(engine.rules()) : report::rules_table(engine.rules()));
  return kClean;
}

int explain(const std::vector<std::string>& args, const char* argv0) {
  CommandLine line = parse("explain", args, {{}, {"--data"}, {}});
  if (line.flags.contains("--help")) return print_help("explain"), kClean;
  if (line.positional.size() != 1) throw UsageError("explain", "expected one rule id or name");
  fs::path data = data_dir(line, argv0);
  Engine engine = load_engine(data);
  const Rule* rule = engine.rule(line.positional[0]);
  if (!rule) throw UsageError("explain", "no rule '" + line.positional[0] + "' (see `mlsem rules`)");
  std::cout << report::explain(*rule, engine);
  if (rule->kernel) {
    std::vector<FileError> errors;
    kernels::Catalog catalog = load_catalog(data, errors);
    if (catalog.find(*rule->kernel)) std::cout << "    measured: " << catalog.speedup_summary(*rule->kernel) << "\n";
  }
  return kClean;
}

int ir_dump(const std::vector<std::string>& args) {
  CommandLine line = parse("ir", args, {{{"-p", "--compile-commands"}}, {"--cuda-path", "--compile-commands", "--data"}, {}});
  if (line.flags.contains("--help")) return print_help("ir"), kClean;
  if (line.positional.size() != 1) throw UsageError("ir", "expected one file");
  const std::string& path = line.positional[0];
  if (driver::language_of(path).empty()) throw UsageError("ir", path + ": not a .py file (or .cu/.cuh with CUDA support built)");
  SourceFile file;
  if (auto error = read_source_file(path, DriverOptions().max_file_bytes, file)) {
    print_file_errors({*error});
    return kFound;
  }
  DriverOptions options;
  options.cuda = {line.value("--compile-commands").value_or(""), line.value("--cuda-path").value_or("")};
  ir::Module module = build_module(file, options);
  std::vector<FileError> diagnostics;
  for (const Diagnostic& d : module.diagnostics)
    diagnostics.push_back({d.path.empty() ? path : d.path, d.message, d.range.begin.line, d.range.begin.column});
  print_file_errors(diagnostics);
  std::cout << ir::to_text(module);
  return diagnostics.empty() ? kClean : kFound;
}

// Runs the kernels' own benchmark script (not code under analysis) with this
// process's stdout and stderr. Without --out it writes kernels/results/<device>.json,
// where the catalog reads measurements from.
int run_benchmark(std::vector<std::string> command) {
  if (command.size() >= 2 && command[command.size() - 2] == "--out" && command.back().empty())
    command.resize(command.size() - 2);
  if (command.size() < 2 || !fs::exists(command[1]))
    throw Failure("the benchmark script " + (command.size() < 2 ? std::string("?") : command[1]) +
                  " is missing: benchmarks run from a source checkout's kernels/");
  std::vector<char*> argv;
  for (std::string& arg : command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::cout.flush();
  pid_t child = 0;
  if (int error = posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ))
    throw Failure("cannot run " + command[0] + ": " + std::strerror(error));
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return kClean;
  throw Failure("the benchmark failed (" + command[0] + " " + command[1] + ")");
}

int kernels_command(const std::vector<std::string>& args, const char* argv0) {
  CommandLine line = parse("kernels", args, {{}, {"--out", "--data"}, {}});
  if (line.flags.contains("--help")) return print_help("kernels"), kClean;
  if (line.positional.empty()) throw UsageError("kernels", "expected list, show NAME or bench NAME");
  const std::string& action = line.positional[0];
  size_t wanted_arguments = action == "list" ? 1 : 2;
  if (action != "list" && action != "show" && action != "bench")
    throw UsageError("kernels", "unknown action '" + action + "' (list, show, bench)");
  if (line.positional.size() != wanted_arguments)
    throw UsageError("kernels", action == "list" ? "list takes no argument" : action + " needs one kernel name");
  if (line.value("--out") && action != "bench") throw UsageError("kernels", "--out is for bench");

  std::vector<FileError> errors;
  kernels::Catalog catalog = load_catalog(data_dir(line, argv0), errors);
  print_file_errors(errors);
  if (action == "list") {
    size_t width = 0;
    for (const kernels::KernelEntry& kernel : catalog.kernels()) width = std::max(width, kernel.name.size());
    for (const kernels::KernelEntry& kernel : catalog.kernels())
      std::cout << kernel.name << std::string(width - kernel.name.size() + 2, ' ') << kernel.title << "\n"
                << std::string(width + 2, ' ') << catalog.speedup_summary(kernel.name) << "\n";
    return errors.empty() ? kClean : kFound;
  }
  const std::string& name = line.positional[1];
  if (!catalog.find(name)) throw UsageError("kernels", "no kernel '" + name + "' (see `mlsem kernels list`)");
  if (action == "show") {
    std::cout << catalog.readme(name);
    return errors.empty() ? kClean : kFound;
  }
  return run_benchmark(catalog.bench_command(name, line.value("--out").value_or("")));
}

int run(const std::vector<std::string>& all_args, const char* argv0) {
  // Options before the command: --data DIR, --version, --help.
  std::vector<std::string> args = all_args;
  std::vector<std::string> global;
  while (!args.empty() && args[0].starts_with("-")) {
    std::string arg = args[0];
    args.erase(args.begin());
    if (arg == "--version") return std::cout << "mlsem " << version() << "\n", kClean;
    if (arg == "--help" || arg == "-h") return print_help(""), kClean;
    if (arg == "--data" || arg.starts_with("--data=")) {
      global.push_back(arg);
      if (arg == "--data") {
        if (args.empty()) throw UsageError("", "option --data needs a value");
        global.push_back(args[0]);
        args.erase(args.begin());
      }
      continue;
    }
    throw UsageError("", "unknown option '" + arg + "'");
  }
  if (args.empty()) throw UsageError("", "no command given");
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "help") {
    if (args.size() > 1) throw UsageError("help", "expected at most one command");
    print_help(args.empty() ? "" : args[0]);
    return kClean;
  }
  args.insert(args.end(), global.begin(), global.end());  // --data applies to the command

  if (command == "analyze") return analyze(args, argv0);
  if (command == "rules") return rules(args, argv0);
  if (command == "explain") return explain(args, argv0);
  if (command == "concepts") return learn::concepts_main(args, argv0);
  if (command == "learn") return learn::learn_main(args, argv0);
  if (command == "ir") return ir_dump(args);
  if (command == "kernels") return kernels_command(args, argv0);
  throw UsageError("", "unknown command '" + command + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return run(args, argv[0]);
  } catch (const UsageError& e) {
    std::cerr << "mlsem: " << e.what() << "\n"
              << "Run `mlsem help" << (e.command.empty() ? "" : " " + e.command) << "` for usage.\n";
  } catch (const Failure& e) {
    std::cerr << "mlsem: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "mlsem: internal error: " << e.what() << "\n";
  }
  return kFailed;
}
