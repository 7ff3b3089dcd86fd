// Code the file already hands to torch.compile: a `compiled` context fact (docs/IR.md,
// "Context facts") on the functions a `@torch.compile` decorator compiles, or on the whole
// file when it calls torch.compile(...) on a model. Rules whose fix is what Inductor does
// by itself (fusing pointwise chains, norms, activations and epilogues) list `compiled` in
// their demote_in; the others (attention, host syncs, placement) do not.
#pragma once

#include <tree_sitter/api.h>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

void add_compile_facts(const SourceFile& file, TSNode root, ir::Module& out);

}  // namespace mlsem::python
