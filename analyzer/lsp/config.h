// The workspace's mlsem settings as the language server applies them: `mlsem.toml`
// at the workspace root, else `[tool.mlsem]` in its pyproject.toml.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace mlsem::lsp {

struct WorkspaceConfig {
  std::vector<std::string> select;  // rule ids, names or id prefixes; empty = the stable rules
  std::vector<std::string> ignore;
  bool preview = false;
  std::optional<double> min_confidence;
  std::string source;               // the file it came from, "" for the defaults
  std::vector<std::string> problems;  // "mlsem.toml: select: expected ..." (shown to the user)
};

// Reads root/mlsem.toml, else root/pyproject.toml's [tool.mlsem]. Keys: select,
// ignore (arrays of strings or one comma-separated string), preview (bool),
// min-confidence (number 0..1). Problems are collected, never thrown.
WorkspaceConfig load_workspace_config(const std::filesystem::path& root);

// The rule ids that run under `config` (unknown names are added to its problems).
std::set<std::string> selected_rules(const Engine& engine, WorkspaceConfig& config);

// Whether a changed file (path or URI path) is one the configuration is read from.
bool is_config_file(const std::string& path);

}  // namespace mlsem::lsp
