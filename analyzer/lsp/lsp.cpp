#include "lsp/lsp.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "engine/engine.h"
#include "kernels/catalog.h"
#include "lsp/findings.h"
#include "lsp/server.h"

namespace mlsem::lsp {
namespace {

constexpr const char* kUsage = R"(usage: mlsem lsp [--data DIR] [--cuda-path DIR] [-p BUILD_DIR] [--debounce MS]

Runs mlsem as a Language Server (LSP 3.17) on stdin/stdout, for editors: findings
as diagnostics (pushed, or pulled when the client supports it), hovers that explain
them, quick fixes and suppression comments. The workspace's mlsem.toml (or
[tool.mlsem] in pyproject.toml: select, ignore, preview, min-confidence) applies and
is re-read when it changes. docs/editors.md shows the VS Code and Neovim setup.

options:
  --data DIR          data directory (see `mlsem help`)
  --cuda-path DIR     CUDA toolkit root for .cu files ("none": no toolkit headers)
  -p BUILD_DIR        directory holding compile_commands.json for .cu files
  --debounce MS       while typing, analyze MS milliseconds after the last change
                      (default 100; an isolated change is analyzed at once)

exit codes: 0 after shutdown and exit, 1 when exit (or the end of input) comes
without shutdown, 2 usage errors or data that fails to load
)";

int usage_error(const std::string& message) {
  std::cerr << "mlsem lsp: " << message << "\nRun `mlsem lsp --help` for usage.\n";
  return 2;
}

}  // namespace

int run_command(const std::vector<std::string>& args, const char* argv0) {
  std::optional<std::string> data;
  ServerOptions options;
  options.docs_base = default_docs_base();
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i], value;
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--stdio") continue;  // what some clients pass; stdio is the only transport
    size_t eq = arg.find('=');
    bool inline_value = arg.starts_with("--") && eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg != "--data" && arg != "--cuda-path" && arg != "-p" && arg != "--compile-commands" && arg != "--debounce")
      return usage_error("unknown option '" + args[i] + "'");
    if (!inline_value) {
      if (i + 1 == args.size()) return usage_error("option " + arg + " needs a value");
      value = args[++i];
    }
    if (arg == "--data") data = value;
    else if (arg == "--cuda-path") options.cuda.cuda_path = value;
    else if (arg == "--debounce") {
      char* end = nullptr;
      long ms = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || ms < 0 || ms > 5000) return usage_error("--debounce: expected 0 to 5000 ms, got '" + value + "'");
      options.debounce_ms = static_cast<int>(ms);
    } else options.cuda.compile_commands_dir = value;
  }

  std::filesystem::path dir = data ? std::filesystem::path(*data) : find_data_dir(argv0);
  std::vector<FileError> errors;
  std::optional<Engine> engine = Engine::load(dir, errors);
  for (const FileError& e : errors)
    std::cerr << e.path << (e.line ? ":" + std::to_string(e.line) : "") << ": " << e.message << "\n";
  if (!engine) {
    std::cerr << "mlsem lsp: cannot load the rules from " << dir.string() << "\n";
    return 2;
  }
  std::vector<FileError> catalog_errors;  // without a catalog, findings only lack measured speedups
  kernels::Catalog catalog = kernels::Catalog::load(dir / "kernels", catalog_errors);

  std::signal(SIGPIPE, SIG_IGN);  // a client gone away is seen as a failed write
  MessageReader in(STDIN_FILENO);
  MessageWriter out(STDOUT_FILENO);
  Server server(*engine, &catalog, options, in, out);
  return server.run();
}

}  // namespace mlsem::lsp
