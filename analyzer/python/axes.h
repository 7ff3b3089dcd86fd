// Axis roles: a pass over a lowered Python function that follows, for each tensor value,
// what its axes are (batch, heads, positions, features) through reshapes, permutes,
// splits, slices, einops and einsum, and from that recognizes attention by what it
// computes: scores that contract q and k over features, a softmax over the key axis,
// and a product with v over that same axis, whatever the layout (docs/IR.md, "Axis roles").
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace mlsem::python {

enum class AxisRole : uint8_t { kUnknown, kBatch, kHeads, kPositions, kFeatures, kCopies };

struct Axis {
  uint32_t id = 0;  // identity: the same axis through transposes and slices (0: not tracked)
  AxisRole role = AxisRole::kUnknown;
  bool one = false;  // of size 1 (x[:, :1], view(B, 1, H, D), unsqueeze)
};

// The axes of one value. Without `full`, only the trailing axes are known (a Linear's
// output: [..., features]); `known` is false when nothing is.
struct AxisShape {
  std::vector<Axis> axes;
  bool full = false;
  bool known = false;
};

// The role a size argument's spelling suggests: `bsz` batch, `self.num_heads` heads,
// `seq_len`/`h * w` positions, `head_dim`/`C // self.num_heads` features.
AxisRole role_of_size(std::string_view text);

// What a product (`matmul`, einsum included) contracts: the contracted axis of each
// operand, and the ids of the output axes that come from one operand only.
struct Contraction {
  Axis a, b;
  std::vector<uint32_t> free_a, free_b;
  bool clean = false;  // exactly one contracted axis
};

struct AxisFacts {
  std::vector<AxisShape> shapes;          // by node id
  std::vector<Contraction> contractions;  // by node id (empty for non-products)
};

// The axes of every node of `fn`. Pure: reads attributes only.
AxisFacts infer_axes(const ir::Function& fn);

// Annotates `fn` in place: `axes` (text, docs/IR.md) on the nodes of attention-shaped
// chains, and on each product with the probabilities `attention` (true: the axes line
// up; false: they provably do not), `attention_why` when false, and `single_query`
// when the scores have one query per sequence (pooling). Bounded: functions without a
// softmax are skipped; each trace stops after a fixed number of steps.
void annotate_axes(ir::Function& fn);

// "b h t d": one letter per axis (b batch, h heads, t positions, d features, r copies,
// ? unknown, 1 size one), "… " first when only the trailing axes are known.
std::string axes_text(const AxisShape& s);

}  // namespace mlsem::python
