// Builder: the shape arguments the axis pass (axes.cpp) needs, kept as attributes
// (docs/IR.md, "Shape arguments"), and the repeat counts known to be 1 (n_rep = 1).
#include <cmath>

#include "python/builder.h"

namespace mlsem::python::detail {

namespace {

// "self.num_key_value_groups" -> "num_key_value_groups".
std::string_view last_component(std::string_view dotted) {
  size_t dot = dotted.rfind('.');
  return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

}  // namespace

void Builder::scan_literal_attrs(TSNode block, int depth) {
  if (ts_node_is_null(block) || depth > 12) return;
  for (TSNode s : named(block)) {
    TSSymbol k = sym(s);
    if (k == S.expression_statement && ts_node_named_child_count(s) > 0) {
      TSNode e = ts_node_named_child(s, 0);
      if (sym(e) != S.assignment) continue;
      TSNode left = field(e, S.f_left), right = field(e, S.f_right);
      std::vector<std::string_view> parts;
      if (ts_node_is_null(right) || !dotted(left, parts) || parts.size() != 2 || parts[0] != "self") continue;
      std::optional<double> v = number(right);
      std::string key(parts[1]);
      auto it = literal_attrs_.find(key);
      double value = v ? *v : NAN;
      if (it == literal_attrs_.end()) literal_attrs_.emplace(std::move(key), value);
      else if (!(it->second == value)) it->second = NAN;
    } else if (k == S.function_definition || k == S.class_definition) {
      scan_literal_attrs(field(s, S.f_body), depth + 1);
    } else if (k == S.decorated_definition) {
      TSNode def = field(s, S.f_definition);
      if (!ts_node_is_null(def)) scan_literal_attrs(field(def, S.f_body), depth + 1);
    } else if (k == S.if_statement || k == S.block || k == S.else_clause || k == S.elif_clause ||
               k == S.for_statement || k == S.with_statement || k == S.try_statement) {
      for (TSNode c : named(s))
        if (sym(c) == S.block || sym(c) == S.else_clause || sym(c) == S.elif_clause) scan_literal_attrs(c, depth + 1);
    }
  }
}

std::optional<double> Builder::file_literal_attr(std::string_view name) {
  if (!literal_attrs_ready_) {
    literal_attrs_ready_ = true;
    scan_literal_attrs(root_, 0);
  }
  auto it = literal_attrs_.find(std::string(name));
  if (it == literal_attrs_.end() || std::isnan(it->second)) return std::nullopt;
  return it->second;
}

std::optional<double> Builder::count_of_node(NodeId id) {
  if (auto c = const_value(id)) return c;
  if (const ir::Node* n = node_if(id); n && n->op == "scalar")
    if (const ir::Attr* l = n->attr("literal"); l && std::holds_alternative<double>(*l)) return std::get<double>(*l);
  std::string_view op = op_of(id);
  // `self.x` of a class that does not set it to a literal: not a file-wide fact.
  if (op == "scalar" && str_attr(id, "text").rfind("self.", 0) == 0) return std::nullopt;
  std::string_view t = op == "name" || op == "input" ? str_attr(id, "name") : op == "scalar" ? str_attr(id, "text") : "";
  if (t.empty() || t.find('.') == std::string_view::npos) return std::nullopt;
  return file_literal_attr(last_component(t));
}

std::optional<double> Builder::count_value(TSNode e) {
  e = unparen(e);
  if (ts_node_is_null(e)) return std::nullopt;
  if (auto v = number(e)) return v;
  if (sym(e) == S.identifier) {
    auto it = st_->scope->vars.find(text(e));
    if (it == st_->scope->vars.end() || it->second.node == kNoNode) return std::nullopt;
    return count_of_node(it->second.node);
  }
  std::vector<std::string_view> parts;
  if (sym(e) == S.attribute && dotted(e, parts) && parts.size() >= 2) return file_literal_attr(parts.back());
  return std::nullopt;
}

void Builder::shape_attrs(NodeId id, Args& a, std::string_view method) {
  if (id == kNoNode) return;
  auto positional_text = [&](size_t from) {
    std::vector<TSNode> args;
    for (size_t i = from; i < a.count(); ++i) args.push_back(a.expr(i));
    if (args.size() == 1 && !ts_node_is_null(args[0])) {
      TSNode t = unparen(args[0]);
      if (sym(t) == S.tuple || sym(t) == S.list) args = named(t).vec();
    }
    std::string out;
    for (TSNode n : args) {
      if (ts_node_is_null(n)) return std::string();
      if (!out.empty()) out += ", ";
      out += std::string(text(n));
    }
    return out;
  };
  if (method == "view" || method == "reshape" || method == "expand" || method == "repeat") {
    TSNode kw = a.keyword(method == "repeat" ? "repeats" : method == "expand" ? "size" : "shape");
    std::string t = ts_node_is_null(kw) ? positional_text(1) : std::string(text(kw));
    if (!t.empty() && t.size() <= 160) set(id, "shape", t);
    if (method == "expand" || method == "repeat") {
      // A copy count known to be 1 among symbolic sizes: n_rep bound to a constant 1.
      bool one = false, more = false;
      for (size_t i = 1; i < a.count(); ++i) {
        TSNode n = unparen(a.expr(i));
        if (ts_node_is_null(n) || number(n)) continue;
        auto v = count_value(n);
        if (v == std::optional<double>(1.0)) one = true;
        else if (v && *v > 1) more = true;
      }
      if (one && !more) set(id, "repeat_one", true);
    }
  } else if (method == "unsqueeze" || method == "squeeze") {
    set_dim(id, a.get(1, "dim"));
  } else if (method == "flatten") {
    set_dim(id, a.get(1, "start_dim"), "start");
    set_dim(id, a.get(2, "end_dim"), "end");
  } else if (method == "unflatten") {
    set_dim(id, a.get(1, "dim"));
    TSNode sizes = a.get(2, "sizes");
    if (!ts_node_is_null(sizes)) set(id, "shape", std::string(text(unparen(sizes))).substr(0, 160));
  } else if (method == "split" || method == "chunk" || method == "tensor_split") {
    TSNode d = a.get(2, "dim");
    if (ts_node_is_null(d)) set(id, "dim", int64_t{0});
    else set_dim(id, d);
    set(id, "method", std::string(method));
  } else if (method == "unbind") {
    TSNode d = a.get(1, "dim");
    if (ts_node_is_null(d)) set(id, "dim", int64_t{0});
    else set_dim(id, d);
    set(id, "method", std::string(method));
  } else if (method.rfind("einops.", 0) == 0) {
    TSNode pattern = unparen(a.get(1, "pattern"));
    if (ts_node_is_null(pattern) || sym(pattern) != S.string) return;
    std::string p = unquote(text(pattern));
    set(id, "einops", p);
    if (method != "einops.repeat") return;
    // Names on the right of "->" only are new (copied) axes; all of size 1: no copy.
    size_t arrow = p.find("->");
    if (arrow == std::string::npos) return;
    std::string_view lhs = std::string_view(p).substr(0, arrow), rhs = std::string_view(p).substr(arrow + 2);
    bool any = false, all_one = true;
    for (const auto& [name, value] : a.kw) {
      if (name == "pattern") continue;
      auto word_in = [&](std::string_view side) {
        for (size_t i = side.find(name); i != std::string_view::npos; i = side.find(name, i + 1)) {
          bool left_ok = i == 0 || !(isalnum(static_cast<unsigned char>(side[i - 1])) || side[i - 1] == '_');
          size_t j = i + name.size();
          bool right_ok = j >= side.size() || !(isalnum(static_cast<unsigned char>(side[j])) || side[j] == '_');
          if (left_ok && right_ok) return true;
        }
        return false;
      };
      if (!word_in(rhs) || word_in(lhs)) continue;
      any = true;
      if (count_value(value) != std::optional<double>(1.0)) all_one = false;
    }
    if (any && all_one) set(id, "repeat_one", true);
  }
}

Value Builder::einsum_contraction(NodeId a, NodeId b, TSNode spec, TSNode e, const std::string& callee) {
  std::string s;
  for (char c : unquote(text(spec)))
    if (c != ' ') s.push_back(c);
  size_t arrow = s.find("->");
  size_t comma = s.find(',');
  // Two operands sharing an index that the output drops: a contraction, whatever the order.
  bool contraction = false;
  if (arrow != std::string::npos && comma != std::string::npos && comma < arrow) {
    std::string_view l = std::string_view(s).substr(0, comma), r = std::string_view(s).substr(comma + 1, arrow - comma - 1);
    std::string_view out = std::string_view(s).substr(arrow + 2);
    for (char c : l)
      if (isalpha(static_cast<unsigned char>(c)) && r.find(c) != std::string_view::npos && out.find(c) == std::string_view::npos)
        contraction = true;
  }
  NodeId id = emit(contraction ? "matmul" : "call", {a, b}, e);
  set(id, "callee", callee);
  if (contraction) {
    set(id, "subscripts", s);
    set(id, "text", clip(text(spec)));
  }
  return val(id);
}

}  // namespace mlsem::python::detail
