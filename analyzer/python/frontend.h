// Python frontend: tree-sitter-python parse tree -> semantic IR (docs/IR.md).
#pragma once

struct TSTree;

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

// Builds the IR of every function (and method) in the file. Never throws on bad
// input: syntax errors become diagnostics and the recovered tree is still analyzed.
ir::Module build_ir(const SourceFile& file);
// The same from a parse of `file.text` the caller already has (an editor's tree,
// reparsed incrementally after each change: lsp/documents.cpp). Not taken over.
ir::Module build_ir(const SourceFile& file, const TSTree* tree);

}  // namespace mlsem::python
