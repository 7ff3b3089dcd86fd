// Helpers for the Python frontend tests: build IR from a snippet, find functions and
// nodes, follow inputs. Failures name what was looked for and print the IR.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "ir/print.h"
#include "python/frontend.h"

namespace mlsem::pytest {

inline ir::Module build(std::string source) {
  return python::build_ir(SourceFile{"snippet.py", std::move(source)});
}

inline const ir::Function* function(const ir::Module& m, std::string_view name) {
  for (const ir::Function& f : m.functions)
    if (f.name == name) return &f;
  return nullptr;
}

inline std::vector<ir::NodeId> nodes_with_op(const ir::Function& f, std::string_view op) {
  std::vector<ir::NodeId> out;
  for (size_t i = 0; i < f.nodes.size(); ++i)
    if (f.nodes[i].op == op) out.push_back(static_cast<ir::NodeId>(i));
  return out;
}

inline std::string attr_text(const ir::Node& n, const std::string& key) {
  const ir::Attr* a = n.attr(key);
  return a ? ir::attr_to_text(*a) : "<absent>";
}

inline bool flag(const ir::Node& n, const std::string& key) {
  const ir::Attr* a = n.attr(key);
  return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
}

// The input `k` of node `id`, or nullptr.
inline const ir::Node* input(const ir::Function& f, ir::NodeId id, size_t k) {
  if (id >= f.nodes.size() || k >= f.nodes[id].inputs.size()) return nullptr;
  return &f.nodes[f.nodes[id].inputs[k]];
}
inline ir::NodeId input_id(const ir::Function& f, ir::NodeId id, size_t k) {
  if (id >= f.nodes.size() || k >= f.nodes[id].inputs.size()) return ir::kNoNode;
  return f.nodes[id].inputs[k];
}

// Follows input 0 from `id` and returns the ops seen, e.g. {"softmax","mask","scale","matmul"}.
inline std::vector<std::string> chain(const ir::Function& f, ir::NodeId id, size_t length) {
  std::vector<std::string> ops;
  while (id != ir::kNoNode && id < f.nodes.size() && ops.size() < length) {
    ops.push_back(f.nodes[id].op);
    id = f.nodes[id].inputs.empty() ? ir::kNoNode : f.nodes[id].inputs[0];
  }
  return ops;
}

// A function's text fact `key` (the context stages' `fallback`, `unused`, ...): "" when
// absent, "<no function>" for a null function, "<not text>" for another kind of value.
inline std::string fact(const ir::Function* f, const std::string& key) {
  if (!f) return "<no function>";
  auto it = f->attrs.find(key);
  if (it == f->attrs.end()) return "";
  const std::string* s = std::get_if<std::string>(&it->second);
  return s ? *s : "<not text>";
}

}  // namespace mlsem::pytest
