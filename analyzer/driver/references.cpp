#include "driver/references.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>

#include "core/text.h"
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

using Names = std::set<std::string, std::less<>>;
using Lines = std::pair<size_t, size_t>;  // 0-based [begin, end)

// A top-level `def`/`async def`/`class` statement: its name, its lines and whether a
// decorator (`@register`, `@ARCH_REGISTRY.register()`, one spanning lines) precedes it, which
// means a registry names it.
struct Definition {
  std::string name;
  Lines lines;
  bool decorated = false;
};

// The top-level definitions of `text`, in order, in one pass. A definition ends before the
// next line that starts at column 0 with neither a space, a comment nor a closing bracket; a
// string spanning lines at column 0 ends it early, which only counts more of it as outside
// uses.
std::vector<Definition> top_definitions(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t begin = 0; begin <= text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  auto top = [&](size_t i) {
    std::string_view n = lines[i];
    return !n.empty() && n[0] != ' ' && n[0] != '\t' && n[0] != '#' && n[0] != '\r' && n[0] != ')' && n[0] != ']';
  };
  std::vector<Definition> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i], rest;
    for (std::string_view kw : {"def ", "async def ", "class "})
      if (l.starts_with(kw)) rest = l.substr(kw.size());
    size_t n = 0;
    while (n < rest.size() && word_char(rest[n])) ++n;
    if (n == 0) continue;
    // Back over blank, comment, indented and bracket lines to the statement above.
    size_t above = i;
    while (above > 0 && !top(above - 1)) --above;
    size_t end = i + 1;
    while (end < lines.size() && !top(end)) ++end;
    out.push_back({std::string(rest.substr(0, n)), Lines{i, end}, above > 0 && lines[above - 1].starts_with("@")});
  }
  return out;
}

// The project's top-level definition names, numbered, and what mentions each: `alive`
// when a line outside every undecorated top-level definition does (module-level code, a
// decorated definition, a configuration file); `users`, the names whose undecorated
// definitions do (a definition's mentions of its own name don't count).
struct Graph {
  std::unordered_map<std::string_view, uint32_t> ids;  // views into `names`
  std::deque<std::string> names;
  std::vector<char> alive;
  std::vector<std::vector<uint32_t>> users;

  uint32_t add(std::string_view name) {
    if (auto it = ids.find(name); it != ids.end()) return it->second;
    names.emplace_back(name);
    alive.push_back(0);
    users.emplace_back();
    return ids.emplace(names.back(), static_cast<uint32_t>(names.size() - 1)).first->second;
  }
  std::optional<uint32_t> find(std::string_view name) const {
    auto it = ids.find(name);
    return it == ids.end() ? std::nullopt : std::optional<uint32_t>(it->second);
  }
};

// Records in `graph` each whole-word occurrence in `text` of one of its names. In Python
// source (`defs` given: its top-level definitions) comments and triple-quoted strings
// (docstrings) are skipped, while other strings count: a registry may name a class by its
// string.
void scan(std::string_view text, const std::vector<Definition>* defs, Graph& graph) {
  auto enclosing = [&](size_t line) -> const Definition* {
    if (!defs) return nullptr;
    auto it = std::upper_bound(defs->begin(), defs->end(), line,
                               [](size_t l, const Definition& d) { return l < d.lines.first; });
    if (it == defs->begin()) return nullptr;
    --it;
    return line < it->lines.second ? &*it : nullptr;
  };
  const bool python = defs != nullptr;
  size_t line = 0;
  char quote = 0;  // inside a one-line string: its quote
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (word_char(c)) {
      size_t j = i + 1;
      while (j < text.size() && word_char(text[j])) ++j;
      if (std::optional<uint32_t> id = graph.find(text.substr(i, j - i))) {
        const Definition* d = enclosing(line);
        std::optional<uint32_t> by = d && !d->decorated ? graph.find(d->name) : std::nullopt;
        if (!by) {  // (a definition the first pass did not see: the file changed since)
          graph.alive[*id] = 1;
        } else if (*by != *id) {
          std::vector<uint32_t>& users = graph.users[*id];
          if (users.empty() || users.back() != *by) users.push_back(*by);
        }
      }
      i = j;
      continue;
    }
    if (c == '\n') {
      ++line, ++i, quote = 0;
      continue;
    }
    if (!python) {
      ++i;
      continue;
    }
    if (quote) {
      i += c == '\\' ? 2 : 1;
      if (c == quote) quote = 0;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      if (i + 2 < text.size() && text[i + 1] == c && text[i + 2] == c) {
        const char triple[] = {c, c, c, 0};
        size_t close = text.find(triple, i + 3);
        size_t stop = close == std::string_view::npos ? text.size() : close + 3;
        line += static_cast<size_t>(std::count(text.begin() + i, text.begin() + stop, '\n'));
        i = stop;
      } else {
        quote = c, ++i;
      }
    } else {
      ++i;
    }
  }
}

// The nearest directory at or above `dir` that marks a project (.git, pyproject.toml,
// setup.py, setup.cfg, mlsem.toml), or nullopt: without one, what calls the code is unknown.
std::optional<fs::path> marked_root(const fs::path& dir) {
  std::error_code ec;
  fs::path at = dir.lexically_normal();
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

// A directory the walk leaves out: hidden ones (.git, .venv), node_modules, caches, and
// virtual environments (a pyvenv.cfg inside). Build and dist copies are read: an extra
// copy of a use only keeps a finding.
bool skipped(const fs::path& dir) {
  std::string name = dir.filename().string();
  std::error_code ec;
  return name.starts_with(".") || name == "node_modules" || name == "__pycache__" || fs::exists(dir / "pyvenv.cfg", ec);
}

// The files that mention a word on an import line (`import x.loss`, `from .loss import
// y`): the first one, and whether there are others.
struct Importers {
  std::string first;
  bool several = false;
};
using Imports = std::map<std::string, Importers, std::less<>>;

void scan_imports(std::string_view text, const std::string& file, Imports& imports) {
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (line.find("import") != std::string_view::npos)
      for (size_t i = 0; i < line.size();) {
        size_t j = i;
        while (j < line.size() && word_char(line[j])) ++j;
        if (j == i) {
          ++i;
          continue;
        }
        auto [it, fresh] = imports.try_emplace(std::string(line.substr(i, j - i)), Importers{file});
        if (!fresh && it->second.first != file) it->second.several = true;
        i = j;
      }
    begin = end + 1;
  }
}

// The name other files import a module by: its file's stem, or its package's for an
// __init__.py.
std::string module_stem(const fs::path& file) {
  std::string stem = file.stem().string();
  return stem == "__init__" ? file.parent_path().filename().string() : stem;
}

// Whether a file other than `file` imports the module `file` is.
bool imported(const Imports& imports, const std::string& file) {
  auto it = imports.find(module_stem(file));
  return it != imports.end() && (it->second.several || it->second.first != file);
}

struct Project {
  Names names;                                 // candidates
  std::map<std::string, std::string> texts;    // canonical path -> a candidate file's text, read once
  std::set<std::string> file_names;            // the candidate files' names
  Imports imports;
  Graph graph;
  std::vector<char> used;                      // by graph id, once computed
};

// Calls `visit(path, text, python)` for every Python and configuration file of the
// project under `root`: the candidates' own files first, from the text read once, then the
// rest, walked. False when the project is too large to read.
template <typename Visit>
bool each_file(const fs::path& root, const Project& project, Visit visit) {
  for (const auto& [c, text] : project.texts) visit(c, std::string_view(text), true);
  uintmax_t total = 0;
  size_t count = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (it->is_directory(ec)) {
      if (skipped(p)) it.disable_recursion_pending();
      continue;
    }
    std::string ext = lower_ascii(p.extension().string());
    bool python = ext == ".py" || ext == ".pyi";
    if ((!python && !config_file(p)) || !it->is_regular_file(ec)) continue;
    uintmax_t size = it->file_size(ec);
    if (ec || size > (python ? kMaxConfigBytes * 4 : kMaxConfigBytes)) continue;
    if ((total += size) > kMaxProjectBytes || ++count > kMaxProjectFiles) return false;
    // Only a file named like a candidate file can be one: canonicalize just those.
    if (project.file_names.count(p.filename().string()) && project.texts.count(canonical(p.string()))) continue;
    if (std::optional<std::string> text = read_all(p.string())) visit(p.string(), std::string_view(*text), python);
  }
  return true;
}

// Which top-level definitions of the project something it runs reaches, into
// `project.used`: a name is used when module-level code, a decorated definition, a
// configuration file or a script (a module nothing imports) names it, or the definition
// of a used name does. Two passes: the definitions and imports of every file, then the
// mentions of every definition. False when the project is too large to read.
bool reach(const fs::path& root, Project& project) {
  Graph& graph = project.graph;
  std::vector<std::pair<std::string, std::string>> defined;  // (file, name) of undecorated definitions
  std::vector<uint32_t> seeds;
  bool read = each_file(root, project, [&](const std::string& file, std::string_view text, bool python) {
    if (!python) return;
    scan_imports(text, file, project.imports);
    for (Definition& d : top_definitions(text)) {
      uint32_t id = graph.add(d.name);
      if (d.decorated) seeds.push_back(id);
      else defined.emplace_back(file, std::move(d.name));
    }
  });
  if (!read) return false;
  for (const auto& [file, name] : defined)
    if (!imported(project.imports, file)) seeds.push_back(*graph.find(name));  // a script's
  read = each_file(root, project, [&](const std::string&, std::string_view text, bool python) {
    if (!python) return scan(text, nullptr, graph);
    std::vector<Definition> defs = top_definitions(text);
    scan(text, &defs, graph);
  });
  if (!read) return false;
  // Forward edges (a definition to the names it mentions), then a walk from the seeds.
  std::vector<std::vector<uint32_t>> mentions(graph.names.size());
  for (uint32_t n = 0; n < graph.users.size(); ++n) {
    if (graph.alive[n]) seeds.push_back(n);
    for (uint32_t by : graph.users[n]) mentions[by].push_back(n);
  }
  project.used.assign(graph.names.size(), 0);
  while (!seeds.empty()) {
    uint32_t n = seeds.back();
    seeds.pop_back();
    if (project.used[n]) continue;
    project.used[n] = 1;
    for (uint32_t m : mentions[n]) seeds.push_back(m);
  }
  return true;
}

}  // namespace

size_t demote_unreferenced(std::vector<Finding>& findings) {
  // Candidates: findings in a .py file of a marked project, not demoted, inside a named
  // top-level function or class; grouped by project.
  std::map<std::string, Names> by_file;  // path -> top-level names
  for (const Finding& f : findings) {
    if (!f.context.empty() || f.function.empty() || f.function == "<module>" || !f.path.ends_with(".py")) continue;
    by_file[f.path].insert(f.function.substr(0, f.function.find('.')));
  }
  std::map<fs::path, Project> projects;
  std::map<std::pair<std::string, std::string>, std::pair<fs::path, std::string>> home;  // -> root, canonical
  for (auto& [path, own] : by_file) {
    std::error_code ec;
    fs::path absolute = fs::absolute(path, ec);
    if (ec) continue;
    std::optional<fs::path> root = marked_root(absolute.parent_path());
    if (!root) continue;
    std::optional<std::string> text = read_all(path);
    if (!text) continue;
    Project& project = projects[*root];
    std::string c = canonical(path);
    project.file_names.insert(absolute.filename().string());
    for (const Definition& d : top_definitions(*text))
      if (!d.decorated && own.count(d.name)) {
        project.names.insert(d.name);
        home[{path, d.name}] = {*root, c};
      }
    project.texts[c] = std::move(*text);
  }
  std::set<fs::path> read;
  for (auto& [root, project] : projects) {
    if (project.names.empty()) continue;
    if (reach(root, project)) read.insert(root);
    project.texts = {};
  }
  size_t demoted = 0;
  for (Finding& f : findings) {
    if (!f.context.empty() || f.function.empty()) continue;
    std::string name = f.function.substr(0, f.function.find('.'));
    auto h = home.find({f.path, name});
    if (h == home.end()) continue;
    const auto& [root, file] = h->second;
    if (!read.count(root)) continue;
    // Only in a module the project imports: a script, or a module nothing imports yet,
    // may be run or used from outside.
    const Project& project = projects[root];
    std::optional<uint32_t> id = project.graph.find(name);
    if (!id || project.used[*id] || !imported(project.imports, file)) continue;
    Names by;
    for (uint32_t u : project.graph.users[*id]) by.insert(project.graph.names[u]);
    std::string where = "the project (its Python and configuration files under " + root.filename().string() + "/)";
    std::string why = "unused: nothing else in " + where + " names `" + name + "`: it is never built or called";
    if (!by.empty()) {
      std::string users;
      for (const std::string& b : by) users += (users.empty() ? "`" : ", `") + b + "`";
      why = "unused: in " + where + " only " + users + " name" + (by.size() == 1 ? "s" : "") + " `" + name +
            "`, and nothing builds or calls " + (by.size() == 1 ? "that" : "those") + " either: `" + name +
            "` is never built or called";
    }
    demote(f, "unused", why);
    ++demoted;
  }
  return demoted;
}

}  // namespace mlsem::driver
