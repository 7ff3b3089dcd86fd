// Walking the IR around a softmax, shared by the attention passes (axes_attention.cpp,
// attention_fix.cpp).
#pragma once

#include <map>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace mlsem::python {

// Each node's users (the later nodes that take it as an input).
inline std::vector<std::vector<ir::NodeId>> users_of(const ir::Function& fn) {
  std::vector<std::vector<ir::NodeId>> users(fn.nodes.size());
  for (ir::NodeId i = 0; i < fn.nodes.size(); ++i)
    for (ir::NodeId in : fn.nodes[i].inputs)
      if (in < i) users[in].push_back(i);
  return users;
}

// From a softmax down to its scores: the nearest product through scaling, masks, biases,
// casts and reshapes (a scale's factor and a mask's mask are not paths), visiting at most
// `max_steps` nodes. Returns the product, or kNoNode; `path` gets the nodes strictly
// between the product and the softmax, from the product up.
inline ir::NodeId scores_of_softmax(const ir::Function& fn, ir::NodeId softmax, size_t max_steps,
                                    std::vector<ir::NodeId>& path) {
  path.clear();
  const ir::Node& sm = fn.nodes[softmax];
  if (sm.inputs.empty()) return ir::kNoNode;
  std::map<ir::NodeId, ir::NodeId> down{{sm.inputs[0], softmax}};  // node -> the node above it
  std::vector<ir::NodeId> todo{sm.inputs[0]};
  ir::NodeId scores = ir::kNoNode;
  for (size_t steps = 0; !todo.empty() && steps < max_steps && scores == ir::kNoNode; ++steps) {
    ir::NodeId id = todo.front();
    todo.erase(todo.begin());
    if (id >= softmax) continue;
    const ir::Node& n = fn.nodes[id];
    if (n.op == "matmul") {
      scores = id;
      break;
    }
    static const std::string_view kThrough[] = {"scale", "mask", "add",  "mul",     "div",      "sub",
                                                "reshape", "cast", "clamp", "permute", "transpose"};
    bool through = false;
    for (std::string_view op : kThrough) through |= n.op == op;
    if (!through) continue;
    size_t limit = n.op == "scale" || n.op == "mask" ? 1 : n.inputs.size();
    for (size_t i = 0; i < limit && i < n.inputs.size(); ++i)
      if (!down.count(n.inputs[i])) {
        down[n.inputs[i]] = id;
        todo.push_back(n.inputs[i]);
      }
  }
  if (scores != ir::kNoNode)
    for (ir::NodeId id = down[scores]; id != softmax; id = down[id]) path.push_back(id);
  return scores;
}

}  // namespace mlsem::python
