#include "driver/references.h"

#include <algorithm>
#include <cctype>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
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
#include "python/switches.h"

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
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) text.append(buffer, static_cast<size_t>(in.gcount()));
  return text;
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

// Calls `f(word)` for each word of the import lines of `text` (`import x.loss`, `from
// .loss import y`).
template <typename F>
void each_import_word(std::string_view text, F f) {
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (line.find("import") != std::string_view::npos)
      for (size_t i = 0; i < line.size();) {
        size_t j = i;
        while (j < line.size() && word_char(line[j])) ++j;
        if (j > i) f(line.substr(i, j - i));
        i = j == i ? i + 1 : j;
      }
    begin = end + 1;
  }
}

Names import_words(std::string_view text) {
  Names out;
  each_import_word(text, [&](std::string_view w) { out.emplace(w); });
  return out;
}

// The project's top-level definitions, numbered (one per name and file), and what
// mentions each: `alive` when a line outside every undecorated top-level definition does
// (module-level code, a decorated definition, a configuration file); `users`, the
// undecorated definitions that do (a definition's mentions of itself don't count). A name
// in a file that defines it means that definition (Python's module scope); elsewhere, any
// definition of it (which one an import picks is not followed).
struct Graph {
  std::unordered_map<std::string_view, std::vector<uint32_t>> ids;  // views into `names`
  std::deque<std::string> names;
  std::vector<std::string> files;
  std::vector<char> alive;
  std::vector<std::vector<uint32_t>> users;

  uint32_t add(std::string_view name, const std::string& file) {
    if (std::optional<uint32_t> id = node(name, file)) return *id;
    names.emplace_back(name);
    files.push_back(file);
    alive.push_back(0);
    users.emplace_back();
    uint32_t id = static_cast<uint32_t>(names.size() - 1);
    ids[names.back()].push_back(id);
    return id;
  }
  // The definition of `name` in `file`.
  std::optional<uint32_t> node(std::string_view name, const std::string& file) const {
    auto it = ids.find(name);
    if (it != ids.end())
      for (uint32_t id : it->second)
        if (files[id] == file) return id;
    return std::nullopt;
  }
  // The definitions a mention of `word` in `file` (empty for a configuration file) means:
  // the file's own, unless it also imports that name (`imports`: its import lines' words).
  template <typename F>
  void meant(std::string_view word, const std::string& file, const Names& imports, F f) const {
    auto it = ids.find(word);
    if (it == ids.end()) return;
    if (!file.empty() && !imports.count(word))
      if (std::optional<uint32_t> own = node(word, file)) return f(*own);
    for (uint32_t id : it->second) f(id);
  }
};

// Calls `on_word(word, offset, line)` for each whole word of `text`. In Python source
// (`python`) comments and triple-quoted strings (docstrings) are skipped, while other
// strings count: a registry may name a class by its string.
template <typename OnWord>
void words(std::string_view text, bool python, OnWord on_word) {
  size_t line = 0;
  char quote = 0;  // inside a one-line string: its quote
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (word_char(c)) {
      size_t j = i + 1;
      while (j < text.size() && word_char(text[j])) ++j;
      on_word(text.substr(i, j - i), i, line);
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
      i += c == '\\' && i + 1 < text.size() && text[i + 1] != '\n' ? 2 : 1;
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

// The definition of `defs` (in line order) holding `line`, or nullptr.
const Definition* enclosing(const std::vector<Definition>& defs, size_t line) {
  auto it = std::upper_bound(defs.begin(), defs.end(), line, [](size_t l, const Definition& d) { return l < d.lines.first; });
  if (it == defs.begin()) return nullptr;
  --it;
  return line < it->lines.second ? &*it : nullptr;
}

// Records in `graph` each mention in `text` of one of its names (`defs`: the top-level
// definitions of Python source; null for a configuration file).
void scan(std::string_view text, const std::string& file, const std::vector<Definition>* defs, Graph& graph) {
  const std::string none;
  Names imports = defs ? import_words(text) : Names();
  words(text, defs != nullptr, [&](std::string_view w, size_t, size_t line) {
    graph.meant(w, defs ? file : none, imports, [&](uint32_t id) {
      const Definition* d = defs ? enclosing(*defs, line) : nullptr;
      std::optional<uint32_t> by = d && !d->decorated ? graph.node(d->name, file) : std::nullopt;
      if (!by) {  // (or a definition the first pass did not see: the file changed since)
        graph.alive[id] = 1;
      } else if (*by != id) {
        std::vector<uint32_t>& users = graph.users[id];
        if (users.empty() || users.back() != *by) users.push_back(*by);
      }
    });
  });
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
  each_import_word(text, [&](std::string_view w) {
    auto [it, fresh] = imports.try_emplace(std::string(w), Importers{file});
    if (!fresh && it->second.first != file) it->second.several = true;
  });
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
  std::map<std::string, Names> names;          // candidates, by canonical file
  std::map<std::string, std::string> texts;    // canonical path -> a candidate file's text, read once
  std::set<std::string> file_names;            // the candidate files' names
  Imports imports;
  Graph graph;
  std::vector<char> used;                      // by graph id, once computed
  std::map<std::pair<uint32_t, uint32_t>, std::string> off;  // (user, name) mentions switched off, and why
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

// Marks in `project.used` what `seeds` reach through the mentions that are not switched
// off.
void walk(Project& project, std::vector<uint32_t> seeds) {
  const Graph& graph = project.graph;
  std::vector<std::vector<uint32_t>> mentions(graph.names.size());  // a definition -> the names it mentions
  for (uint32_t n = 0; n < graph.users.size(); ++n)
    for (uint32_t by : graph.users[n])
      if (!project.off.count({by, n})) mentions[by].push_back(n);
  project.used.assign(graph.names.size(), 0);
  while (!seeds.empty()) {
    uint32_t n = seeds.back();
    seeds.pop_back();
    if (project.used[n]) continue;
    project.used[n] = 1;
    for (uint32_t m : mentions[n]) seeds.push_back(m);
  }
}

// The value a mention of a parameter at `at` (`length` bytes) of `text` gives it: `P=x`
// (a keyword argument, a default), `P: x` (YAML; or `P: type = x`, an annotated default),
// `"P": x` (a dict or JSON key). Nullopt: the mention reads it; an unknown literal: the
// value is no literal (a name, an expression, a command-line flag), so its values are not
// known.
enum class Given { Read, Unknown, Value };
std::pair<Given, python::Literal> value_at(std::string_view text, size_t at, size_t length, bool python) {
  auto skip = [&](size_t i) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    return i;
  };
  // The expression after `i`, up to a comma, a closing bracket or the line's end at depth 0.
  auto expression = [&](size_t i) {
    size_t b = i;
    int depth = 0;
    for (; i < text.size(); ++i) {
      char c = text[i];
      if (c == '(' || c == '[' || c == '{') ++depth;
      else if (c == ')' || c == ']' || c == '}') {
        if (depth-- == 0) break;
      } else if ((c == ',' && depth == 0) || c == '\n' || (c == '#' && depth == 0)) break;
    }
    return text.substr(b, i - b);
  };
  auto literal = [&](std::string_view e, std::string_view name) -> std::pair<Given, python::Literal> {
    while (!e.empty() && (e.back() == ' ' || e.back() == '\r' || e.back() == '\t')) e.remove_suffix(1);
    if (e == name) return {Given::Read, {}};  // P=P: the caller's own value, counted where it is given
    if (std::optional<python::Literal> l = python::parse_literal(e, !python)) return {Given::Value, *l};
    return {Given::Unknown, {}};
  };
  std::string_view name = text.substr(at, length);
  if (at >= 2 && text.substr(at - 2, 2) == "--") return {Given::Unknown, {}};  // a command-line flag
  size_t i = at + length;
  if (i < text.size() && (text[i] == '"' || text[i] == '\'')) {  // a string key
    size_t j = skip(i + 1);
    if (j < text.size() && text[j] == ':') return literal(expression(skip(j + 1)), name);
    return {Given::Unknown, {}};  // kwargs["P"], getattr(x, "P"): looked up by name
  }
  i = skip(i);
  if (i >= text.size()) return {Given::Read, {}};
  if (text[i] == '=' && (i + 1 >= text.size() || text[i + 1] != '=')) return literal(expression(skip(i + 1)), name);
  if (text[i] == ':' && (i + 1 >= text.size() || text[i + 1] != '=')) {
    std::string_view rest = expression(skip(i + 1));
    if (!python) return rest.empty() ? std::pair{Given::Unknown, python::Literal{}} : literal(rest, name);
    size_t eq = rest.find('=');  // P: bool = False
    if (eq == std::string_view::npos) return {Given::Read, {}};
    return literal(rest.substr(eq + 1), name);
  }
  return {Given::Read, {}};
}

constexpr int kSwitchDepth = 2;

// A value a mention gives a parameter, and where.
struct Given_at {
  std::string file;
  uint32_t offset = 0;
  Given kind = Given::Read;
  python::Literal literal;
};

bool condition_tests(const python::Condition& c, const std::string& param) {
  if (c.param == param) return true;
  for (const python::Condition& k : c.kids)
    if (condition_tests(k, param)) return true;
  return false;
}

// A cheap test before parsing: whether the place on `line` (0-based; `starts`, the offsets
// of the lines of `text`) is in a function with a parameter whose default is a literal
// (`name=False`, `name="flash"`) that an `if` of the function, from its start to a few lines
// past the place, names.
bool may_be_switched(std::string_view text, const std::vector<size_t>& starts, size_t line) {
  auto line_at = [&](size_t i) {
    size_t b = starts[i], e = i + 1 < starts.size() ? starts[i + 1] - 1 : text.size();
    return text.substr(b, e - b);
  };
  auto indent = [](std::string_view l) {
    size_t n = 0;
    while (n < l.size() && (l[n] == ' ' || l[n] == '\t')) ++n;
    return n;
  };
  size_t at = indent(line_at(line)), def = line + 1;
  for (size_t i = line + 1; i-- > 0;) {
    std::string_view l = line_at(i);
    size_t n = indent(l);
    if (n == l.size() || l[n] == '#' || n >= at) continue;
    std::string_view t = l.substr(n);
    if (t.starts_with("def ") || t.starts_with("async def ")) {
      def = i;
      break;
    }
    if (t.starts_with("class ") || n == 0) return false;
  }
  if (def > line) return false;
  // The signature's parameters with literal defaults.
  Names params;
  int depth = 0;
  size_t i = starts[def];
  for (bool open = false; i < text.size(); ++i) {
    char c = text[i];
    if (c == '(' || c == '[' || c == '{') ++depth, open = true;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (c == ':' && depth == 0 && open) break;
    else if (c == '=' && depth == 1 && i + 1 < text.size() && text[i + 1] != '=') {
      size_t e = i;
      while (e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t')) --e;
      size_t b = e;
      while (b > 0 && word_char(text[b - 1])) --b;
      size_t v = i + 1;
      while (v < text.size() && text[v] == ' ') ++v;
      if (b < e && v < text.size() && (text[v] == '"' || text[v] == '\'' || text[v] == '-' || std::isdigit(static_cast<unsigned char>(text[v])) ||
                                       text.substr(v, 4) == "True" || text.substr(v, 5) == "False" || text.substr(v, 4) == "None"))
        params.emplace(text.substr(b, e - b));
    }
  }
  if (params.empty()) return false;
  for (size_t k = def + 1; k < starts.size() && k <= line + 12; ++k) {
    std::string_view l = line_at(k);
    size_t p = l.find("if ");
    if (p == std::string_view::npos || (p > 0 && word_char(l[p - 1]))) continue;
    bool named = false;
    words(l.substr(p), false, [&](std::string_view w, size_t, size_t) { named = named || params.count(w); });
    if (named) return true;
  }
  return false;
}

// Mentions that sit in a branch on a parameter of their function which no value the
// project gives it takes (`AttentionBlock(...) if not use_spatial_transformer else ...`,
// every config setting `use_spatial_transformer: True`), into `project.off`: only the
// mentions on a way to a finding still reached. True when there are some.
bool switch_off(const fs::path& root, Project& project) {
  const Graph& graph = project.graph;
  // The mentions looked at: of a still-reached candidate, and of the definitions that
  // mention one (a class built only by a switched-off builder: kSwitchDepth links).
  std::vector<char> wanted(graph.names.size(), 0);
  std::vector<uint32_t> level;
  for (const auto& [file, names] : project.names)
    for (const std::string& c : names)
      if (std::optional<uint32_t> id = graph.node(c, file); id && project.used[*id]) level.push_back(*id);
  size_t count = 0;
  for (int depth = 0; depth < kSwitchDepth && !level.empty(); ++depth) {
    std::vector<uint32_t> next;
    for (uint32_t n : level)
      if (!wanted[n]) {
        wanted[n] = 1, ++count;
        next.insert(next.end(), graph.users[n].begin(), graph.users[n].end());
      }
    level = std::move(next);
  }
  if (count == 0) return false;
  // Their mentions, by the file of the definition holding them, with the switches over each.
  struct Mention {
    uint32_t by, name;
    std::string file;
    python::Switches switches;
  };
  std::vector<Mention> found;                              // the mentions under a switch
  std::set<std::pair<uint32_t, uint32_t>> unswitched;      // (user, name) with a mention under none
  std::map<std::string, std::vector<uint32_t>> users_in;  // file -> wanted users defined there
  for (uint32_t n = 0; n < graph.names.size(); ++n)
    if (wanted[n])
      for (uint32_t by : graph.users[n])
        users_in[graph.files[by]].push_back(by);
  for (auto& [file, users] : users_in) {
    std::optional<std::string> owned = project.texts.count(file) ? std::optional<std::string>() : read_all(file);
    if (!owned && !project.texts.count(file)) continue;
    std::string_view text = owned ? std::string_view(*owned) : std::string_view(project.texts.at(file));
    std::vector<Definition> defs = top_definitions(text);
    std::sort(users.begin(), users.end());
    std::vector<uint32_t> offsets;
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    Names imports = import_words(text);
    words(text, true, [&](std::string_view w, size_t offset, size_t line) {
      graph.meant(w, file, imports, [&](uint32_t id) {
        if (!wanted[id]) return;
        const Definition* d = enclosing(defs, line);
        std::optional<uint32_t> by = d && !d->decorated ? graph.node(d->name, file) : std::nullopt;
        if (!by || *by == id || !std::binary_search(users.begin(), users.end(), *by)) return;
        offsets.push_back(static_cast<uint32_t>(offset));
        edges.push_back({*by, id});
      });
    });
    // Parse only the definitions with a mention that may sit under a switch, each alone.
    std::vector<size_t> starts{0};
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts.push_back(i + 1);
    std::map<const Definition*, std::vector<size_t>> maybe;  // definition -> mentions
    for (size_t i = 0; i < offsets.size(); ++i) {
      size_t line = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), offsets[i]) - starts.begin()) - 1;
      if (may_be_switched(text, starts, line)) maybe[enclosing(defs, line)].push_back(i);
      else unswitched.insert(edges[i]);
    }
    for (const auto& [def, which] : maybe) {
      size_t begin = starts[def->lines.first];
      size_t end = def->lines.second < starts.size() ? starts[def->lines.second] : text.size();
      std::vector<uint32_t> at;
      for (size_t i : which) at.push_back(offsets[i] - static_cast<uint32_t>(begin));
      std::vector<python::Switches> switches = python::switches_at(text.substr(begin, end - begin), at);
      for (size_t k = 0; k < which.size(); ++k) {
        const auto& edge = edges[which[k]];
        if (switches[k].guards.empty()) {
          unswitched.insert(edge);
          continue;
        }
        for (auto& [param, offset] : switches[k].default_offsets) offset += static_cast<uint32_t>(begin);
        found.push_back({edge.first, edge.second, file, std::move(switches[k])});
      }
    }
  }
  // The parameters those switches test, and the definitions whose construction sets them.
  std::map<std::string, std::vector<Given_at>, std::less<>> given;  // parameter -> what the project gives it
  Names builders;
  std::function<void(const python::Condition&)> tested = [&](const python::Condition& c) {
    if (!c.param.empty()) given[c.param];
    for (const python::Condition& k : c.kids) tested(k);
  };
  for (const Mention& m : found)
    if (!unswitched.count({m.by, m.name})) {
      for (const python::Guard& g : m.switches.guards) tested(g.condition);
      builders.insert(graph.names[m.by]);
    }
  if (given.empty()) return false;
  // One pass: each mention of a parameter (what value it gives), and of a builder (a
  // Python use, or a configuration file, which then sets some parameters or not).
  // builder -> the files whose Python code builds it: "" for any definition of that name,
  // else the file whose own definition it is.
  std::map<std::string, std::set<std::string>, std::less<>> used_in_python;
  std::map<std::string, std::set<std::string>, std::less<>> configs_of;  // builder -> configuration files
  std::map<std::string, std::set<std::string>> set_in;         // configuration file -> parameters it sets
  bool read = each_file(root, project, [&](const std::string& file, std::string_view text, bool python) {
    std::optional<std::vector<Definition>> defs;
    words(text, python, [&](std::string_view w, size_t offset, size_t line) {
      if (auto g = given.find(w); g != given.end()) {
        auto [kind, literal] = value_at(text, offset, w.size(), python);
        if (kind != Given::Read) g->second.push_back({file, static_cast<uint32_t>(offset), kind, literal});
        if (!python) set_in[file].insert(std::string(w));
      }
      if (auto b = builders.find(w); b != builders.end()) {
        if (!python) return void(configs_of[*b].insert(file));
        size_t begin = text.rfind('\n', offset), end = text.find('\n', offset);
        std::string_view whole = text.substr(begin == std::string_view::npos ? 0 : begin + 1,
                                             (end == std::string_view::npos ? text.size() : end) - (begin == std::string_view::npos ? 0 : begin + 1));
        if (whole.find("import ") != std::string_view::npos) return;  // an import builds nothing
        if (!defs) defs = top_definitions(text);
        const Definition* d = enclosing(*defs, line);
        if (d && d->name == w) return;  // its own definition
        // In a file with a definition of its own of that name, the name is that one.
        bool own = std::any_of(defs->begin(), defs->end(), [&](const Definition& o) { return o.name == w; });
        used_in_python[*b].insert(own ? file : std::string());
      }
    });
  });
  if (!read) return false;
  // A mention is off when one of its branches is never taken; a user's mention of a name,
  // when each of its mentions is.
  std::map<std::pair<uint32_t, uint32_t>, std::pair<bool, std::string>> verdict;  // -> all off, why
  for (const Mention& m : found) {
    const std::string& builder = graph.names[m.by];
    // Whether a construction may leave a parameter at its default: the function is not the
    // definition's own (`X` or `X.__init__`), or Python code builds it, or a configuration
    // that names it does not set the parameter.
    bool own = m.switches.function == builder || m.switches.function == builder + ".__init__";
    auto defaulted = [&](const std::string& param) {
      const std::set<std::string>& users = used_in_python[builder];
      if (!own || users.count("") || users.count(m.file)) return true;
      for (const std::string& cfg : configs_of[builder])
        if (!set_in[cfg].count(param)) return true;
      return false;
    };
    if (unswitched.count({m.by, m.name})) continue;
    std::map<std::string, std::vector<python::Literal>, std::less<>> values;
    for (const auto& [param, d] : m.switches.defaults) {
      auto g = given.find(param);
      bool tested = false;
      for (const python::Guard& guard : m.switches.guards) tested = tested || condition_tests(guard.condition, param);
      if (g == given.end() || !tested) continue;
      const std::vector<Given_at>& list = g->second;
      bool unknown = false;
      std::vector<python::Literal>& v = values[param];
      for (const Given_at& at : list) {
        if (at.file == m.file && m.switches.default_offsets.count(param) && m.switches.default_offsets.at(param) == at.offset)
          continue;  // the default itself
        if (at.kind == Given::Unknown) unknown = true;
        else v.push_back(at.literal);
      }
      if (defaulted(param)) v.push_back(d);
      if (unknown || v.empty()) values.erase(param);
    }
    std::string why;
    for (const python::Guard& g : m.switches.guards) {
      std::optional<bool> v = python::evaluate(g.condition, values);
      if (!v || *v == g.taken) continue;
      std::string params;
      for (const auto& [p, list] : values)
        if (condition_tests(g.condition, p)) params += (params.empty() ? "`" : ", `") + p + "`";
      why = "`" + graph.names[m.name] + "` is built in `" + m.switches.function + "` only under a condition on " +
            params + " that no value the project gives " + (params.find(',') == std::string::npos ? "it" : "them") +
            " meets";
      break;
    }
    auto [it, fresh] = verdict.try_emplace({m.by, m.name}, !why.empty(), why);
    if (!fresh) it->second.first = it->second.first && !why.empty();
  }
  bool any = false;
  for (const auto& [edge, v] : verdict)
    if (v.first) {
      project.off[edge] = v.second;
      any = true;
    }
  return any;
}

// Which top-level definitions of the project something it runs reaches, into
// `project.used`: a name is used when module-level code, a decorated definition, a
// configuration file or a script (a module nothing imports) names it, or the definition
// of a used name does. Two passes: the definitions and imports of every file, then the
// mentions of every definition. False when the project is too large to read.
bool reach(const fs::path& root, Project& project) {
  Graph& graph = project.graph;
  std::vector<uint32_t> seeds;
  bool read = each_file(root, project, [&](const std::string& file, std::string_view text, bool python) {
    if (!python) return;
    scan_imports(text, file, project.imports);
    for (Definition& d : top_definitions(text)) {
      uint32_t id = graph.add(d.name, file);
      if (d.decorated) seeds.push_back(id);
    }
  });
  if (!read) return false;
  for (uint32_t id = 0; id < graph.names.size(); ++id)
    if (!imported(project.imports, graph.files[id])) seeds.push_back(id);  // a script's
  read = each_file(root, project, [&](const std::string& file, std::string_view text, bool python) {
    if (!python) return scan(text, file, nullptr, graph);
    std::vector<Definition> defs = top_definitions(text);
    scan(text, file, &defs, graph);
  });
  if (!read) return false;
  for (uint32_t n = 0; n < graph.users.size(); ++n)
    if (graph.alive[n]) seeds.push_back(n);
  walk(project, seeds);
  if (switch_off(root, project)) walk(project, seeds);
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
        project.names[c].insert(d.name);
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
    std::optional<uint32_t> id = project.graph.node(name, file);
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
    // The switched-off mentions on its ways in, if that is why.
    std::string switched;
    std::vector<uint32_t> todo{*id};
    std::set<uint32_t> seen;
    while (!todo.empty() && switched.size() < 400) {
      uint32_t n = todo.back();
      todo.pop_back();
      if (!seen.insert(n).second) continue;
      for (uint32_t u : project.graph.users[n]) {
        if (auto o = project.off.find({u, n}); o != project.off.end()) switched += "; " + o->second;
        else todo.push_back(u);
      }
    }
    demote(f, "unused", why + switched);
    ++demoted;
  }
  return demoted;
}

}  // namespace mlsem::driver
