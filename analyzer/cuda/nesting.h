// How deeply a CUDA source nests brackets and template arguments, before Clang sees it.
// Clang's parser recurses once per level and overflows an 8 MB thread stack at a few
// thousand levels (`W<W<W<...>>>`, `((((...))))`): the whole process dies, not just
// the file. No Clang here, so it is unit-tested on its own.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "core/source.h"

namespace mlsem::cuda {

// Files nesting deeper than this are not parsed (a diagnostic says so). Clang's own
// default for brackets is 256 (-fbracket-depth); real code (CUTLASS, CuTe) stays far below.
inline constexpr size_t kMaxNesting = 256;

// The position (1-based line, byte column) where `text` first nests deeper than
// `limit`, counting (), [], {} and template angle brackets, outside comments, string
// and character literals. A '<' counts when it follows an identifier, '<', ',' or
// "template" (spaces allowed); ';' and every closing bracket end the angle brackets
// opened since, as a parser would, so comparisons (`i < n;`) never add up.
std::optional<Position> too_deep(std::string_view text, size_t limit = kMaxNesting);

}  // namespace mlsem::cuda
