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
#include "driver/notebook.h"
#include "engine/engine.h"
#include "ir/print.h"
#include "kernels/catalog.h"
#include "learn/command.h"
#include "lsp/lsp.h"
#include "report/report.h"
#include "cli/cli.h"

namespace fs = std::filesystem;
using namespace mlsem;

namespace mlsem::cli {
namespace {

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
  CommandLine line = parse("explain", args, {{}, {"--data", "--format"}, {}});
  if (line.flags.contains("--help")) return print_help("explain"), kClean;
  if (line.positional.size() != 1) throw UsageError("explain", "expected one rule id or name");
  fs::path data = data_dir(line, argv0);
  Engine engine = load_engine(data);
  const Rule* rule = engine.rule(line.positional[0]);
  if (!rule) throw UsageError("explain", "no rule '" + line.positional[0] + "' (see `mlsem rules`)");
  if (choice(line, "explain", "--format", {"text", "markdown"}, "text") == "markdown") {
    std::string measured;
    if (rule->kernel) {
      std::vector<FileError> errors;
      kernels::Catalog catalog = load_catalog(data, errors);
      if (catalog.find(*rule->kernel)) measured = catalog.speedup_summary(*rule->kernel, {}, kernels::against_for(rule->language));
    }
    std::cout << report::explain_markdown(*rule, engine, measured);
    return kClean;
  }
  std::cout << report::explain(*rule, engine);
  if (rule->kernel) {
    std::vector<FileError> errors;
    kernels::Catalog catalog = load_catalog(data, errors);
    if (catalog.find(*rule->kernel))
      std::cout << "    measured: " << catalog.speedup_summary(*rule->kernel, {}, kernels::against_for(rule->language)) << "\n";
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
  if (driver::is_notebook(path)) {  // the program its code cells make
    SourceFile notebook = std::move(file);
    NotebookIndex index;
    if (auto error = driver::notebook_program(notebook, file, index)) {
      print_file_errors({*error});
      return kFound;
    }
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
    // The lesson (README), its generated results tables replaced by the ladder read from
    // the results files, so the numbers come from the files the findings quote.
    std::string readme = catalog.readme(name);
    const std::string begin = "<!-- results:begin -->", end = "<!-- results:end -->";
    const size_t b = readme.find(begin), e = readme.find(end);
    const std::string ladder = catalog.ladder_table(name);
    const std::string measured =
        ladder.empty() ? "No measurement yet (mlsem kernels bench " + name + ").\n"
                       : "Measured ladder: median time per call, and speedup over eager PyTorch (above 1: faster).\n\n" + ladder;
    if (b != std::string::npos && e != std::string::npos && e > b)
      readme = readme.substr(0, b) + measured + readme.substr(e + end.size());
    else
      readme += "\n" + measured;
    std::cout << readme;
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
  if (command == "concepts") return learn::concepts_main(args, argv0);  // analyzer/learn/
  if (command == "learn") return learn::learn_main(args, argv0);
  if (command == "ir") return ir_dump(args);
  if (command == "kernels") return kernels_command(args, argv0);
  if (command == "lsp") return lsp::run_command(args, argv0);
  throw UsageError("", "unknown command '" + command + "'");
}

}  // namespace
}  // namespace mlsem::cli

int main(int argc, char** argv) {
  using namespace mlsem::cli;
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
