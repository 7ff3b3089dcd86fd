// Graph breaks in code torch.compile traces (docs/IR.md, "Graph breaks"): which functions
// TorchDynamo traces (a function decorated @torch.compile, a function or module passed to
// torch.compile(...) in the file, and the methods, same-file functions and submodules they
// call), and, in them, the constructs it cannot trace: `graph_break` nodes that CMP001's
// patterns match (patterns/python/compile.toml). Called by add_compile_facts (compiled.cpp).
#pragma once

#include <tree_sitter/api.h>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

void add_graph_breaks(const SourceFile& file, TSNode root, ir::Module& out);

}  // namespace mlsem::python
