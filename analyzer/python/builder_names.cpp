// Builder helpers: node text and children, dotted names resolved through imports
// to canonical names (`F.softmax` -> "torch.nn.functional.softmax"), and constant
// evaluation of Python expressions (numbers, ints, bools, dim= attributes).
// Relies on the index (builder_index.cpp) for the module's import aliases.
#include "python/builder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace mlsem::python::detail {

// ------------------------------------------------------------------ helpers

Builder::NodeList Builder::named(TSNode n) {
  NodeList out(&list_pool_);
  uint64_t key = NodeTable::key(n);
  if (key == 0) {
    children_.named(n, out.vec(), S.comment);
    return out;
  }
  uint32_t at = child_spans_.find(key);
  if (at == NodeTable::kMissing) {
    children_.named(n, out.vec(), S.comment);
    child_spans_.insert(key, static_cast<uint32_t>(child_span_list_.size()));
    child_span_list_.push_back({static_cast<uint32_t>(child_store_.size()), static_cast<uint32_t>(out.size())});
    child_store_.insert(child_store_.end(), out.begin(), out.end());
  } else {
    const ChildSpan& span = child_span_list_[at];
    auto first = child_store_.begin() + span.begin;
    out.vec().assign(first, first + span.count);
  }
  return out;
}

TSNode Builder::field(TSNode n, TSFieldId id) const {
  // Field ids run from 1 (tree-sitter-python has 32): tag id - 1, so every one is cached.
  uint64_t key = id >= 1 && id <= 32 ? NodeTable::key(n, id - 1u) : 0;
  if (key == 0) return python::field(n, id);
  uint32_t at = field_index_.find(key);
  if (at != NodeTable::kMissing) return field_nodes_[at];
  TSNode f = python::field(n, id);
  field_index_.insert(key, static_cast<uint32_t>(field_nodes_.size()));
  field_nodes_.push_back(f);
  return f;
}

TSNode Builder::unparen(TSNode n) const { return python::unparen(S, n); }

void Builder::diagnose(TSNode at, std::string message) {
  out_.diagnostics.push_back({file_.path, range_of(at), std::move(message)});
}

bool Builder::dotted(TSNode n, std::vector<std::string_view>& parts) const {
  uint64_t key = NodeTable::key(n);
  if (key != 0) {
    if (uint32_t at = dotted_index_.find(key); at != NodeTable::kMissing) {
      const DottedSpan& d = dotted_spans_[at];
      parts.assign(dotted_store_.begin() + d.begin, dotted_store_.begin() + d.begin + d.count);
      return d.ok;
    }
  }
  bool ok = dotted_walk(n, parts);
  if (key != 0) {
    dotted_index_.insert(key, static_cast<uint32_t>(dotted_spans_.size()));
    dotted_spans_.push_back({static_cast<uint32_t>(dotted_store_.size()), static_cast<uint32_t>(parts.size()), ok});
    dotted_store_.insert(dotted_store_.end(), parts.begin(), parts.end());
  }
  return ok;
}

bool Builder::dotted_walk(TSNode n, std::vector<std::string_view>& parts) const {
  parts.clear();
  n = unparen(n);
  while (sym(n) == S.attribute) {
    TSNode attr = field(n, S.f_attribute);
    if (ts_node_is_null(attr)) return false;
    parts.push_back(text(attr));
    n = unparen(field(n, S.f_object));
    if (ts_node_is_null(n)) return false;
  }
  if (sym(n) != S.identifier) return false;
  parts.push_back(text(n));
  std::reverse(parts.begin(), parts.end());
  return true;
}

std::string Builder::join(const std::vector<std::string_view>& parts, size_t from) {
  std::string s;
  for (size_t i = from; i < parts.size(); ++i) {
    if (i > from) s += '.';
    s += parts[i];
  }
  return s;
}

const std::string* Builder::alias(std::string_view name) const {
  if (st_ && st_->scope) {
    for (const auto& [k, v] : st_->scope->local_aliases)
      if (k == name) return &v;
  }
  auto it = aliases_.find(name);
  return it == aliases_.end() ? nullptr : &it->second;
}

std::string Builder::canonical(TSNode n) {
  std::vector<std::string_view> parts;
  if (!dotted(n, parts)) return "";
  if (st_ && st_->scope && st_->scope->vars.count(parts[0])) return "";
  const std::string* a = alias(parts[0]);
  if (!a) return "";
  std::string s = *a;
  for (size_t i = 1; i < parts.size(); ++i) (s += '.') += parts[i];
  return s;
}

// ------------------------------------------------------------------ constant evaluation

std::optional<double> Builder::number(TSNode e, int depth) {
  e = unparen(e);
  if (ts_node_is_null(e) || depth > 32) return std::nullopt;
  TSSymbol k = sym(e);
  if (k == S.integer || k == S.float_) return parse_number(text(e));
  if (k == S.true_) return 1.0;
  if (k == S.false_) return 0.0;
  if (k == S.unary_operator) {
    auto v = number(field(e, S.f_argument), depth + 1);
    if (!v) return std::nullopt;
    return text(field(e, S.f_operator)) == "-" ? -*v : *v;
  }
  if (k == S.binary_operator) {
    auto a = number(field(e, S.f_left), depth + 1);
    if (!a) return std::nullopt;
    auto b = number(field(e, S.f_right), depth + 1);
    if (!b) return std::nullopt;
    return fold(text(field(e, S.f_operator)), *a, *b);
  }
  if (k == S.attribute) {
    std::string c = canonical(e);
    if (c == "math.pi" || c == "numpy.pi") return M_PI;
    if (c == "math.e" || c == "numpy.e") return M_E;
    if (c == "math.inf" || c == "numpy.inf") return INFINITY;
    return std::nullopt;
  }
  if (k == S.call) {
    TSNode fn = field(e, S.f_function);
    auto args = named(field(e, S.f_arguments));
    if (args.size() != 1) return std::nullopt;
    if (text(fn) == "float" && sym(args[0]) == S.string) {
      std::string_view s = text(args[0]);
      if (s.size() < 2) return std::nullopt;
      s = s.substr(1, s.size() - 2);
      if (s == "inf" || s == "+inf" || s == "infinity") return INFINITY;
      if (s == "-inf" || s == "-infinity") return -INFINITY;
      return parse_number(s);
    }
    std::string c = canonical(fn);
    std::string_view f = c.rfind("numpy.", 0) == 0 ? std::string_view(c).substr(6)
                         : c.rfind("math.", 0) == 0 ? std::string_view(c).substr(5)
                                                    : std::string_view{};
    if (f.empty() && text(fn) != "float" && text(fn) != "int") return std::nullopt;
    auto v = number(args[0], depth + 1);
    if (!v) return std::nullopt;
    if (text(fn) == "float") return *v;
    if (text(fn) == "int") return std::trunc(*v);
    if (f == "sqrt") return std::sqrt(*v);
    if (f == "log") return std::log(*v);
    if (f == "exp") return std::exp(*v);
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<double> Builder::parse_number(std::string_view t) {
  std::string s;
  for (char c : t)
    if (c != '_') s.push_back(c);
  if (s.empty() || s.back() == 'j' || s.back() == 'J') return std::nullopt;
  char* end = nullptr;
  double v;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'o' || s[1] == 'O' ||
                                      s[1] == 'b' || s[1] == 'B')) {
    int base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
    v = static_cast<double>(std::strtoull(s.c_str() + 2, &end, base));
  } else {
    v = std::strtod(s.c_str(), &end);
  }
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> Builder::fold(std::string_view op, double a, double b) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return b == 0 ? std::nullopt : std::optional<double>(a / b);
  if (op == "//") return b == 0 ? std::nullopt : std::optional<double>(std::floor(a / b));
  if (op == "**") return std::pow(a, b);
  return std::nullopt;
}

std::optional<int64_t> Builder::int_of(TSNode e) {
  auto v = number(e);
  if (!v || std::trunc(*v) != *v || std::fabs(*v) > 1e15) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<bool> Builder::bool_of(TSNode e) {
  e = unparen(e);
  if (ts_node_is_null(e)) return std::nullopt;
  if (sym(e) == S.true_) return true;
  if (sym(e) == S.false_) return false;
  return std::nullopt;
}

void Builder::set_dim(NodeId id, TSNode e, const char* key) {
  if (ts_node_is_null(e) || id == kNoNode) return;
  if (auto d = int_of(e)) set(id, key, *d);
  else set(id, key, clip(text(e)));
}

}  // namespace mlsem::python::detail
