// The fallback step of the cross-file pass (driver/project.h): how a project uses a
// top-level definition. A use in a branch whose sibling names a fused implementation
// (`if args.rmsnorm_fusion: norm = MixedFusedRMSNorm else: norm = RMSNorm`, an
// `except ImportError:` beside a `try:` importing flash-attention) is the fallback of a
// faster path the project already has; a subclass that overrides the method does not run
// it.
#include "driver/project.h"
#include "engine/engine.h"
#include "python/context.h"

namespace mlsem::driver::project {
namespace {

// A name that says it is a fused or vendor kernel path.
bool fused_word(std::string_view w) {
  std::string l = lower_ascii(w);
  for (std::string_view part : {"fused", "liger", "triton", "xformers", "apex", "transformer_engine"})
    if (l.find(part) != std::string::npos) return true;
  return l.starts_with("flash");
}

// The first fused name in `text` other than `own`, one that says "fused" first (the class
// an `apex` import brings), or empty.
std::string fused_in(std::string_view text, std::string_view own) {
  std::string found, fused;
  words(text, true, [&](std::string_view w, size_t, size_t) {
    if (w == own || !fused_word(w)) return;
    if (found.empty()) found = std::string(w);
    if (fused.empty() && (w.find("fused") != std::string_view::npos || w.find("Fused") != std::string_view::npos))
      fused = std::string(w);
  });
  return fused.empty() ? found : fused;
}

bool branch_header(std::string_view s) {
  return keyword(s, "if") || keyword(s, "elif") || keyword(s, "else") || keyword(s, "try") || keyword(s, "except") ||
         keyword(s, "finally");
}

}  // namespace

std::optional<Beside> beside_fused(const std::vector<std::string_view>& lines, size_t at, std::string_view name) {
  std::string_view here = lines[at];
  // `Fused if fuse else Plain`: the other value, not the condition (`X() if fused else gelu`
  // names no fused implementation).
  if (size_t i = here.find(" if "), e = here.find(" else ", i == std::string_view::npos ? 0 : i);
      i != std::string_view::npos && e != std::string_view::npos) {
    std::string_view first = here.substr(0, i), second = here.substr(e + 6);
    bool in_second = !word_offsets(second, name).empty();  // `name`, a whole word, is the else value
    std::string f = fused_in(in_second ? first : second, name);
    if (!f.empty()) return Beside{at, f};
  }
  size_t level = indent(here);
  if (level == kBlank) return std::nullopt;
  for (size_t j = at; j-- > 0;) {
    size_t i = indent(lines[j]);
    if (i == kBlank || i >= level || closes_bracket(lines[j])) continue;
    level = i;
    std::string_view s = stripped(lines[j]);
    if (keyword(s, "def") || keyword(s, "async") || keyword(s, "class")) return std::nullopt;
    if (!branch_header(s)) continue;
    // The statement's branches: headers at this indentation, from its `if`/`try` down.
    size_t first = j;
    while (!keyword(stripped(lines[first]), "if") && !keyword(stripped(lines[first]), "try")) {
      size_t k = first;
      while (k-- > 0 && (indent(lines[k]) == kBlank || indent(lines[k]) > level)) {}
      if (k == kBlank || indent(lines[k]) != level || !branch_header(stripped(lines[k]))) break;
      first = k;
    }
    for (size_t b = first; b < lines.size();) {
      size_t e = b + 1;
      while (e < lines.size() && (indent(lines[e]) == kBlank || indent(lines[e]) > level)) ++e;
      bool own = b <= at && at < e;
      if (!own) {
        std::string body;
        for (size_t k = b + 1; k < e; ++k) body.append(lines[k]).push_back('\n');
        std::string f = fused_in(body, name);
        if (!f.empty()) return Beside{b, f};
      }
      if (e >= lines.size()) break;
      std::string_view next = stripped(lines[e]);
      if (indent(lines[e]) != level || keyword(next, "if") || keyword(next, "try") || !branch_header(next)) break;
      b = e;
    }
  }
  return std::nullopt;
}

bool overrides(const std::vector<std::string_view>& lines, size_t header, std::string_view method) {
  size_t level = indent(lines[header]);
  bool defines = false, calls_super = false;
  std::string def = "def " + std::string(method) + "(", call = "." + std::string(method) + "(";
  for (size_t k = header + 1; k < lines.size(); ++k) {
    size_t i = indent(lines[k]);
    if (i == kBlank) continue;
    if (i <= level) break;
    std::string_view s = stripped(lines[k]);
    if (s.starts_with(def) || s.starts_with("async " + def)) defines = true;
    if (s.find("super(") != std::string_view::npos && s.find(call) != std::string_view::npos) calls_super = true;
  }
  return defines && !calls_super;
}

namespace {

// The lines of `lines` that are imports or `__all__` entries (a re-export is no use).
std::vector<char> exports(const std::vector<std::string_view>& lines) {
  std::vector<char> out(lines.size(), 0);
  char open = 0;  // the closing bracket of an import or __all__ spanning lines
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view s = stripped(lines[i]);
    if (open) {
      out[i] = 1;
      if (s.find(open) != std::string_view::npos) open = 0;
      continue;
    }
    bool import = keyword(s, "from") || keyword(s, "import");
    bool all = s.starts_with("__all__");
    if (!import && !all) continue;
    out[i] = 1;
    char o = import ? '(' : '[', c = import ? ')' : ']';
    if (s.find(o) != std::string_view::npos && s.find(c) == std::string_view::npos) open = c;
  }
  return out;
}

// A finding's top-level definition and the method it is in: `RMSNorm.forward` gives
// (RMSNorm, forward), `rope` (rope, "").
std::pair<std::string, std::string> split(const std::string& fn) {
  size_t dot = fn.find('.');
  std::string method = dot == std::string::npos ? "" : fn.substr(dot + 1, fn.find('.', dot + 1) - dot - 1);
  return {fn.substr(0, dot), method};
}

}  // namespace

FallbackUses::FallbackUses(const std::vector<Finding>& findings, const std::map<std::string, fs::path>& root_of,
                           const std::set<std::string, std::less<>>& rules)
    : rules_(rules), root_of_(root_of) {
  for (const Finding& f : findings)
    if (candidate(f)) {
      auto [name, method] = split(f.function);
      wanted_[root_of.at(f.path)][name].insert(method);
    }
}

bool FallbackUses::candidate(const Finding& f) const {
  return f.context.empty() && !f.function.empty() && f.function != "<module>" && rules_.count(f.rule) &&
         root_of_.count(f.path);
}

void FallbackUses::scan(const fs::path& root, const std::string& file, std::string_view text, bool python) {
  auto w = wanted_.find(root);
  if (w == wanted_.end()) return;
  const auto& names = w->second;
  auto each_method = [&](std::map<std::string, std::set<std::string>, std::less<>>::const_iterator n, auto f) {
    for (const std::string& m : n->second) f(uses_[{root, n->first + "#" + m}], m);
  };
  if (!python) {  // a configuration file naming it builds it
    words(text, false, [&](std::string_view word, size_t, size_t) {
      if (auto n = names.find(word); n != names.end()) each_method(n, [](Uses& u, const std::string&) { u.plain = true; });
    });
    return;
  }
  bool any = false;
  for (const auto& [name, methods] : names) any = any || contains(text, name);
  if (!any) return;
  bool test = python::file_kind(file).has_value();
  std::vector<std::string_view> lines = lines_of(text);
  std::vector<char> skip = exports(lines);
  std::vector<Definition> defs = top_definitions(text);
  for (const Definition& d : defs)  // a registry builds a decorated definition by name
    if (auto n = names.find(d.name); n != names.end() && d.decorated)
      each_method(n, [](Uses& u, const std::string&) { u.plain = true; });
  words(text, true, [&](std::string_view word, size_t offset, size_t line) {
    auto n = names.find(word);
    if (n == names.end() || skip[line] || test) return;
    const Definition* d = enclosing(defs, line);
    if (d && d->name == word) return;  // its own definition (or another of that name)
    std::string_view s = stripped(lines[line]);
    size_t column = offset - static_cast<size_t>(s.data() - text.data());  // of the word, in `s`
    bool base = keyword(s, "class") && s.find('(') < column;
    std::optional<Beside> b = base ? std::nullopt : beside_fused(lines, line, word);
    each_method(n, [&](Uses& u, const std::string& m) {
      if (base && !m.empty() && overrides(lines, line, m)) {
        if (!u.subclass)
          u.subclass = "`" + std::string(s.substr(6, s.find('(') - 6)) + "` (" + where_in(root, file, line) +
                       "), which overrides `" + m + "`";
      } else if (b) {
        if (!u.beside)
          u.beside = where_in(root, file, line) + ", in a branch beside `" + b->fused + "` (line " +
                     std::to_string(b->line + 1) + ")";
      } else {
        u.plain = true;
      }
    });
  });
}

size_t FallbackUses::demote(std::vector<Finding>& findings, const std::set<fs::path>& read, bool unused) const {
  size_t demoted = 0;
  for (Finding& f : findings) {
    if (!candidate(f) || !read.count(root_of_.at(f.path))) continue;
    auto [name, method] = split(f.function);
    auto u = uses_.find({root_of_.at(f.path), name + "#" + method});
    if (u == uses_.end() || u->second.plain) continue;
    if (u->second.beside) {
      ::mlsem::demote(f, "fallback",
                      "fallback: every use of `" + name + "` in the project sits in a branch beside a fused "
                      "implementation (" + *u->second.beside + "): the project's switch already selects the faster path");
    } else if (u->second.subclass && unused) {
      ::mlsem::demote(f, "unused",
                      "unused: only " + *u->second.subclass + " without calling it, names `" + name + "`: `" +
                          f.function + "` never runs");
    } else {
      continue;
    }
    ++demoted;
  }
  return demoted;
}

}  // namespace mlsem::driver::project
