#include "engine/pattern.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace mlsem {
namespace {

// Recursive-descent parser for the match language. Errors throw ParseError
// internally and are returned as values at the API boundary.
class Parser {
 public:
  Parser(std::string_view text, const OpClasses* classes) : s_(text), classes_(classes) {}

  PatternTerm parse_whole_pattern() {
    PatternTerm t = pattern();
    expect_end();
    return t;
  }

  std::vector<Predicate> parse_whole_predicates() {
    std::vector<Predicate> out;
    skip_ws();
    if (at_end()) return out;
    out = predicates();
    expect_end();
    return out;
  }

  RegionSpec parse_whole_region() {
    RegionSpec r;
    r.kind = ident("a region kind");
    if (eat('[')) {
      r.preds = predicates();
      require(']');
    }
    expect_end();
    return r;
  }

 private:
  std::string_view s_;
  const OpClasses* classes_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& msg) const { throw ParseError{i_, msg}; }
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool at_end() {
    skip_ws();
    return i_ >= s_.size();
  }
  char peek() {
    skip_ws();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  bool eat(char c) {
    if (peek() == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool eat(std::string_view word) {
    skip_ws();
    if (s_.substr(i_, word.size()) == word) {
      i_ += word.size();
      return true;
    }
    return false;
  }
  void require(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  void expect_end() {
    if (!at_end()) fail("unexpected text '" + std::string(s_.substr(i_, 12)) + "'");
  }
  static bool ident_char(char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
           (!first && (std::isdigit(static_cast<unsigned char>(c)) || c == '.'));
  }
  std::string ident(const char* what) {
    skip_ws();
    size_t b = i_;
    if (i_ < s_.size() && ident_char(s_[i_], true)) {
      while (i_ < s_.size() && ident_char(s_[i_], false)) ++i_;
    }
    if (b == i_) fail(std::string("expected ") + what);
    return std::string(s_.substr(b, i_ - b));
  }

  PatternTerm pattern() {
    PatternTerm first = term();
    if (peek() != '|') return first;
    PatternTerm alt;
    alt.kind = PatternTerm::Kind::kAlt;
    alt.spelled = "alternatives";
    alt.children.push_back(std::move(first));
    while (eat('|')) alt.children.push_back(term());
    return alt;
  }

  PatternTerm term() {
    std::string label;
    if (eat('@')) {
      label = ident("a label after '@'");
      require(':');
    }
    PatternTerm t = atom();
    if (!label.empty() && t.repeated) fail("a repeated step 'op*' takes no label (find its nodes with evidence 'op')");
    t.label = label;
    return t;
  }

  PatternTerm atom() {
    PatternTerm t;
    char c = peek();
    if (c == '(') {
      ++i_;
      t = pattern();
      require(')');
      return t;
    }
    if (c == '$') {
      ++i_;
      t.kind = PatternTerm::Kind::kVar;
      t.var = ident("a variable name after '$'");
      t.spelled = "$" + t.var;
      return t;
    }
    if (c == '_' && (i_ + 1 >= s_.size() || !ident_char(s_[i_ + 1], false))) {
      ++i_;
      t.kind = PatternTerm::Kind::kAny;
      t.spelled = "_";
      if (eat('[')) {
        t.preds = predicates();
        require(']');
      }
      return t;
    }
    t.kind = PatternTerm::Kind::kOp;
    if (eat('%')) {
      std::string cls = ident("a class name after '%'");
      auto it = classes_ ? classes_->find(cls) : OpClasses::const_iterator{};
      if (!classes_ || it == classes_->end()) fail("unknown op class '%" + cls + "' (define it under [classes])");
      t.ops = it->second;
      t.spelled = "%" + cls;
    } else {
      size_t at = i_;
      std::string name = ident("an op name, '$var', '_' or '('");
      if (name == "deep") {
        if (!eat('(')) {
          i_ = at;
          fail("'deep' takes a pattern: deep(pattern)");
        }
        t.kind = PatternTerm::Kind::kDeep;
        t.spelled = "deep";
        t.children.push_back(pattern());
        require(')');
        return t;
      }
      t.ops = {name};
      t.spelled = name;
    }
    t.optional = eat('?');
    t.repeated = !t.optional && eat('*');
    if (eat('{')) {
      t.min_chain = static_cast<int>(integer());
      require(',');
      require('}');
      if (t.min_chain < 1) fail("a chain needs at least one op");
    }
    if (eat('[')) {
      t.preds = predicates();
      require(']');
    }
    if (eat('(')) {
      t.has_args = true;
      if (!eat(')')) {
        do {
          if (eat("...")) {
            t.rest = true;
            break;
          }
          t.args.push_back(pattern());
        } while (eat(','));
        require(')');
      }
    }
    if (t.min_chain && (t.args.size() > 1 || t.rest))
      fail("a chain '{n,}(x)' takes one argument: a pattern that some operand of the chain must match");
    if ((t.optional || t.repeated) && t.args.empty())
      fail(std::string(t.optional ? "an optional step 'op?(x, ...)'" : "a repeated step 'op*(x, ...)'") +
           " needs an argument to stand in when it is absent");
    return t;
  }

  int64_t integer() {
    skip_ws();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), v);
    if (ec != std::errc()) fail("expected an integer");
    i_ = static_cast<size_t>(p - s_.data());
    return v;
  }

  std::vector<Predicate> predicates() {
    std::vector<Predicate> out;
    do out.push_back(predicate());
    while (eat(','));
    return out;
  }

  Predicate predicate() {
    Predicate p;
    if (eat('!')) {
      p.kind = Predicate::Kind::kFalsy;
      p.key = ident("an attribute name after '!'");
      return p;
    }
    p.key = ident("an attribute name");
    skip_ws();
    static const std::pair<std::string_view, Predicate::Cmp> kOps[] = {
        {"==", Predicate::Cmp::kEq}, {"!=", Predicate::Cmp::kNe}, {"<=", Predicate::Cmp::kLe},
        {">=", Predicate::Cmp::kGe}, {"<", Predicate::Cmp::kLt},  {">", Predicate::Cmp::kGt},
        {"=", Predicate::Cmp::kEq},  {"~", Predicate::Cmp::kContains}};
    for (auto [text, cmp] : kOps) {
      if (eat(text)) {
        p.kind = Predicate::Kind::kCompare;
        p.cmp = cmp;
        p.values.push_back(literal());
        return p;
      }
    }
    size_t save = i_;
    if (eat("in") && peek() == '[') {
      require('[');
      p.kind = Predicate::Kind::kIn;
      do p.values.push_back(literal());
      while (eat(','));
      require(']');
      return p;
    }
    i_ = save;
    p.kind = Predicate::Kind::kTruthy;
    return p;
  }

  Literal literal() {
    char c = peek();
    if (c == '\'' || c == '"') {
      ++i_;
      size_t b = i_;
      while (i_ < s_.size() && s_[i_] != c) ++i_;
      if (i_ >= s_.size()) fail("unterminated string");
      std::string v(s_.substr(b, i_ - b));
      ++i_;
      return v;
    }
    if (eat("true")) return true;
    if (eat("false")) return false;
    bool neg = false;
    size_t b = i_;
    if (eat('-')) neg = true;
    if (eat("inf")) return neg ? -INFINITY : INFINITY;
    i_ = b;
    size_t e = i_;
    bool real = false;
    while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) || s_[e] == '-' || s_[e] == '+' ||
                             s_[e] == '.' || s_[e] == 'e' || s_[e] == 'E')) {
      real |= s_[e] == '.' || s_[e] == 'e' || s_[e] == 'E';
      ++e;
    }
    if (e == i_) fail("expected a literal (number, 'string', true or false)");
    std::string num(s_.substr(i_, e - i_));
    i_ = e;
    try {
      if (real) return std::stod(num);
      return static_cast<int64_t>(std::stoll(num));
    } catch (...) {
      fail("bad number '" + num + "'");
    }
  }
};

template <class T, class F>
std::variant<T, ParseError> guarded(F&& f) {
  try {
    return f();
  } catch (const ParseError& e) {
    return e;
  }
}

std::optional<double> as_number(const ir::Attr& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&a)) return *d;
  if (auto* b = std::get_if<bool>(&a)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

// Compares an attribute with a literal: numbers by value, strings by text.
// Returns nullopt when they are of incomparable kinds.
std::optional<int> compare(const ir::Attr& a, const Literal& l) {
  if (auto* s = std::get_if<std::string>(&a)) {
    auto* ls = std::get_if<std::string>(&l);
    if (!ls) return std::nullopt;
    return s->compare(*ls) < 0 ? -1 : (*s == *ls ? 0 : 1);
  }
  auto x = as_number(a);
  std::optional<double> y;
  if (auto* i = std::get_if<int64_t>(&l)) y = static_cast<double>(*i);
  else if (auto* d = std::get_if<double>(&l)) y = *d;
  else if (auto* b = std::get_if<bool>(&l)) y = *b ? 1.0 : 0.0;
  if (!x || !y) return std::nullopt;
  // Constants come from source text: compare reals with a relative tolerance.
  double tol = 1e-9 * std::max({1.0, std::fabs(*x), std::fabs(*y)});
  if (std::isinf(*x) || std::isinf(*y)) tol = 0;
  if (std::fabs(*x - *y) <= tol || *x == *y) return 0;
  return *x < *y ? -1 : 1;
}

bool truthy(const ir::Attr& a) {
  if (auto* b = std::get_if<bool>(&a)) return *b;
  if (auto* i = std::get_if<int64_t>(&a)) return *i != 0;
  if (auto* d = std::get_if<double>(&a)) return *d != 0;
  return !std::get<std::string>(a).empty();
}

}  // namespace

std::variant<PatternTerm, ParseError> parse_pattern(std::string_view text, const OpClasses& classes) {
  return guarded<PatternTerm>([&] { return Parser(text, &classes).parse_whole_pattern(); });
}

std::variant<std::vector<Predicate>, ParseError> parse_predicates(std::string_view text) {
  return guarded<std::vector<Predicate>>([&] { return Parser(text, nullptr).parse_whole_predicates(); });
}

std::variant<RegionSpec, ParseError> parse_region_spec(std::string_view text) {
  return guarded<RegionSpec>([&] { return Parser(text, nullptr).parse_whole_region(); });
}

bool eval_predicate(const Predicate& p, const std::map<std::string, ir::Attr>& attrs,
                    const std::map<std::string, ir::Attr>* extra) {
  const ir::Attr* a = nullptr;
  if (auto it = attrs.find(p.key); it != attrs.end()) a = &it->second;
  else if (extra) {
    if (auto jt = extra->find(p.key); jt != extra->end()) a = &jt->second;
  }
  return eval_predicate_on(p, a);
}

bool eval_predicate_on(const Predicate& p, const ir::Attr* a) {
  switch (p.kind) {
    case Predicate::Kind::kTruthy: return a && truthy(*a);
    case Predicate::Kind::kFalsy: return !a || !truthy(*a);
    case Predicate::Kind::kIn:
      if (!a) return false;
      return std::any_of(p.values.begin(), p.values.end(), [&](const Literal& l) {
        auto c = compare(*a, l);
        return c && *c == 0;
      });
    case Predicate::Kind::kCompare: {
      if (!a) return p.cmp == Predicate::Cmp::kNe;  // an absent attribute differs from anything
      if (p.cmp == Predicate::Cmp::kContains) {
        auto* text = std::get_if<std::string>(a);
        auto* part = std::get_if<std::string>(&p.values.front());
        return text && part && text->find(*part) != std::string::npos;
      }
      auto c = compare(*a, p.values.front());
      if (!c) return p.cmp == Predicate::Cmp::kNe;
      switch (p.cmp) {
        case Predicate::Cmp::kEq: return *c == 0;
        case Predicate::Cmp::kNe: return *c != 0;
        case Predicate::Cmp::kLt: return *c < 0;
        case Predicate::Cmp::kLe: return *c <= 0;
        case Predicate::Cmp::kGt: return *c > 0;
        case Predicate::Cmp::kGe: return *c >= 0;
        case Predicate::Cmp::kContains: return false;
      }
    }
  }
  return false;
}

bool eval_predicates(const std::vector<Predicate>& ps, const std::map<std::string, ir::Attr>& attrs,
                     const std::map<std::string, ir::Attr>* extra) {
  return std::all_of(ps.begin(), ps.end(), [&](const Predicate& p) { return eval_predicate(p, attrs, extra); });
}

void collect_labels(const PatternTerm& t, std::vector<std::string>& out) {
  if (!t.label.empty()) out.push_back(t.label);
  for (const auto& a : t.args) collect_labels(a, out);
  for (const auto& c : t.children) collect_labels(c, out);
}

void collect_ops(const PatternTerm& t, std::vector<std::string>& out) {
  if (t.kind == PatternTerm::Kind::kOp) out.insert(out.end(), t.ops.begin(), t.ops.end());
  for (const auto& a : t.args) collect_ops(a, out);
  for (const auto& c : t.children) collect_ops(c, out);
}

void collect_vars(const PatternTerm& t, std::vector<std::string>& out) {
  if (t.kind == PatternTerm::Kind::kVar) out.push_back(t.var);
  for (const auto& a : t.args) collect_vars(a, out);
  for (const auto& c : t.children) collect_vars(c, out);
}

std::optional<std::vector<std::string>> root_ops(const PatternTerm& t) {
  switch (t.kind) {
    case PatternTerm::Kind::kVar:
    case PatternTerm::Kind::kAny:
    case PatternTerm::Kind::kDeep: return std::nullopt;
    case PatternTerm::Kind::kAlt: {
      std::vector<std::string> all;
      for (const auto& c : t.children) {
        auto r = root_ops(c);
        if (!r) return std::nullopt;
        all.insert(all.end(), r->begin(), r->end());
      }
      return all;
    }
    case PatternTerm::Kind::kOp: {
      std::vector<std::string> all = t.ops;
      if (t.optional || t.repeated) {
        auto r = root_ops(t.args.front());
        if (!r) return std::nullopt;
        all.insert(all.end(), r->begin(), r->end());
      }
      return all;
    }
  }
  return std::nullopt;
}

}  // namespace mlsem
