// Program facts over the lowered IR of one file: what a host-device sync reads and
// whether it runs on every iteration of its loop (docs/IR.md, "Program facts").
#pragma once

#include <tree_sitter/api.h>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

// Adds attributes to the `sync` nodes of `out` (guarded, decides_exit, host_value,
// printed, module_move, step_output, step_syncs, test_code, timing, gpu_file) and `guard`
// to `if` regions. Reads the syntax tree only.
void annotate_program(const SourceFile& file, TSNode root, ir::Module& out);

}  // namespace mlsem::python
