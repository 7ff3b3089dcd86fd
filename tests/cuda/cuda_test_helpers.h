// Helpers shared by the CUDA tests that parse small programs in prelude mode.
#pragma once

#include <string>

#include "cuda/frontend.h"

namespace mlsem::cuda::cuda_test {

// `text` as the file test.cu, in prelude mode (no toolkit headers).
inline ir::Module parse(const std::string& text) {
  CudaOptions o;
  o.cuda_path = "none";
  return build_ir(SourceFile{"test.cu", text}, o);
}

// The function of `m` named `name`, or nullptr.
inline const ir::Function* function(const ir::Module& m, const std::string& name) {
  for (const auto& f : m.functions)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace mlsem::cuda::cuda_test
