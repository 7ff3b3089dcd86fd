// CUDA frontend: Clang LibTooling AST of a .cu/.cuh file -> semantic IR (docs/IR.md,
// "CUDA vocabulary"). Built only when Clang is found (MLSEM_WITH_CUDA).
#pragma once

#include <string>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::cuda {

struct CudaOptions {
  std::string compile_commands_dir;  // -p: directory holding compile_commands.json ("" = none)
  std::string cuda_path;             // toolkit root; "" = detect, "none" = use the prelude only
};

// Never throws on bad input: parse errors and missing includes become diagnostics.
ir::Module build_ir(const SourceFile& file, const CudaOptions& options);

}  // namespace mlsem::cuda
