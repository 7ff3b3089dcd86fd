// Per-file settings: the nearest configuration file, then the command line on top.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <system_error>

#include "config/config.h"

namespace fs = std::filesystem;

namespace mlsem::config {
namespace {

fs::path normalized(const fs::path& path) {
  std::error_code ec;
  return fs::absolute(path, ec).lexically_normal();
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, end - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) items.push_back(item);
    start = end + 1;
  }
  return items;
}

// A glob of a configuration file or .gitignore against a path relative to its
// directory: a pattern with a slash (other than a trailing one) is anchored there;
// one without matches a name at any depth. A match of a leading directory covers
// everything below it.
bool path_matches(std::string pattern, const std::string& relative, bool is_directory) {
  bool directory_only = pattern.size() > 1 && pattern.back() == '/';
  if (directory_only) pattern.pop_back();
  bool anchored = pattern.find('/') != std::string::npos;
  if (pattern.starts_with("/")) pattern.erase(0, 1);
  if (pattern.starts_with("./")) pattern.erase(0, 2);
  // Every prefix of the path at a '/' is a directory that the pattern may name.
  for (size_t end = relative.find('/'); ; end = relative.find('/', end + 1)) {
    bool whole = end == std::string::npos;
    std::string prefix = whole ? relative : relative.substr(0, end);
    bool dir = whole ? is_directory : true;
    if (!directory_only || dir) {
      if (anchored) {
        if (glob_match(pattern, prefix)) return true;
      } else {
        size_t slash = prefix.rfind('/');
        std::string name = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
        if (glob_match(pattern, name)) return true;
      }
    }
    if (whole) break;
  }
  return false;
}

struct GitPattern {
  std::string glob;
  bool negate = false;
};

std::vector<GitPattern> read_gitignore(const fs::path& file) {
  std::vector<GitPattern> patterns;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    while (!line.empty() && line.back() == ' ' && !(line.size() > 1 && line[line.size() - 2] == '\\')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    GitPattern p;
    if (line[0] == '!') p.negate = true, line.erase(0, 1);
    if (line.starts_with("\\#") || line.starts_with("\\!")) line.erase(0, 1);
    p.glob = line;
    patterns.push_back(p);
  }
  return patterns;
}

}  // namespace

struct Resolver::State {
  std::vector<std::unique_ptr<ConfigFile>> configs;
  std::map<fs::path, const ConfigFile*> by_dir;     // directory -> its nearest configuration (or null)
  std::map<fs::path, std::optional<const ConfigFile*>> by_file;  // configuration file -> parsed (null: bad/none)
  const ConfigFile* forced = nullptr;               // --config
  std::map<std::string, FileSettings> settings;     // file path as named -> settings
  std::map<fs::path, std::vector<GitPattern>> gitignores;
  std::map<fs::path, fs::path> git_roots;           // directory -> nearest directory with .git (or empty)
  FileSettings defaults;
};

Resolver::Resolver(const Engine& engine, CommandLine command_line)
    : engine_(engine), command_line_(std::move(command_line)), state_(std::make_unique<State>()) {}
Resolver::~Resolver() = default;

bool Resolver::init(std::vector<FileError>& errors) {
  for (const std::optional<std::string>* list : {&command_line_.select, &command_line_.ignore})
    if (*list)
      for (const std::string& item : split_commas(**list))
        if (rules_selected(item, engine_).empty())
          errors.push_back({list == &command_line_.select ? "--select" : "--ignore",
                            "no rule, rule prefix or concept '" + item + "' (see `mlsem rules`, `mlsem concepts`)"});
  if (command_line_.config_file && !command_line_.isolated) {
    fs::path file = *command_line_.config_file;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      errors.push_back({file.string(), "--config: no such file"});
    } else {
      const ConfigFile* config = nullptr;
      std::vector<FileError> problems;
      std::optional<ConfigFile> parsed = read_config(file, problems);
      if (!parsed && problems.empty()) {
        // An explicit pyproject.toml without [tool.mlsem] (or any table): its keys at the top.
        problems.push_back({file.string(), "no [tool.mlsem] table", 0, 0});
      }
      if (parsed) {
        state_->configs.push_back(std::make_unique<ConfigFile>(std::move(*parsed)));
        config = state_->configs.back().get();
        // Globs of an explicit configuration are relative to the current directory, as Ruff's.
        state_->configs.back()->dir = normalized(".");
      }
      errors_.insert(errors_.end(), problems.begin(), problems.end());
      state_->forced = config;
      if (config) make_settings(config, "");  // validates its selectors
    }
  }
  state_->defaults = make_settings(nullptr, "");
  errors.insert(errors.end(), errors_.begin(), errors_.end());
  return errors.empty();
}

const ConfigFile* Resolver::config_for_dir(const fs::path& start) {
  if (command_line_.isolated) return nullptr;
  if (command_line_.config_file) return state_->forced;
  fs::path dir = normalized(start);
  std::vector<fs::path> visited;
  const ConfigFile* found = nullptr;
  for (fs::path at = dir;; at = at.parent_path()) {
    if (auto it = state_->by_dir.find(at); it != state_->by_dir.end()) {
      found = it->second;
      break;
    }
    visited.push_back(at);
    std::error_code ec;
    for (const char* name : {"mlsem.toml", "pyproject.toml"}) {
      fs::path file = at / name;
      if (!fs::is_regular_file(file, ec)) continue;
      auto cached = state_->by_file.find(file);
      if (cached == state_->by_file.end()) {
        std::vector<FileError> problems;
        std::optional<ConfigFile> parsed = read_config(file, problems);
        const ConfigFile* config = nullptr;
        if (parsed) {
          state_->configs.push_back(std::make_unique<ConfigFile>(std::move(*parsed)));
          config = state_->configs.back().get();
        }
        errors_.insert(errors_.end(), problems.begin(), problems.end());
        cached = state_->by_file.emplace(file, problems.empty() ? std::optional(config) : std::optional<const ConfigFile*>()).first;
        if (config) make_settings(config, "");  // validates its selectors once
      }
      if (!cached->second || *cached->second) {  // a bad file stops the search too
        found = cached->second.value_or(nullptr);
        goto done;
      }
    }
    if (at == at.root_path() || at.parent_path() == at) break;
  }
done:
  for (const fs::path& at : visited) state_->by_dir[at] = found;
  return found;
}

FileSettings Resolver::make_settings(const ConfigFile* config, const std::string& path) {
  FileSettings s;
  for (const Rule& rule : engine_.rules())
    if (rule.status == "stable" || command_line_.preview) s.rules.insert(rule.id);
  // Selectors of a configuration file that name nothing are errors at their line.
  auto resolve = [&](const Item& item) {
    std::set<std::string> ids = rules_selected(item.text, engine_);
    if (ids.empty() && config && path.empty())
      errors_.push_back({config->file.string(), "no rule, rule prefix or concept '" + item.text + "'", item.line, 0});
    return ids;
  };
  if (config && config->select) {
    s.rules.clear();
    for (const Item& item : *config->select) s.rules.merge(resolve(item));
  }
  if (config && config->ignore)
    for (const Item& item : *config->ignore)
      for (const std::string& id : resolve(item)) s.rules.erase(id);
  if (command_line_.select) {
    s.rules.clear();
    for (const std::string& item : split_commas(*command_line_.select)) s.rules.merge(rules_selected(item, engine_));
  }
  if (command_line_.ignore)
    for (const std::string& item : split_commas(*command_line_.ignore))
      for (const std::string& id : rules_selected(item, engine_)) s.rules.erase(id);
  if (config) {
    std::string relative = path.empty() ? "" : normalized(path).lexically_relative(config->dir).generic_string();
    for (const auto& [glob, selectors] : config->per_file_ignores) {
      if (!path.empty() && !path_matches(glob.text, relative, false)) continue;
      for (const Item& item : selectors) {
        std::set<std::string> ids = resolve(item);
        if (!path.empty())
          for (const std::string& id : ids) s.rules.erase(id);
      }
    }
    for (const auto& [selector, level] : config->severity)
      for (const std::string& id : resolve(selector)) s.severity[id] = level;
  }
  s.min_confidence = command_line_.min_confidence.value_or(
      config && config->min_confidence ? *config->min_confidence : 0.5);
  s.torch_version = command_line_.torch_version.value_or(config && config->torch_version ? *config->torch_version : "");
  char min[32];
  std::snprintf(min, sizeof min, "%.17g", s.min_confidence);
  s.key = "rules=";
  for (const std::string& id : s.rules) s.key += id + ",";
  s.key += std::string(";min=") + min + ";torch=" + s.torch_version + ";severity=";
  for (const auto& [id, level] : s.severity) s.key += id + ":" + level + ",";
  return s;
}

bool Resolver::prepare(const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    if (state_->settings.contains(file)) continue;
    const ConfigFile* config = config_for_dir(normalized(file).parent_path());
    state_->settings.emplace(file, config ? make_settings(config, file) : state_->defaults);
  }
  return errors_.empty();
}

const FileSettings& Resolver::settings_for(const std::string& path) const {
  auto it = state_->settings.find(path);
  return it == state_->settings.end() ? state_->defaults : it->second;
}

bool Resolver::excluded(const fs::path& path, bool is_directory) {
  fs::path absolute = normalized(path);
  const ConfigFile* config = config_for_dir(absolute.parent_path());
  if (config) {
    std::string relative = absolute.lexically_relative(config->dir).generic_string();
    if (!relative.starts_with(".."))
      for (const std::string& glob : config->exclude)
        if (path_matches(glob, relative, is_directory)) return true;
  }
  if (config && !config->respect_gitignore) return false;
  // .gitignore files from the repository root down to the path's directory; the last
  // pattern that matches decides.
  fs::path parent = absolute.parent_path();
  auto root_it = state_->git_roots.find(parent);
  if (root_it == state_->git_roots.end()) {
    fs::path root;
    std::error_code ec;
    for (fs::path at = parent;; at = at.parent_path()) {
      if (fs::exists(at / ".git", ec)) {
        root = at;
        break;
      }
      if (at == at.root_path() || at.parent_path() == at) break;
    }
    root_it = state_->git_roots.emplace(parent, root).first;
  }
  const fs::path& root = root_it->second;
  if (root.empty()) return false;
  std::vector<fs::path> dirs;
  for (fs::path at = parent;; at = at.parent_path()) {
    dirs.push_back(at);
    if (at == root || at == at.root_path()) break;
  }
  std::reverse(dirs.begin(), dirs.end());
  bool ignored = false;
  for (const fs::path& dir : dirs) {
    auto it = state_->gitignores.find(dir);
    if (it == state_->gitignores.end()) it = state_->gitignores.emplace(dir, read_gitignore(dir / ".gitignore")).first;
    std::string relative = absolute.lexically_relative(dir).generic_string();
    for (const GitPattern& p : it->second)
      if (path_matches(p.glob, relative, is_directory)) ignored = !p.negate;
  }
  return ignored;
}

}  // namespace mlsem::config
