// The command line's shared parts (cli.h).
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli/cli.h"
#include "driver/driver.h"
#include "learn/command.h"

namespace fs = std::filesystem;

namespace mlsem::cli {
namespace {

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
  lsp                 run the Language Server for editors (stdio)
  help [COMMAND]      this help, or a command's

options:
  --data DIR          concepts/, patterns/, rules/ and kernels/ from DIR
                      (default: $MLSEM_DATA, the install's share/mlsem, the source tree)
  --version           print the version
  -h, --help          help

exit codes: 0 nothing found, 1 findings or file errors, 2 usage or internal errors
)"},
    {"analyze", R"(usage: mlsem analyze PATH... [options]

Analyzes .py files, Jupyter notebooks (.ipynb) and, when CUDA support is built,
.cu/.cuh files in the named files and directories; "-" reads stdin. Directories are
walked recursively, skipping VCS directories, virtual environments, build*/,
node_modules, caches, site-packages, what .gitignore files ignore and what the
configuration excludes.

output:
  --format FORMAT         text (default), json, json-lines, sarif, github (Actions
                          annotations) or junit
  -o, --output FILE       write the report to FILE instead of stdout
  --statistics            print the number of findings per rule instead
  --color WHEN            auto (default: when stdout is a terminal and NO_COLOR is unset),
                          always or never
rules:
  --select SELECTORS      run only these rules: comma-separated ids, names, id prefixes
                          (ATT) or concepts with their subtree (attention)
  --ignore SELECTORS      do not run these rules
  --preview               also run preview rules (off by default; --select can name one)
  --min-confidence X      drop findings below confidence X, 0..1 (default 0.5)
  --torch-version X.Y     the PyTorch version the code targets: rules whose fix needs a
                          newer one are off (default: the configuration, else the pin in the
                          nearest pyproject.toml, setup.cfg, setup.py, requirements*.txt or
                          conda environment*.yml, else the CI's oldest torch, else what the
                          README states)
  --show-demoted          also report findings demoted by their context (info: eager
                          fallbacks, tests, op references, parity variants, cold or
                          unused code, modular sources, CUDA
                          kernel versions kept for comparison)
  --keep-context KINDS    treat these contexts as user code, not demoted (comma-separated:
                          test, reference, parity, fallback, returns-weights, cold,
                          unused, modular, variant, comparison,
                          compiled, vendored, example, env-bound,
                          configured, or all)
configuration:
  --config FILE           use this mlsem.toml / pyproject.toml for every file
  --isolated              ignore every configuration file
  --report-unused-suppressions
                          report `# mlsem: ignore` / `# noqa` comments that suppress nothing
  --baseline FILE         do not report the findings recorded in FILE
  --write-baseline FILE   record the findings in FILE (before --baseline is applied)
  --stdin-filename NAME   the path to show (and configure) the text read from "-" as
cache:
  --no-cache              analyze every file again
  --cache-dir DIR         cache directory (default: $MLSEM_CACHE_DIR, else .mlsem_cache/
                          at the project root); CUDA files are not cached, their
                          findings also depending on the headers they include
exit:
  --fail-on LEVEL         exit 1 only for findings of severity LEVEL or above: info
                          (default), warning or error
  --exit-zero             exit 0 even when there are findings or file errors
other:
  -j, --jobs N            analyze N files at once (default 0: all cores)
  --cuda-path DIR         CUDA toolkit root for .cu files ("none": no toolkit headers)
  -p, --compile-commands BUILD_DIR
                          directory holding compile_commands.json for .cu files
  --data DIR              data directory (see `mlsem help`)

exit codes: 0 no findings and no file errors, 1 findings or file errors, 2 usage,
configuration or internal errors
)"},
    {"rules", R"(usage: mlsem rules [--format text|json] [--data DIR]

Lists every rule: id, name, concept, severity, status (stable or preview), summary.
)"},
    {"explain", R"(usage: mlsem explain RULE [--format text|markdown] [--data DIR]

Prints a rule's documentation: summary, why it is slow, an example, the example fixed,
the fix, its concept with the concepts above it, and its reference kernel.
RULE is an id (ATT001) or a name (hand-written-attention). --format markdown prints
the page docs/rules/<ID>.md holds (scripts/rule_docs.sh writes them all).
)"},
    {"ir", R"(usage: mlsem ir FILE [--cuda-path DIR] [-p BUILD_DIR]

Prints the semantic IR the patterns are matched against (docs/IR.md), for one .py
(or .cu/.cuh) file. Syntax errors are printed to stderr; the recovered IR is printed.
)"},
    {"kernels", R"(usage: mlsem kernels list
       mlsem kernels show NAME
       mlsem kernels bench NAME [--out FILE]

The reference kernels findings point to (kernels/NAME): list them with their measured
speedups, show one's lesson (README) with its measured ladder (eager PyTorch, library
call, torch.compile, Triton, naive CUDA, CUDA at each shape and GPU of kernels/results),
or benchmark one on this machine's GPU with
kernels/bench/bench.py, writing its measurements to FILE (default:
kernels/results/<device>.json, where measured speedups are read from).
)"},
    {"lsp", R"(usage: mlsem lsp [--data DIR] [--cuda-path DIR] [-p BUILD_DIR] [--debounce MS]

The Language Server (LSP 3.17 over stdin/stdout); `mlsem lsp --help` for details.
)"},
    {"help", R"(usage: mlsem help [COMMAND]
)"},
};

// The command line of one command: options (with or without a value) and the
// positional arguments. `--name=value`, `--name value` and `-jN` are all accepted.
}  // namespace

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
    if (e.line) std::cerr << ":" << e.line;
    if (e.line && e.column) std::cerr << ":" << e.column;
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

}  // namespace mlsem::cli
