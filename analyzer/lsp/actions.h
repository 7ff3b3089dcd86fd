// Edits the language server offers for findings: rewrites that are safe to apply
// (the code computes exactly what it computed before) and suppression comments.
// Byte offsets into the document; the server converts them to LSP positions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/finding.h"
#include "lsp/text.h"

namespace mlsem::lsp {

struct Edit {
  size_t begin = 0, end = 0;  // bytes [begin, end) are replaced
  std::string text;
  std::string title;          // "Replace with F.gelu(x, approximate=\"tanh\")"
};

// For each finding, its safe rewrite or nullopt: the engine's exact rewrite
// (Finding::rewrite, from a pattern's `rewrite` template: docs/PATTERNS.md) when its
// range is one expression of the file, with the file's names for torch and
// torch.nn.functional; else, for a hand-written GELU (ACT001)
// whose matched code is exactly `0.5 * X * (1 + tanh(...X...))` or the erf form (any
// factor order, `/ 2` for `0.5 *`), X a name, attribute or subscript without calls
// (evaluated once after the rewrite, several times before), in a file that imports
// torch. The replacement is F.gelu(X, approximate="tanh"|"none") with the file's own
// name for torch.nn.functional.
std::vector<std::optional<Edit>> safe_rewrites(const std::vector<Finding>& findings, const Text& text, bool cuda);

// The edit adding `# mlsem: ignore[ID]` (`// mlsem: ignore[ID]` in CUDA) to the
// finding's first line, or ID to the directive already there; nullopt where a
// trailing comment would change the code (a line continued with `\`, a line ending
// inside a string) or where the line is already suppressed.
std::optional<Edit> suppression_edit(const Finding& finding, const Text& text, bool cuda);

}  // namespace mlsem::lsp
