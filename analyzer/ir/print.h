// A readable text dump of the IR, one line per node (`mlsem ir FILE`, tests).
#pragma once

#include <string>

#include "ir/ir.h"

namespace mlsem::ir {

// module PATH (LANGUAGE)
// function NAME @L:C-L:C
//   region 1 loop parent=0 training=true @L:C-L:C
//   %4 = matmul %2, %3 @L:C-L:C
//   %5 = scale %4, %1 divide=true sqrt_like=true @L:C-L:C in region 1
// followed by diagnostics and suppressions.
std::string to_text(const Module& module);

// One attribute value as the dump writes it: true, -1, 0.5, "text".
std::string attr_to_text(const Attr& value);

}  // namespace mlsem::ir
