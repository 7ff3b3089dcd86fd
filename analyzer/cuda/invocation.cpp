// The compiler invocation (invocation.h): toolkit detection, driver arguments,
// compile_commands.json flags, the shared toolkit preamble, diagnostics.
#include "cuda/invocation.h"

#include "cuda/frontend.h"

#include <clang/Basic/DiagnosticSema.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Sema/Sema.h>
#include <clang/Tooling/JSONCompilationDatabase.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#if __has_include(<mimalloc.h>)
#include <mimalloc.h>
// Weak: null unless the executable links mimalloc (CMake's MLSEM_ALLOCATOR; the tests and
// sanitized builds keep the system's allocator).
extern "C" void mi_option_set(mi_option_t option, long value) __attribute__((weak));
#endif

namespace mlsem::cuda::detail {

namespace fs = std::filesystem;

namespace {

bool has_runtime_header(const fs::path& root) {
  std::error_code ec;
  return fs::exists(root / "include" / "cuda_runtime.h", ec);
}

// GCC's internal include directory (/usr/lib/gcc/<triple>/<version>/include), the
// newest version; "" when there is none.
std::string host_compiler_include() {
  static const std::string dir = [] {
    std::error_code ec;
    std::string best;
    int best_version = -1;
    for (const char* base : {"/usr/lib/gcc/x86_64-linux-gnu", "/usr/lib/gcc/aarch64-linux-gnu"}) {
      for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
        int version = std::atoi(it->path().filename().c_str());
        if (version > best_version && fs::exists(it->path() / "include" / "stddef.h", ec)) {
          best_version = version;
          best = (it->path() / "include").string();
        }
      }
    }
    return best;
  }();
  return dir;
}

}  // namespace

// "" when the prelude is to be used.
std::string detect_toolkit(const CudaOptions& options) {
  if (options.cuda_path == "none") return "";
  if (!options.cuda_path.empty()) return has_runtime_header(options.cuda_path) ? options.cuda_path : "";
  for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
    const char* v = std::getenv(var);
    if (v && *v && has_runtime_header(v)) return v;
  }
  return has_runtime_header("/usr/local/cuda") ? "/usr/local/cuda" : "";
}

std::vector<std::string> translate_flags(const std::vector<std::string>& cmd, const std::string& directory,
                                         const std::string& source) {
  std::vector<std::string> out;
  auto absolute = [&](const std::string& p) {
    return (p.empty() || p[0] == '/' || directory.empty()) ? p : (fs::path(directory) / p).string();
  };
  auto value_of = [&](size_t& i, const std::string& flag, std::string& value) {
    const std::string& a = cmd[i];
    if (a == flag) {
      if (i + 1 >= cmd.size()) return false;
      value = cmd[++i];
      return true;
    }
    if (a.rfind(flag + "=", 0) == 0) { value = a.substr(flag.size() + 1); return true; }
    // -Idir, -DX (short flags glue their value).
    if (flag.size() == 2 && a.rfind(flag, 0) == 0 && a.size() > 2) { value = a.substr(2); return true; }
    return false;
  };
  // nvcc options that take a separate value we must skip.
  static const std::set<std::string> kSkipWithValue = {
      "-o", "-Xcompiler", "-Xptxas", "-Xlinker", "-Xnvlink", "-Xarchive", "-ccbin", "--compiler-bindir",
      "-maxrregcount", "--maxrregcount", "-x", "-MF", "-MT", "-MQ", "--output-file", "-t", "--threads",
      "-rdc", "--relocatable-device-code", "--keep-dir", "-code", "-cudart", "--cudart", "-L", "-l"};
  bool arch_set = false;
  for (size_t i = 1; i < cmd.size(); ++i) {
    const std::string& a = cmd[i];
    std::string v;
    if (a == source || absolute(a) == source) continue;
    if (value_of(i, "-I", v) || value_of(i, "--include-path", v)) {
      out.push_back("-I" + absolute(v));
    } else if (value_of(i, "-isystem", v) || value_of(i, "--system-include", v)) {
      out.push_back("-isystem");
      out.push_back(absolute(v));
    } else if (value_of(i, "-D", v) || value_of(i, "--define-macro", v)) {
      out.push_back("-D" + v);
    } else if (value_of(i, "-U", v) || value_of(i, "--undefine-macro", v)) {
      out.push_back("-U" + v);
    } else if (value_of(i, "-include", v) || value_of(i, "--pre-include", v)) {
      out.push_back("-include");
      out.push_back(absolute(v));
    } else if (value_of(i, "-std", v) || value_of(i, "--std", v)) {
      out.push_back("-std=" + v);
    } else if (value_of(i, "-arch", v) || value_of(i, "--gpu-architecture", v) ||
               value_of(i, "--cuda-gpu-arch", v)) {
      // sm_80, compute_80 or native/all: one device pass is enough for the AST.
      if (!arch_set && v.rfind("sm_", 0) == 0) {
        out.push_back("--cuda-gpu-arch=" + v);
        arch_set = true;
      }
    } else if (value_of(i, "-gencode", v) || value_of(i, "--generate-code", v)) {
      auto pos = v.find("code=sm_");
      if (!arch_set && pos != std::string::npos) {
        std::string arch = v.substr(pos + 5);
        arch = arch.substr(0, arch.find_first_of(",]"));
        out.push_back("--cuda-gpu-arch=" + arch);
        arch_set = true;
      }
    } else if (kSkipWithValue.count(a)) {
      ++i;
    }
    // Anything else (-O3, -g, -lineinfo, --use_fast_math, --expt-*, -W..., -c) is dropped.
  }
  return out;
}

CommandLine make_command_line(const std::string& main_path, const CudaOptions& options,
                              std::vector<Diagnostic>& diagnostics, const std::string& user_path) {
  CommandLine cl;
  cl.toolkit = detect_toolkit(options);
  std::vector<std::string> user_flags;
  if (!options.compile_commands_dir.empty()) {
    std::string error;
    auto db = clang::tooling::JSONCompilationDatabase::loadFromDirectory(options.compile_commands_dir, error);
    if (!db) {
      diagnostics.push_back({user_path, {}, "cannot read compile_commands.json: " + error});
    } else {
      auto commands = db->getCompileCommands(main_path);
      if (!commands.empty())
        user_flags = translate_flags(commands.front().CommandLine, commands.front().Directory, main_path);
    }
  }
  bool arch_given = std::any_of(user_flags.begin(), user_flags.end(),
                                [](const std::string& f) { return f.rfind("--cuda-gpu-arch=", 0) == 0; });
  bool std_given = std::any_of(user_flags.begin(), user_flags.end(),
                               [](const std::string& f) { return f.rfind("-std=", 0) == 0; });
  auto& a = cl.args;
  a = {"clang++", "-x", "cuda", "--cuda-device-only", "-nocudalib", "-fsyntax-only",
       "-Wno-unknown-cuda-version", "-w", "-ferror-limit=0", "-fno-color-diagnostics"};
#ifdef MLSEM_CLANG_RESOURCE_DIR
  if (fs::exists(MLSEM_CLANG_RESOURCE_DIR)) {
    a.push_back("-resource-dir");
    a.push_back(MLSEM_CLANG_RESOURCE_DIR);
  }
#endif
  if (!arch_given) a.push_back(std::string("--cuda-gpu-arch=") + kGpuArch);
  if (!std_given) a.push_back("-std=c++17");
  if (cl.toolkit.empty()) {
    a.push_back("-nocudainc");
    a.push_back("-I" + std::string(kVirtualDir) + "/include");
    a.push_back("-include");
    a.push_back(std::string(kVirtualDir) + "/prelude.h");
  } else {
    a.push_back("--cuda-path=" + cl.toolkit);
    a.push_back("-I" + cl.toolkit + "/include/cccl");
    // Clang knows CUDA up to 12.x; without an SDK version it lowers <<<>>> to the
    // pre-9.2 cudaConfigureCall, which CUDA 13's headers no longer declare.
    a.push_back("-Xclang");
    a.push_back("-target-sdk-version=12.8");
    // nvcc searches the host compiler's own include directory (omp.h, ...) after the
    // others; so does this, behind Clang's builtin headers.
    if (std::string gcc = host_compiler_include(); !gcc.empty()) {
      a.push_back("-idirafter");
      a.push_back(gcc);
    }
  }
  a.insert(a.end(), user_flags.begin(), user_flags.end());
  return cl;
}


void CollectDiagnostics::HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) {
  clang::DiagnosticConsumer::HandleDiagnostic(level, info);
  if (level < clang::DiagnosticsEngine::Error) return;
  // nvcc accepts a __shared__ object with a constructor (cuda::barrier) under
  // `#pragma diag_suppress static_var_with_dynamic_init`; Clang rejects it outright.
  // Nothing the analysis reads depends on it.
  if (info.getID() == clang::diag::err_shared_var_init) {
    accepted_ = true;
    return;
  }
  llvm::SmallString<160> text;
  info.FormatDiagnostic(text);
  bool missing_header = level == clang::DiagnosticsEngine::Fatal || text.str().contains("file not found");
  // After a missing header, errors are mostly its consequences (undeclared types and
  // functions): the missing header is the one diagnostic; the rest are counted.
  if (!missing_headers_.empty() && !missing_header) {
    ++after_missing_;
    return;
  }
  if (out_.size() >= kMaxDiagnostics) return;
  Diagnostic d{path_, {}, text.str().str()};
  if (info.hasSourceManager() && info.getLocation().isValid()) {
    const auto& sm = info.getSourceManager();
    d.range = locate_(info.getLocation(), sm);
    if (!d.range.valid()) {
      // In a header: name it, the position in the file is unknown.
      auto loc = sm.getPresumedLoc(sm.getFileLoc(info.getLocation()));
      if (loc.isValid())
        d.message = std::string(loc.getFilename()) + ":" + std::to_string(loc.getLine()) + ": " + d.message;
    }
  }
  if (missing_header) missing_headers_.push_back(out_.size());
  out_.push_back(std::move(d));
}

void CollectDiagnostics::finish() {
  if (finished_) return;
  finished_ = true;
  for (size_t i : missing_headers_) {
    out_[i].message += "; the kernels are analyzed without it";
    if (after_missing_ > 0 && i == missing_headers_.front())
      out_[i].message += " (" + std::to_string(after_missing_) + " later errors that follow from it are not reported)";
  }
}

namespace {

// A preamble holds about 28 MB (its build, transiently, several times that). A run over
// several projects, each with its own -D flags, keeps only the one used last: files
// come grouped by directory, so a project's files share one and it is built once per
// project (keeping two cost 43 MB of peak memory on the CUDA corpus and saved no time;
// bench/cuda_corpus.md). Files that alternate between flag sets rebuild it (1-2 s each).
// A target's own -I directories do not count (preamble_key): 149 cuda-samples, each
// with its own -I, went from 225 s to 30 s on two cores.
// A parse still using an evicted preamble holds it until it ends.
constexpr size_t kMaxPreambles = 1;

struct PreambleCache {
  std::mutex mutex;
  // Most recently used last.
  std::vector<std::pair<std::string, std::shared_ptr<clang::PrecompiledPreamble>>> by_flags;
};
PreambleCache& preamble_cache() {
  static PreambleCache cache;
  return cache;
}

// Two lists Sema keeps for the end of a translation unit would be written into the
// preamble, and every file's parse would then read each declaration on them back from it
// (a third of a ggml file's instructions under callgrind): the unused file-scoped
// declarations (only for -Wunused warnings, and warnings are off) and the declarations
// to check for deferred CUDA diagnostics (the toolkit headers' functions; the deferred
// diagnostics themselves are not written into the preamble, and their bodies were
// skipped, so walking them from a file's parse finds nothing to report). Emptied after
// each top-level declaration of the preamble, so both are empty when it is written.
class SkipEndOfUnitLists : public clang::PreambleCallbacks {
 public:
  void BeforeExecute(clang::CompilerInstance& ci) override { ci_ = &ci; }
  void HandleTopLevelDecl(clang::DeclGroupRef) override {
    if (!ci_ || !ci_->hasSema()) return;
    clang::Sema& sema = ci_->getSema();
    sema.UnusedFileScopedDecls.erase(sema.UnusedFileScopedDecls.begin(nullptr, true),
                                     sema.UnusedFileScopedDecls.end());
    sema.DeclsToCheckForDeferredDiags.clear();
  }

 private:
  clang::CompilerInstance* ci_ = nullptr;
};

}  // namespace

// Hands the memory malloc holds free back to the system. With several threads glibc
// keeps one heap per thread and gives little back by itself, so what one thread's parses
// freed still counted while the other built the next project's preamble or parsed (-j2
// on the CUDA corpus: a 368-395 MB peak, 281 MB on any one of its projects). Called
// before and after a preamble build and after each file (malloc_trim locks one heap at
// a time; another thread may be parsing).
// mimalloc's heaps are not glibc's, and malloc_trim does not reach them. mimalloc
// decommits a freed page only 25 ms later, and then only when the same thread next
// allocates, which a thread waiting for a preamble build does not; mi_collect(true)
// does not decommit them either (mimalloc 2.0). Its delay set to 0 instead, from the
// first call on (process-wide), the -j2 peak on the CUDA corpus went from 332-345 MB
// to 271-292 MB (bench/cuda_corpus.md).
void release_free_memory() {
#if __has_include(<mimalloc.h>)
  if (mi_option_set) {
    static const bool once = (mi_option_set(mi_option_decommit_delay, 0), true);
    (void)once;
    return;
  }
#endif
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

std::shared_mutex& preamble_build_gate() {
  static std::shared_mutex gate;
  return gate;
}

std::shared_ptr<clang::PrecompiledPreamble> toolkit_preamble(const std::string& flags_key,
                                                             const clang::CompilerInvocation& invocation,
                                                             llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> vfs) {
  auto& cache = preamble_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = std::find_if(cache.by_flags.begin(), cache.by_flags.end(),
                         [&](const auto& entry) { return entry.first == flags_key; });
  if (it != cache.by_flags.end()) {
    std::rotate(it, it + 1, cache.by_flags.end());
    return cache.by_flags.back().second;
  }
  // Evict before building: the build itself is the peak of a run's memory. Parses in
  // flight (with the evicted preamble) end first, and no other starts until it is built:
  // they would wait for it anyway, files coming grouped by project. With the memory they
  // freed handed back first, the -j2 peak on the CUDA corpus went from 368-395 MB to
  // 273-301 MB (bench/cuda_corpus.md).
  if (cache.by_flags.size() >= kMaxPreambles) cache.by_flags.erase(cache.by_flags.begin());
  std::unique_lock<std::shared_mutex> alone(preamble_build_gate());
  release_free_memory();
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(kToolkitPreamble);
  clang::DiagnosticOptions diag_opts;
  clang::IgnoringDiagConsumer ignore;
  auto diags = clang::CompilerInstance::createDiagnostics(*vfs, diag_opts, &ignore, false);
  SkipEndOfUnitLists callbacks;
  auto built = clang::PrecompiledPreamble::Build(
      invocation, buffer.get(), clang::PreambleBounds(static_cast<unsigned>(std::strlen(kToolkitPreamble)), true),
      diags, vfs, std::make_shared<clang::PCHContainerOperations>(), /*StoreInMemory=*/true, "", callbacks);
  std::shared_ptr<clang::PrecompiledPreamble> result;
  if (built) result = std::make_shared<clang::PrecompiledPreamble>(std::move(*built));
  cache.by_flags.emplace_back(flags_key, result);  // a failure is remembered too: no retry per file
  release_free_memory();  // the build's own AST and Sema, freed as it returned
  return result;
}

}  // namespace mlsem::cuda::detail

namespace mlsem::cuda {

std::string preamble_key(const std::vector<std::string>& args) {
  // The headers kToolkitPreamble includes by name (`#include <cuda_fp16.h>`).
  static const std::vector<std::string> headers = [] {
    std::vector<std::string> out;
    std::string_view text = detail::kToolkitPreamble;
    for (size_t at = text.find("#include <"); at != std::string_view::npos; at = text.find("#include <", at + 1)) {
      size_t begin = at + std::string_view("#include <").size(), end = text.find('>', begin);
      if (end != std::string_view::npos) out.emplace_back(text.substr(begin, end - begin));
    }
    return out;
  }();
  std::string key;
  for (const auto& a : args) {
    if (a.rfind("-I", 0) == 0 && a.size() > 2) {
      std::error_code ec;
      bool shadows = false;
      for (const std::string& h : headers)
        shadows = shadows || std::filesystem::exists(std::filesystem::path(a.substr(2)) / h, ec);
      if (!shadows) continue;
    }
    key += a + '\x1f';
  }
  return key;
}

}  // namespace mlsem::cuda
