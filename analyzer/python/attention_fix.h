// What F.scaled_dot_product_attention needs to replace a hand-written attention, read
// from the IR and the syntax after the axis pass (docs/IR.md, "Attention fixes"): the
// operands as the user spelled them at the products, the terms added to the scores as one
// attn_mask, the scale, and why no fix is offered when SDPA cannot compute the same
// numbers (a bias added in a reshaped view, probabilities used for more than the product
// with v, scores also used for a logsumexp, a block-sparse or Nystrom piece).
#pragma once

#include <tree_sitter/api.h>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

// Annotates, on each product of attention probabilities with values in `out`:
//   sdpa_q, sdpa_k, sdpa_v    the operands to pass (placeholders q, k, v when unsure)
//   sdpa_mask                 the attn_mask expression (every term added to the scores)
//   sdpa_causal               true: the only mask is causal (is_causal=True)
//   sdpa_scale                the scale= argument ("1.0" when the scores are not scaled)
//   sdpa_note                 what the fix assumes or changes (a float mask, pre-scaled q)
//   context_variant           why SDPA would not compute the same numbers: the engine
//                             demotes the finding (docs/PATTERNS.md, "Context")
// and (mark_ungrouped_kv_copies) sets `repeat_one` on K/V head copies of a model file
// whose configurations never group K/V heads.
void annotate_attention_fixes(const SourceFile& file, TSNode root, ir::Module& out);

// timm model files register their configurations: when none sets a K/V head count to a
// number, `num_kv_heads or num_heads` leaves one group and the copies never copy
// (attention_gqa.cpp).
void mark_ungrouped_kv_copies(const SourceFile& file, ir::Module& out);

}  // namespace mlsem::python
