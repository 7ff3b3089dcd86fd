#include "lsp/config.h"

#include <toml++/toml.h>

namespace mlsem::lsp {
namespace fs = std::filesystem;
namespace {

void read_list(const toml::table& table, const char* key, std::vector<std::string>& out, WorkspaceConfig& config) {
  const toml::node* node = table.get(key);
  if (!node) return;
  auto add_commas = [&](std::string_view text) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = std::min(text.find(',', start), text.size());
      std::string item(text.substr(start, end - start));
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (!item.empty()) out.push_back(item);
      start = end + 1;
    }
  };
  if (auto s = node->value<std::string>()) return add_commas(*s);
  if (const toml::array* array = node->as_array()) {
    for (const toml::node& item : *array) {
      if (auto s = item.value<std::string>()) add_commas(*s);
      else config.problems.push_back(config.source + ": " + key + ": expected strings");
    }
    return;
  }
  config.problems.push_back(config.source + ": " + key + ": expected an array of rule ids");
}

void read_table(const toml::table& table, WorkspaceConfig& config) {
  read_list(table, "select", config.select, config);
  read_list(table, "ignore", config.ignore, config);
  if (const toml::node* node = table.get("preview")) {
    if (auto b = node->value<bool>()) config.preview = *b;
    else config.problems.push_back(config.source + ": preview: expected true or false");
  }
  if (const toml::node* node = table.get("min-confidence")) {
    auto x = node->value<double>();
    if (x && *x >= 0.0 && *x <= 1.0) config.min_confidence = *x;
    else config.problems.push_back(config.source + ": min-confidence: expected a number from 0 to 1");
  }
}

}  // namespace

WorkspaceConfig load_workspace_config(const fs::path& root) {
  WorkspaceConfig config;
  if (root.empty()) return config;
  std::error_code ec;
  for (const char* name : {"mlsem.toml", "pyproject.toml"}) {
    fs::path file = root / name;
    if (!fs::is_regular_file(file, ec)) continue;
    config.source = name;
    try {
      toml::table doc = toml::parse_file(file.string());
      if (std::string_view(name) == "mlsem.toml") {
        read_table(doc, config);
        return config;
      }
      if (const toml::table* tool = doc["tool"]["mlsem"].as_table()) {
        read_table(*tool, config);
        return config;
      }
      config.source.clear();  // a pyproject.toml without [tool.mlsem]
    } catch (const toml::parse_error& e) {
      config.problems.push_back(std::string(name) + ":" + std::to_string(e.source().begin.line) + ": " +
                                std::string(e.description()));
      return config;
    }
  }
  return config;
}

std::set<std::string> selected_rules(const Engine& engine, WorkspaceConfig& config) {
  auto named = [&](const std::vector<std::string>& names, const char* key) {
    std::set<std::string> ids;
    for (const std::string& item : names) {
      if (const Rule* rule = engine.rule(item)) {
        ids.insert(rule->id);
        continue;
      }
      size_t before = ids.size();
      for (const Rule& rule : engine.rules())
        if (rule.id.starts_with(item)) ids.insert(rule.id);
      if (ids.size() == before) config.problems.push_back(config.source + ": " + key + ": no rule '" + item + "'");
    }
    return ids;
  };
  std::set<std::string> selected;
  if (config.select.empty()) {
    for (const Rule& rule : engine.rules())
      if (rule.status == "stable" || config.preview) selected.insert(rule.id);
  } else {
    selected = named(config.select, "select");
  }
  for (const std::string& id : named(config.ignore, "ignore")) selected.erase(id);
  return selected;
}

bool is_config_file(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  return name == "mlsem.toml" || name == "pyproject.toml";
}

}  // namespace mlsem::lsp
