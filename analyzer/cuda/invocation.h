// The compiler invocation: where the CUDA toolkit is, the clang driver arguments that
// stand in for nvcc's (toolkit mode or the built-in prelude), flags taken from a
// compile_commands.json entry, the precompiled preamble of the toolkit headers shared by
// every file, and the diagnostics consumer that turns Clang errors into module
// diagnostics. No AST here.
#pragma once

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/PrecompiledPreamble.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/source.h"
#include "cuda/frontend.h"

namespace mlsem::cuda::detail {

inline constexpr const char* kVirtualDir = "/__mlsem_cuda__";
inline constexpr const char* kGpuArch = "sm_90";
// Headers every toolkit-mode file gets through the shared precompiled preamble: the
// toolkit's and the standard library's headers that CUDA projects include most (measured
// on bench/cuda_corpus.md's corpus: parsed per file, they were most of its cost). A file
// that does not include one only sees more declarations than nvcc would show it.
// curand_kernel.h since 2026-11-24 (its skip-ahead tables declared by nvcc_compat.h,
// not parsed): DeepSpeed's per-file median 77 -> 54 ms (medians of 5 and 3 rounds), the
// -j2 peak unchanged (bench/cuda_corpus.md).
inline constexpr const char* kToolkitPreamble =
    "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
    "#include \"/__mlsem_cuda__/nvcc_compat.h\"\n"
    "#if __has_include(<curand_kernel.h>)\n#include <curand_kernel.h>\n#endif\n"
    "#if __has_include(<cooperative_groups.h>)\n#include <cooperative_groups.h>\n#endif\n"
    "#if __has_include(<cooperative_groups/reduce.h>)\n#include <cooperative_groups/reduce.h>\n#endif\n"
    "#if __has_include(<cublas_v2.h>)\n#include <cublas_v2.h>\n#endif\n"
    "#if __has_include(<cublasLt.h>)\n#include <cublasLt.h>\n#endif\n"
    "#if __has_include(<cuda.h>)\n#include <cuda.h>\n#endif\n"
    "#if __has_include(<cuda_fp8.h>)\n#include <cuda_fp8.h>\n#endif\n"
    "#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <cstdint>\n#include <cassert>\n"
    "#include <cfloat>\n#include <climits>\n#include <cmath>\n#include <ctime>\n"
    "#include <string>\n#include <vector>\n#include <array>\n#include <map>\n#include <unordered_map>\n"
    "#include <memory>\n#include <mutex>\n#include <algorithm>\n#include <iostream>\n";
// C headers the prelude stands in for (their contents would clash with it).
inline constexpr const char* kPreludeCHeaders[] = {
    "math.h", "cmath", "stdio.h", "cstdio", "stdlib.h", "cstdlib", "stdint.h", "cstdint",
    "float.h", "cfloat", "assert.h", "cassert", "limits.h", "climits", "stddef.h", "cstddef"};
inline constexpr size_t kMaxDiagnostics = 20;

// "" when the prelude is to be used.
std::string detect_toolkit(const CudaOptions& options);

// Flags of a compile_commands.json entry that matter to parsing (-I, -D, -U, -include,
// -std, the GPU arch), nvcc spellings translated; everything else is dropped.
std::vector<std::string> translate_flags(const std::vector<std::string>& cmd, const std::string& directory,
                                         const std::string& source);

struct CommandLine {
  std::vector<std::string> args;  // driver arguments, without the source path
  std::string toolkit;            // "" = prelude mode
};

CommandLine make_command_line(const std::string& main_path, const CudaOptions& options,
                              std::vector<Diagnostic>& diagnostics, const std::string& user_path);

// A parse with the toolkit preamble holds this shared, taken after toolkit_preamble()
// returns; building a preamble holds it alone, so no parse runs beside a build (the
// build is the peak of a run's memory).
std::shared_mutex& preamble_build_gate();

// Hands the memory malloc holds free back to the system (glibc keeps it per thread).
void release_free_memory();

// The toolkit headers parsed once per process (per distinct flags) into an in-memory
// precompiled preamble; null when building it failed (remembered: no retry per file).
std::shared_ptr<clang::PrecompiledPreamble> toolkit_preamble(const std::string& flags_key,
                                                             const clang::CompilerInvocation& invocation,
                                                             llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> vfs);

// Errors (and fatal errors, e.g. a missing include) become ir::Module diagnostics;
// warnings are not ours to report.
class CollectDiagnostics : public clang::DiagnosticConsumer {
 public:
  using Locate = std::function<Range(clang::SourceLocation, const clang::SourceManager&)>;
  CollectDiagnostics(std::string path, std::vector<Diagnostic>& out, Locate locate)
      : path_(std::move(path)), out_(out), locate_(std::move(locate)) {}

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override;
  // After the parse: notes on missing headers (how many errors followed from them).
  // Clang calls it at the end of the source file; idempotent.
  void finish() override;
  // Some error was one nvcc accepts, and was dropped.
  bool accepted_any() const { return accepted_; }

 private:
  std::string path_;
  std::vector<Diagnostic>& out_;
  Locate locate_;
  std::vector<size_t> missing_headers_;  // indexes into out_
  size_t after_missing_ = 0;
  bool accepted_ = false;
  bool finished_ = false;
};

}  // namespace mlsem::cuda::detail
