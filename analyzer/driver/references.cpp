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

// The undecorated top-level `def`/`async def`/`class` definitions of `text`, by name, with
// their lines, in one pass. A definition ends before the next line that starts at column 0
// with neither a space, a comment nor a closing bracket; a string spanning lines at column
// 0 ends it early, which only counts more of it as outside uses. A decorator (`@register`,
// `@ARCH_REGISTRY.register()`, one spanning lines) means a registry names it: left out.
std::map<std::string, Lines, std::less<>> definitions(std::string_view text) {
  std::vector<std::string> lines = split(text, '\n');
  auto top = [&](size_t i) {
    std::string_view n = lines[i];
    return !n.empty() && n[0] != ' ' && n[0] != '\t' && n[0] != '#' && n[0] != '\r' && n[0] != ')' && n[0] != ']';
  };
  std::map<std::string, Lines, std::less<>> out;
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
    bool decorated = above > 0 && lines[above - 1].starts_with("@");
    size_t end = i + 1;
    while (end < lines.size() && !top(end)) ++end;
    if (!decorated) out.emplace(std::string(rest.substr(0, n)), Lines{i, end});
  }
  return out;
}

// Adds to `seen` each name of `names` that occurs as a whole word in `text`, but not in
// the lines `own` gives for it (its own definition in this file).
void scan(std::string_view text, const Names& names, Names& seen, const std::map<std::string, Lines, std::less<>>* own = nullptr) {
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
    std::string_view w = text.substr(i, j - i);
    if (auto it = names.find(w); it != names.end()) {
      const Lines* skip = nullptr;
      if (own)
        if (auto o = own->find(w); o != own->end()) skip = &o->second;
      if (!skip || line < skip->first || line >= skip->second) seen.insert(*it);
    }
    i = j;
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

// The module names of `stems` that an import line (`import x.loss`, `from .loss import
// y`) of `text` mentions, into `imported`: one pass over the lines.
void scan_imports(std::string_view text, const Names& stems, Names& imported) {
  if (stems.empty()) return;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (line.find("import") != std::string_view::npos) scan(line, stems, imported);
    begin = end + 1;
  }
}

// A directory the walk leaves out: hidden ones (.git, .venv), node_modules, caches, and
// virtual environments (a pyvenv.cfg inside). Build and dist copies are read: an extra
// copy of a use only keeps a finding.
bool skipped(const fs::path& dir) {
  std::string name = dir.filename().string();
  std::error_code ec;
  return name.starts_with(".") || name == "node_modules" || name == "__pycache__" || fs::exists(dir / "pyvenv.cfg", ec);
}

struct Project {
  Names names;                                                          // candidates
  std::map<std::string, std::map<std::string, Lines, std::less<>>> defs;  // canonical path -> own definitions
  std::map<std::string, std::string> modules;                           // canonical path -> module stem
  std::map<std::string, std::string> texts;                             // canonical path -> text, read once
  std::set<std::string> file_names;                                     // the candidate files' names
};

// The name other files import a module by: its file's stem, or its package's for an
// __init__.py.
std::string module_stem(const fs::path& file) {
  std::string stem = file.stem().string();
  return stem == "__init__" ? file.parent_path().filename().string() : stem;
}

// Which candidate names something in the project under `root` mentions outside their own
// definitions (its Python and configuration files), and which candidate modules another
// Python file imports. Nullopt when the project is too large to read.
std::optional<Names> mentioned(const fs::path& root, const Project& project, Names& imported) {
  Names seen;
  uintmax_t total = 0;
  size_t count = 0;
  // Module names another file imports them by: every candidate's, but a candidate file's own.
  Names all_stems;
  for (const auto& [file, stem] : project.modules) all_stems.insert(stem);
  auto scan_text = [&](const std::string& c, std::string_view text, bool source) {
    auto own = project.defs.find(c);
    scan(text, project.names, seen, own == project.defs.end() ? nullptr : &own->second);
    if (!source) return;
    auto module = project.modules.find(c);
    if (module == project.modules.end()) return scan_imports(text, all_stems, imported);
    Names stems = all_stems;
    stems.erase(module->second);
    for (const auto& [file, stem] : project.modules)  // another candidate of the same stem
      if (file != c && stem == module->second) stems.insert(stem);
    scan_imports(text, stems, imported);
  };
  // The candidates' own files first, whatever their size or directory, from the text read
  // once; the walk skips them.
  for (const auto& [c, text] : project.texts) scan_text(c, text, true);
  auto visit = [&](const fs::path& p, bool source) {
    // Only a file named like a candidate file can be one: canonicalize just those.
    if (project.file_names.count(p.filename().string()) && project.texts.count(canonical(p.string()))) return;
    if (std::optional<std::string> text = read_all(p.string())) scan_text({}, *text, source);
  };
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (it->is_directory(ec)) {
      if (skipped(p)) it.disable_recursion_pending();
      continue;
    }
    std::string ext = lower_ascii(p.extension().string());
    bool source = ext == ".py" || ext == ".pyi";
    if ((!source && !config_file(p)) || !it->is_regular_file(ec)) continue;
    uintmax_t size = it->file_size(ec);
    if (ec || size > (source ? kMaxConfigBytes * 4 : kMaxConfigBytes)) continue;
    if ((total += size) > kMaxProjectBytes || ++count > kMaxProjectFiles) return std::nullopt;
    visit(p, source);
  }
  return seen;
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
  std::map<std::pair<std::string, std::string>, fs::path> home;  // (finding path, name) -> project root
  for (auto& [path, own] : by_file) {
    std::error_code ec;
    fs::path absolute = fs::absolute(path, ec);
    if (ec) continue;
    std::optional<fs::path> root = marked_root(absolute.parent_path());
    if (!root) continue;
    std::optional<std::string> text = read_all(path);
    if (!text) continue;
    std::map<std::string, Lines, std::less<>> all = definitions(*text);
    Project& project = projects[*root];
    std::string c = canonical(path);
    project.modules[c] = module_stem(absolute);
    project.file_names.insert(absolute.filename().string());
    auto& defs = project.defs[c];
    for (const std::string& name : own)
      if (auto d = all.find(name); d != all.end()) {
        defs.insert(*d);
        project.names.insert(name);
        home[{path, name}] = *root;
      }
    project.texts[c] = std::move(*text);
  }
  std::map<fs::path, Names> seen, imported;
  for (auto& [root, project] : projects) {
    if (project.names.empty()) continue;
    if (auto m = mentioned(root, project, imported[root])) seen[root] = std::move(*m);
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
    std::error_code ec;
    if (!imported[h->second].count(module_stem(fs::absolute(f.path, ec)))) continue;
    demote(f, "unused",
           "unused: nothing else in the project (its Python and configuration files under " +
               h->second.filename().string() + "/) names `" + name + "`: it is never built or called");
    ++demoted;
  }
  return demoted;
}

}  // namespace mlsem::driver
