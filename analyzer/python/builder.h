// Lowering of a parsed Python file to IR functions (docs/IR.md, Python vocabulary).
#pragma once

#include <tree_sitter/api.h>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

// Appends one ir::Function per def (and "<module>" for top-level code) to `out`,
// plus diagnostics for what could not be analyzed. `root` is the parse of `file`.
void lower_file(const SourceFile& file, TSNode root, ir::Module& out);

}  // namespace mlsem::python
