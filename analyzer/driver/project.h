// The cross-file pass's view of a project (driver/references.cpp, driver/switched_off.cpp):
// its Python and configuration files as text, their top-level definitions, the words of
// their import lines, and the graph of which definition mentions which. Internal to the
// driver.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/finding.h"
#include "core/text.h"
#include "python/context.h"
#include "python/switches.h"

namespace mlsem::driver::project {

namespace fs = std::filesystem;

// Configuration files that name classes and functions: a YAML `target:` or `type:`, a
// JSON config, a TOML or INI entry point.
inline bool config_file(const fs::path& p) {
  std::string ext = lower_ascii(p.extension().string());
  return ext == ".yaml" || ext == ".yml" || ext == ".json" || ext == ".toml" || ext == ".cfg" || ext == ".ini" ||
         ext == ".ipynb";  // a notebook calls what a module defines (when not analyzed itself)
}

constexpr uintmax_t kMaxConfigBytes = 1u << 20;     // one configuration file

inline std::optional<std::string> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) text.append(buffer, static_cast<size_t>(in.gcount()));
  return text;
}

inline bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

using Names = std::set<std::string, std::less<>>;
using Lines = std::pair<size_t, size_t>;  // 0-based [begin, end)

// The lines of `text` (without their newlines).
inline std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t begin = 0; begin <= text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

constexpr size_t kBlank = static_cast<size_t>(-1);

// The indentation of a line of Python, or kBlank for a blank or comment-only line.
inline size_t indent(std::string_view l) {
  size_t i = 0;
  while (i < l.size() && (l[i] == ' ' || l[i] == '\t')) ++i;
  return i == l.size() || l[i] == '#' || l[i] == '\r' ? kBlank : i;
}

// Whether the line `l` continues a statement a bracket opened above (`):`, `]`, `}`):
// its indentation says nothing about the blocks around it.
inline bool closes_bracket(std::string_view l) {
  size_t i = indent(l);
  return i != kBlank && (l[i] == ')' || l[i] == ']' || l[i] == '}');
}

// A line without its indentation (empty for a blank or comment-only line).
inline std::string_view stripped(std::string_view l) {
  size_t i = indent(l);
  return i == kBlank ? std::string_view{} : l.substr(i);
}

// Whether the statement `s` (stripped) starts with the keyword `kw`.
inline bool keyword(std::string_view s, std::string_view kw) {
  return s.starts_with(kw) && (s.size() == kw.size() || s[kw.size()] == ' ' || s[kw.size()] == ':' ||
                               s[kw.size()] == '(');
}

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
inline std::vector<Definition> top_definitions(std::string_view text) {
  std::vector<std::string_view> lines = lines_of(text);
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

// The words of the import lines of `text` (`import x.loss`, `from .loss import y`).
inline Names import_words(std::string_view text) {
  Names out;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (line.find("import") != std::string_view::npos)
      for (size_t i = 0; i < line.size();) {
        size_t j = i;
        while (j < line.size() && word_char(line[j])) ++j;
        if (j > i) out.emplace(line.substr(i, j - i));
        i = j == i ? i + 1 : j;
      }
    begin = end + 1;
  }
  return out;
}

// The project's top-level definitions, numbered (one per name and file), and what
// mentions each: `alive` when a line outside every undecorated top-level definition does
// (module-level code, a decorated definition, a configuration file); `users`, the
// undecorated definitions that do (a definition's mentions of itself don't count); a test
// file's mentions only set `in_tests`: what only the tests build does not run where speed
// matters. A name
// in a file that defines it means that definition (Python's module scope); elsewhere, any
// definition of it (which one an import picks is not followed).
struct Graph {
  std::unordered_map<std::string_view, std::vector<uint32_t>> ids;  // views into `names`
  std::deque<std::string> names;
  std::vector<std::string> files;
  std::vector<char> alive;
  std::vector<char> in_tests;  // a test file names it (which does not make it used)
  std::vector<std::vector<uint32_t>> users;

  uint32_t add(std::string_view name, const std::string& file) {
    if (std::optional<uint32_t> id = node(name, file)) return *id;
    names.emplace_back(name);
    files.push_back(file);
    alive.push_back(0);
    in_tests.push_back(0);
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
inline const Definition* enclosing(const std::vector<Definition>& defs, size_t line) {
  auto it = std::upper_bound(defs.begin(), defs.end(), line, [](size_t l, const Definition& d) { return l < d.lines.first; });
  if (it == defs.begin()) return nullptr;
  --it;
  return line < it->lines.second ? &*it : nullptr;
}

inline std::string canonical(const std::string& path) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(path, ec);
  return ec ? path : c.string();
}

// `file`'s path under `root` (a walked path, or a canonical one), or empty.
inline fs::path under(const fs::path& root, const std::string& file) {
  auto inside = [](const fs::path& rel) { return !rel.empty() && rel.begin()->string() != ".."; };
  fs::path rel = fs::path(file).lexically_relative(root);
  if (!inside(rel)) rel = fs::path(file).lexically_relative(canonical(root.string()));
  return inside(rel) ? rel : fs::path();
}

// Whether `file` is a test file of the project under `root` (python::file_kind, read on its
// path under the root: a project kept in a directory named tests/ still has code of its own).
inline bool test_file(const fs::path& root, const std::string& file) {
  fs::path rel = under(root, file);
  auto kind = python::file_kind(rel.empty() ? file : rel.generic_string());
  return kind && kind->first == "test";
}

// `file:line` (`line` 0-based, written 1-based) under `root`, or by the file's name, for a
// reason.
inline std::string where_in(const fs::path& root, const std::string& file, size_t line) {
  fs::path rel = under(root, file);
  if (rel.empty()) rel = fs::path(file).filename();
  return rel.generic_string() + ":" + std::to_string(line + 1);
}

constexpr size_t kMaxProjectFiles = 20000;
constexpr uintmax_t kMaxProjectBytes = 256u << 20;

// A directory the walk leaves out: hidden ones (.git, .venv), node_modules, caches, and
// virtual environments (a pyvenv.cfg inside). Build and dist copies are read: an extra
// copy of a use only keeps a finding.
inline bool skipped(const fs::path& dir) {
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

// Records that `file` mentions `imports` (its import lines' words, import_words).
inline void scan_imports(const Names& imports, const std::string& file, Imports& index) {
  for (const std::string& w : imports) {
    auto [it, fresh] = index.try_emplace(w, Importers{file});
    if (!fresh && it->second.first != file) it->second.several = true;
  }
}

// The name other files import a module by: its file's stem, or its package's for an
// __init__.py.
inline std::string module_stem(const fs::path& file) {
  std::string stem = file.stem().string();
  return stem == "__init__" ? file.parent_path().filename().string() : stem;
}

// Whether a file other than `file` imports the module `file` is.
inline bool imported(const Imports& imports, const std::string& file) {
  auto it = imports.find(module_stem(file));
  return it != imports.end() && (it->second.several || it->second.first != file);
}

// Whether `expr`, an argument of torch.compile or a receiver of `.compile(`, names a model
// or a part of one (`model`, `self.model`, `block`, `m`, `model_ae.encoder`) rather than a
// loss, an optimizer step, a mask builder or an attention function (driver/compile_sites.cpp).
bool names_a_model(std::string_view expr);

// Where a project compiles its model.
struct CompileSite {
  std::string file;  // as walked (empty from compile_sites)
  size_t line = 0;   // 0-based from compile_sites, 1-based once recorded
  std::string code;
  std::string function;  // the function holding it (innermost), or empty at module level
  // The switch it runs under (`if args.compile:`), or empty when it runs by default: under
  // no `if`/`else`/`try`/`while` of its function (nor after an `if ...: return` guard), or
  // only under `if NAME:` with NAME set to True at the top of the file, or under
  // `if __name__ == "__main__":`.
  std::string under;
  std::string via;  // when `under` is a caller's switch: `function` called at file:line
};

// The lines of Python source `text` that hand a model, or a part of one, to
// torch.compile: `torch.compile(model, ...)`, `block.compile(backend=...)`
// (nn.Module.compile), each with its code and switch. Comments, docstrings, decorators and
// `torch.compile(mode=...)` factories are not such lines: a decorator compiles one
// function (python/compiled.h).
std::vector<CompileSite> compile_sites(std::string_view text);

// The switch line `at` of `lines` runs under, or empty (CompileSite::under), and the
// innermost function holding it into `function` when given.
std::string switch_over(const std::vector<std::string_view>& lines, size_t at, std::string* function = nullptr);

// A branch beside a use that names a fused implementation: the branch's header line
// (0-based) and the fused name.
struct Beside {
  size_t line = 0;
  std::string fused;
};

// Whether line `at` of `lines` (Python) sits in a branch of an if/elif/else or try/except
// statement, at any depth within its function, whose sibling branch names a fused
// implementation other than `name` (a word with fused, flash, apex, liger, triton, xformers
// or transformer_engine in it), or in a conditional expression that does
// (driver/fallbacks.cpp).
std::optional<Beside> beside_fused(const std::vector<std::string_view>& lines, size_t at, std::string_view name);

// Whether the class whose header is line `header` of `lines` defines `method` without
// calling the base class's (`super().method(`).
bool overrides(const std::vector<std::string_view>& lines, size_t header, std::string_view method);

// The fallback step (driver/fallbacks.cpp): the uses, across the project, of the
// top-level definitions findings sit in. A finding every use of whose definition sits beside
// a fused implementation is demoted as `fallback`; one only subclasses overriding its method
// name, as `unused`. A use: a mention outside the definition itself, its imports and
// `__all__`, and the project's tests; a mention in a configuration file, and a decorated
// (registered) definition, are plain uses.
class FallbackUses {
 public:
  // The candidates: findings of `rules`, not demoted, in a top-level definition of a file
  // whose project root `root_of` gives.
  FallbackUses(const std::vector<Finding>& findings, const std::map<std::string, fs::path>& root_of,
               const std::set<std::string, std::less<>>& rules);
  // Reads the uses in one file (Python or configuration) of the project under `root`.
  void scan(const fs::path& root, const std::string& file, std::string_view text, bool python);
  // Demotes the candidates that are still not demoted and whose project was read whole
  // (`read`); only-overriding subclasses demote as `unused` when `unused`. Returns how many.
  size_t demote(std::vector<Finding>& findings, const std::set<fs::path>& read, bool unused) const;

 private:
  struct Uses {
    bool plain = false;                   // a use not beside a fused implementation
    std::optional<std::string> beside;    // the first use beside one, in words
    std::optional<std::string> subclass;  // the first subclass that overrides the method, in words
  };
  bool candidate(const Finding& f) const;
  const std::set<std::string, std::less<>>& rules_;
  const std::map<std::string, fs::path>& root_of_;
  std::map<fs::path, std::map<std::string, std::set<std::string>, std::less<>>> wanted_;  // root -> name -> methods
  std::map<std::pair<fs::path, std::string>, Uses> uses_;  // (root, name "#" method)
};

struct Project {
  std::map<std::string, Names> names;          // candidates, by canonical file
  std::map<std::string, std::string> texts;    // canonical path -> a candidate file's text, read once
  std::set<std::string> file_names;            // the candidate files' names
  Names tests;                                 // its test files (test_file), as walked
  Imports imports;
  Graph graph;
  std::vector<char> used;                      // by graph id, once computed
  std::map<std::pair<uint32_t, uint32_t>, std::string> off;  // (user, name) mentions switched off, and why
  // Where the project, outside its tests and demonstrations, compiles its model by
  // default, and where it does behind a switch (the first of each, by path and line).
  std::vector<CompileSite> compiles;          // by default, by path and line
  std::optional<CompileSite> compiles_opt_in;
  // The settings of ProjectPass::configured_by some Python file mentions: where, first.
  std::map<std::string, std::string> configured;
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

// Marks mentions under a switch no value in `project` turns on (`project.off`); true when
// there are some (driver/switched_off.cpp).
bool switch_off(const fs::path& root, Project& project);

// Findings of methods that sit in a branch on an attribute (`if self.stratified:`) which
// every Python file of their project only ever assigns literals (`self.stratified =
// False`), none of which takes the branch; any other mention that may set it (a keyword, a
// bare name, a string, a configuration file, `+=`) keeps the branch possible, and
// `training` (nn.Module.train() sets it) is no such flag (driver/constant_flags.cpp).
class ConstantFlags {
 public:
  // The candidates: findings not demoted, in a method of a file whose project root `root_of`
  // gives, and whose text that project read (`Project::texts`, before the walk empties it).
  ConstantFlags(std::vector<Finding>& findings, const std::map<std::string, fs::path>& root_of,
                const std::map<fs::path, Project>& projects);
  // Reads the mentions of the candidates' attributes in one file of the project under `root`.
  void scan(const fs::path& root, const std::string& file, std::string_view text, bool python);
  // Demotes as `unused` the candidates still not demoted whose project was read whole
  // (`read`) and whose branch no value takes. Returns how many.
  size_t demote(const std::set<fs::path>& read);

 private:
  // `self.ln = ln` in `__init__`: the attribute takes what the constructor's parameter is
  // given at every construction of the class, or its default.
  struct Parameter {
    std::string cls, name;
    int position = -1;  // among the parameters after self; -1: keyword-only
    std::optional<python::Literal> default_value;
  };
  struct Flag {
    std::vector<python::Literal> values;
    std::vector<Parameter> parameters;
    std::set<std::string> class_keywords;  // candidates' classes constructed with it as a keyword
    std::string first;   // where the first assignment is, as where_in says it
    bool other = false;  // assigned otherwise, passed by keyword, named bare, in a string or a config
  };
  // A candidate's class as the project names it: each call's argument texts, or `other`
  // when it is named without a call (subclassed, passed on, in a configuration).
  struct ClassUse {
    std::vector<std::vector<std::string>> calls;
    bool other = false;
  };
  std::optional<Parameter> parameter_of(std::string_view text, size_t at, std::string_view name) const;
  // The values a parameter is given at every construction; nullopt when one is not known.
  std::optional<std::vector<python::Literal>> given(const fs::path& root, const Parameter& p) const;
  struct Candidate {
    Finding* finding;
    fs::path root;
    std::vector<python::Guard> guards;
    std::string function;
  };
  std::vector<Candidate> candidates_;
  std::map<fs::path, Names> keys_;                                       // root -> attribute names
  std::map<fs::path, std::map<std::string, Flag, std::less<>>> flags_;  // root -> name -> what sets it
  std::map<fs::path, std::map<std::string, ClassUse, std::less<>>> classes_;  // root -> candidates' classes
  // Where a `self.ln = ln` reads its parameter: that bare mention sets nothing.
  static std::string at_key(const std::string& file, size_t at) { return file + '\0' + std::to_string(at); }
  std::set<std::string> read_parameters_;
};

}  // namespace mlsem::driver::project
