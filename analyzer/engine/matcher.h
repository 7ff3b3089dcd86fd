// Matches one pattern term at one IR node, with backtracking over optional steps,
// alternatives, commutative operands and variable bindings.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/pattern.h"
#include "ir/ir.h"

namespace mlsem {

// A function plus the derived facts the matcher needs (how many users each node has).
class FunctionView {
 public:
  // `module`, when given, holds `fn` and answers "home" (below).
  explicit FunctionView(const ir::Function& fn, const ir::Module* module = nullptr);
  const ir::Function& fn() const { return fn_; }
  const ir::Node& node(ir::NodeId id) const { return fn_.nodes[id]; }
  uint32_t users(ir::NodeId id) const { return users_[id]; }
  // Attributes derived from the graph, usable in predicates like stored ones:
  // "op" (the node's op), "users" (how many nodes use it), "inputs" (its operand count),
  // "data" (it holds data-sized tensors: see data_flow in matcher.cpp), "reduced" (it
  // holds per-row statistics, such as a mean or std + eps: see reduced_flow), "home" (the
  // name of the innermost function whose source holds the node: for a node lowered from an
  // inlined helper, the helper, not the caller).
  // One of them, or nullopt when `key` names none.
  std::optional<ir::Attr> computed_attr(ir::NodeId id, std::string_view key) const;
  // Predicates on a node: its stored attributes, else the computed one of that key
  // (computed only when a predicate asks for it).
  bool holds(const std::vector<Predicate>& preds, ir::NodeId id) const;
  // Is `region` or any region enclosing it of this kind with these attributes?
  bool inside(uint32_t region, const RegionSpec& spec) const;

 private:
  const ir::Function& fn_;
  const ir::Module* module_;
  std::vector<uint32_t> users_;
  // Filled on the first use of "data" or "reduced" (a FunctionView belongs to one thread).
  mutable std::vector<bool> data_;
  mutable std::vector<bool> reduced_;
  void compute_flows() const;
};

struct Match {
  std::vector<std::pair<std::string, ir::NodeId>> labels;  // label -> node it matched
  std::vector<std::pair<std::string, ir::NodeId>> vars;    // $var -> node it bound
  std::vector<ir::NodeId> nodes;                           // every node an op term matched
  ir::NodeId root = ir::kNoNode;

  ir::NodeId label(std::string_view name) const {
    for (const auto& [l, n] : labels)
      if (l == name) return n;
    return ir::kNoNode;
  }
  ir::NodeId var(std::string_view name) const {
    for (const auto& [v, n] : vars)
      if (v == name) return n;
    return ir::kNoNode;
  }
};

// The first match of `term` rooted at `root` (optional steps are tried present first,
// so the first match is the most complete one), or nullopt.
// `distinct` names variables that must bind pairwise different nodes.
std::optional<Match> match_at(const PatternTerm& term, const FunctionView& view, ir::NodeId root,
                              const std::set<std::string>& commutative_ops,
                              const std::vector<std::string>& distinct = {});

}  // namespace mlsem
