// Builder emission: appends IR nodes and attributes to the function being built,
// and reads back what was emitted (constants, flags, scalar-ness, mask origins).
// The other stages emit only through these.
#include "python/builder.h"

#include <algorithm>

#include "python/names.h"

namespace mlsem::python::detail {

// ------------------------------------------------------------------ emission

const ir::Node* Builder::node_if(NodeId id) const {
  if (id == kNoNode) return nullptr;
  if (id < read_floor_) note_read(id);
  return &st_->fn.nodes[id];
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

// The accessors below log what they read of a node outside an inlined body being kept
// (builder_functions.cpp), rather than the whole node: a later call's arguments need
// only agree on that.
std::string_view Builder::op_of(NodeId id) const {
  if (id == kNoNode) return {};
  if (id < read_floor_) note_read(id, SlotRead::kOp);
  return st_->fn.nodes[id].op;
}

std::optional<double> Builder::const_value(NodeId id) const {
  if (op_of(id) != "const") return std::nullopt;
  if (id < read_floor_) note_read(id, SlotRead::kAttr, "value");
  const ir::Attr* a = st_->fn.nodes[id].attr("value");
  if (!a || !std::holds_alternative<double>(*a)) return std::nullopt;
  return std::get<double>(*a);
}

bool Builder::flag(NodeId id, const char* key) const {
  if (id == kNoNode) return false;
  if (id < read_floor_) note_read(id, SlotRead::kAttr, key);
  const ir::Attr* a = st_->fn.nodes[id].attr(key);
  return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
}

std::string_view Builder::str_attr(NodeId id, const char* key) const {
  if (id == kNoNode) return {};
  if (id < read_floor_) note_read(id, SlotRead::kAttr, key);
  const ir::Attr* a = st_->fn.nodes[id].attr(key);
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
    if (id == kNoNode) continue;
    ++seen;
    std::string_view op = op_of(id);  // op, flag, name and inputs read one by one (builder_functions.cpp)
    if (op == "tril" || op == "triu" || flag(id, "causal")) return true;
    if (op == "name" || op == "input") {
      std::string_view name = str_attr(id, "name");
      if (want_causal ? contains_causal(name) : is_mask_name(name)) return true;
      continue;
    }
    if (op == "matmul" || op == "softmax" || op == "linear") continue;  // a tensor, not a mask
    for (NodeId in : inputs_of(id)) todo.push_back(in);
  }
  return false;
}

}  // namespace mlsem::python::detail
