// Builder emission: appends IR nodes and attributes to the function being built,
// and reads back what was emitted (constants, flags, scalar-ness, mask origins).
// The other stages emit only through these.
#include "python/builder.h"

#include <algorithm>

#include "python/names.h"

namespace mlsem::python::detail {

// ------------------------------------------------------------------ emission

const ir::Node* Builder::node_if(NodeId id) const {
  return id == kNoNode ? nullptr : &st_->fn.nodes[id];
}

NodeId Builder::emit(std::string op, std::vector<NodeId> inputs, TSNode src) {
  ir::Node n;
  n.op = std::move(op);
  inputs.erase(std::remove(inputs.begin(), inputs.end(), kNoNode), inputs.end());
  n.inputs = std::move(inputs);
  n.range = range_of(src);
  n.region = st_->region;
  st_->fn.nodes.push_back(std::move(n));
  if (st_->inline_depth > 0) ++st_->inlined_nodes;
  return static_cast<NodeId>(st_->fn.nodes.size() - 1);
}

NodeId Builder::emit_const(TSNode src, std::optional<double> value) {
  NodeId id = emit("const", {}, src);
  if (value) set(id, "value", *value);
  set(id, "text", clip(text(src)));
  return id;
}

NodeId Builder::emit_scalar(TSNode src, bool sqrt_like) {
  NodeId id = emit("scalar", {}, src);
  set(id, "text", clip(text(src)));
  set(id, "sqrt_like", sqrt_like);
  return id;
}

NodeId Builder::emit_name(TSNode src, std::string name) {
  NodeId id = emit("name", {}, src);
  bool causal = contains_causal(name);
  set(id, "name", std::move(name));
  if (causal) set(id, "causal", true);
  return id;
}

NodeId Builder::as_node(const Value& v, TSNode src) {
  if (v.node != kNoNode) return v.node;
  if (v.module >= 0) return emit_name(src, std::string(text(src)));
  if (v.is_tuple) {
    NodeId id = emit("call", v.items, src);
    set(id, "callee", std::string("tuple"));
    return id;
  }
  return kNoNode;
}

std::string_view Builder::op_of(NodeId id) const {
  const ir::Node* n = node_if(id);
  return n ? std::string_view(n->op) : std::string_view{};
}

std::optional<double> Builder::const_value(NodeId id) const {
  const ir::Node* n = node_if(id);
  if (!n || n->op != "const") return std::nullopt;
  const ir::Attr* a = n->attr("value");
  if (!a || !std::holds_alternative<double>(*a)) return std::nullopt;
  return std::get<double>(*a);
}

bool Builder::flag(NodeId id, const char* key) const {
  const ir::Node* n = node_if(id);
  if (!n) return false;
  const ir::Attr* a = n->attr(key);
  return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
}

std::string_view Builder::str_attr(NodeId id, const char* key) const {
  const ir::Node* n = node_if(id);
  if (!n) return {};
  const ir::Attr* a = n->attr(key);
  return a && std::holds_alternative<std::string>(*a) ? std::string_view(std::get<std::string>(*a))
                                                       : std::string_view{};
}

bool Builder::scalar_like(NodeId id) const {
  std::string_view op = op_of(id);
  if (op == "const") return const_value(id).has_value();
  if (op == "scalar") return true;
  if (op == "input" || op == "name") {
    std::string_view type = str_attr(id, "type");
    return type == "int" || type == "float" || is_scalar_name(str_attr(id, "name"));
  }
  return false;
}

bool Builder::traces_to(NodeId start, bool want_causal) const {
  std::vector<NodeId> todo{start};
  size_t seen = 0;
  while (!todo.empty() && seen < kTraceLimit) {
    NodeId id = todo.back();
    todo.pop_back();
    const ir::Node* n = node_if(id);
    if (!n) continue;
    ++seen;
    if (n->op == "tril" || n->op == "triu" || flag(id, "causal")) return true;
    if (n->op == "name" || n->op == "input") {
      std::string_view name = str_attr(id, "name");
      if (want_causal ? contains_causal(name) : is_mask_name(name)) return true;
      continue;
    }
    if (n->op == "matmul" || n->op == "softmax" || n->op == "linear") continue;  // a tensor, not a mask
    for (NodeId in : n->inputs) todo.push_back(in);
  }
  return false;
}

}  // namespace mlsem::python::detail
