#include "driver/references.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>

#include "driver/project.h"
#include "engine/engine.h"
#include "python/context.h"

namespace mlsem::driver {
namespace {

using namespace project;

// Records in `graph` each mention in `text` of one of its names (`defs`: the top-level
// definitions of Python source; null for a configuration file).
void scan(std::string_view text, const std::string& file, const std::vector<Definition>* defs, const Names& imports,
          Graph& graph) {
  const std::string none;
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

// Whether `text` looks its own names up at run time (`eval("TF" + name)`, `globals()[name]`,
// `locals()`, `vars()`): then every definition in it may be built, named or not.
bool looks_up_names(std::string_view text) {
  for (std::string_view call : {"eval(", "globals()", "locals()", "vars()"})
    for (size_t at = text.find(call); at != std::string_view::npos; at = text.find(call, at + 1))
      if (at == 0 || (text[at - 1] != '.' && !word_char(text[at - 1]))) return true;
  return false;
}

// The directory of examples, tutorials, documentation, notebooks or demos (`names`) that
// `file`, under `root`, is in, or empty: a script there shows something off. A Python
// package of that name (with an __init__.py) is the project's own code.
std::string demonstration_dir(const fs::path& root, const std::string& file,
                              std::initializer_list<const char*> names = {"example", "tutorial", "doc", "notebook", "demo"}) {
  fs::path rel = under(root, file), at = root;
  for (const fs::path& part : rel.parent_path()) {
    at /= part;
    std::string d = lower_ascii(part.string());
    for (const char* demo : names)
      if (d == demo || d == std::string(demo) + "s") {
        std::error_code ec;
        if (!fs::exists(at / "__init__.py", ec)) return part.string();
      }
  }
  return {};
}

// Whether a compile of the model in `file` is a demonstration's rather than the project's:
// also a sample or a benchmark compiles the model it builds for itself.
bool demonstration(const fs::path& root, const std::string& file) {
  return !demonstration_dir(root, file, {"example", "sample", "tutorial", "doc", "benchmark", "notebook", "demo"}).empty();
}

// Whether a directory's name says it is a chapter of a book or course: ch02, chapter_3,
// appendix-A, lesson1, lecture-04, week2.
bool chapter_name(std::string_view name) {
  std::string n = lower_ascii(name);
  if (n.starts_with("appendix")) return true;
  for (std::string_view prefix : {"chapter", "lesson", "lecture", "week", "ch"}) {
    if (!n.starts_with(prefix)) continue;
    size_t i = prefix.size();
    if (i < n.size() && (n[i] == '-' || n[i] == '_' || n[i] == ' ')) ++i;
    return i < n.size() && n[i] >= '0' && n[i] <= '9';
  }
  return false;
}

// The first three chapter directories at the root of a project, when it has three or more
// (LLMs-from-scratch's ch01/ ... ch07/, appendix-A/ ...): the project is a book's or a
// course's code, kept simple to teach. Empty otherwise.
std::string chapters_at(const fs::path& root) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator d(root, ec), end; !ec && d != end; d.increment(ec))
    if (d->is_directory(ec) && chapter_name(d->path().filename().string())) names.push_back(d->path().filename().string());
  if (names.size() < 3) return {};
  std::sort(names.begin(), names.end());
  return names[0] + "/, " + names[1] + "/, " + names[2] + "/";
}

// Why `file` is one of the project's demonstrations, or empty (ProjectPass::examples):
// under a demonstration directory, in a project laid out as a book's or course's chapters,
// or one of three or more train*.py scripts at the root of a project that ships a package
// (x-transformers' train_enwik8.py, train_copy.py, ...). `root_scripts` caches the count of
// such scripts by root; `root_chapters` the chapter directories.
std::string demonstration_reason(const fs::path& root, const std::string& file, std::map<fs::path, size_t>& root_scripts,
                                 std::map<fs::path, std::string>& root_chapters) {
  if (std::string dir = demonstration_dir(root, file); !dir.empty())
    return "demonstration: the file is under the project's " + dir + "/ directory, which shows the code off; its speed is not its point";
  auto [chapters, first] = root_chapters.try_emplace(root);
  if (first) chapters->second = chapters_at(root);
  if (!chapters->second.empty())
    return "demonstration: the project is laid out as the chapters of a book or course (" + chapters->second +
           " ...): code written to teach, kept simple on purpose; its speed is not its point";
  fs::path rel = under(root, file);
  std::string name = rel.filename().string();
  if (rel.empty() || rel.has_parent_path() || !name.starts_with("train") || !name.ends_with(".py")) return {};
  std::error_code ec;
  const char* manifest = fs::exists(root / "pyproject.toml", ec) ? "pyproject.toml" : fs::exists(root / "setup.py", ec) ? "setup.py" : nullptr;
  if (!manifest) return {};
  auto [it, fresh] = root_scripts.try_emplace(root, 0);
  if (fresh)
    for (fs::directory_iterator d(root, ec), end; !ec && d != end; d.increment(ec)) {
      std::string n = d->path().filename().string();
      if (n.starts_with("train") && n.ends_with(".py") && d->is_regular_file(ec)) ++it->second;
    }
  if (it->second < 3) return {};
  return "demonstration: one of " + std::to_string(it->second) +
         " train*.py scripts at the root of a project that ships a package (" + manifest +
         "): scripts that show the library off, whose speed is not their point";
}

// Records where `file` (outside the project's tests and demonstrations) hands a model to
// torch.compile: every site that runs by default in `project.compiles` (sorted by path and
// line once the walk is over, switch_through_callers), and the first by path behind a
// switch in `project.compiles_opt_in`, so that the walk's order does not matter.
void note_compiles(const fs::path& root, const std::string& file, std::string_view text, Project& project) {
  if (python::file_kind(file) || demonstration(root, file)) return;
  for (CompileSite& site : compile_sites(text)) {
    site.file = file;
    ++site.line;
    if (site.under.empty()) {
      project.compiles.push_back(std::move(site));
    } else if (!project.compiles_opt_in || file < project.compiles_opt_in->file) {
      project.compiles_opt_in = std::move(site);
    }
  }
}

// A default compile site inside a function is a switched one when every call of that
// function in the project runs under a switch (`if compile_config.enable:
// apply_compile(model)`): one level of callers, read in a second walk. Leaves in
// `project.compiles` the sites that stay default, by path and line.
void switch_through_callers(const fs::path& root, Project& project) {
  std::set<std::string, std::less<>> functions;
  std::map<std::string, std::vector<fs::path>, std::less<>> homes;  // function -> the files defining it
  for (const CompileSite& site : project.compiles)
    if (!site.function.empty()) functions.insert(site.function), homes[site.function].push_back(site.file);
  // Whether `file` calls the `function` of a site's file: it is that file, or one of its
  // import lines names the function beside `dir.stem` of the site's module (or `.stem`
  // from the same directory); another module's function of that name is not it.
  auto means = [&](const std::string& file, const std::vector<std::string_view>& lines, const std::string& function) {
    for (const fs::path& home : homes[function]) {
      if (fs::path(file) == home) return true;
      std::string stem = home.stem().string(), dotted = home.parent_path().filename().string() + "." + stem;
      bool same_dir = fs::path(file).parent_path() == home.parent_path();
      for (std::string_view l : lines) {
        if (!l.starts_with("from ") || l.find(function) == std::string_view::npos) continue;
        if (l.find(dotted + " ") != std::string_view::npos || (same_dir && l.starts_with("from ." + stem + " ")))
          return true;
      }
    }
    return false;
  };
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> calls;  // -> first (place, switch)
  std::set<std::string, std::less<>> unswitched;
  if (!functions.empty())
    each_file(root, project, [&](const std::string& file, std::string_view text, bool python) {
      if (!python || python::file_kind(file)) return;
      bool any = false;
      for (const std::string& f : functions) any = any || text.find(f + "(") != std::string_view::npos;
      if (!any) return;
      std::vector<std::string_view> lines = lines_of(text);
      std::map<std::string_view, bool> meant;
      words(text, true, [&](std::string_view w, size_t offset, size_t line) {
        auto f = functions.find(w);
        if (f == functions.end() || offset + w.size() >= text.size() || text[offset + w.size()] != '(') return;
        // `training.compile_model(...)`: through the site's module or its package.
        bool through_module = false;
        if (offset > 0 && text[offset - 1] == '.') {
          size_t b = offset - 1;
          while (b > 0 && word_char(text[b - 1])) --b;
          std::string_view receiver = text.substr(b, offset - 1 - b);
          for (const fs::path& home : homes[*f])
            through_module |= receiver == home.stem().string() || receiver == home.parent_path().filename().string();
        }
        auto m = meant.find(w);
        if (m == meant.end()) m = meant.emplace(w, means(file, lines, *f)).first;
        if (!m->second && !through_module) return;
        std::string_view s = stripped(lines[line]);
        if (keyword(s, "def") || keyword(s, "async")) return;
        std::string under = switch_over(lines, line);
        auto& [place, first] = calls[*f];
        if (under.empty()) unswitched.insert(*f);
        else if (first.empty()) place = where_in(root, file, line), first = under;
      });
    });
  std::vector<CompileSite> kept;
  for (CompileSite& site : project.compiles) {
    auto c = calls.find(site.function);
    if (site.function.empty() || c == calls.end() || unswitched.count(site.function)) {
      kept.push_back(std::move(site));
      continue;
    }
    site.under = c->second.second;
    site.via = "`" + site.function + "` called at " + c->second.first;
    if (!project.compiles_opt_in || site.file < project.compiles_opt_in->file) project.compiles_opt_in = site;
  }
  std::sort(kept.begin(), kept.end(), [](const CompileSite& a, const CompileSite& b) {
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  project.compiles = std::move(kept);
}

// Which top-level definitions of the project something it runs reaches, into
// `project.used`: a name is used when module-level code, a decorated definition, a
// configuration file or a script (a module nothing imports) names it, or the definition
// of a used name does. Two passes: the definitions and imports of every file, then the
// mentions of every definition. `each` sees every file of the first pass (the other
// steps' reading). False when the project is too large to read.
template <typename Each>
bool reach(const fs::path& root, Project& project, Each each) {
  Graph& graph = project.graph;
  std::vector<uint32_t> seeds;
  // Each Python file's definitions and import words, found once for both passes.
  std::map<std::string, std::pair<std::vector<Definition>, Names>> facts;
  bool read = each_file(root, project, [&](const std::string& file, std::string_view text, bool python) {
    each(file, text, python);
    if (!python) return;
    bool test = test_file(root, file);
    if (test) project.tests.insert(file);
    auto& [defs, imports] = facts[file];
    imports = import_words(text);
    // A module only tests import may still be used from outside, like one nothing imports.
    if (!test) scan_imports(imports, file, project.imports);
    defs = top_definitions(text);
    bool dynamic = looks_up_names(text);
    for (const Definition& d : defs) {
      uint32_t id = graph.add(d.name, file);
      if (d.decorated || dynamic) seeds.push_back(id);
    }
  });
  if (!read) return false;
  // A script's definitions (a module nothing imports) run; a test file's are the tests'.
  for (uint32_t id = 0; id < graph.names.size(); ++id)
    if (!imported(project.imports, graph.files[id]) && !project.tests.count(graph.files[id]))
      seeds.push_back(id);
  const Names none;
  read = each_file(root, project, [&](const std::string& file, std::string_view text, bool python) {
    if (python && project.tests.count(file)) {
      words(text, true, [&](std::string_view w, size_t, size_t) {
        if (auto it = graph.ids.find(w); it != graph.ids.end())
          for (uint32_t id : it->second) graph.in_tests[id] = 1;
      });
      return;
    }
    auto f = python ? facts.find(file) : facts.end();
    if (f == facts.end()) return scan(text, file, nullptr, none, graph);  // (a file new since the first pass: as a config)
    scan(text, file, &f->second.first, f->second.second, graph);
  });
  if (!read) return false;
  for (uint32_t n = 0; n < graph.users.size(); ++n)
    if (graph.alive[n]) seeds.push_back(n);
  walk(project, seeds);
  if (switch_off(root, project)) walk(project, seeds);
  return true;
}

}  // namespace

Demoted demote_by_project(std::vector<Finding>& findings, const ProjectPass& pass) {
  Demoted demoted;
  // The project root of a file's directory, looked up once per directory for every step.
  std::map<fs::path, std::optional<fs::path>> roots;
  auto root_for = [&](const fs::path& absolute) -> const std::optional<fs::path>& {
    auto [r, fresh] = roots.try_emplace(absolute.parent_path());
    if (fresh) r->second = marked_root(absolute.parent_path());
    return r->second;
  };
  if (pass.examples) {
    std::map<fs::path, size_t> root_scripts;
    std::map<fs::path, std::string> root_chapters;
    for (Finding& f : findings) {
      if (!f.context.empty() || !f.path.ends_with(".py")) continue;
      std::error_code ec;
      fs::path absolute = fs::absolute(f.path, ec);
      if (ec) continue;
      const std::optional<fs::path>& root = root_for(absolute);
      if (!root) continue;
      if (std::string why = demonstration_reason(*root, absolute.string(), root_scripts, root_chapters); !why.empty()) {
        demote(f, "example", why);
        ++demoted.example;
      }
    }
  }
  // Candidates: findings in a .py file of a marked project, not demoted; for `unused`, inside a
  // named top-level function or class; for `compiled`, of a rule that torch.compile demotes.
  std::map<std::string, Names> by_file;  // path -> top-level names (empty: a compile candidate only)
  // A finding not yet demoted, in a Python file, of one of `rules`.
  auto candidate = [](const Finding& f, const auto& rules) {
    return f.context.empty() && f.path.ends_with(".py") && rules.count(f.rule);
  };
  auto compile_candidate = [&](const Finding& f) { return candidate(f, pass.compiled_rules); };
  auto configured_candidate = [&](const Finding& f) { return candidate(f, pass.configured_by); };
  std::set<std::string> settings;  // every rule's, looked for in every file read
  for (const auto& [rule, s] : pass.configured_by) settings.insert(s.begin(), s.end());
  for (const Finding& f : findings) {
    if (compile_candidate(f) || configured_candidate(f) || candidate(f, pass.fallback_rules)) by_file[f.path];
    if (!pass.unused || !f.context.empty() || f.function.empty() || f.function == "<module>" || !f.path.ends_with(".py"))
      continue;
    by_file[f.path].insert(f.function.substr(0, f.function.find('.')));
  }
  std::map<fs::path, Project> projects;
  std::map<std::string, fs::path> root_of;  // path -> its project's root
  std::map<std::pair<std::string, std::string>, std::pair<fs::path, std::string>> home;  // -> root, canonical
  for (auto& [path, own] : by_file) {
    std::error_code ec;
    fs::path absolute = fs::absolute(path, ec);
    if (ec) continue;
    const std::optional<fs::path>& root = root_for(absolute);
    if (!root) continue;
    Project& project = projects[*root];
    root_of[path] = *root;
    if (own.empty()) continue;
    std::optional<std::string> text = read_all(path);
    if (!text) continue;
    std::string c = canonical(path);
    project.file_names.insert(absolute.filename().string());
    for (const Definition& d : top_definitions(*text))
      if (!d.decorated && own.count(d.name)) {
        project.names[c].insert(d.name);
        home[{path, d.name}] = {*root, c};
      }
    project.texts[c] = std::move(*text);
  }
  // One read of each project serves every step: the compile sites and the fallback uses
  // come from the walk that reaches definitions, or from a walk of their own when no
  // finding asks about unused code.
  FallbackUses fallbacks(findings, root_of, pass.fallback_rules);
  std::optional<ConstantFlags> flags;
  if (pass.unused) flags.emplace(findings, root_of, projects);
  std::set<fs::path> read;
  for (auto& [root, project] : projects) {
    auto each = [&](const std::string& file, std::string_view text, bool python) {
      if (python) note_compiles(root, file, text, project);
      if (python)
        for (const std::string& s : settings) {
          if (project.configured.count(s)) continue;
          for (size_t at = text.find(s); at != std::string_view::npos; at = text.find(s, at + 1)) {
            size_t line_start = text.rfind('\n', at) + 1;  // npos + 1 == 0
            size_t first = text.find_first_not_of(" \t", line_start);
            if (first < at && text[first] == '#') continue;  // a comment
            project.configured[s] = where_in(root, file, std::count(text.begin(), text.begin() + at, '\n'));
            break;
          }
        }
      fallbacks.scan(root, file, text, python);
      if (flags) flags->scan(root, file, text, python);
    };
    if (!project.names.empty() ? reach(root, project, each) : each_file(root, project, each)) read.insert(root);
    if (read.count(root) && !project.compiles.empty()) switch_through_callers(root, project);
    project.texts = {};
  }
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
    if (project.graph.in_tests[*id])
      why = "unused: outside its tests, nothing else in " + where + " names `" + name + "`: only the tests build or call it";
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
    // Switched off: the users run, but build it only under settings the project never makes.
    if (!switched.empty())
      why = "unused under the project's own settings: " + switched.substr(2) +
            (project.graph.in_tests[*id] ? "; elsewhere only its tests build it" : "");
    demote(f, "unused", why);
    ++demoted.unused;
  }
  demoted.fallback = fallbacks.demote(findings, read, pass.unused);
  for (Finding& f : findings) {
    if (!configured_candidate(f)) continue;
    auto r = root_of.find(f.path);
    if (r == root_of.end() || !read.count(r->second)) continue;
    const Project& project = projects[r->second];
    for (const std::string& s : pass.configured_by.find(f.rule)->second)
      if (auto c = project.configured.find(s); c != project.configured.end()) {
        std::string name = s;
        while (!name.empty() && (name.back() == '=' || name.back() == ' ')) name.pop_back();
        demote(f, "configured", "configured: the project sets `" + name + "` itself (" + c->second + "), for every script");
        ++demoted.configured;
        break;
      }
  }
  if (flags) demoted.unused += flags->demote(read);
  for (Finding& f : findings) {
    if (!compile_candidate(f)) continue;
    auto r = root_of.find(f.path);
    if (r == root_of.end() || !read.count(r->second)) continue;
    const Project& project = projects[r->second];
    auto at = [&](const CompileSite& site) { return where_in(r->second, site.file, site.line - 1) + ": `" + site.code + "`"; };
    if (!project.compiles.empty()) {
      demote(f, "compiled",
             "compiled: the project hands its model to torch.compile by default (" + at(project.compiles.front()) +
                 "), which fuses these ops");
      ++demoted.compiled;
    } else if (project.compiles_opt_in) {
      // Behind a switch that is off unless set: the finding stands (the eager path is what
      // runs by default), and says that turning the switch on is a fix the project has.
      Evidence e;
      const CompileSite& site = *project.compiles_opt_in;
      e.text = "the project compiles its model behind a switch (" + at(site) + (site.via.empty() ? "" : ", through " + site.via) +
               ", under `" + site.under + "`): turning it on fuses this too";
      f.evidence.push_back(std::move(e));
    }
  }
  return demoted;
}

}  // namespace mlsem::driver
