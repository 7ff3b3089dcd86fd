// How attention code is written (attention_syntax.h): syntax read at the IR nodes' ranges.
#include "python/attention_syntax.h"

#include <set>

namespace mlsem::python::attention {

TSNode AttentionSyntax::unparen(TSNode n) const {
  while (!ts_node_is_null(n) && ts_node_symbol(n) == S.parenthesized_expression && ts_node_named_child_count(n) == 1)
    n = ts_node_named_child(n, 0);
  return n;
}

TSNode AttentionSyntax::exact(const Range& r) const {
  if (!r.valid() || r.end_byte > src_.size()) return TSNode{};
  TSNode n = ts_node_descendant_for_byte_range(root_, r.begin_byte, r.end_byte);
  if (ts_node_is_null(n) || ts_node_start_byte(n) != r.begin_byte || ts_node_end_byte(n) != r.end_byte) return TSNode{};
  while (true) {
    TSNode p = parent_of(n);
    if (ts_node_is_null(p) || ts_node_start_byte(p) != r.begin_byte || ts_node_end_byte(p) != r.end_byte ||
        ts_node_symbol(p) == S.block || ts_node_symbol(p) == S.module)
      break;
    n = p;
  }
  if (ts_node_symbol(n) == S.expression_statement && ts_node_named_child_count(n) == 1) n = ts_node_named_child(n, 0);
  return n;
}

std::vector<TSNode> AttentionSyntax::args(TSNode call, std::vector<std::pair<std::string_view, TSNode>>* keywords) const {
  std::vector<TSNode> out;
  TSNode a = field(call, S.f_arguments);
  if (ts_node_is_null(a)) return out;
  uint32_t count = ts_node_named_child_count(a);
  for (uint32_t i = 0; i < count; ++i) {
    TSNode c = ts_node_named_child(a, i);
    TSSymbol k = ts_node_symbol(c);
    if (k == S.comment) continue;
    if (k == S.keyword_argument) {
      if (keywords) keywords->emplace_back(text(field(c, S.f_name)), field(c, S.f_value));
      continue;
    }
    if (k == S.list_splat || k == S.dictionary_splat) continue;
    out.push_back(c);
  }
  return out;
}

std::string_view AttentionSyntax::callee(TSNode call, TSNode* object) const {
  TSNode f = field(call, S.f_function);
  if (ts_node_is_null(f)) return {};
  if (ts_node_symbol(f) == S.attribute) {
    if (object) *object = field(f, S.f_object);
    return text(field(f, S.f_attribute));
  }
  return text(f);
}

AttentionSyntax::Operands AttentionSyntax::product_operands(TSNode n) const {
  Operands o;
  n = unparen(n);
  if (ts_node_is_null(n)) return o;
  TSSymbol k = ts_node_symbol(n);
  if (k == S.binary_operator) {
    TSNode op = field(n, S.f_operator);
    if (ts_node_is_null(op) || text(op) != "@") return o;
    o.a = field(n, S.f_left);
    o.b = field(n, S.f_right);
    o.ok = true;
    return o;
  }
  if (k != S.call) return o;
  TSNode object{};
  std::string_view name = callee(n, &object);
  std::vector<std::pair<std::string_view, TSNode>> kw;
  std::vector<TSNode> as = args(n, &kw);
  auto keyword = [&](std::string_view key) {
    for (auto& [k2, v] : kw)
      if (k2 == key) return v;
    return TSNode{};
  };
  if (name == "matmul" || name == "bmm" || name == "mm") {
    o.batched = name == "bmm";
    if (as.size() >= 2) o.a = as[0], o.b = as[1];
    else if (as.size() == 1 && !ts_node_is_null(object)) o.a = object, o.b = as[0];
  } else if (name == "baddbmm") {
    o.batched = true;
    if (as.size() >= 3) o.bias = as[0], o.a = as[1], o.b = as[2];
    else if (as.size() == 2 && !ts_node_is_null(object)) o.bias = object, o.a = as[0], o.b = as[1];
    else {
      o.bias = keyword("input");
      o.a = keyword("batch1");
      o.b = keyword("batch2");
    }
  } else if (name == "einsum") {
    if (as.size() != 3) return o;
    for (char c : text(as[0]))
      if (c != ' ' && c != '"' && c != '\'') o.subscripts.push_back(c);
    if (o.subscripts.empty()) o.subscripts = "?";
    o.a = as[1];
    o.b = as[2];
  }
  o.ok = !ts_node_is_null(o.a) && !ts_node_is_null(o.b);
  return o;
}

TSNode AttentionSyntax::untransposed(TSNode n, bool batched) const {
  n = unparen(n);
  if (ts_node_is_null(n)) return TSNode{};
  if (ts_node_symbol(n) == S.attribute && text(field(n, S.f_attribute)) == "mT") return field(n, S.f_object);
  if (ts_node_symbol(n) != S.call) return TSNode{};
  TSNode object{};
  std::string_view name = callee(n, &object);
  std::vector<TSNode> as = args(n);
  if (name == "transpose") {
    TSNode x = object;
    if (as.size() == 3) x = as[0], as.erase(as.begin());
    else if (as.size() != 2 || ts_node_is_null(object)) return TSNode{};
    std::string d0(trim(text(as[0]))), d1(trim(text(as[1])));
    std::set<std::string> dims{d0, d1};
    if (dims == std::set<std::string>{"-2", "-1"} || dims == std::set<std::string>{"2", "3"}) return x;
    if (batched && dims == std::set<std::string>{"1", "2"}) return x;
    return TSNode{};
  }
  if (name == "permute" && !ts_node_is_null(object)) {
    std::string all;
    for (TSNode a : as) all += std::string(trim(text(a))) + ",";
    if (all == "0,1,3,2," || (batched && all == "0,2,1,")) return object;
  }
  return TSNode{};
}

std::string AttentionSyntax::assigned_name(const ir::Node& n) const {
  const Range& r = n.range;
  if (!r.valid() || r.begin_byte > src_.size()) return {};
  size_t ls = src_.rfind('\n', r.begin_byte == 0 ? 0 : r.begin_byte - 1);
  ls = (ls == std::string_view::npos || r.begin_byte == 0) ? 0 : ls + 1;
  std::string_view before = trim(src_.substr(ls, r.begin_byte - ls));
  if (before.size() < 2 || before.back() != '=' || std::string_view("=<>!+-*/").find(before[before.size() - 2]) != std::string_view::npos)
    return {};
  std::string_view target = trim(before.substr(0, before.size() - 1));
  if (size_t colon = target.find(':'); colon != std::string_view::npos) target = trim(target.substr(0, colon));
  return is_ident(target) ? std::string(target) : std::string();
}

bool AttentionSyntax::inside(const Range& r, TSNode n) {
  return r.valid() && r.begin_byte >= ts_node_start_byte(n) && r.end_byte <= ts_node_end_byte(n) &&
         r.end_byte > r.begin_byte;
}

TSNode AttentionSyntax::other_operand(TSNode l, TSNode r, const ir::Node& chain, const ir::Node& term) const {
  if (ts_node_is_null(l) || ts_node_is_null(r)) return TSNode{};
  if (inside(term.range, l) && !inside(term.range, r)) return l;
  if (inside(term.range, r) && !inside(term.range, l)) return r;
  if (inside(chain.range, l) && !inside(chain.range, r)) return r;
  if (inside(chain.range, r) && !inside(chain.range, l)) return l;
  std::string name = assigned_name(chain);
  if (name.empty()) {  // `scores += bias` made the scores: the name it assigns
    TSNode c = exact(chain.range);
    if (!ts_node_is_null(c) && ts_node_symbol(c) == S.augmented_assignment) name = text(field(c, S.f_left));
  }
  if (!name.empty()) {
    if (text(unparen(l)) == name && text(unparen(r)) != name) return r;
    if (text(unparen(r)) == name && text(unparen(l)) != name) return l;
  }
  if (const std::string* t = str_attr(term, "name")) {
    if (text(unparen(l)) == *t && text(unparen(r)) != *t) return l;
    if (text(unparen(r)) == *t && text(unparen(l)) != *t) return r;
  }
  return TSNode{};
}

TSNode AttentionSyntax::added_term(const ir::Function& fn, ir::NodeId step, ir::NodeId chain_in) const {
  const ir::Node& st = fn.nodes[step];
  ir::NodeId t = ir::kNoNode;
  for (ir::NodeId in : st.inputs)
    if (in != chain_in) t = in;
  if (t == ir::kNoNode) return TSNode{};
  TSNode n = unparen(exact(st.range));
  if (ts_node_is_null(n)) return TSNode{};
  TSSymbol k = ts_node_symbol(n);
  if (k == S.call && callee(n) == "baddbmm") return product_operands(n).bias;
  if (k == S.binary_operator || k == S.augmented_assignment)
    return other_operand(field(n, S.f_left), field(n, S.f_right), fn.nodes[chain_in], fn.nodes[t]);
  if (k == S.assignment) {  // `scores += bias` may be lowered at the statement
    TSNode right = field(n, S.f_right);
    if (!ts_node_is_null(right) && ts_node_symbol(unparen(right)) == S.binary_operator)
      return other_operand(field(unparen(right), S.f_left), field(unparen(right), S.f_right), fn.nodes[chain_in],
                           fn.nodes[t]);
  }
  return TSNode{};
}

std::string AttentionSyntax::factor_text(const ir::Function& fn, const ir::Node& scale) const {
  if (scale.inputs.size() < 2) return {};
  // As written at the step (`scores * scaling`): a variable's value where it is used,
  // not the value of one of its assignments.
  TSNode st = unparen(exact(scale.range));
  if (!ts_node_is_null(st) && ts_node_symbol(st) == S.binary_operator) {
    TSNode l = unparen(field(st, S.f_left)), r = unparen(field(st, S.f_right));
    const ir::Node& x = fn.nodes[scale.inputs[0]];
    TSNode f = inside(x.range, l) && !inside(x.range, r) ? r : inside(x.range, r) && !inside(x.range, l) ? l : TSNode{};
    if (ts_node_is_null(f)) {  // `scores * scaling` with the scores in a variable
      std::string name = assigned_name(x);
      if (!name.empty() && text(l) == name) f = r;
      else if (!name.empty() && text(r) == name && std::string_view(text(ts_node_child(st, 1))) == "*") f = l;
    }
    if (!ts_node_is_null(f) && writable(text(f))) return std::string(text(f));
  }
  const ir::Node& f = fn.nodes[scale.inputs[1]];
  if (f.op == "input" || f.op == "name")
    if (const std::string* t = str_attr(f, "name")) return *t;
  if (const std::string* t = str_attr(f, "text")) return *t;
  TSNode n = exact(f.range);
  if (!ts_node_is_null(n) && writable(text(n))) return std::string(text(n));
  return {};
}

bool AttentionSyntax::matmul_form(const std::string& sub) {
  size_t comma = sub.find(','), arrow = sub.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || comma > arrow) return false;
  std::string a = sub.substr(0, comma), b = sub.substr(comma + 1, arrow - comma - 1), c = sub.substr(arrow + 2);
  size_t n = a.size();
  if (n < 2 || b.size() != n || c.size() != n) return false;
  std::string pre = a.substr(0, n - 2);
  return b.substr(0, n - 2) == pre && c.substr(0, n - 2) == pre && a[n - 1] == b[n - 2] && c[n - 2] == a[n - 2] &&
         c[n - 1] == b[n - 1] && a[n - 1] != a[n - 2] && b[n - 1] != a[n - 1];
}

int AttentionSyntax::standard_einsums(const std::string& scores, const std::string& out) {
  auto split = [](const std::string& s, std::string& a, std::string& b, std::string& c) {
    size_t comma = s.find(','), arrow = s.find("->");
    if (comma == std::string::npos || arrow == std::string::npos || comma > arrow) return false;
    a = s.substr(0, comma), b = s.substr(comma + 1, arrow - comma - 1), c = s.substr(arrow + 2);
    return a.size() >= 2 && a.size() == b.size() && a.size() == c.size();
  };
  std::string a, b, c, d, e, f;
  if (!split(scores, a, b, c) || !split(out, d, e, f)) return 0;
  size_t n = a.size();
  std::string pre = a.substr(0, n - 2);
  if (b.substr(0, n - 2) != pre || c.substr(0, n - 2) != pre || a[n - 1] != b[n - 1] || c[n - 2] != a[n - 2] ||
      c[n - 1] != b[n - 2])
    return 0;
  size_t m = d.size();
  std::string q = d.substr(0, m - 2);
  if (e.substr(0, m - 2) != q || d[m - 1] != e[m - 2]) return 0;
  std::string want = q + d[m - 2] + e[m - 1];
  if (f == want) return 1;
  std::string fs = f, ws = want;
  std::sort(fs.begin(), fs.end());
  std::sort(ws.begin(), ws.end());
  return fs == ws ? 2 : 0;
}

}  // namespace mlsem::python::attention
