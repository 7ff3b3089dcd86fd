// The files beside a transformers model file that its context facts read
// (python/context_usage.h): the modeling file generated from a modular source, and the
// configuration file whose defaults say which optional blocks a default model builds.
#include <cctype>
#include <filesystem>
#include <fstream>

#include "python/context_usage.h"

namespace mlsem::python {
namespace {

namespace fs = std::filesystem;

// Whether the first bytes of `file` are a generated-file header naming `source` (a file
// name such as modular_llama.py) as the file it was generated from.
bool header_names(const fs::path& file, std::string_view source) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::string head(2048, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  size_t at = head.find("generated from");
  if (at == std::string::npos) return false;
  for (size_t p = head.find(source, at); p != std::string::npos; p = head.find(source, p + 1)) {
    char before = head[p - 1];  // p > at >= 0, so p - 1 is in range
    size_t end = p + source.size();
    bool word_end = end >= head.size() || !(std::isalnum(static_cast<unsigned char>(head[end])) || head[end] == '_');
    if ((before == '/' || before == ' ' || before == '\\' || before == '`') && word_end) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> generated_sibling(std::string_view path) {
  std::error_code ec;
  fs::path p{std::string(path)};
  std::string base = p.filename().string();
  if (!base.starts_with("modular_") || !base.ends_with(".py") || base.size() <= 11) return std::nullopt;
  std::string stem = base.substr(8);  // X.py
  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  fs::path modeling = dir / ("modeling_" + stem);
  if (fs::is_regular_file(modeling, ec) && header_names(modeling, base)) return modeling.string();
  // Modular sources may generate only other files (processing, configuration).
  int seen = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end && seen < 256; it.increment(ec), ++seen) {
    std::string name = it->path().filename().string();
    if (name == base || !name.ends_with("_" + stem) || name.starts_with("modular_")) continue;
    if (it->is_regular_file(ec) && header_names(it->path(), base)) return it->path().string();
  }
  return std::nullopt;
}

std::optional<std::string> configuration_sibling(std::string_view path) {
  std::error_code ec;
  fs::path p{std::string(path)};
  std::string base = p.filename().string();
  if (!base.starts_with("modeling_") || !base.ends_with(".py")) return std::nullopt;
  fs::path config = p.parent_path() / ("configuration_" + base.substr(9));
  if (fs::is_regular_file(config, ec)) return config.string();
  return std::nullopt;
}

// The configuration flag a condition tests: `config.X`, `self.config.X`, either with
// `is not None`, or `getattr(config, "X", None|False)`; "" for anything else.
std::string config_flag(std::string_view cond) {
  auto ident = [](std::string_view t) {
    size_t n = 0;
    while (n < t.size() && (std::isalnum(static_cast<unsigned char>(t[n])) || t[n] == '_')) ++n;
    return std::string(t.substr(0, n));
  };
  std::string_view c = cond;
  if (c.ends_with(" is not None")) c.remove_suffix(12);
  for (std::string_view prefix : {"self.config.", "config."})
    if (c.starts_with(prefix)) {
      std::string x = ident(c.substr(prefix.size()));
      return x.size() + prefix.size() == c.size() ? x : "";
    }
  for (std::string_view prefix : {"getattr(self.config, ", "getattr(config, "})
    if (c.starts_with(prefix) && c.size() > prefix.size() + 2) {
      std::string_view rest = c.substr(prefix.size());
      char q = rest[0];
      if (q != '"' && q != '\'') return "";
      std::string x = ident(rest.substr(1));
      std::string_view tail = rest.substr(1 + x.size());
      if (tail == std::string(1, q) + ", None)" || tail == std::string(1, q) + ", False)") return x;
    }
  return "";
}

// Whether the configuration text gives `flag` a false default (`flag=False`,
// `flag: bool = False`, `= None`), and why; nullopt when it does not say so.
std::optional<std::string> false_default(std::string_view config, const std::string& flag, bool missing_is_false) {
  bool seen = false;
  for (size_t p = config.find(flag); p != std::string_view::npos; p = config.find(flag, p + 1)) {
    if (p > 0 && (std::isalnum(static_cast<unsigned char>(config[p - 1])) || config[p - 1] == '_' || config[p - 1] == '.'))
      continue;
    size_t e = p + flag.size();
    if (e < config.size() && (std::isalnum(static_cast<unsigned char>(config[e])) || config[e] == '_')) continue;
    seen = true;
    size_t q = e;
    if (q < config.size() && config[q] == ':') {  // an annotation: `flag: bool = False`
      size_t eq = config.find('=', q);
      size_t nl = config.find('\n', q);
      if (eq == std::string_view::npos || (nl != std::string_view::npos && nl < eq)) continue;
      q = eq;
    }
    while (q < config.size() && config[q] == ' ') ++q;
    if (q >= config.size() || config[q] != '=' || (q + 1 < config.size() && config[q + 1] == '=')) continue;
    ++q;
    while (q < config.size() && config[q] == ' ') ++q;
    for (std::string_view v : {"False", "None"})
      if (config.substr(q, v.size()) == v &&
          (q + v.size() >= config.size() || !std::isalnum(static_cast<unsigned char>(config[q + v.size()]))))
        return "`" + flag + "` defaults to " + std::string(v);
    return std::nullopt;  // the first default it gives is something else
  }
  if (!seen && missing_is_false) return "`" + flag + "` is not a field of the configuration (getattr's default)";
  return std::nullopt;
}

}  // namespace mlsem::python
