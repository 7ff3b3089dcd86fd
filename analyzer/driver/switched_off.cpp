// The switches step of the cross-file pass: mentions of a class in a branch on a
// parameter that no value the project gives it takes (driver/project.h).
#include <cctype>

#include "driver/project.h"
#include "python/switches.h"

namespace mlsem::driver::project {
namespace {

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
  bool config = false;  // in a configuration file
  bool test = false;    // in a test file
};

// The string members of the enum classes of Python source `text` (`class BlockType(StrEnum):`
// with `llama = "llama"`), as `BlockType.llama` -> "llama", into `out`.
void enum_members(std::string_view text, std::map<std::string, std::string, std::less<>>& out) {
  if (text.find("Enum") == std::string_view::npos) return;
  std::vector<std::string_view> lines = lines_of(text);
  for (const Definition& d : top_definitions(text)) {
    std::string_view header = lines[d.lines.first];
    size_t open = header.find('(');
    if (!header.starts_with("class ") || open == std::string_view::npos ||
        header.find("Enum", open) == std::string_view::npos)
      continue;
    for (size_t i = d.lines.first + 1; i < d.lines.second && i < lines.size(); ++i) {
      std::string_view l = stripped(lines[i]);
      size_t n = 0;
      while (n < l.size() && word_char(l[n])) ++n;
      if (n == 0 || indent(lines[i]) == kBlank) continue;
      std::string_view rest = l.substr(n);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      if (!rest.starts_with("=") || rest.starts_with("==")) continue;
      std::optional<python::Literal> value = python::parse_literal(rest.substr(1));
      if (value && value->kind == python::Literal::String)
        out.emplace(d.name + "." + std::string(l.substr(0, n)), value->text);
    }
  }
}

// A cheap test before parsing: whether the place on `line` (0-based; `starts`, the offsets
// of the lines of `text`) is in a function with a parameter whose default is a literal
// (`name=False`, `name="flash"`), or an attribute (a configuration key), that an `if` of the
// function, from its start to a few lines past the place, names.
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
  for (size_t k = def + 1; k < starts.size() && k <= line + 12; ++k) {
    std::string_view l = line_at(k);
    // An `if` or `elif` token on the line (a statement or a conditional expression).
    size_t p = l.find("if ");
    auto token = [&](size_t at) {
      size_t b = at >= 2 && l.substr(at - 2, 2) == "el" ? at - 2 : at;
      return b == 0 || !word_char(l[b - 1]);
    };
    while (p != std::string_view::npos && !token(p)) p = l.find("if ", p + 1);
    if (p == std::string_view::npos) continue;
    // A parameter, or a configuration key (`config.block_type`: a word after a dot).
    bool named = false;
    std::string_view cond = l.substr(p);
    words(cond, false, [&](std::string_view w, size_t at, size_t) {
      named = named || params.count(w) || (at > 0 && cond[at - 1] == '.' && !std::isdigit(static_cast<unsigned char>(w[0])));
    });
    if (named) return true;
  }
  return false;
}

}  // namespace

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
    Names tested = {};  // the parameters and keys its guards test
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
    std::vector<size_t> lines;
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    Names imports = import_words(text);
    words(text, true, [&](std::string_view w, size_t offset, size_t line) {
      graph.meant(w, file, imports, [&](uint32_t id) {
        if (!wanted[id]) return;
        const Definition* d = enclosing(defs, line);
        std::optional<uint32_t> by = d && !d->decorated ? graph.node(d->name, file) : std::nullopt;
        if (!by || *by == id || !std::binary_search(users.begin(), users.end(), *by)) return;
        offsets.push_back(static_cast<uint32_t>(offset));
        lines.push_back(line);
        edges.push_back({*by, id});
      });
    });
    // Parse only the definitions with a mention that may sit under a switch, each alone.
    std::vector<size_t> starts{0};
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts.push_back(i + 1);
    std::map<const Definition*, std::vector<size_t>> maybe;  // definition -> mentions
    for (size_t i = 0; i < offsets.size(); ++i) {
      if (may_be_switched(text, starts, lines[i])) maybe[enclosing(defs, lines[i])].push_back(i);
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
  for (Mention& m : found)
    if (!unswitched.count({m.by, m.name})) {
      for (const python::Guard& g : m.switches.guards) python::tested(g.condition, m.tested);
      for (const std::string& p : m.tested) given[p];
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
  std::map<std::string, std::string, std::less<>> enums;       // `Enum.member` -> its string value
  bool read = each_file(root, project, [&](const std::string& file, std::string_view text, bool python) {
    std::optional<std::vector<Definition>> defs;
    if (python) enum_members(text, enums);
    bool test = project.tests.count(file) > 0;
    words(text, python, [&](std::string_view w, size_t offset, size_t line) {
      if (auto g = given.find(w); g != given.end()) {
        auto [kind, literal] = value_at(text, offset, w.size(), python);
        if (kind != Given::Read)
          g->second.push_back({file, static_cast<uint32_t>(offset), kind, literal, !python, test});
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
    // An enum member is its string value; one the project's enums do not give is unknown.
    auto resolve = [&](const python::Literal& l) -> std::optional<python::Literal> {
      if (l.kind != python::Literal::Member) return l;
      auto e = enums.find(l.text);
      if (e == enums.end()) return std::nullopt;
      return python::Literal{python::Literal::String, e->second};
    };
    std::map<std::string, std::vector<python::Literal>, std::less<>> values;
    for (const std::string& param : m.tested) {
      auto g = given.find(param);
      if (g == given.end()) continue;
      // A name its guards test is a parameter with a literal default, or else a
      // configuration key (python/switches.h: the only atoms a Condition reads).
      auto d = m.switches.defaults.find(param);
      bool key = d == m.switches.defaults.end();
      // A configuration key's values: what the project's code and configuration give it
      // outside its tests, when one of its configuration files sets it (else its values come
      // from outside the project: a downloaded config, a caller).
      if (key && std::none_of(g->second.begin(), g->second.end(),
                              [](const Given_at& at) { return at.config && at.kind == Given::Value; }))
        continue;
      bool unknown = false;
      std::vector<python::Literal>& v = values[param];
      for (const Given_at& at : g->second) {
        if (auto o = m.switches.default_offsets.find(param);
            !key && at.file == m.file && o != m.switches.default_offsets.end() && o->second == at.offset)
          continue;  // the default itself
        if (key && at.test) continue;
        std::optional<python::Literal> l = at.kind == Given::Unknown ? std::nullopt : resolve(at.literal);
        if (l) v.push_back(*l);
        else unknown = true;
      }
      if (!key && defaulted(param)) {
        if (std::optional<python::Literal> l = resolve(d->second)) v.push_back(*l);
        else unknown = true;
      }
      if (unknown || v.empty()) values.erase(param);
    }
    std::string why;
    for (const python::Guard& guard : m.switches.guards) {
      python::Guard g = guard;
      if (!python::resolve_members(g.condition, resolve)) continue;
      std::optional<bool> v = python::evaluate(g.condition, values);
      if (!v || *v == g.taken) continue;
      Names in_guard;
      python::tested(g.condition, in_guard);
      std::string params, given_values;
      for (const auto& [p, list] : values) {
        if (!in_guard.count(p)) continue;
        params += (params.empty() ? "`" : ", `") + p + "`";
        std::set<std::string> seen;
        for (const python::Literal& l : list)
          if (seen.size() < 4 && seen.insert(l.text).second)
            given_values += (given_values.empty() ? "" : ", ") + (l.kind == python::Literal::None ? "None" : l.text);
      }
      why = "`" + graph.names[m.name] + "` is built in `" + m.switches.function + "` only under a condition on " +
            params + " that no value the project gives " + (params.find(',') == std::string::npos ? "it" : "them") +
            " meets (it gives " + given_values + ")";
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

}  // namespace mlsem::driver::project
