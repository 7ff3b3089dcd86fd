#include "driver/references.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>

#include "core/text.h"
#include "driver/files.h"
#include "engine/engine.h"

namespace mlsem::driver {
namespace {

namespace fs = std::filesystem;

// Configuration files that name classes and functions: a YAML `target:` or `type:`, a
// JSON config, a TOML or INI entry point.
bool config_file(const fs::path& p) {
  std::string ext = lower_ascii(p.extension().string());
  return ext == ".yaml" || ext == ".yml" || ext == ".json" || ext == ".toml" || ext == ".cfg" || ext == ".ini" ||
         ext == ".ipynb";  // a notebook calls what a module defines (when not analyzed itself)
}

constexpr uintmax_t kMaxConfigBytes = 1u << 20;     // one configuration file

std::optional<std::string> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The 0-based line range [begin, end) of the top-level `def NAME`/`async def NAME`/
// `class NAME` in `text`, or nullopt when there is none or it is decorated (a registry
// names it: @register_model, @ARCH_REGISTRY.register()). The definition ends before the
// next line that starts at column 0 with neither a space nor a comment; a string that
// spans lines at column 0 ends it early, which only counts more of it as outside uses.
std::optional<std::pair<size_t, size_t>> definition(std::string_view text, std::string_view name) {
  std::vector<std::string> lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    std::string_view rest;
    for (std::string_view kw : {"def ", "async def ", "class "})
      if (l.starts_with(kw)) rest = l.substr(kw.size());
    if (rest.empty() || !rest.starts_with(name) || (rest.size() > name.size() && word_char(rest[name.size()])))
      continue;
    if (i > 0 && lines[i - 1].starts_with("@")) return std::nullopt;
    size_t end = i + 1;
    while (end < lines.size()) {
      std::string_view n = lines[end];
      if (!n.empty() && n[0] != ' ' && n[0] != '\t' && n[0] != '#' && n[0] != '\r' && n[0] != ')' && n[0] != ']')
        break;
      ++end;
    }
    return std::make_pair(i, end);
  }
  return std::nullopt;
}

// Adds to `seen` each name of `names` that occurs as a whole word in `text`, leaving out
// the lines in [skip_begin, skip_end).
void scan(std::string_view text, const std::set<std::string, std::less<>>& names, std::set<std::string, std::less<>>& seen,
          size_t skip_begin = 0, size_t skip_end = 0) {
  size_t line = 0;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '\n') {
      ++line, ++i;
      continue;
    }
    if (!word_char(c)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && word_char(text[j])) ++j;
    if (line < skip_begin || line >= skip_end) {
      std::string_view w = text.substr(i, j - i);
      if (auto it = names.find(w); it != names.end()) seen.insert(*it);
    }
    i = j;
  }
}

// The nearest directory at or above `dir` that marks a project (.git, pyproject.toml,
// setup.py, setup.cfg, mlsem.toml), or nullopt: without one, what calls the code is unknown.
std::optional<fs::path> marked_root(const fs::path& dir) {
  std::error_code ec;
  fs::path at = fs::absolute(dir, ec).lexically_normal();
  for (; !at.empty(); at = at.parent_path()) {
    for (const char* marker : {".git", "pyproject.toml", "setup.py", "setup.cfg", "mlsem.toml"})
      if (fs::exists(at / marker, ec)) return at;
    if (at == at.root_path()) break;
  }
  return std::nullopt;
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(path, ec);
  return ec ? path : c.string();
}

constexpr size_t kMaxProjectFiles = 20000;
constexpr uintmax_t kMaxProjectBytes = 256u << 20;

// The names of `names` that something in the project under `root` mentions outside their
// own definitions (`defs`: canonical path and name -> lines): its source files and its
// configuration files. Nullopt when the project is too large to read.
// The module names of `modules` that an import line (`import x.loss`, `from .loss import
// y`) of a Python file other than their own mentions, into `imported`.
void scan_imports(std::string_view text, const std::string& path, const std::map<std::string, std::string>& modules,
                  std::set<std::string, std::less<>>& imported) {
  std::set<std::string, std::less<>> stems;
  for (const auto& [file, stem] : modules)
    if (file != path) stems.insert(stem);
  if (stems.empty()) return;
  for (size_t at = text.find("import"); at != std::string_view::npos; at = text.find("import", at + 6)) {
    size_t begin = text.rfind('\n', at);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    size_t end = text.find('\n', at);
    std::string_view line = text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
    scan(line, stems, imported);
  }
}

std::optional<std::set<std::string, std::less<>>> mentioned(
    const fs::path& root, const std::set<std::string, std::less<>>& names,
    const std::map<std::pair<std::string, std::string>, std::pair<size_t, size_t>>& defs,
    const std::map<std::string, std::string>& modules, std::set<std::string, std::less<>>& imported) {
  std::set<std::string, std::less<>> seen;
  uintmax_t total = 0;
  size_t count = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (it->is_directory(ec)) {
      if (is_skipped_directory(p.string(), p.filename().string())) it.disable_recursion_pending();
      continue;
    }
    std::string ext = lower_ascii(p.extension().string());
    bool source = ext == ".py" || ext == ".pyi";
    if ((!source && !config_file(p)) || !it->is_regular_file(ec)) continue;
    uintmax_t size = it->file_size(ec);
    if (ec || size > (source ? kMaxConfigBytes * 4 : kMaxConfigBytes)) continue;
    if ((total += size) > kMaxProjectBytes || ++count > kMaxProjectFiles) return std::nullopt;
    std::optional<std::string> text = read_all(p.string());
    if (!text) continue;
    std::string path = canonical(p.string());
    std::set<std::string, std::less<>> others = names;
    std::vector<std::pair<std::string, std::pair<size_t, size_t>>> own;
    for (const auto& [key, lines] : defs)
      if (key.first == path) own.push_back({key.second, lines}), others.erase(key.second);
    scan(*text, others, seen);
    for (const auto& [name, lines] : own) scan(*text, {name}, seen, lines.first, lines.second);
    if (source) scan_imports(*text, path, modules, imported);
  }
  return seen;
}

// The name other files import a module by: its file's stem, or its package's for an
// __init__.py.
std::string module_stem(const fs::path& file) {
  std::string stem = file.stem().string();
  return stem == "__init__" ? file.parent_path().filename().string() : stem;
}

}  // namespace

size_t demote_unreferenced(std::vector<Finding>& findings) {
  // Candidates: findings in a .py file of a marked project, not demoted, inside a named
  // top-level function or class; grouped by project.
  std::map<std::string, std::set<std::string, std::less<>>> by_file;  // path -> top-level names
  for (const Finding& f : findings) {
    if (!f.context.empty() || f.function.empty() || f.function == "<module>" || !f.path.ends_with(".py")) continue;
    by_file[f.path].insert(f.function.substr(0, f.function.find('.')));
  }
  struct Project {
    std::set<std::string, std::less<>> names;
    std::map<std::pair<std::string, std::string>, std::pair<size_t, size_t>> defs;
    std::map<std::string, std::string> modules;  // canonical path -> module stem
  };
  std::map<fs::path, Project> projects;
  std::map<std::pair<std::string, std::string>, fs::path> home;  // (finding path, name) -> project root
  for (auto& [path, own] : by_file) {
    std::optional<fs::path> root = marked_root(fs::path(path).parent_path());
    if (!root) continue;
    std::optional<std::string> text = read_all(path);
    if (!text) continue;
    Project& project = projects[*root];
    project.modules[canonical(path)] = module_stem(fs::path(path));
    for (const std::string& name : own)
      if (auto d = definition(*text, name)) {
        project.defs[{canonical(path), name}] = *d;
        project.names.insert(name);
        home[{path, name}] = *root;
      }
  }
  std::map<fs::path, std::set<std::string, std::less<>>> seen, imported;
  for (auto& [root, project] : projects) {
    if (project.names.empty()) continue;
    if (auto m = mentioned(root, project.names, project.defs, project.modules, imported[root])) seen[root] = std::move(*m);
  }
  size_t demoted = 0;
  for (Finding& f : findings) {
    if (!f.context.empty() || f.function.empty()) continue;
    std::string name = f.function.substr(0, f.function.find('.'));
    auto h = home.find({f.path, name});
    if (h == home.end()) continue;
    auto s = seen.find(h->second);
    if (s == seen.end() || s->second.count(name)) continue;
    // Only in a module the project imports: a script, or a module nothing imports yet,
    // may be run or used from outside.
    if (!imported[h->second].count(module_stem(fs::path(f.path)))) continue;
    f.context_kind = "unused";
    f.context = "unused: nothing else in the project (its Python and configuration files under " +
                h->second.filename().string() + "/) names `" + name + "`: it is never built or called";
    f.severity = "info";
    f.confidence = std::min(f.confidence, kDemotedConfidence);
    ++demoted;
  }
  return demoted;
}

}  // namespace mlsem::driver
