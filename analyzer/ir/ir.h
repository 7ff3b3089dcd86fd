// The semantic IR: per function, the dataflow of operations in one canonical
// vocabulary. Frontends (python/, cuda/) build it; the engine only reads it.
// The vocabulary of op names and attributes is documented in docs/IR.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/source.h"

namespace mlsem::ir {

using NodeId = uint32_t;
inline constexpr NodeId kNoNode = UINT32_MAX;

// Attribute values: flags, integers (dims), reals (constants), text (names, dtypes).
using Attr = std::variant<bool, int64_t, double, std::string>;

struct Node {
  std::string op;               // canonical op name, e.g. "matmul", "softmax", "load"
  std::vector<NodeId> inputs;   // operands, in the order docs/IR.md gives for the op
  std::map<std::string, Attr> attrs;
  Range range;                  // the source that produced this node
  uint32_t region = 0;          // innermost enclosing region (index into Function::regions)
  Range site;                   // a helper's result inlined into a caller: the call (where a user edits)

  const Attr* attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? nullptr : &it->second;
  }
};

// A syntactic context a node sits in: the function body, a loop, a `with` block,
// an `if` on thread-dependent data. Patterns test these with `inside`.
struct Region {
  std::string kind;             // "function", "loop", "with", "if", ...
  uint32_t parent = 0;          // enclosing region; region 0 is the function body (its own parent)
  std::map<std::string, Attr> attrs;  // e.g. loop: {"training": true}; with: {"context": "torch.no_grad"}
  Range range;
};

struct Function {
  std::string name;             // qualified: "Class.method", "outer.inner", "kernel_name"
  Range range;
  std::vector<Node> nodes;      // topologically ordered: inputs precede their users
  std::vector<Region> regions;  // regions[0] is the function body
  std::map<std::string, Attr> attrs;  // e.g. CUDA: {"global": true}

  // Users of each node, computed on demand by the engine (see engine/graph.h).
};

struct Module {
  std::string path;
  std::string language;         // "python" | "cuda"
  std::vector<Function> functions;
  std::vector<Diagnostic> diagnostics;  // syntax errors etc.; analysis continues regardless
  // Inline suppressions by line: `# mlsem: ignore[ATT001]`, `# noqa: ATT001`, or
  // `// mlsem: ignore` in CUDA. An empty list suppresses every rule on that line.
  std::map<uint32_t, std::vector<std::string>> suppressions;
};

}  // namespace mlsem::ir
