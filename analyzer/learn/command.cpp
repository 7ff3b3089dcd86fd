#include "learn/command.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "driver/driver.h"
#include "engine/engine.h"
#include "kernels/catalog.h"
#include "learn/curriculum.h"
#include "learn/path.h"
#include "learn/render.h"

namespace fs = std::filesystem;

namespace mlsem::learn {
namespace {

constexpr int kDone = 0, kFileErrors = 1, kFailed = 2;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const std::map<std::string, std::string> kHelp = {
    {"learn", R"(usage: mlsem learn PATH... [options]
       mlsem learn --fundamentals [options]

Analyzes the paths like `mlsem analyze`, then prints a learning path: the concepts behind
the findings and everything they need, prerequisites first, in beginner, intermediate and
advanced stages. Each step has an explanation, why it matters for this code (the
findings, with the optimization level of their fix), the reference kernels to study with
their measured numbers (naive -> optimized, and the ladder eager -> library call ->
torch.compile -> Triton -> custom CUDA), a checkpoint and an estimated time.

options:
  --fundamentals          the path to the GPU fundamentals the kernels/lesson_* kernels teach
  --format FORMAT         text (default), markdown, json or dot
  -o, --output FILE       write to FILE; FILE.svg renders the DOT picture with Graphviz `dot`
  -j, --jobs N            analyze N files at once (default 0: all cores)
  --min-confidence X      ignore findings below confidence X, 0..1 (default 0.5)
  --cuda-path DIR         CUDA toolkit root for .cu files ("none": no toolkit headers)
  -p, --compile-commands BUILD_DIR
                          directory holding compile_commands.json for .cu files
  --data DIR              data directory (see `mlsem help`)

exit codes: 0 path printed, 1 some files could not be analyzed, 2 usage or internal errors
)"},
    {"concepts", R"(usage: mlsem concepts [ID] [--format text|dot] [-o FILE] [--data DIR]

Without ID, the concept hierarchy as a tree (stage and estimated time of each concept).
With ID, one concept: its stage, parents, children, prerequisites, the rules filed under
it, its explanation, checkpoint, lessons with measured kernels, and reading.
--format dot prints the hierarchy (or the concept with what it needs) as Graphviz DOT;
-o FILE.svg renders it when `dot` is installed.
)"},
};

struct Options {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
  std::vector<std::string> positional;
  std::optional<std::string> value(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional(it->second);
  }
};

Options parse(const std::vector<std::string>& args, const std::map<std::string, std::string>& aliases,
              const std::set<std::string>& with_value, const std::set<std::string>& flags) {
  Options out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      out.positional.insert(out.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      out.positional.push_back(arg);
      continue;
    }
    std::optional<std::string> inline_value;
    if (size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (!arg.starts_with("--") && arg.size() > 2) {
      inline_value = arg.substr(2);
      arg = arg.substr(0, 2);
    }
    if (arg == "-h") arg = "--help";
    if (auto alias = aliases.find(arg); alias != aliases.end()) arg = alias->second;
    if (arg == "--help" || flags.count(arg)) {
      if (inline_value) throw UsageError("option " + arg + " takes no value");
      out.flags.insert(arg);
    } else if (with_value.count(arg)) {
      if (!inline_value && i + 1 == args.size()) throw UsageError("option " + arg + " needs a value");
      out.values[arg] = inline_value ? *inline_value : args[++i];
    } else {
      throw UsageError("unknown option '" + args[i] + "'");
    }
  }
  return out;
}

std::string choice(const Options& options, const std::string& name, const std::vector<std::string>& allowed,
                   const std::string& fallback) {
  std::string value = options.value(name).value_or(fallback);
  std::string list;
  for (const auto& a : allowed) {
    if (a == value) return value;
    list += (list.empty() ? "" : ", ") + a;
  }
  throw UsageError(name + ": expected one of " + list + ", got '" + value + "'");
}

Engine load_engine(const fs::path& dir) {
  std::vector<FileError> errors;
  std::optional<Engine> engine = Engine::load(dir, errors);
  for (const FileError& e : errors)
    std::cerr << e.path << (e.line ? ":" + std::to_string(e.line) : "") << ": " << e.message << "\n";
  if (!engine) throw Failure("cannot load the rules from " + dir.string());
  return std::move(*engine);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The output format: --format, or dot when writing FILE.svg; FILE.svg needs dot.
std::string output_format(const Options& options, const std::vector<std::string>& allowed) {
  const std::optional<std::string> output = options.value("--output");
  const bool svg = output && ends_with(*output, ".svg");
  std::string format = choice(options, "--format", allowed, svg ? "dot" : "text");
  if (svg && format != "dot") throw UsageError("-o " + *output + ": an .svg file is drawn from --format dot");
  return format;
}

// Writes `text` to stdout or the --output file; an .svg file is rendered by Graphviz.
void write_output(const std::string& text, const std::optional<std::string>& file) {
  if (!file) {
    std::cout << text << std::flush;
    return;
  }
  const bool svg = ends_with(*file, ".svg");
  const std::string target = svg ? *file + ".dot" : *file;
  {
    std::ofstream out(target, std::ios::binary);
    out << text;
    if (!out.good()) throw Failure("cannot write " + target);
  }
  if (!svg) return;
  std::vector<std::string> command = {"dot", "-Tsvg", target, "-o", *file};
  std::vector<char*> argv;
  for (std::string& arg : command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  int error = posix_spawnp(&child, "dot", nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (!error)
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  std::error_code ec;
  if (error || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = error == ENOENT ? "Graphviz `dot` is not installed (Debian: apt-get install graphviz)"
                                      : error ? std::strerror(error) : "dot failed";
    throw Failure("cannot render " + *file + ": " + why + "; the DOT source is in " + target);
  }
  fs::remove(target, ec);
}

int learn(const std::vector<std::string>& args, const char* argv0) {
  Options options = parse(args, {{"-j", "--jobs"}, {"-o", "--output"}, {"-p", "--compile-commands"}},
                          {"--jobs", "--output", "--compile-commands", "--format", "--min-confidence", "--cuda-path",
                           "--data"},
                          {"--fundamentals"});
  if (options.flags.count("--help")) return std::cout << help("learn"), kDone;
  const bool fundamentals = options.flags.count("--fundamentals") > 0;
  if (options.positional.empty() && !fundamentals) throw UsageError("no paths given (or --fundamentals)");
  if (!options.positional.empty() && fundamentals) throw UsageError("--fundamentals takes no paths");
  const std::string format = output_format(options, {"text", "markdown", "json", "dot"});
  DriverOptions driver;
  if (auto jobs = options.value("--jobs")) {
    auto [end, ec] = std::from_chars(jobs->data(), jobs->data() + jobs->size(), driver.jobs);
    if (ec != std::errc() || end != jobs->data() + jobs->size() || driver.jobs > 1024)
      throw UsageError("-j: expected a number of jobs (0 = all cores), got '" + *jobs + "'");
  }
  driver.min_confidence = kDefaultMinConfidence;
  if (auto text = options.value("--min-confidence")) {
    char* end = nullptr;
    driver.min_confidence = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0' || !(driver.min_confidence >= 0.0 && driver.min_confidence <= 1.0))
      throw UsageError("--min-confidence: expected a number from 0 to 1, got '" + *text + "'");
  }
  driver.cuda.cuda_path = options.value("--cuda-path").value_or("");
  driver.cuda.compile_commands_dir = options.value("--compile-commands").value_or("");

  const fs::path data = options.value("--data") ? fs::path(*options.value("--data")) : find_data_dir(argv0);
  Engine engine = load_engine(data);
  std::set<std::string> stable;  // preview rules stay off, as in `mlsem analyze`
  for (const Rule& rule : engine.rules())
    if (rule.status == "stable") stable.insert(rule.id);
  driver.only_rules = stable;
  std::vector<FileError> catalog_errors;  // a broken results file only costs the numbers
  kernels::Catalog catalog = kernels::Catalog::load(data / "kernels", catalog_errors);
  driver.catalog = [&catalog] { return &catalog; };

  Report report;
  if (!fundamentals) report = analyze_paths(options.positional, engine, driver);
  for (const FileError& e : report.errors)
    std::cerr << e.path << (e.line ? ":" + std::to_string(e.line) + ":" + std::to_string(e.column) : "") << ": "
              << e.message << "\n";
  Curriculum curriculum(engine.concepts());
  LearningPath path = build_path(report, curriculum, catalog, fundamentals);
  std::string text = format == "json"       ? path_json(path)
                     : format == "markdown" ? path_markdown(path)
                     : format == "dot"      ? path_dot(path, curriculum)
                                            : path_text(path);
  write_output(text, options.value("--output"));
  return report.errors.empty() ? kDone : kFileErrors;
}

int concepts(const std::vector<std::string>& args, const char* argv0) {
  Options options = parse(args, {{"-o", "--output"}}, {"--format", "--output", "--data"}, {});
  if (options.flags.count("--help")) return std::cout << help("concepts"), kDone;
  if (options.positional.size() > 1) throw UsageError("expected at most one concept id");
  const std::string format = output_format(options, {"text", "dot"});
  const fs::path data = options.value("--data") ? fs::path(*options.value("--data")) : find_data_dir(argv0);
  Engine engine = load_engine(data);
  Curriculum curriculum(engine.concepts());
  const std::string id = options.positional.empty() ? "" : options.positional[0];
  if (!id.empty() && !curriculum.find(id)) throw UsageError("no concept '" + id + "' (see `mlsem concepts`)");
  std::string text;
  if (format == "dot") {
    text = concepts_dot(curriculum, id);
  } else if (id.empty()) {
    text = concepts_tree(curriculum);
  } else {
    std::vector<FileError> catalog_errors;
    kernels::Catalog catalog = kernels::Catalog::load(data / "kernels", catalog_errors);
    text = concept_detail(id, curriculum, engine, catalog);
  }
  write_output(text, options.value("--output"));
  return kDone;
}

// Runs a command, printing its usage and data errors the way the rest of the CLI does.
int guarded(const std::string& command, int (*run)(const std::vector<std::string>&, const char*),
            const std::vector<std::string>& args, const char* argv0) {
  try {
    return run(args, argv0);
  } catch (const UsageError& e) {
    std::cerr << "mlsem: " << e.what() << "\nRun `mlsem help " << command << "` for usage.\n";
  } catch (const Failure& e) {
    std::cerr << "mlsem: " << e.what() << "\n";
  }
  return kFailed;
}

}  // namespace

std::string help(const std::string& command) {
  auto it = kHelp.find(command);
  return it == kHelp.end() ? "" : it->second;
}

int learn_main(const std::vector<std::string>& args, const char* argv0) { return guarded("learn", learn, args, argv0); }
int concepts_main(const std::vector<std::string>& args, const char* argv0) {
  return guarded("concepts", concepts, args, argv0);
}

}  // namespace mlsem::learn
