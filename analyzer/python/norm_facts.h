// Norm facts: what a hand-written norm's fix needs to know beyond its own body,
// computed after lowering from the syntax tree (docs/IR.md, "Norm facts").
#pragma once

#include <tree_sitter/api.h>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

// A class of the file that is also built with a multi-dimensional shape
// (`CohereLayerNorm(hidden_size=(num_heads, head_dim))`: a per-head QK-norm with a
// 2-D weight) gets the attribute `shape_tuple` on every `mean` node lowered from
// its body, in its own methods and where they are inlined: the text says where.
// A file whose `_keep_in_fp32_modules` names norms (GPT-OSS) gets `weight_fp32` on the
// `mean` nodes of its classes: their weights are fp32 while the activations are not.
// A class whose name says it is cepstral mean and variance normalization (`*CMVN*`:
// input features normalized once per call) gets `cold` on those nodes the same way.
void add_norm_facts(const SourceFile& file, TSNode root, ir::Module& out);

// Linear and Conv nodes with a bias (LAY001's): `checkpoint_names` in a file that loads
// published weights, `shared_module` where the layer is applied more than once in a
// function. Test files included: the rule's exclusions must hold wherever it reports.
void add_layer_facts(const SourceFile& file, ir::Module& out);

}  // namespace mlsem::python
