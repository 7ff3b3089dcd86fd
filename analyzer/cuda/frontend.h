// CUDA frontend: Clang LibTooling AST of a .cu/.cuh file -> semantic IR (docs/IR.md,
// "CUDA vocabulary"). Built only when Clang is found (MLSEM_WITH_CUDA).
#pragma once

#include <string>
#include <vector>

#include "core/source.h"
#include "ir/ir.h"

namespace mlsem::cuda {

struct CudaOptions {
  std::string compile_commands_dir;  // -p: directory holding compile_commands.json ("" = none)
  std::string cuda_path;             // toolkit root; "" = detect, "none" = use the prelude only
};

// Never throws on bad input: parse errors and missing includes become diagnostics.
ir::Module build_ir(const SourceFile& file, const CudaOptions& options);

// The key under which files share the toolkit preamble (invocation.cpp): their driver
// arguments, less the -I directories that hold none of the headers the preamble
// includes (a project's own include directories, which differ from target to target
// and cannot change what <cuda_runtime.h> or <cuda_fp16.h> resolves to).
std::string preamble_key(const std::vector<std::string>& args);

}  // namespace mlsem::cuda
