// Context facts: where a file's code runs, computed after lowering from the syntax
// tree and the IR (docs/IR.md, "Context facts"). The engine demotes findings in
// fallbacks, tests, op references and parity variants (docs/PATTERNS.md, "Context").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <tree_sitter/api.h>
#include <utility>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

// Adds Module::attrs file_kind, Function::attrs (self, fallback, returns-weights,
// reference, parity) and Region::attrs fallback (if/else branches) to `out`, the
// lowered IR of `file` whose parse is `root`.
void add_context_facts(const SourceFile& file, TSNode root, ir::Module& out);

// The kind of file a path names and why: ("test", ...) or ("reference", ...).
// Why a file of Python source `text` is bound by a reinforcement-learning environment (it
// imports gym, gymnasium, envpool, procgen or dm_control and calls `env*.step(`), or nullopt:
// context kind `env-bound`.
std::optional<std::string> environment_bound(std::string_view text);
std::optional<std::pair<std::string, std::string>> file_kind(std::string_view path);

}  // namespace mlsem::python
