// Configuration files: `[tool.mlsem]` in pyproject.toml or an mlsem.toml (the
// nearest one above each file wins; mlsem.toml over pyproject.toml in one directory),
// merged with the command line into per-file settings, and the exclusions
// (exclude, extend-exclude, .gitignore) the file walk applies. docs/ci.md lists the keys.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/finding.h"
#include "engine/engine.h"

namespace mlsem::config {

// What one file is analyzed with.
struct FileSettings {
  std::set<std::string> rules;                  // rule ids that run
  double min_confidence = 0.5;
  std::map<std::string, std::string> severity;  // rule id -> "error" | "warning" | "info"
  std::string torch_version;
  std::string key;                              // all of the above as text (cache keys)
};

// The command line's say, which wins over configuration files.
struct CommandLine {
  std::optional<std::string> select, ignore;  // comma-separated selectors
  bool preview = false;
  std::optional<double> min_confidence;
  std::optional<std::string> torch_version;
  std::optional<std::string> config_file;     // --config FILE: this file for every path
  bool isolated = false;                      // --isolated: no configuration file at all
};

// A value of a configuration file with the line it is on (for error messages).
struct Item {
  std::string text;
  uint32_t line = 0;
};

// One parsed configuration file.
struct ConfigFile {
  std::filesystem::path file, dir;   // the file and the directory its globs are relative to
  std::optional<std::vector<Item>> select, ignore;
  std::vector<std::pair<Item, std::vector<Item>>> per_file_ignores;  // glob -> selectors
  std::optional<double> min_confidence;
  std::vector<std::pair<Item, std::string>> severity;  // selector -> "error" | "warning" | "info"
  std::vector<std::string> exclude;             // exclude + extend-exclude globs
  bool respect_gitignore = true;
  std::optional<std::string> torch_version;
};

// Reads a configuration file. pyproject.toml without [tool.mlsem] gives nullopt and no
// error. Unknown keys, wrong types and bad values are appended to `errors` as
// file:line problems (and nullopt is returned).
std::optional<ConfigFile> read_config(const std::filesystem::path& file, std::vector<FileError>& errors);

// Rule ids a selector names: an id, a name, an id prefix ("ATT") or a concept with its
// whole subtree ("attention"). Empty when it names nothing.
std::set<std::string> rules_selected(const std::string& selector, const Engine& engine);

// gitignore-style glob: `*` and `?` within a path component, `**` across them,
// `[abc]` classes. `path` is relative, with '/' separators.
bool glob_match(std::string_view pattern, std::string_view path);

class Resolver {
 public:
  Resolver(const Engine& engine, CommandLine command_line);
  ~Resolver();
  // Validates the command line's selectors and loads --config. False (with `errors`)
  // when something is wrong.
  bool init(std::vector<FileError>& errors);
  // Loads the configuration of every file's directory; false when one is bad. Call
  // once the files are known, before settings_for is used from several threads.
  bool prepare(const std::vector<std::string>& files);
  // Problems met in configuration files so far.
  const std::vector<FileError>& errors() const { return errors_; }
  // The settings for a file (prepare() must have seen it). Thread-safe after prepare.
  const FileSettings& settings_for(const std::string& path) const;
  // Whether the walk leaves out a file or directory met under a named directory:
  // exclude/extend-exclude of its configuration, and .gitignore files.
  bool excluded(const std::filesystem::path& path, bool is_directory);

 private:
  struct State;
  const ConfigFile* config_for_dir(const std::filesystem::path& dir);
  FileSettings make_settings(const ConfigFile* config, const std::string& path);
  const Engine& engine_;
  CommandLine command_line_;
  std::vector<FileError> errors_;
  std::unique_ptr<State> state_;
};

}  // namespace mlsem::config
