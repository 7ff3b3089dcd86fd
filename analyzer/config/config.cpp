#include "config/config.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <system_error>
#include <toml++/toml.h>

#include "report/report.h"

namespace fs = std::filesystem;

namespace mlsem::config {
namespace {

const std::set<std::string, std::less<>> kKeys = {
    "select", "ignore", "per-file-ignores", "min-confidence", "severity",
    "exclude", "extend-exclude", "respect-gitignore", "torch-version"};

uint32_t line_of(const toml::node& node) { return static_cast<uint32_t>(node.source().begin.line); }

std::string type_name(const toml::node& node) {
  if (node.is_string()) return "a string";
  if (node.is_integer()) return "an integer";
  if (node.is_floating_point()) return "a float";
  if (node.is_boolean()) return "a boolean";
  if (node.is_array()) return "a list";
  if (node.is_table()) return "a table";
  return "a date or time";
}

// As the user would write it: relative to the current directory when below it.
std::string shown(const fs::path& file) {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  fs::path absolute = fs::absolute(file, ec).lexically_normal();
  fs::path relative = absolute.lexically_relative(cwd);
  return !ec && !relative.empty() && *relative.begin() != ".." ? relative.string() : file.string();
}

struct Reader {
  const fs::path& file;
  std::vector<FileError>& errors;
  bool ok = true;

  void fail(uint32_t line, const std::string& message) {
    errors.push_back({shown(file), message, line, 0});
    ok = false;
  }

  std::optional<std::vector<Item>> strings(const toml::node& node, const std::string& key) {
    const toml::array* array = node.as_array();
    if (!array) {
      fail(line_of(node), key + ": expected a list of strings, got " + type_name(node));
      return std::nullopt;
    }
    std::vector<Item> items;
    for (const toml::node& element : *array) {
      if (auto text = element.value<std::string>())
        items.push_back({*text, line_of(element)});
      else
        fail(line_of(element), key + ": expected a string, got " + type_name(element));
    }
    return items;
  }
};

}  // namespace

std::optional<ConfigFile> read_config(const fs::path& file, std::vector<FileError>& errors) {
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    errors.push_back({shown(file), std::string(e.description()), static_cast<uint32_t>(e.source().begin.line),
                      static_cast<uint32_t>(e.source().begin.column)});
    return std::nullopt;
  }
  bool pyproject = file.filename() == "pyproject.toml";
  const toml::table* table = &root;
  if (pyproject) {
    const toml::node* section = root.at_path("tool.mlsem").node();
    if (!section) return std::nullopt;
    table = section->as_table();
    if (!table) {
      errors.push_back({shown(file), "[tool.mlsem] must be a table", line_of(*section), 0});
      return std::nullopt;
    }
  }
  ConfigFile config;
  config.file = shown(file);
  config.dir = fs::absolute(file).parent_path().lexically_normal();
  Reader reader{file, errors};
  std::string prefix = pyproject ? "tool.mlsem." : "";
  for (const auto& [key_view, node] : *table) {
    std::string key(key_view.str());
    uint32_t line = line_of(node);
    if (!kKeys.contains(key)) {
      std::string known;
      for (const auto& k : kKeys) known += (known.empty() ? "" : ", ") + k;
      reader.fail(line, "unknown key '" + prefix + key + "' (known: " + known + ")");
    } else if (key == "select") {
      config.select = reader.strings(node, prefix + key);
    } else if (key == "ignore") {
      config.ignore = reader.strings(node, prefix + key);
    } else if (key == "exclude" || key == "extend-exclude") {
      if (auto items = reader.strings(node, prefix + key))
        for (Item& item : *items) config.exclude.push_back(item.text);
    } else if (key == "min-confidence") {
      std::optional<double> value = node.value<double>();
      if (!value || !node.is_number() || *value < 0.0 || *value > 1.0)
        reader.fail(line, prefix + key + ": expected a number from 0 to 1");
      else
        config.min_confidence = value;
    } else if (key == "respect-gitignore") {
      if (auto value = node.value<bool>(); value && node.is_boolean())
        config.respect_gitignore = *value;
      else
        reader.fail(line, prefix + key + ": expected true or false");
    } else if (key == "torch-version") {
      std::optional<std::string> value = node.value<std::string>();
      if (!value || !std::regex_match(*value, std::regex(R"(\d+\.\d+(\.\d+)?)")))
        reader.fail(line, prefix + key + ": expected a version string such as \"2.4\"");
      else
        config.torch_version = value;
    } else if (key == "per-file-ignores" || key == "severity") {
      const toml::table* entries = node.as_table();
      if (!entries) {
        reader.fail(line, prefix + key + ": expected a table");
        continue;
      }
      for (const auto& [name_view, value] : *entries) {
        Item name{std::string(name_view.str()), line_of(value)};
        if (key == "severity") {
          std::optional<std::string> level = value.value<std::string>();
          if (!level || (*level != "error" && *level != "warning" && *level != "info"))
            reader.fail(name.line, prefix + key + "." + name.text + ": expected \"error\", \"warning\" or \"info\"");
          else
            config.severity.push_back({name, *level});
        } else if (auto items = reader.strings(value, prefix + key + "." + name.text)) {
          config.per_file_ignores.push_back({name, *items});
        }
      }
    }
  }
  if (!reader.ok) return std::nullopt;
  return config;
}

std::set<std::string> rules_selected(const std::string& selector, const Engine& engine) {
  std::set<std::string> ids;
  if (selector.empty()) return ids;
  if (const Rule* rule = engine.rule(selector)) return {rule->id};
  if (selector == "ALL") {
    for (const Rule& rule : engine.rules()) ids.insert(rule.id);
    return ids;
  }
  for (const Rule& rule : engine.rules()) {
    if (rule.id.starts_with(selector)) {
      ids.insert(rule.id);
      continue;
    }
    if (rule.concept_id == selector) {
      ids.insert(rule.id);
      continue;
    }
    std::vector<std::string> above = report::concept_ancestors(rule.concept_id, engine);
    if (std::find(above.begin(), above.end(), selector) != above.end()) ids.insert(rule.id);
  }
  return ids;
}

}  // namespace mlsem::config
