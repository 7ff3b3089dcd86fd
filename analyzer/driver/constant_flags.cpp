// The constant-flags step of the cross-file pass: a finding in a branch on an attribute
// (`if self.stratified:`) that the project only ever sets to literals, none of which takes
// the branch (`self.stratified = False` in `__init__`, and nothing sets it again).
#include <algorithm>
#include <cctype>

#include "driver/project.h"
#include "engine/engine.h"
#include "python/switches.h"

namespace mlsem::driver::project {
namespace {

std::string_view rest_of_line(std::string_view text, size_t from) {
  size_t e = text.find('\n', from);
  return text.substr(from, (e == std::string_view::npos ? text.size() : e) - from);
}

size_t indent_of(std::string_view line) { return std::min(line.find_first_not_of(" \t"), line.size()); }

std::string_view trimmed(std::string_view t) {
  size_t b = t.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return t.substr(b, t.find_last_not_of(" \t\r\n") - b + 1);
}

bool identifier(std::string_view t) {
  if (t.empty() || std::isdigit(static_cast<unsigned char>(t[0]))) return false;
  for (char c : t)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// The comma-separated items between the bracket at `open` and its match, at depth 0
// (quotes respected); nullopt when the bracket is not closed.
std::optional<std::vector<std::string>> bracket_items(std::string_view text, size_t open) {
  std::vector<std::string> items;
  int depth = 0;
  char quote = 0;
  size_t from = open + 1;
  for (size_t i = open; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) {
        if (std::string_view last = trimmed(text.substr(from, i - from)); !last.empty()) items.emplace_back(last);
        return items;
      }
    } else if (c == ',' && depth == 1) {
      items.emplace_back(trimmed(text.substr(from, i - from)));
      from = i + 1;
    }
  }
  return std::nullopt;
}

// A keyword argument's name (`manual=True`, not `a == b` nor `make(dim=8)`): empty for a
// positional argument.
std::string_view keyword_name(std::string_view item) {
  size_t e = 0;
  while (e < item.size() && (std::isalnum(static_cast<unsigned char>(item[e])) || item[e] == '_')) ++e;
  std::string_view rest = trimmed(item.substr(e));
  if (e == 0 || rest.empty() || rest[0] != '=' || rest.starts_with("==")) return {};
  return item.substr(0, e);
}

// The callee of the innermost call or definition whose parentheses hold `at` (`RF(model,
// ln=True)`: "RF"; `def __init__(self, ln=True)`: "def __init__"), or empty.
std::string_view enclosing_callee(std::string_view text, size_t at) {
  int depth = 0;
  size_t floor = at > 4000 ? at - 4000 : 0;
  for (size_t i = at; i-- > floor;) {
    char c = text[i];
    if (c == ')' || c == ']' || c == '}') ++depth;
    else if (c == '[' || c == '{') {
      if (depth-- == 0) return {};
    } else if (c == '(') {
      if (depth-- > 0) continue;
      size_t e = i;
      while (e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t')) --e;
      size_t b = e;
      while (b > 0 && (std::isalnum(static_cast<unsigned char>(text[b - 1])) || text[b - 1] == '_')) --b;
      std::string_view name = text.substr(b, e - b);
      size_t d = b;
      while (d > 0 && (text[d - 1] == ' ' || text[d - 1] == '\t')) --d;
      if (d >= 3 && text.substr(d - 3, 3) == "def") return text.substr(d - 3, e - (d - 3));
      return name;
    }
  }
  return {};
}

// A literal as Python spells it.
std::string spelled(const python::Literal& l) {
  switch (l.kind) {
    case python::Literal::None: return "None";
    case python::Literal::Bool: return l.truthy() ? "True" : "False";
    case python::Literal::String: return "\"" + l.text + "\"";
    default: return l.text;
  }
}

}  // namespace

ConstantFlags::ConstantFlags(std::vector<Finding>& findings, const std::map<std::string, fs::path>& root_of,
                             const std::map<fs::path, Project>& projects) {
  // The candidates by file: each file's text (as the pass read it), lines and definitions once.
  std::map<std::string, std::vector<Finding*>> by_file;
  for (Finding& f : findings)
    if (f.context.empty() && f.path.ends_with(".py") && f.function.find('.') != std::string::npos && f.range.begin.line > 0 &&
        root_of.count(f.path))
      by_file[f.path].push_back(&f);
  for (const auto& [path, in_file] : by_file) {
    const fs::path& root = root_of.at(path);
    auto project = projects.find(root);
    if (project == projects.end()) continue;
    auto read = project->second.texts.find(canonical(path));
    if (read == project->second.texts.end()) continue;
    std::string_view text = read->second;
    std::vector<std::string_view> lines = lines_of(text);
    std::vector<Definition> defs = top_definitions(text);
    for (Finding* f : in_file) {
      size_t line = f->range.begin.line - 1;
      const Definition* d = line < lines.size() ? enclosing(defs, line) : nullptr;
      if (!d) continue;
      // A cheap test first: an `if` on `self.` above it in its class.
      bool maybe = false;
      for (size_t i = d->lines.first; i <= line && !maybe; ++i) {
        size_t p = lines[i].find("if ");
        maybe = p != std::string_view::npos && lines[i].find("self.", p) != std::string_view::npos;
      }
      if (!maybe) continue;
      size_t begin = static_cast<size_t>(lines[d->lines.first].data() - text.data());
      size_t end = d->lines.second < lines.size() ? static_cast<size_t>(lines[d->lines.second].data() - text.data()) : text.size();
      std::string_view l = lines[line];
      size_t at = static_cast<size_t>(l.data() - text.data()) + std::min(l.find_first_not_of(" \t"), l.size());
      std::vector<python::Switches> sw = python::switches_at(text.substr(begin, end - begin), {static_cast<uint32_t>(at - begin)});
      if (sw.empty() || sw[0].guards.empty()) continue;
      Names keys;
      for (const python::Guard& g : sw[0].guards) python::tested(g.condition, keys);
      bool any = false;
      for (const std::string& k : keys)
        if (!sw[0].defaults.count(k) && k != "training") keys_[root].insert(k), any = true;
      if (any) {
        candidates_.push_back({f, root, sw[0].guards, sw[0].function});
        classes_[root][f->function.substr(0, f->function.find('.'))];
      }
    }
  }
}

void ConstantFlags::scan(const fs::path& root, const std::string& file, std::string_view text, bool python) {
  auto keys = keys_.find(root);
  if (keys == keys_.end()) return;
  std::map<std::string, Flag, std::less<>>& flags = flags_[root];
  std::map<std::string, ClassUse, std::less<>>& classes = classes_[root];
  words(text, python, [&](std::string_view w, size_t at, size_t line) {
    if (auto cls = classes.find(w); cls != classes.end()) {
      // `RF(model, True)`: a construction, its arguments; `class RF` and imports: neither;
      // any other mention (a subclass, a factory passed on, a config): values unknown.
      size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
      line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
      std::string_view before = trimmed(text.substr(line_start, at - line_start));
      size_t next = text.find_first_not_of(" \t", at + w.size());
      if (python && (before == "class" || before.starts_with("from ") || before.starts_with("import ") ||
                     before == "import"))
        ;
      else if (python && next != std::string_view::npos && text[next] == '(' && !before.ends_with("def")) {
        if (auto items = bracket_items(text, next)) cls->second.calls.push_back(std::move(*items));
        else cls->second.other = true;
      } else {
        cls->second.other = true;
      }
    }
    auto k = keys->second.find(w);
    if (k == keys->second.end()) return;
    Flag& flag = flags[*k];
    if (python && (at == 0 || text[at - 1] != '.')) {
      // The bare name: the parameter `self.ln = ln` reads (its assignment was seen first), a
      // default in a signature (`def __init__(self, ln=True)`), or a keyword argument of a
      // candidate's class (`RF(model, ln=False)`: read where its constructions are).
      if (read_parameters_.erase(at_key(file, at))) return;
      size_t n = text.find_first_not_of(" \t", at + w.size());
      bool keyword = n != std::string_view::npos && text[n] == '=' && (n + 1 >= text.size() || text[n + 1] != '=');
      if (keyword) {
        std::string_view callee = enclosing_callee(text, at);
        if (callee.starts_with("def ")) return;
        if (classes.count(callee)) return void(flag.class_keywords.insert(std::string(callee)));
      }
      return void(flag.other = true);
    }
    // Only `.name = literal` sets it, and only attribute reads leave it alone.
    if (!python || at == 0 || text[at - 1] != '.') return void(flag.other = true);
    std::string_view after = rest_of_line(text, at + w.size());
    size_t i = after.find_first_not_of(" \t");
    if (i == std::string_view::npos) return;  // at the line's end: a read
    char c = after[i];
    char d = i + 1 < after.size() ? after[i + 1] : '\0';
    bool compare = (c == '=' || c == '!' || c == '<' || c == '>') && d == '=';
    if (c == '=' && !compare) {
      std::string_view rhs = after.substr(i + 1);
      if (size_t hash = rhs.find('#'); hash != std::string_view::npos) rhs = rhs.substr(0, hash);
      std::optional<python::Literal> l = python::parse_literal(rhs);
      if (!l && python && identifier(trimmed(rhs))) {
        // `self.ln = ln` in `__init__`: what the constructor's parameter is given.
        if (std::optional<Parameter> p = parameter_of(text, at, trimmed(rhs))) {
          if (flag.values.empty() && flag.parameters.empty()) flag.first = where_in(root, file, line);
          // Another class than a candidate's: files read before this one were not searched
          // for its constructions, so its values stay unknown.
          if (auto [use, fresh] = classes.try_emplace(p->cls); fresh) use->second.other = true;
          flag.parameters.push_back(std::move(*p));
          std::string_view name = trimmed(rhs);
          read_parameters_.insert(at_key(file, static_cast<size_t>(name.data() - text.data())));
          return;
        }
      }
      if (!l || l->kind == python::Literal::Member) return void(flag.other = true);
      if (flag.values.empty() && flag.parameters.empty()) flag.first = where_in(root, file, line);
      flag.values.push_back(*l);
      return;
    }
    // A read: the end of a condition, a bracket, a comparison, a word (`and`, `else`).
    if (compare || c == ':' || c == ')' || c == ']' || c == '}' || c == ',' || ((c == '<' || c == '>') && d != c) ||
        std::isalpha(static_cast<unsigned char>(c)))
      return;
    flag.other = true;  // `+=`, `|=`, `.name.x = ...`, `.name[...] = ...`: changed some other way
  });
}

std::optional<ConstantFlags::Parameter> ConstantFlags::parameter_of(std::string_view text, size_t at,
                                                                   std::string_view name) const {
  // The assignment's line, then up to the `def` holding it, then up to its `class`.
  std::vector<std::string_view> lines = lines_of(text);
  size_t li = 0;
  while (li + 1 < lines.size() && static_cast<size_t>(lines[li + 1].data() - text.data()) <= at) ++li;
  size_t indent = indent_of(lines[li]);
  std::string_view def_line;
  size_t def_at = 0;
  for (size_t i = li; i-- > 0;) {
    std::string_view l = lines[i];
    if (trimmed(l).empty() || trimmed(l).starts_with("#") || indent_of(l) >= indent) continue;
    std::string_view t = trimmed(l);
    if (def_line.empty()) {
      if (!t.starts_with("def ")) return std::nullopt;  // a loop or an if: not where __init__ binds it
      if (!t.starts_with("def __init__(")) return std::nullopt;
      def_line = l, def_at = static_cast<size_t>(l.data() - text.data()), indent = indent_of(l);
    } else {
      if (!t.starts_with("class ")) return std::nullopt;
      std::string_view rest = t.substr(6);
      size_t e = 0;
      while (e < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[e])) || rest[e] == '_')) ++e;
      std::optional<std::vector<std::string>> params = bracket_items(text, text.find('(', def_at));
      if (!params || params->empty()) return std::nullopt;
      Parameter p{std::string(rest.substr(0, e)), std::string(name), -1, std::nullopt};
      int position = 0;
      bool keyword_only = false;
      for (size_t j = 1; j < params->size(); ++j) {  // after self
        std::string_view item = (*params)[j];
        if (item.starts_with("**")) break;
        if (item.starts_with("*")) {
          keyword_only = true;
          continue;
        }
        size_t eq = item.find('=');
        std::string_view param = trimmed(item.substr(0, std::min(item.find(':'), eq)));
        if (param == name) {
          p.position = keyword_only ? -1 : position;
          if (eq != std::string_view::npos) {
            p.default_value = python::parse_literal(trimmed(item.substr(eq + 1)));
            if (!p.default_value) return std::nullopt;
          }
          return p;
        }
        ++position;
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::vector<python::Literal>> ConstantFlags::given(const fs::path& root, const Parameter& p) const {
  auto classes = classes_.find(root);
  if (classes == classes_.end()) return std::nullopt;
  auto use = classes->second.find(p.cls);
  if (use == classes->second.end() || use->second.other || use->second.calls.empty()) return std::nullopt;
  std::vector<python::Literal> values;
  for (const std::vector<std::string>& args : use->second.calls) {
    std::optional<std::string_view> value;
    std::vector<std::string_view> positional;
    for (std::string_view a : args) {
      if (a.starts_with("*")) return std::nullopt;  // *args, **kwargs: not readable
      std::string_view k = keyword_name(a);
      if (k.empty()) positional.push_back(a);
      else if (k == p.name) value = trimmed(a.substr(a.find('=') + 1));
    }
    if (!value && p.position >= 0 && static_cast<size_t>(p.position) < positional.size()) value = positional[p.position];
    if (value) {
      std::optional<python::Literal> l = python::parse_literal(*value);
      if (!l || l->kind == python::Literal::Member) return std::nullopt;
      values.push_back(*l);
    } else if (p.default_value) {
      values.push_back(*p.default_value);
    } else {
      return std::nullopt;
    }
  }
  return values;
}

size_t ConstantFlags::demote(const std::set<fs::path>& read) {
  size_t demoted = 0;
  // Per project, the attributes the candidates test that are such constant flags, with their values.
  std::map<fs::path, std::map<std::string, std::vector<python::Literal>, std::less<>>> constant;
  for (const auto& [root, flags] : flags_)
    for (const auto& [k, flag] : flags) {
      if (flag.other) continue;
      std::vector<python::Literal> values = flag.values;
      // A keyword argument of a class's construction sets the attribute only through that
      // class's parameter, whose values given() reads; otherwise it may set it some other way.
      bool known = std::all_of(flag.class_keywords.begin(), flag.class_keywords.end(), [&](const std::string& cls) {
        return std::any_of(flag.parameters.begin(), flag.parameters.end(), [&](const Parameter& p) { return p.cls == cls; });
      });
      for (const Parameter& p : flag.parameters) {
        std::optional<std::vector<python::Literal>> g = given(root, p);
        if (!g) known = false;
        else values.insert(values.end(), g->begin(), g->end());
      }
      if (known && !values.empty()) constant[root][k] = std::move(values);
    }
  for (Candidate& c : candidates_) {
    if (!c.finding->context.empty() || !read.count(c.root)) continue;
    const auto& values = constant[c.root];
    if (values.empty()) continue;
    for (const python::Guard& g : c.guards) {
      std::optional<bool> v = python::evaluate(g.condition, values);
      if (!v || *v == g.taken) continue;
      Names in_guard;
      python::tested(g.condition, in_guard);
      std::string said;
      for (const std::string& k : in_guard) {
        auto it = values.find(k);
        if (it == values.end()) continue;
        std::set<std::string> seen;
        std::string given;
        for (const python::Literal& l : it->second)
          if (seen.insert(spelled(l)).second) given += (given.empty() ? "" : ", ") + spelled(l);
        const Flag& flag = flags_[c.root][k];
        said += (said.empty() ? "`." : ", `.") + k + "`, which the project only ever sets to " + given + " (" + flag.first;
        if (!flag.parameters.empty())
          said += ", from the parameter `" + flag.parameters[0].name + "` of `" + flag.parameters[0].cls +
                  "` as every construction gives it";
        said += ")";
      }
      ::mlsem::demote(*c.finding, "unused",
                      "unused under the project's own settings: `" + c.function +
                          "` runs this only under a condition on " + said + ": no value it sets meets it");
      ++demoted;
      break;
    }
  }
  return demoted;
}

}  // namespace mlsem::driver::project
