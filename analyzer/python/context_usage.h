// Context facts on how code is used (python/context_usage.cpp): modular sources of
// generated files, dead helpers, experts forwards replaced by a dispatch, module classes
// called only on pooled vectors (docs/IR.md, "Context facts").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <tree_sitter/api.h>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::python {

// Adds Module::attrs file_kind "modular" and Function::attrs unused, fallback (experts)
// and cold to `out`, the lowered IR of `file` whose parse is `root`.
void add_usage_facts(const SourceFile& file, TSNode root, ir::Module& out);

// When `path` names a transformers modular source (modular_X.py) and a file beside it
// (modeling_X.py first, else another *_X.py) starts with a header saying it was
// generated from that source: the generated file's path. Reads at most the first 2 KiB
// of each candidate; never throws.
std::optional<std::string> generated_sibling(std::string_view path);

// When `path` names a transformers modeling file (modeling_X.py) with configuration_X.py
// beside it: that file, whose defaults say which configuration flags are off. Never throws.
std::optional<std::string> configuration_sibling(std::string_view path);

// The configuration flag an `if` condition tests: `config.X`, `self.config.X`, either
// with `is not None`, or `getattr(config, "X", None|False)`; "" for anything else.
std::string config_flag(std::string_view cond);

// Whether the text of a configuration file gives `flag` a false default (`flag=False`,
// `flag: bool = False`, `= None`), with the reason; when `missing_is_false` (a getattr
// with a false default), a flag the file never names is false too. nullopt otherwise.
std::optional<std::string> false_default(std::string_view config, const std::string& flag, bool missing_is_false);

}  // namespace mlsem::python
