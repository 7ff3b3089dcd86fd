#include "python/switches.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "python/syntax.h"

namespace mlsem::python {

bool Literal::truthy() const {
  switch (kind) {
    case None: return false;
    case Bool: return text == "true";
    case Number: return text.find_first_not_of("0._+-") != std::string::npos || text.find_first_of("jJ") != std::string::npos;
    case String: return !text.empty();
    case Member: return true;
  }
  return false;
}

bool Literal::operator==(const Literal& o) const {
  auto number = [](const Literal& l) { return l.kind == Number ? std::stod(l.text) : l.text == "true" ? 1.0 : 0.0; };
  if ((kind == Number || kind == Bool) && (o.kind == Number || o.kind == Bool)) return number(*this) == number(o);
  return kind == o.kind && text == o.text;
}

std::optional<Literal> parse_literal(std::string_view t, bool bare_words) {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  if (t == "None" || t == "null" || t == "~") return Literal{Literal::None, ""};
  if (t == "True" || t == "true") return Literal{Literal::Bool, "true"};
  if (t == "False" || t == "false") return Literal{Literal::Bool, "false"};
  if (t.size() >= 2 && (t.front() == '"' || t.front() == '\'') && t.back() == t.front()) {
    std::string_view inner = t.substr(1, t.size() - 2);
    if (inner.find(t.front()) != std::string_view::npos || inner.find('\\') != std::string_view::npos) return std::nullopt;
    return Literal{Literal::String, std::string(inner)};
  }
  bool number = true, digit = false;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c >= '0' && c <= '9') digit = true;
    else if (!(c == '.' || c == '_' || c == 'e' || c == 'E' || ((c == '-' || c == '+') && (i == 0 || t[i - 1] == 'e' || t[i - 1] == 'E'))))
      number = false;
  }
  if (number && digit) {
    std::string s;
    for (char c : t)
      if (c != '_') s += c;
    try {
      (void)std::stod(s);
      return Literal{Literal::Number, s};
    } catch (...) {
      return std::nullopt;
    }
  }
  // An enum member, `BlockType.llama`: a CamelCase class name (not `F.gelu`, `torch.float16`
  // or a CONSTANT's attribute) and a member name.
  if (!bare_words) {
    size_t dot = t.find('.');
    if (dot == std::string_view::npos || dot < 2 || t.find('.', dot + 1) != std::string_view::npos || dot + 1 == t.size())
      return std::nullopt;
    std::string_view cls = t.substr(0, dot), member = t.substr(dot + 1);
    auto word = [](std::string_view w) {
      for (char c : w)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
      return !w.empty() && !std::isdigit(static_cast<unsigned char>(w[0]));
    };
    bool camel = std::isupper(static_cast<unsigned char>(cls[0])) &&
                 std::any_of(cls.begin(), cls.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
    if (!camel || !word(cls) || !word(member)) return std::nullopt;
    return Literal{Literal::Member, std::string(t)};
  }
  // A bare word, as YAML writes a string (`attention_type: flash`).
  for (char c : t)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return std::nullopt;
  return Literal{Literal::String, std::string(t)};
}

namespace {

struct Reader {
  std::string_view src;
  const Syntax& s = Syntax::get();
  const std::map<std::string, Literal, std::less<>>& params;

  std::optional<Literal> literal(TSNode n) const {
    TSSymbol k = ts_node_symbol(n);
    if (k == s.string || k == s.integer || k == s.float_ || k == s.true_ || k == s.false_ || k == s.none ||
        k == s.unary_operator || k == s.attribute)
      return parse_literal(text_of(n, src));
    return std::nullopt;
  }

  // A configuration key: an attribute read off a name or a chain of attributes
  // (`config.block_type`, `self.cfg.model.use_rope`), not off a call or a subscript; its
  // name into `key`.
  bool config_key(TSNode n, std::string* key = nullptr) const {
    if (ts_node_symbol(n) != s.attribute) return false;
    TSNode attr = field(n, s.f_attribute);
    for (TSNode o = field(n, s.f_object);; o = field(o, s.f_object)) {
      if (ts_node_is_null(o)) return false;
      if (ts_node_symbol(o) == s.identifier) break;
      if (ts_node_symbol(o) != s.attribute) return false;
    }
    if (ts_node_is_null(attr)) return false;
    if (key) *key = text_of(attr, src);
    return true;
  }

  bool param(TSNode n) const {
    return (ts_node_symbol(n) == s.identifier && params.count(text_of(n, src))) || config_key(n);
  }

  // The parameter or key `n` tests, into `c`.
  void name(TSNode n, Condition& c) const {
    if (!config_key(n, &c.param)) c.param = text_of(n, src);
  }

  Condition read(TSNode n) const {
    Condition c;
    TSSymbol k = ts_node_symbol(n);
    if (k == s.parenthesized_expression && ts_node_named_child_count(n) == 1) return read(ts_node_named_child(n, 0));
    if (param(n)) {
      c.kind = Condition::Param;
      name(n, c);
    } else if (k == s.not_operator) {
      c.kind = Condition::Not;
      c.kids.push_back(read(field(n, s.f_argument)));
    } else if (k == s.boolean_operator) {
      std::string_view op = text_of(field(n, s.f_operator), src);
      c.kind = op == "and" ? Condition::And : Condition::Or;
      c.kids.push_back(read(field(n, s.f_left)));
      c.kids.push_back(read(field(n, s.f_right)));
    } else if (k == s.comparison_operator && ts_node_named_child_count(n) == 2) {
      TSNode a = ts_node_named_child(n, 0), b = ts_node_named_child(n, 1);
      if (!param(a)) std::swap(a, b);
      if (!param(a)) return c;
      // The operator: the text between the operands, its spaces collapsed.
      uint32_t lo = std::min(ts_node_end_byte(a), ts_node_end_byte(b)), hi = std::max(ts_node_start_byte(a), ts_node_start_byte(b));
      std::string op;
      for (char ch : src.substr(lo, hi - lo))
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\\') op += ch;
        else if (!op.empty() && op.back() != ' ') op += ' ';
      while (!op.empty() && op.back() == ' ') op.pop_back();
      if (op != "==" && op != "!=" && op != "is" && op != "is not" && op != "in" && op != "not in") return c;
      if (op == "in" || op == "not in") {
        TSSymbol bk = ts_node_symbol(b);
        if (bk != s.tuple && bk != s.list && bk != s.set) return c;
        for (uint32_t i = 0; i < ts_node_named_child_count(b); ++i) {
          std::optional<Literal> l = literal(ts_node_named_child(b, i));
          if (!l) return c;
          c.rhs.push_back(*l);
        }
      } else {
        std::optional<Literal> l = literal(b);
        if (!l) return c;
        c.rhs.push_back(*l);
      }
      if (ts_node_start_byte(a) > ts_node_start_byte(b) && (op == "in" || op == "not in")) return Condition{};
      c.kind = Condition::Compare;
      name(a, c);
      c.op = op;
    }
    return c;
  }
};

// The parameters of `fn` (a function_definition) with literal defaults, into `sw`.
void literal_defaults(TSNode fn, std::string_view src, Switches& sw) {
  const Syntax& s = Syntax::get();
  std::map<std::string, Literal, std::less<>>& out = sw.defaults;
  TSNode params = field(fn, s.f_parameters);
  for (uint32_t i = 0; i < ts_node_named_child_count(params); ++i) {
    TSNode p = ts_node_named_child(params, i);
    TSSymbol k = ts_node_symbol(p);
    if (k != s.default_parameter && k != s.typed_default_parameter) continue;
    TSNode name = field(p, s.f_name), value = field(p, s.f_value);
    if (ts_node_is_null(name) || ts_node_is_null(value)) continue;
    if (std::optional<Literal> l = parse_literal(text_of(value, src)))
      if (ts_node_symbol(value) != s.identifier) {
        out.emplace(std::string(text_of(name, src)), *l);
        sw.default_offsets.emplace(std::string(text_of(name, src)), ts_node_start_byte(name));
      }
  }
}

bool inside(TSNode outer, TSNode n) {
  return !ts_node_is_null(outer) && ts_node_start_byte(outer) <= ts_node_start_byte(n) &&
         ts_node_end_byte(n) <= ts_node_end_byte(outer);
}

}  // namespace

std::vector<Switches> switches_at(std::string_view source, const std::vector<uint32_t>& offsets) {
  std::vector<Switches> out(offsets.size());
  const Syntax& s = Syntax::get();
  std::unique_ptr<TSParser, void (*)(TSParser*)> parser(ts_parser_new(), ts_parser_delete);
  if (!ts_parser_set_language(parser.get(), tree_sitter_python())) return out;
  std::unique_ptr<TSTree, void (*)(TSTree*)> tree(
      ts_parser_parse_string(parser.get(), nullptr, source.data(), static_cast<uint32_t>(source.size())), ts_tree_delete);
  if (!tree) return out;
  TSNode root = ts_tree_root_node(tree.get());
  for (size_t i = 0; i < offsets.size(); ++i) {
    TSNode at = ts_node_descendant_for_byte_range(root, offsets[i], offsets[i] + 1);
    if (ts_node_is_null(at) || ts_node_symbol(at) == s.comment) continue;
    // Up to the function, noting the branches on the way.
    std::vector<std::pair<TSNode, TSNode>> path;  // (branching node, the child holding the place)
    TSNode fn{};
    for (TSNode n = at, child{}; !ts_node_is_null(n); child = n, n = parent_of(n)) {
      TSSymbol k = ts_node_symbol(n);
      if (k == s.function_definition) {
        fn = n;
        break;
      }
      if (k == s.class_definition || k == s.lambda) break;
      if ((k == s.if_statement || k == s.conditional_expression) && !ts_node_is_null(child)) path.push_back({n, child});
    }
    if (ts_node_is_null(fn)) continue;
    Switches& sw = out[i];
    literal_defaults(fn, source, sw);
    sw.function = text_of(field(fn, s.f_name), source);
    for (TSNode n = parent_of(fn); !ts_node_is_null(n); n = parent_of(n))
      if (ts_node_symbol(n) == s.class_definition) {
        sw.function = std::string(text_of(field(n, s.f_name), source)) + "." + sw.function;
        break;
      } else if (ts_node_symbol(n) == s.function_definition) {
        break;
      }
    Reader r{source, s, sw.defaults};
    for (const auto& [branch, child] : path) {
      if (ts_node_symbol(branch) == s.conditional_expression) {
        if (ts_node_named_child_count(branch) != 3) continue;
        TSNode a = ts_node_named_child(branch, 0), c = ts_node_named_child(branch, 1), b = ts_node_named_child(branch, 2);
        if (inside(a, at)) sw.guards.push_back({r.read(c), true});
        else if (inside(b, at)) sw.guards.push_back({r.read(c), false});
        continue;
      }
      // if / elif / else: the earlier conditions are false, the holding clause's true.
      TSNode cond = field(branch, s.f_condition), body = field(branch, s.f_consequence);
      if (inside(cond, at)) continue;
      if (inside(body, at)) {
        sw.guards.push_back({r.read(cond), true});
        continue;
      }
      sw.guards.push_back({r.read(cond), false});
      for (uint32_t j = 0; j < ts_node_named_child_count(branch); ++j) {
        TSNode clause = ts_node_named_child(branch, j);
        if (ts_node_symbol(clause) != s.elif_clause) continue;
        TSNode c = field(clause, s.f_condition);
        if (inside(c, at)) break;
        if (inside(clause, at)) {
          sw.guards.push_back({r.read(c), true});
          break;
        }
        sw.guards.push_back({r.read(c), false});
      }
    }
    // Only the guards that test a parameter count; a place under none has no switches.
    std::erase_if(sw.guards, [](const Guard& g) {
      std::set<std::string, std::less<>> params;
      tested(g.condition, params);
      return params.empty();
    });
    if (sw.guards.empty()) sw = Switches{};
  }
  return out;
}

void tested(const Condition& c, std::set<std::string, std::less<>>& out) {
  if (!c.param.empty()) out.insert(c.param);
  for (const Condition& k : c.kids) tested(k, out);
}

std::optional<bool> evaluate(const Condition& c, const std::map<std::string, std::vector<Literal>, std::less<>>& values) {
  auto each = [&](auto test) -> std::optional<bool> {
    auto it = values.find(c.param);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    bool any_true = false, any_false = false;
    for (const Literal& v : it->second) (test(v) ? any_true : any_false) = true;
    if (any_true && any_false) return std::nullopt;
    return any_true;
  };
  switch (c.kind) {
    case Condition::Param: return each([](const Literal& v) { return v.truthy(); });
    case Condition::Compare:
      return each([&](const Literal& v) {
        bool in = false;
        for (const Literal& r : c.rhs) in = in || v == r;
        bool is = c.op == "is" || c.op == "is not" ? v.kind == c.rhs[0].kind && v == c.rhs[0] : in;
        return c.op == "!=" || c.op == "is not" || c.op == "not in" ? !is : is;
      });
    case Condition::Not: {
      std::optional<bool> k = evaluate(c.kids[0], values);
      return k ? std::optional<bool>(!*k) : std::nullopt;
    }
    case Condition::And:
    case Condition::Or: {
      bool stop = c.kind == Condition::Or;  // the value that decides
      bool unknown = false;
      for (const Condition& k : c.kids) {
        std::optional<bool> v = evaluate(k, values);
        if (v && *v == stop) return stop;
        unknown = unknown || !v;
      }
      return unknown ? std::nullopt : std::optional<bool>(!stop);
    }
    case Condition::Other: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace mlsem::python
