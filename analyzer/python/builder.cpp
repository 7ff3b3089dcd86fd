// Python -> IR entry point: lower_file runs one detail::Builder over a parsed file.
// The stages are builder_*.cpp (see builder.h for which file defines what).
#include "python/builder.h"

#include <algorithm>

namespace mlsem::python {
namespace detail {

void Builder::run() {
  index_block(root_, "", -1, 0);
  summary_.assign(functions_.size(), Summary::kUnknown);
  for (size_t i = 0; i < functions_.size(); ++i)
    if (summary_[i] == Summary::kUnknown) lower_function(static_cast<int>(i));
  lower_module_code();
  std::stable_sort(out_.functions.begin(), out_.functions.end(),
                   [](const ir::Function& a, const ir::Function& b) {
                     return a.range.begin_byte < b.range.begin_byte;
                   });
}

}  // namespace detail

void lower_file(const SourceFile& file, TSNode root, ir::Module& out) {
  detail::Builder(file, root, out).run();
}

}  // namespace mlsem::python
