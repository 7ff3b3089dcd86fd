// Builder expressions: identifiers, strings, unary and binary operators (folding
// scalar arithmetic, recognizing scales), subscripts, attributes and self.<path>.
// Calls go to builder_calls.cpp.
#include "python/builder.h"

#include <algorithm>
#include <cmath>

#include "python/names.h"

namespace mlsem::python::detail {

// ------------------------------------------------------------------ expressions

Value Builder::lower(TSNode e) {
  if (ts_node_is_null(e)) return {};
  NestingGuard g(st_);
  if (too_deep(e)) {
    NodeId id = emit("call", {}, e);
    set(id, "callee", std::string("<too deep>"));
    return val(id);
  }
  e = unparen(e);
  TSSymbol k = sym(e);
  if (k == S.identifier) return lower_identifier(e);
  if (k == S.attribute) return lower_attribute(e);
  if (k == S.call) return lower_call(e);
  if (k == S.binary_operator) return lower_binary(e);
  if (k == S.subscript) return lower_subscript(e);
  if (k == S.integer || k == S.float_) return val(emit_const(e, parse_number(text(e))));
  if (k == S.true_) return val(emit_const(e, 1.0));
  if (k == S.false_) return val(emit_const(e, 0.0));
  if (k == S.none) return val(emit_const(e, std::nullopt));
  if (k == S.string || k == S.concatenated_string) return lower_string(e);
  if (k == S.unary_operator) return lower_unary(e);
  if (k == S.tuple || k == S.expression_list || k == S.list) {
    Value v;
    v.is_tuple = true;
    for (TSNode c : named(e)) {
      if (sym(c) == S.list_splat) continue;
      Value item = lower(c);
      v.items.push_back(as_node(item, c));
    }
    return v;
  }
  if (k == S.comparison_operator) {
    std::vector<NodeId> ins;
    for (TSNode c : named(e)) ins.push_back(as_node(lower(c), c));
    NodeId id = emit("compare", std::move(ins), e);
    if (TSNode op = field(e, S.f_operators); !ts_node_is_null(op)) set(id, "operator", std::string(text(op)));
    return val(id);
  }
  if (k == S.conditional_expression) {
    auto parts = named(e);
    std::vector<Value> vs;
    for (TSNode p : parts) vs.push_back(lower(p));
    // `a if c else b`: the first branch, unless it is None.
    if (vs.size() == 3 && op_of(vs[0].node) == "const" && !const_value(vs[0].node) &&
        text(parts[0]) == "None")
      return vs[2];
    return vs.empty() ? Value{} : vs[0];
  }
  if (k == S.named_expression) {
    Value v = lower(field(e, S.f_value));
    bind_target(field(e, S.f_name), v, e);
    return v;
  }
  if (k == S.await_ && ts_node_named_child_count(e) > 0) return lower(ts_node_named_child(e, 0));
  if (k == S.lambda) return val(emit_name(e, "lambda"));
  if (k == S.assignment) return lower_assignment(e);
  return lower_generic(e);
}

Value Builder::lower_generic(TSNode e) {
  std::vector<NodeId> ins;
  auto top = named(e);
  std::vector<TSNode> stack(top.rbegin(), top.rend());
  size_t visited = 0;
  while (!stack.empty()) {
    TSNode c = stack.back();
    stack.pop_back();
    TSSymbol k = sym(c);
    if (++visited > 100000) break;
    if (k == S.integer || k == S.float_ || k == S.true_ || k == S.false_ || k == S.none ||
        k == S.keyword_argument || k == S.ellipsis)
      continue;
    if (k == S.string && ts_node_named_child_count(c) <= 2) continue;  // no interpolation
    if (is_expression(c) && k != S.list && k != S.tuple && k != S.expression_list &&
        k != S.dictionary) {
      ins.push_back(as_node(lower(c), c));
      continue;
    }
    auto kids = named(c);  // pair, for_in_clause, if_clause, ERROR, ...
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  NodeId id = emit("call", std::move(ins), e);
  set(id, "callee", std::string(ts_node_type(e)));
  return val(id);
}

Value Builder::lower_string(TSNode e) {
  // f-strings: the interpolated expressions run (and may sync: f"{loss.item()}").
  std::vector<TSNode> stack;
  if (sym(e) == S.concatenated_string || is_fstring(e)) stack.push_back(e);
  while (!stack.empty()) {
    TSNode c = stack.back();
    stack.pop_back();
    for (TSNode k : named(c)) {
      if (sym(k) == S.interpolation) {
        if (ts_node_named_child_count(k) > 0) lower(ts_node_named_child(k, 0));
      } else if (sym(k) == S.string) {
        stack.push_back(k);
      }
    }
  }
  return val(emit_const(e, std::nullopt));
}

Value Builder::lower_identifier(TSNode e) {
  std::string_view name = text(e);
  auto& vars = st_->scope->vars;
  auto it = vars.find(name);
  if (it != vars.end()) return it->second;
  if (const std::string* a = alias(name)) return val(emit_name(e, *a));
  if (is_scalar_name(name)) return val(emit_scalar(e, false));
  return val(emit_name(e, std::string(name)));
}

Value Builder::lower_unary(TSNode e) {
  std::string_view op = text(field(e, S.f_operator));
  TSNode arg = field(e, S.f_argument);
  size_t mark = st_->fn.nodes.size();
  uint32_t writes = st_->env_writes;
  Value v = lower(arg);
  if (op == "+") return v;
  if (op == "-") {
    if (auto c = const_value(v.node)) {
      truncate(mark, writes);
      return val(emit_const(e, -*c));
    }
    if (scalar_like(v)) {
      bool sq = flag(v.node, "sqrt_like");
      truncate(mark, writes);
      return val(emit_scalar(e, sq));
    }
    NodeId id = emit("neg", {as_node(v, arg)}, e);
    return val(id);
  }
  NodeId id = emit("call", {as_node(v, arg)}, e);
  set(id, "callee", std::string("operator.invert"));
  return val(id);
}

void Builder::truncate(size_t mark, uint32_t writes) {
  if (mark == SIZE_MAX || writes != st_->env_writes || mark > st_->fn.nodes.size()) return;
  if (st_->inline_depth > 0) st_->inlined_nodes -= std::min(st_->inlined_nodes, st_->fn.nodes.size() - mark);
  st_->fn.nodes.resize(mark);
}

Value Builder::lower_binary(TSNode e) {
  std::string_view op = text(field(e, S.f_operator));
  std::vector<TSNode> operands;
  if (op == "+" || op == "*") {
    // Flatten `a + b + c` into one n-ary node, iteratively (20,000-term sums exist).
    std::vector<TSNode> stack{e};
    while (!stack.empty()) {
      TSNode n = unparen(stack.back());
      stack.pop_back();
      if (sym(n) == S.binary_operator && text(field(n, S.f_operator)) == op) {
        stack.push_back(field(n, S.f_right));
        stack.push_back(field(n, S.f_left));
      } else {
        operands.push_back(n);
      }
    }
  } else {
    operands = {field(e, S.f_left), field(e, S.f_right)};
  }
  size_t mark = st_->fn.nodes.size();
  uint32_t writes = st_->env_writes;
  std::vector<Value> vals;
  vals.reserve(operands.size());
  for (TSNode o : operands) vals.push_back(lower(o));
  for (size_t i = 0; i < vals.size(); ++i) vals[i].node = as_node(vals[i], operands[i]);
  return arith(op, vals, e, mark, writes);
}

Value Builder::arith(
    std::string_view op, std::vector<Value>& vals, TSNode e, size_t mark, uint32_t writes) {
  if (mark == SIZE_MAX) writes = st_->env_writes;
  for (Value& v : vals) v.node = as_node(v, e);
  bool all_scalar = !vals.empty() &&
                    std::all_of(vals.begin(), vals.end(), [&](const Value& v) { return scalar_like(v); });
  bool arithmetic = op == "+" || op == "-" || op == "*" || op == "/" || op == "//" || op == "%" || op == "**";
  if (all_scalar && arithmetic) {
    std::optional<double> folded = const_value(vals[0].node);
    for (size_t i = 1; folded && i < vals.size(); ++i) {
      auto b = const_value(vals[i].node);
      folded = b ? fold(op, *folded, *b) : std::nullopt;
    }
    bool sq = false;
    for (const Value& v : vals) sq = sq || flag(v.node, "sqrt_like");
    if (op == "**" && vals.size() == 2) {
      auto ex = const_value(vals[1].node);
      sq = sq || (ex && std::fabs(std::fabs(*ex) - 0.5) < 1e-12);
    }
    truncate(mark, writes);
    if (folded && !sq) return val(emit_const(e, folded));
    return val(emit_scalar(e, sq));
  }
  auto nodes = [&](const std::vector<Value>& vs) {
    std::vector<NodeId> ids;
    for (const Value& v : vs) ids.push_back(v.node);
    return ids;
  };
  if (vals.size() != 2 && op != "+" && op != "*") return val(emit("call", nodes(vals), e));
  if (op == "@") return val(emit("matmul", nodes(vals), e));
  if (op == "*") {
    std::vector<Value> tensors, factors;
    for (const Value& v : vals) (scalar_like(v) ? factors : tensors).push_back(v);
    if (tensors.size() == 1 && !factors.empty()) {
      NodeId factor = factors[0].node;
      if (factors.size() > 1) {
        bool sq = false;
        for (const Value& f : factors) sq = sq || flag(f.node, "sqrt_like");
        factor = emit_scalar(e, sq);
      }
      return val(make_scale(tensors[0].node, factor, false, e));
    }
    return val(emit("mul", nodes(vals), e));
  }
  if (op == "/") {
    if (scalar_like(vals[1])) return val(make_scale(vals[0].node, vals[1].node, true, e));
    return val(emit("div", nodes(vals), e));
  }
  if (op == "+") {
    if (vals.size() == 2) {
      bool m0 = traces_to(vals[0].node, false), m1 = traces_to(vals[1].node, false);
      if (m0 != m1) {
        NodeId x = m0 ? vals[1].node : vals[0].node, m = m0 ? vals[0].node : vals[1].node;
        NodeId id = emit("mask", {x, m}, e);
        set(id, "kind", std::string("additive"));
        set(id, "causal", traces_to(m, true));
        return val(id);
      }
    }
    return val(emit("add", nodes(vals), e));
  }
  if (op == "-") return val(emit("sub", nodes(vals), e));
  if (op == "**") {
    NodeId id = emit("pow", {vals[0].node}, e);
    if (auto ex = const_value(vals[1].node)) set(id, "exponent", *ex);
    else node(id).inputs.push_back(vals[1].node);
    return val(id);
  }
  NodeId id = emit("call", nodes(vals), e);
  static const std::unordered_map<std::string_view, std::string_view> kNames = {
      {"//", "floordiv"}, {"%", "mod"}, {"&", "and"}, {"|", "or"}, {"^", "xor"},
      {"<<", "lshift"}, {">>", "rshift"}};
  auto n = kNames.find(op);
  set(id, "callee", "operator." + std::string(n == kNames.end() ? op : n->second));
  return val(id);
}

NodeId Builder::make_scale(NodeId x, NodeId factor, bool divide, TSNode e) {
  NodeId id = emit("scale", {x, factor}, e);
  set(id, "divide", divide);
  set(id, "sqrt_like", flag(factor, "sqrt_like"));
  return id;
}

Value Builder::lower_subscript(TSNode e) {
  TSNode obj = field(e, S.f_value);
  Value v = lower(obj);
  TSNode index = field(e, S.f_subscript);
  std::optional<int64_t> literal = ts_node_is_null(index) ? std::nullopt : int_of(index);
  bool has_index = literal.has_value();
  int64_t i = literal.value_or(0);
  if (v.is_tuple && has_index) {
    int64_t n = static_cast<int64_t>(v.items.size());
    int64_t j = i < 0 ? i + n : i;
    if (j >= 0 && j < n) return val(v.items[j]);
  }
  if (v.module >= 0) {  // self.h[0] of a ModuleList
    const ModuleDesc& d = modules_[v.module];
    Value m;
    if (d.element >= 0) m.module = d.element;
    else if (has_index && i >= 0 && i < static_cast<int64_t>(d.items.size())) m.module = d.items[i];
    if (m.module >= 0) return m;
  }
  std::string_view op = op_of(v.node);
  if (op == "scalar") return val(emit_scalar(e, false));  // x.shape[-1]
  if (has_index && (op == "split" || op == "call" || op == "max" || op == "min")) {
    NodeId p = emit("part", {v.node}, e);
    set(p, "index", i);
    return val(p);
  }
  NodeId id = emit("slice", {as_node(v, obj)}, e);
  set(id, "text", clip(text(e).substr(std::min<size_t>(text(e).size(), text(obj).size()))));
  return val(id);
}

int Builder::self_module(const std::vector<std::string_view>& parts, size_t n) {
  if (n < 2) return -1;
  ClassInfo& c = classes_[st_->scope->cls];
  auto f = c.facts.find(parts[1]);
  if (f == c.facts.end() || f->second.kind != AttrFact::kModule) return -1;
  int m = f->second.module;
  for (size_t i = 2; i < n && m >= 0; ++i) {
    int next = -1;
    for (const auto& [name, idx] : modules_[m].members)
      if (name == parts[i]) next = idx;
    m = next;
  }
  return m;
}

Value Builder::lower_self_path(TSNode e, const std::vector<std::string_view>& parts) {
  Scope& sc = *st_->scope;
  std::string display = sc.self_path + "." + join(parts, 1);
  auto own = sc.attrs.find(std::string(text(e)));
  if (own != sc.attrs.end()) return own->second;
  if (int m = self_module(parts, parts.size()); m >= 0) {
    Value v;
    v.module = m;
    return v;
  }
  ClassInfo& c = classes_[sc.cls];
  auto f = c.facts.find(parts[1]);
  if (f != c.facts.end() && parts.size() == 2) {
    if (f->second.kind == AttrFact::kScalar) {
      NodeId id = emit_scalar(e, f->second.sqrt_like);
      if (f->second.literal) set(id, "literal", *f->second.literal);  // read by repeat counts (n_rep = 1)
      return val(id);
    }
    if (f->second.kind == AttrFact::kCausal) {
      NodeId id = emit_name(e, display);
      set(id, "causal", true);
      return val(id);
    }
  }
  if (is_scalar_name(parts.back())) return val(emit_scalar(e, false));
  return val(emit_name(e, display));
}

Value Builder::lower_attribute(TSNode e) {
  std::vector<std::string_view> parts;
  if (dotted(e, parts)) {
    Scope& sc = *st_->scope;
    bool is_var = sc.vars.count(parts[0]) > 0;
    if (!is_var && sc.cls >= 0 && parts[0] == sc.self_name) return lower_self_path(e, parts);
    auto own = sc.attrs.find(std::string(text(e)));
    if (own != sc.attrs.end()) return own->second;
    if (!is_var) {
      if (alias(parts[0])) {
        if (auto v = number(e)) return val(emit_const(e, v));
        return val(emit_name(e, canonical(e)));
      }
      if (is_config_root(parts[0]) || is_scalar_name(parts.back())) return val(emit_scalar(e, false));
      return val(emit_name(e, std::string(text(e))));
    }
  }
  TSNode obj = field(e, S.f_object);
  std::string_view attr = text(field(e, S.f_attribute));
  TSNode objn = unparen(obj);
  if ((attr == "min" || attr == "max") && sym(objn) == S.call) {
    std::string c = canonical(field(objn, S.f_function));
    if (c == "torch.finfo" || c == "numpy.finfo")  // the most negative float: a mask fill value
      return val(emit_const(e, attr == "min" ? -3.4028234663852886e38 : 3.4028234663852886e38));
  }
  Value v = lower(obj);
  if (v.module >= 0) {
    const ModuleDesc& d = modules_[v.module];
    for (const auto& [name, idx] : d.members)
      if (name == attr) {
        Value m;
        m.module = idx;
        return m;
      }
    return val(emit_name(e, std::string(text(e))));
  }
  if (attr == "T" || attr == "mT" || attr == "H" || attr == "mH") {
    NodeId id = emit("transpose", {as_node(v, obj)}, e);
    set(id, "dim0", int64_t{-2});
    set(id, "dim1", int64_t{-1});
    return val(id);
  }
  if (attr == "shape" || attr == "ndim") return val(emit_scalar(e, false));
  if (attr == "data") return v;
  if (scalar_like(v) || is_config_root(str_attr(v.node, "name")) || is_scalar_name(attr))
    return val(emit_scalar(e, false));
  return val(emit_name(e, std::string(text(e))));
}

}  // namespace mlsem::python::detail
