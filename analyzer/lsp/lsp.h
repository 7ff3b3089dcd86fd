// `mlsem lsp`: the Language Server (LSP 3.17 over stdio). The only part of mlsem
// that speaks LSP; it runs the same driver and engine as `mlsem analyze`.
#pragma once

#include <string>
#include <vector>

namespace mlsem::lsp {

// Runs the server on stdin/stdout until `exit` (or end of input). `args` are the
// command's options (--data DIR, --cuda-path DIR, -p DIR, --debounce MS, --help).
// Returns the process exit code: 0 after shutdown then exit, 1 when exit comes
// without shutdown (or input ends), 2 for a usage error or unloadable data.
int run_command(const std::vector<std::string>& args, const char* argv0);

}  // namespace mlsem::lsp
