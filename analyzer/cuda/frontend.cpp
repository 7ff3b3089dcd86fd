// CUDA frontend: parses a .cu/.cuh file with Clang (in memory, device side of a CUDA
// compile, which still parses host functions) and lowers each function to the IR
// vocabulary of docs/IR.md ("CUDA vocabulary"). Memory accesses carry their index as
// a polynomial (index.h); whole-function facts (passes over a row, pointwise kernels,
// tree reductions) are computed here and stored as nodes or attributes.
#include "cuda/frontend.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/Stmt.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Driver/CreateInvocationFromArgs.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/PrecompiledPreamble.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <clang/Tooling/JSONCompilationDatabase.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "cuda/index.h"
#include "cuda/prelude.h"

namespace mlsem::cuda {
namespace {

namespace fs = std::filesystem;
using ir::Attr;
using ir::NodeId;

constexpr const char* kVirtualDir = "/__mlsem_cuda__";
constexpr const char* kGpuArch = "sm_90";
// Headers every toolkit-mode file gets through the shared precompiled preamble.
constexpr const char* kToolkitPreamble =
    "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
// C headers the prelude stands in for (their contents would clash with it).
constexpr const char* kPreludeCHeaders[] = {
    "math.h", "cmath", "stdio.h", "cstdio", "stdlib.h", "cstdlib", "stdint.h", "cstdint",
    "float.h", "cfloat", "assert.h", "cassert", "limits.h", "climits", "stddef.h", "cstddef"};
constexpr size_t kMaxDiagnostics = 20;

// ---------------------------------------------------------------------------
// Toolkit and command line

bool has_runtime_header(const fs::path& root) {
  std::error_code ec;
  return fs::exists(root / "include" / "cuda_runtime.h", ec);
}

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

// Flags of a compile_commands.json entry that matter to parsing (-I, -D, -U, -include,
// -std, the GPU arch), nvcc spellings translated; everything else (code generation,
// host compiler pass-through, linking) is dropped.
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

struct CommandLine {
  std::vector<std::string> args;  // driver arguments, without the source path
  std::string toolkit;            // "" = prelude mode
};

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
  }
  a.insert(a.end(), user_flags.begin(), user_flags.end());
  return cl;
}

// ---------------------------------------------------------------------------
// Diagnostics: errors (and fatal errors, e.g. a missing include) become
// ir::Module diagnostics; warnings are not ours to report.

class CollectDiagnostics : public clang::DiagnosticConsumer {
 public:
  using Locate = std::function<Range(clang::SourceLocation, const clang::SourceManager&)>;
  CollectDiagnostics(std::string path, std::vector<Diagnostic>& out, Locate locate)
      : path_(std::move(path)), out_(out), locate_(std::move(locate)) {}

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < clang::DiagnosticsEngine::Error || out_.size() >= kMaxDiagnostics) return;
    llvm::SmallString<160> text;
    info.FormatDiagnostic(text);
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
    if (d.message.find("file not found") != std::string::npos)
      d.message += " (code that needs this header is analyzed partially)";
    out_.push_back(std::move(d));
  }

 private:
  std::string path_;
  std::vector<Diagnostic>& out_;
  Locate locate_;
};

// ---------------------------------------------------------------------------
// Source positions: byte offsets in the main buffer -> the user's file.

class Positions {
 public:
  Positions(const std::string& text, size_t prefix) : text_(text), prefix_(prefix) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
  }

  Position at(uint32_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    uint32_t line = static_cast<uint32_t>(it - line_starts_.begin());
    return {line, offset - line_starts_[line - 1] + 1};
  }

  // The range of [begin, end] tokens when both are in the main file; invalid otherwise.
  Range range(clang::SourceLocation b, clang::SourceLocation e, const clang::SourceManager& sm,
              const clang::LangOptions& lang) const {
    if (b.isInvalid()) return {};
    b = sm.getFileLoc(b);
    e = e.isValid() ? sm.getFileLoc(e) : b;
    auto [bfile, boff] = sm.getDecomposedLoc(b);
    if (bfile != sm.getMainFileID() || boff < prefix_) return {};
    auto end_loc = clang::Lexer::getLocForEndOfToken(e, 0, sm, lang);
    auto [efile, eoff] = sm.getDecomposedLoc(end_loc.isValid() ? end_loc : e);
    if (efile != bfile || eoff < boff) eoff = boff;
    Range r;
    r.begin_byte = boff - static_cast<uint32_t>(prefix_);
    r.end_byte = std::min<uint32_t>(eoff - static_cast<uint32_t>(prefix_), static_cast<uint32_t>(text_.size()));
    r.begin = at(r.begin_byte);
    r.end = at(r.end_byte);
    return r;
  }

 private:
  const std::string& text_;
  size_t prefix_;
  std::vector<uint32_t> line_starts_;
};

// ---------------------------------------------------------------------------
// Per-kernel facts the host side needs to reason about launches.

struct KernelSummary {
  std::vector<bool> param_read, param_written;
  bool pointwise = false;
  bool gemm = false;
};

// ---------------------------------------------------------------------------
// Lowering one function.

const clang::Expr* strip(const clang::Expr* e) {
  while (e) {
    const clang::Expr* next = e->IgnoreParenImpCasts();
    if (auto* ew = llvm::dyn_cast<clang::ExprWithCleanups>(next)) next = ew->getSubExpr();
    if (auto* mt = llvm::dyn_cast<clang::MaterializeTemporaryExpr>(next)) next = mt->getSubExpr();
    if (auto* bt = llvm::dyn_cast<clang::CXXBindTemporaryExpr>(next)) next = bt->getSubExpr();
    if (next == e) break;
    e = next;
  }
  return e;
}

std::string callee_name(const clang::CallExpr* call) {
  if (auto* fd = call->getDirectCallee()) return fd->getNameAsString();
  if (auto* ule = llvm::dyn_cast_or_null<clang::UnresolvedLookupExpr>(strip(call->getCallee())))
    return ule->getName().getAsString();
  if (auto* dre = llvm::dyn_cast_or_null<clang::DeclRefExpr>(strip(call->getCallee())))
    return dre->getNameInfo().getAsString();
  return "";
}

bool is_one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

bool is_max_call(const std::string& n) { return is_one_of(n, {"fmaxf", "fmax", "max", "__hmax", "__hmax2"}); }
bool is_exp_call(const std::string& n) {
  return is_one_of(n, {"expf", "exp", "__expf", "exp2f", "exp2", "hexp", "h2exp", "__exp2f"});
}

// Where a memory access points: a buffer and a byte offset into it.
struct Pointer {
  std::string name;        // parameter or __shared__ array
  std::string space;       // "global" | "shared"
  NodeId decl = ir::kNoNode;  // its `param` / `shared_array` node
  const clang::ValueDecl* decl_ptr = nullptr;
  Poly byte_offset;
  clang::QualType elem;    // pointee type at this point (after casts)
};

struct LoopInfo {
  uint32_t region = 0;
  int parent = -1;         // index into loops_, -1 at top level
  std::string iter;        // symbol of its iteration count (or its variable, for s *= 2 loops)
  std::string step_kind;   // "add" | "mul" | "div" | "none"
  std::string stride_kind; // "grid" | "block" | "serial" | "other"
  std::optional<int64_t> bound_const;
  bool bound_symbolic = false;
  bool reaches_one = false;  // halving loops: runs down to a stride below a warp
  bool has_max = false, has_exp = false, has_accumulate = false, has_square_diff = false;
  bool has_barrier = false, has_shared_access = false, has_launch = false;
  bool shared_stride_uses_iter = false;
  bool shared_read_ahead = false;  // reads s[i + stride]: a reduction step (a scan reads s[i - stride])
  bool gemm_done = false;
  clang::SourceRange header;
};

struct Access {
  NodeId node;
  Pointer ptr;
  bool store;
  int loop;  // innermost enclosing loop, -1 if none
  std::vector<int> loops;  // enclosing loops, outermost first
};

class FunctionLowering {
 public:
  FunctionLowering(clang::ASTContext& ctx, const Positions& pos, const clang::FunctionDecl* fd, bool device,
                   const std::map<std::string, KernelSummary>& kernels)
      : ctx_(ctx), sm_(ctx.getSourceManager()), pos_(pos), fd_(fd), device_(device), kernels_(kernels) {}

  ir::Function lower() {
    fn_.name = fd_->getQualifiedNameAsString();
    fn_.range = range(fd_->getSourceRange());
    ir::Region body;
    body.kind = "function";
    body.range = fn_.range;
    bool global = fd_->hasAttr<clang::CUDAGlobalAttr>();
    // On the body region too, so that patterns can say inside = "function[global]".
    body.attrs = {{"global", global}, {"device", device_}};
    fn_.regions.push_back(body);
    fn_.attrs["global"] = global;
    fn_.attrs["device"] = device_;
    fn_.attrs["host"] = !device_;
    if (fd_->getDescribedFunctionTemplate()) fn_.attrs["template"] = true;
    if (device_) declare_params();
    walk(fd_->getBody());
    if (device_) finish_device();
    else finish_host();
    return std::move(fn_);
  }

  KernelSummary summary() const { return summary_; }
  const std::set<std::string>& callees() const { return callees_; }

 private:
  clang::ASTContext& ctx_;
  const clang::SourceManager& sm_;
  const Positions& pos_;
  const clang::FunctionDecl* fd_;
  bool device_;
  const std::map<std::string, KernelSummary>& kernels_;
  ir::Function fn_;
  KernelSummary summary_;
  std::set<std::string> callees_;

  uint32_t region_ = 0;
  std::vector<LoopInfo> loops_;
  int loop_ = -1;  // innermost loop
  std::map<const clang::VarDecl*, Poly> values_;
  std::map<const clang::VarDecl*, Pointer> pointers_;
  std::map<const clang::ValueDecl*, NodeId> decl_nodes_;  // params and shared arrays
  std::map<const clang::ParmVarDecl*, size_t> param_index_;
  std::set<std::string> thread_atoms_;  // symbols whose value differs between threads
  std::set<std::string> lane_atoms_;    // ... and between lanes, not affinely
  std::vector<Access> accesses_;
  bool saw_thread_modulo_ = false;
  bool thread_dependent_return_ = false;
  std::vector<NodeId> barriers_, atomics_;
  bool uses_shuffle_ = false, has_vector_access_ = false, serial_reduction_done_ = false;
  // Host side: the last device operation and which buffers each one wrote.
  NodeId last_device_op_ = ir::kNoNode;
  std::set<std::string> last_device_writes_;
  std::vector<NodeId> host_syncs_;

  // --- helpers -------------------------------------------------------------

  Range range(clang::SourceRange r) const {
    return pos_.range(r.getBegin(), r.getEnd(), sm_, ctx_.getLangOpts());
  }
  std::string text(const clang::Stmt* s) const {
    if (!s) return "";
    auto cr = clang::CharSourceRange::getTokenRange(s->getSourceRange());
    auto t = clang::Lexer::getSourceText(sm_.getExpansionRange(cr), sm_, ctx_.getLangOpts());
    std::string out;
    for (char c : t) {  // one line, single spaces
      if (c == '\n' || c == '\t' || c == '\r') c = ' ';
      if (c == ' ' && !out.empty() && out.back() == ' ') continue;
      out += c;
    }
    return out.size() > 120 ? out.substr(0, 117) + "..." : out;
  }

  NodeId add(std::string op, const clang::Stmt* where, std::map<std::string, Attr> attrs = {},
             std::vector<NodeId> inputs = {}) {
    ir::Node n;
    n.op = std::move(op);
    n.attrs = std::move(attrs);
    n.inputs = std::move(inputs);
    n.range = where ? range(where->getSourceRange()) : Range{};
    n.region = region_;
    fn_.nodes.push_back(std::move(n));
    return static_cast<NodeId>(fn_.nodes.size() - 1);
  }

  uint32_t push_region(std::string kind, const clang::Stmt* s, std::map<std::string, Attr> attrs) {
    ir::Region r;
    r.kind = std::move(kind);
    r.parent = region_;
    r.attrs = std::move(attrs);
    r.range = range(s->getSourceRange());
    fn_.regions.push_back(std::move(r));
    uint32_t saved = region_;
    region_ = static_cast<uint32_t>(fn_.regions.size() - 1);
    return saved;
  }

  bool enclosing_region_has(const char* kind, const char* flag) const {
    for (uint32_t r = region_; r != 0; r = fn_.regions[r].parent) {
      const auto& reg = fn_.regions[r];
      auto it = reg.attrs.find(flag);
      if (reg.kind == kind && it != reg.attrs.end() && std::get_if<bool>(&it->second) &&
          std::get<bool>(it->second))
        return true;
    }
    return false;
  }

  bool thread_dependent(const Poly& p) const {
    for (const auto& s : p.symbols())
      if (thread_atoms_.count(s)) return true;
    return false;
  }
  bool lane_varying_nonaffine(const Poly& p) const {
    for (const auto& s : p.symbols())
      if (lane_atoms_.count(s)) return true;
    return false;
  }

  // An opaque value: named by its text, thread- and lane-dependence inherited.
  Poly opaque(const clang::Stmt* e, bool thread_dep, bool lane_dep) {
    std::string name = "{" + text(e) + "}";
    if (thread_dep) thread_atoms_.insert(name);
    if (lane_dep) lane_atoms_.insert(name);
    return Poly::symbol(name);
  }
  Poly opaque_of(const clang::Stmt* e, const std::vector<Poly>& parts) {
    bool t = false, l = false;
    for (const auto& p : parts) {
      t |= thread_dependent(p);
      l |= lane_varying_nonaffine(p) || p.mentions(kThreadX);
    }
    return opaque(e, t, l);
  }
  // Polynomials stay small: a runaway expression becomes one opaque symbol.
  Poly bounded(const clang::Stmt* e, Poly p) {
    if (p.terms().size() <= 24) return p;
    return opaque_of(e, {p});
  }

  void mark_loops(bool LoopInfo::*flag) {
    for (int l = loop_; l >= 0; l = loops_[l].parent) loops_[l].*flag = true;
  }

  // --- declarations --------------------------------------------------------

  static bool is_restrict(clang::QualType t) { return t.isRestrictQualified(); }

  void declare_params() {
    for (unsigned i = 0; i < fd_->getNumParams(); ++i) {
      const clang::ParmVarDecl* p = fd_->getParamDecl(i);
      param_index_[p] = i;
      summary_.param_read.push_back(false);
      summary_.param_written.push_back(false);
      clang::QualType t = p->getType();
      std::map<std::string, Attr> attrs{{"name", p->getNameAsString()}};
      if (t->isPointerType()) {
        clang::QualType pointee = t->getPointeeType();
        attrs["pointer"] = true;
        attrs["const_pointee"] = pointee.isConstQualified();
        attrs["restrict"] = is_restrict(t);
        attrs["elem_type"] = pointee.getUnqualifiedType().getAsString();
        if (!pointee->isDependentType() && !pointee->isIncompleteType())
          attrs["elem_bytes"] = static_cast<int64_t>(ctx_.getTypeSizeInChars(pointee).getQuantity());
      }
      decl_nodes_[p] = add("param", nullptr, std::move(attrs));
      fn_.nodes.back().range = range(p->getSourceRange());
    }
  }

  NodeId declare_shared(const clang::VarDecl* v) {
    auto it = decl_nodes_.find(v);
    if (it != decl_nodes_.end()) return it->second;
    std::map<std::string, Attr> attrs{{"name", v->getNameAsString()}, {"type", v->getType().getAsString()}};
    // Row pitch of a 2-D tile, in 4-byte words: what decides column-access conflicts.
    if (auto* outer = ctx_.getAsConstantArrayType(v->getType())) {
      clang::QualType row = outer->getElementType();
      if (row->isConstantArrayType() && !row->isDependentType()) {
        int64_t bytes = ctx_.getTypeSizeInChars(row).getQuantity();
        if (bytes % 4 == 0) attrs["pitch_words"] = bytes / 4;
      }
    }
    NodeId id = add("shared_array", nullptr, std::move(attrs));
    fn_.nodes.back().range = range(v->getSourceRange());
    decl_nodes_[v] = id;
    return id;
  }

  // --- pointers ------------------------------------------------------------

  int64_t size_of(clang::QualType t) const {
    if (t.isNull() || t->isDependentType() || t->isIncompleteType() || t->isVoidType() ||
        t->isFunctionType())
      return 4;  // unknown: count in 4-byte units
    return ctx_.getTypeSizeInChars(t).getQuantity();
  }

  std::optional<Pointer> pointer_of(const clang::Expr* e) {
    if (!e) return std::nullopt;
    e = e->IgnoreParens();
    if (auto* cast = llvm::dyn_cast<clang::CastExpr>(e)) {
      auto base = pointer_of(cast->getSubExpr());
      if (base && cast->getType()->isPointerType()) base->elem = cast->getType()->getPointeeType();
      return base;
    }
    if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      const clang::ValueDecl* d = dre->getDecl();
      if (auto* pv = llvm::dyn_cast<clang::ParmVarDecl>(d)) {
        if (!pv->getType()->isPointerType() || !decl_nodes_.count(pv)) return std::nullopt;
        return Pointer{pv->getNameAsString(), "global", decl_nodes_[pv], pv, Poly(), pv->getType()->getPointeeType()};
      }
      if (auto* v = llvm::dyn_cast<clang::VarDecl>(d)) {
        auto it = pointers_.find(v);
        if (it != pointers_.end()) return it->second;
        if (v->hasAttr<clang::CUDASharedAttr>()) {
          clang::QualType elem = v->getType();
          if (auto* at = ctx_.getAsArrayType(elem)) elem = at->getElementType();
          return Pointer{v->getNameAsString(), "shared", declare_shared(v), v, Poly(), elem};
        }
      }
      return std::nullopt;
    }
    if (auto* bo = llvm::dyn_cast<clang::BinaryOperator>(e)) {
      if (bo->getOpcode() == clang::BO_Add || bo->getOpcode() == clang::BO_Sub) {
        const clang::Expr* ptr = bo->getLHS();
        const clang::Expr* idx = bo->getRHS();
        if (!ptr->getType()->isPointerType() && !ptr->getType()->isArrayType()) std::swap(ptr, idx);
        auto base = pointer_of(ptr);
        Poly off = value(idx);
        if (!base) return std::nullopt;
        Poly bytes = off * Poly::constant(size_of(base->elem));
        base->byte_offset = bo->getOpcode() == clang::BO_Add ? base->byte_offset + bytes : base->byte_offset - bytes;
        return base;
      }
      return std::nullopt;
    }
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e)) {
      if (uo->getOpcode() == clang::UO_AddrOf) return location_of(uo->getSubExpr());
      return std::nullopt;
    }
    if (auto* ase = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) {
      // tile[r] of a 2-D array, decayed to a pointer to its row.
      if (ase->getType()->isArrayType()) {
        auto loc = location_of(ase);
        if (loc) {
          if (auto* at = ctx_.getAsArrayType(ase->getType())) loc->elem = at->getElementType();
        }
        return loc;
      }
    }
    return std::nullopt;
  }

  // The memory location an lvalue expression names (x[i], *p, tile[r][c], v.x of x4[i]).
  std::optional<Pointer> location_of(const clang::Expr* e) {
    e = e->IgnoreParens();
    if (auto* ase = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) {
      const clang::Expr* base = ase->getBase();
      const clang::Expr* idx = ase->getIdx();
      auto ptr = pointer_of(base);
      Poly i = value(idx);
      if (!ptr) return std::nullopt;
      ptr->elem = ase->getType();
      ptr->byte_offset = ptr->byte_offset + i * Poly::constant(size_of(ase->getType()));
      ptr->byte_offset = bounded(ase, ptr->byte_offset);
      return ptr;
    }
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e)) {
      if (uo->getOpcode() == clang::UO_Deref) {
        auto ptr = pointer_of(uo->getSubExpr());
        if (ptr) ptr->elem = uo->getType();
        return ptr;
      }
    }
    if (auto* me = llvm::dyn_cast<clang::MemberExpr>(e)) {
      if (!me->isArrow()) return location_of(me->getBase());
    }
    if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      // A __shared__ scalar.
      if (auto* v = llvm::dyn_cast<clang::VarDecl>(dre->getDecl()); v && v->hasAttr<clang::CUDASharedAttr>() &&
                                                                   !v->getType()->isArrayType())
        return Pointer{v->getNameAsString(), "shared", declare_shared(v), v, Poly(), v->getType()};
    }
    return std::nullopt;
  }

  // --- memory accesses -----------------------------------------------------

  NodeId emit_access(const clang::Expr* e, const Pointer& p, bool store) {
    if (!device_) return ir::kNoNode;
    int64_t elem_bytes = size_of(p.elem);
    std::map<std::string, Attr> a{{"space", p.space}, {"param", p.name}, {"elem_bytes", elem_bytes}};
    a["elem_type"] = p.elem.isNull() ? std::string("?") : p.elem.getUnqualifiedType().getAsString();
    int64_t width = 1;
    if (const auto* rt = p.elem.isNull() ? nullptr : p.elem->getAsRecordDecl()) {
      // float4, __half2, int2, packed structs: fields of one scalar type.
      const auto* def = rt->getDefinition();
      if (def) {
        int64_t fields = 0;
        for (auto* f : def->fields()) { (void)f; ++fields; }
        if (fields > 1) width = fields;
      }
    }
    a["vector_width"] = width;
    if (width > 1 || elem_bytes >= 8) has_vector_access_ = true;
    auto elems = p.byte_offset.divide(elem_bytes);
    a["index"] = elems ? elems->text() : p.byte_offset.text() + " bytes";
    bool thread_dep = thread_dependent(p.byte_offset);
    a["thread_dependent"] = thread_dep;
    a["in_loop"] = loop_ >= 0;
    LaneStride lx = lane_stride(p.byte_offset, elem_bytes, kThreadX);
    bool affine = lx.affine && !lane_varying_nonaffine(p.byte_offset);
    a["affine"] = affine;
    if (affine && lx.elements) {
      a["lane_stride_text"] = lx.elements->text();
      if (lx.constant) a["lane_stride"] = *lx.constant;
      LaneStride ly = lane_stride(p.byte_offset, elem_bytes, kThreadY);
      if (ly.constant) a["ty_stride"] = *ly.constant;
      bool unit_x = lx.constant && (*lx.constant == 1 || *lx.constant == -1);
      bool zero_x = lx.constant && *lx.constant == 0;
      if (unit_x) a["contiguous_dim_from"] = std::string("x");
      else if (ly.constant && *ly.constant == 1) a["contiguous_dim_from"] = std::string("y");
      if (p.space == "global") a["uncoalesced"] = !unit_x && !zero_x;
      if (p.space == "shared" && elem_bytes >= 4) {
        auto lane_bytes = p.byte_offset.coefficient(kThreadX);
        auto words = lane_bytes ? lane_bytes->divide(4) : std::nullopt;
        if (words) {
          a["bank_stride_words"] = words->text();
          a["bank_conflict_ways"] = bank_conflict_ways_min(*words, elem_bytes);
          a["bank_stride_symbolic"] = !words->as_constant().has_value();
        }
      }
    }
    if (p.space == "global" && p.decl_ptr) {
      clang::QualType t = p.decl_ptr->getType();
      if (t->isPointerType()) {
        a["const_param"] = t->getPointeeType().isConstQualified();
        a["restrict_param"] = t.isRestrictQualified();
      }
    }
    std::vector<NodeId> inputs;
    if (p.decl != ir::kNoNode) inputs.push_back(p.decl);
    NodeId id = add(store ? "store" : "load", e, std::move(a), std::move(inputs));
    Access acc{id, p, store, loop_, {}};
    for (int l = loop_; l >= 0; l = loops_[l].parent) acc.loops.insert(acc.loops.begin(), l);
    accesses_.push_back(acc);
    if (p.space == "shared") {
      mark_loops(&LoopInfo::has_shared_access);
      for (int l = loop_; l >= 0; l = loops_[l].parent)
        if (!loops_[l].iter.empty() && loops_[l].step_kind != "add") {
          auto c = p.byte_offset.coefficient(kThreadX);
          if (c && c->mentions(loops_[l].iter)) loops_[l].shared_stride_uses_iter = true;
          auto ahead = p.byte_offset.coefficient(loops_[l].iter);
          int64_t ahead_by = 0;
          if (ahead)
            if (auto it = ahead->terms().find(Poly::Monomial{}); it != ahead->terms().end()) ahead_by = it->second;
          if (!store && ahead_by > 0) loops_[l].shared_read_ahead = true;
        }
    }
    if (store) mark_param(p, false, true);
    else mark_param(p, true, false);
    return id;
  }

  void mark_param(const Pointer& p, bool read, bool written) {
    auto* pv = llvm::dyn_cast_or_null<clang::ParmVarDecl>(p.decl_ptr);
    if (!pv || !param_index_.count(pv)) return;
    size_t i = param_index_[pv];
    if (read) summary_.param_read[i] = true;
    if (written) summary_.param_written[i] = true;
  }

  // --- expressions ---------------------------------------------------------

  Poly builtin_var(const clang::Expr* e) {
    // threadIdx.x: a property reference on clang's builtin variable.
    if (auto* po = llvm::dyn_cast<clang::PseudoObjectExpr>(e)) e = po->getSyntacticForm();
    auto* pr = llvm::dyn_cast<clang::MSPropertyRefExpr>(e->IgnoreParens());
    if (!pr) return Poly();
    const clang::Expr* base_expr = pr->getBaseExpr()->IgnoreParenImpCasts();
    if (auto* ove = llvm::dyn_cast<clang::OpaqueValueExpr>(base_expr)) base_expr = ove->getSourceExpr();
    auto* base = llvm::dyn_cast_or_null<clang::DeclRefExpr>(base_expr ? base_expr->IgnoreParenImpCasts() : nullptr);
    if (!base) return Poly();
    std::string var = base->getDecl()->getNameAsString();
    std::string field = pr->getPropertyDecl()->getNameAsString();
    std::string sym = var + "." + field;
    if (var == "threadIdx") thread_atoms_.insert(sym);
    return Poly::symbol(sym);
  }

  // p / d and p % d for a constant d: with d a multiple of the warp size and p
  // unit-stride in threadIdx.x, p / d is the same for all lanes of a warp (a warp or
  // row id) and p % d is p - d*(p/d): the lane. Otherwise the result is opaque.
  Poly divide(const clang::Expr* e, const Poly& p, int64_t d, bool remainder) {
    auto lx = lane_stride(p, 1, kThreadX);
    bool warp_uniform_quotient = d > 0 && d % 32 == 0 && lx.constant && (*lx.constant == 1 || *lx.constant == 0) &&
                                 !lane_varying_nonaffine(p);
    if (!warp_uniform_quotient) {
      if (auto c = p.as_constant(); c && d != 0) return Poly::constant(remainder ? *c % d : *c / d);
      if (!remainder) {
        if (auto q = p.divide(d)) return *q;  // (4*C*i)/4
      }
      if (remainder && thread_dependent(p)) saw_thread_modulo_ = true;
      return opaque_of(e, {p});
    }
    std::string name = "(" + p.text() + ")/" + std::to_string(d);
    if (thread_dependent(p)) thread_atoms_.insert(name);
    Poly q = Poly::symbol(name);
    return remainder ? p - Poly::constant(d) * q : q;
  }

  Poly value(const clang::Expr* e) {
    if (!e) return Poly();
    e = e->IgnoreParens();
    if (auto* il = llvm::dyn_cast<clang::IntegerLiteral>(e))
      return Poly::constant(static_cast<int64_t>(il->getValue().getLimitedValue(INT64_MAX)));
    if (auto* bl = llvm::dyn_cast<clang::CXXBoolLiteralExpr>(e)) return Poly::constant(bl->getValue());
    if (llvm::isa<clang::FloatingLiteral>(e) || llvm::isa<clang::StringLiteral>(e)) return opaque(e, false, false);
    if (llvm::isa<clang::PseudoObjectExpr>(e) || llvm::isa<clang::MSPropertyRefExpr>(e)) {
      Poly b = builtin_var(e);
      if (!b.is_zero()) return b;
      return opaque(e, false, false);
    }
    if (auto* cast = llvm::dyn_cast<clang::CastExpr>(e)) {
      if (cast->getType()->isPointerType() && !cast->getSubExpr()->getType()->isPointerType() &&
          !cast->getSubExpr()->getType()->isArrayType())
        return value(cast->getSubExpr());
      if (cast->getCastKind() == clang::CK_LValueToRValue) {
        // A read: of memory when the operand names a location, else of a variable.
        const clang::Expr* sub = cast->getSubExpr()->IgnoreParens();
        if (llvm::isa<clang::ArraySubscriptExpr>(sub) || llvm::isa<clang::UnaryOperator>(sub) ||
            llvm::isa<clang::MemberExpr>(sub))
          return read_location(sub);
      }
      return value(cast->getSubExpr());
    }
    if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) return decl_value(dre);
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e)) return unary(uo);
    if (auto* bo = llvm::dyn_cast<clang::BinaryOperator>(e)) return binary(bo);
    if (auto* ase = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) return read_location(ase);
    if (auto* me = llvm::dyn_cast<clang::MemberExpr>(e)) {
      if (me->isArrow()) return opaque_of(e, {value(me->getBase())});
      return read_location(me);
    }
    if (auto* kc = llvm::dyn_cast<clang::CUDAKernelCallExpr>(e)) return launch(kc);
    if (auto* call = llvm::dyn_cast<clang::CallExpr>(e)) return call_value(call);
    if (auto* co = llvm::dyn_cast<clang::ConditionalOperator>(e)) {
      Poly c = value(co->getCond());
      Poly t = value(co->getTrueExpr());
      Poly f = value(co->getFalseExpr());
      // m = v > m ? v : m — a running maximum written by hand.
      if (auto* cmp = llvm::dyn_cast<clang::BinaryOperator>(co->getCond()->IgnoreParenImpCasts());
          cmp && cmp->isRelationalOp())
        mark_loops(&LoopInfo::has_max);
      return opaque_of(e, {c, t, f});
    }
    // Anything else: visit the parts, the value is opaque.
    std::vector<Poly> parts;
    for (const clang::Stmt* child : e->children())
      if (auto* ce = llvm::dyn_cast_or_null<clang::Expr>(child)) parts.push_back(value(ce));
    return opaque_of(e, parts);
  }

  Poly decl_value(const clang::DeclRefExpr* dre) {
    const clang::ValueDecl* d = dre->getDecl();
    if (auto* ec = llvm::dyn_cast<clang::EnumConstantDecl>(d)) return Poly::constant(ec->getInitVal().getExtValue());
    if (auto* v = llvm::dyn_cast<clang::VarDecl>(d)) {
      auto it = values_.find(v);
      if (it != values_.end()) return it->second;
      if (v->getName() == "warpSize") return Poly::constant(32);
      // constexpr int BLOCK = 256; static const int N = 4;
      if (v->getType().isConstQualified() && v->hasInit() && !v->getInit()->isValueDependent()) {
        if (auto c = v->getInit()->getIntegerConstantExpr(ctx_)) return Poly::constant(c->getExtValue());
      }
    }
    return Poly::symbol(d->getNameAsString());  // parameter, template parameter, global
  }

  Poly unary(const clang::UnaryOperator* uo) {
    switch (uo->getOpcode()) {
      case clang::UO_Minus: return -value(uo->getSubExpr());
      case clang::UO_Plus: return value(uo->getSubExpr());
      case clang::UO_Deref: return read_location(uo);
      case clang::UO_AddrOf: {
        // &x[i]: an address, not a read; evaluate the index for its loads.
        auto loc = location_of(uo->getSubExpr());
        if (!loc) return value(uo->getSubExpr());
        return opaque_of(uo, {loc->byte_offset});
      }
      case clang::UO_PreInc: case clang::UO_PostInc: case clang::UO_PreDec: case clang::UO_PostDec: {
        const clang::Expr* sub = uo->getSubExpr()->IgnoreParens();
        int64_t delta = uo->isIncrementOp() ? 1 : -1;
        if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(sub)) {
          if (auto* v = llvm::dyn_cast<clang::VarDecl>(dre->getDecl())) {
            Poly before = decl_value(dre);
            values_[v] = before + Poly::constant(delta);
            return uo->isPrefix() ? values_[v] : before;
          }
        }
        if (auto loc = location_of(sub)) {  // x[i]++: a read and a write
          emit_access(sub, *loc, false);
          emit_access(sub, *loc, true);
        }
        return opaque(uo, true, true);
      }
      case clang::UO_LNot: case clang::UO_Not: return opaque_of(uo, {value(uo->getSubExpr())});
      default: return opaque_of(uo, {value(uo->getSubExpr())});
    }
  }

  Poly read_location(const clang::Expr* e) {
    auto loc = location_of(e);
    if (!loc) {
      std::vector<Poly> parts;
      for (const clang::Stmt* child : e->children())
        if (auto* ce = llvm::dyn_cast_or_null<clang::Expr>(child)) parts.push_back(value(ce));
      return opaque_of(e, parts);
    }
    emit_access(e, *loc, false);
    // A value read from memory at a thread-dependent place is thread-dependent.
    bool t = thread_dependent(loc->byte_offset);
    return opaque(e, t, t);
  }

  Poly binary(const clang::BinaryOperator* bo) {
    using clang::BinaryOperatorKind;
    auto op = bo->getOpcode();
    if (bo->isAssignmentOp()) return assign(bo);
    if (op == clang::BO_Comma) { value(bo->getLHS()); return value(bo->getRHS()); }
    // Pointer arithmetic: an address.
    if (bo->getType()->isPointerType()) {
      auto p = pointer_of(bo);
      return p ? opaque_of(bo, {p->byte_offset}) : opaque(bo, false, false);
    }
    Poly l = value(bo->getLHS());
    Poly r = value(bo->getRHS());
    bool integral = bo->getType()->isIntegerType();
    switch (op) {
      case clang::BO_Add: return bounded(bo, l + r);
      case clang::BO_Sub:
        return bounded(bo, l - r);
      case clang::BO_Mul: {
        // Squares of a difference: (x - mean) * (x - mean), d * d.
        if (!integral && text(bo->getLHS()) == text(bo->getRHS())) mark_loops(&LoopInfo::has_square_diff);
        return bounded(bo, l * r);
      }
      case clang::BO_Div:
      case clang::BO_Rem:
        if (integral) {
          if (auto d = r.as_constant(); d && *d != 0) return divide(bo, l, *d, op == clang::BO_Rem);
          if (op == clang::BO_Rem && thread_dependent(l)) saw_thread_modulo_ = true;
        }
        return opaque_of(bo, {l, r});
      case clang::BO_Shr:
        if (auto k = r.as_constant(); integral && k && *k >= 0 && *k < 31)
          return divide(bo, l, int64_t{1} << *k, false);
        return opaque_of(bo, {l, r});
      case clang::BO_Shl:
        if (auto k = r.as_constant(); integral && k && *k >= 0 && *k < 31)
          return l * Poly::constant(int64_t{1} << *k);
        return opaque_of(bo, {l, r});
      case clang::BO_And:
        // tid & 31 is tid % 32; (tid & (2*s - 1)) == 0 is the interleaved test.
        if (auto m = r.as_constant(); integral && m && *m > 0 && ((*m + 1) & *m) == 0)
          return divide(bo, l, *m + 1, true);
        if (thread_dependent(l)) saw_thread_modulo_ = true;
        return opaque_of(bo, {l, r});
      default:
        return opaque_of(bo, {l, r});
    }
  }

  // Marks the innermost loop as accumulating when `target` is a scalar updated from itself.
  void note_accumulate(const clang::Expr* target) {
    if (llvm::isa<clang::DeclRefExpr>(target->IgnoreParenImpCasts())) mark_loops(&LoopInfo::has_accumulate);
  }

  Poly assign(const clang::BinaryOperator* bo) {
    const clang::Expr* lhs = bo->getLHS()->IgnoreParens();
    const clang::Expr* rhs = bo->getRHS();
    auto op = bo->getOpcode();
    size_t before = fn_.nodes.size();
    std::optional<Pointer> loc;
    Poly old;
    if (!llvm::isa<clang::DeclRefExpr>(lhs)) loc = location_of(lhs);
    bool compound = op != clang::BO_Assign;
    auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(lhs);
    if (dre) old = decl_value(dre);
    if (compound && loc) emit_access(lhs, *loc, false);
    // acc += a * b over a loop: the shape of a matrix product (or a serial reduction).
    // Integer updates (i += stride, count++) are index arithmetic, not data reductions.
    bool accumulate = !lhs->getType()->isIntegerType() &&
                      ((compound && (op == clang::BO_AddAssign || op == clang::BO_SubAssign)) ||
                       (!compound && dre && refers_to(rhs, dre->getDecl())));
    Poly r;
    if (accumulate) {
      note_accumulate(lhs);
      bool is_max = dre && is_max_of_self(rhs, dre->getDecl());
      r = accumulation(bo, rhs, before, is_max ? "max" : "sum");
    } else {
      r = value(rhs);
    }
    if (!compound && dre && is_max_of_self(rhs, dre->getDecl())) mark_loops(&LoopInfo::has_max);
    Poly result = r;
    if (compound) {
      switch (op) {
        case clang::BO_AddAssign: result = old + r; break;
        case clang::BO_SubAssign: result = old - r; break;
        case clang::BO_MulAssign: result = old * r; break;
        case clang::BO_ShlAssign:
          if (auto k = r.as_constant(); k && *k >= 0 && *k < 31) { result = old * Poly::constant(int64_t{1} << *k); break; }
          [[fallthrough]];
        default: result = opaque_of(bo, {old, r});
      }
    }
    if (loc) emit_access(lhs, *loc, true);
    if (dre) {
      if (auto* v = llvm::dyn_cast<clang::VarDecl>(dre->getDecl())) {
        if (v->getType()->isPointerType()) {
          std::optional<Pointer> p = compound ? std::nullopt : pointer_of(rhs);
          if (p) pointers_[v] = *p;
          else pointers_.erase(v);
        }
        values_[v] = bounded(bo, result);
      }
    }
    return result;
  }

  static bool refers_to(const clang::Stmt* s, const clang::ValueDecl* d) {
    if (!s) return false;
    if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(s); dre && dre->getDecl() == d) return true;
    for (const clang::Stmt* c : s->children())
      if (refers_to(c, d)) return true;
    return false;
  }

  static bool is_max_of_self(const clang::Expr* rhs, const clang::ValueDecl* d) {
    auto* call = llvm::dyn_cast<clang::CallExpr>(strip(rhs));
    return call && is_max_call(callee_name(call)) && refers_to(call, d);
  }

  // The right side of `acc += rhs` (or acc = acc + rhs, fmaf(a, b, acc)): detects
  // the per-thread dot product of a matmul and the serial reduction over a row.
  Poly accumulation(const clang::BinaryOperator* bo, const clang::Expr* rhs, size_t nodes_before, const char* op) {
    const clang::Expr* e = strip(rhs);
    // acc = acc + a * b: look at the product operand.
    if (auto* add = llvm::dyn_cast<clang::BinaryOperator>(e); add && bo->getOpcode() == clang::BO_Assign &&
                                                             add->getOpcode() == clang::BO_Add) {
      const clang::Expr* other = strip(add->getRHS());
      if (auto* l = llvm::dyn_cast<clang::DeclRefExpr>(strip(add->getLHS())); !l) other = strip(add->getLHS());
      e = other;
    }
    const clang::Expr *a = nullptr, *b = nullptr;
    if (auto* mul = llvm::dyn_cast<clang::BinaryOperator>(e); mul && mul->getOpcode() == clang::BO_Mul) {
      a = mul->getLHS();
      b = mul->getRHS();
    } else if (auto* call = llvm::dyn_cast<clang::CallExpr>(e);
               call && is_one_of(callee_name(call), {"fmaf", "fma", "__fmaf_rn"}) && call->getNumArgs() == 3) {
      a = call->getArg(0);
      b = call->getArg(1);
    }
    if (a && b && text(a) == text(b)) mark_loops(&LoopInfo::has_square_diff);  // var += d * d
    if (a && b && loop_ >= 0 && device_) {
      size_t n0 = fn_.nodes.size();
      value(a);
      size_t n1 = fn_.nodes.size();
      value(b);
      size_t n2 = fn_.nodes.size();
      auto la = load_walking(n0, n1), lb = load_walking(n1, n2);
      bool two_buffers = la && lb && fn_.nodes[*la].attrs.at("param") != fn_.nodes[*lb].attrs.at("param");
      // A matrix product, not a dot product (a[j] * b[j]): the operands are indexed
      // differently and one of them is shared by the lanes of a warp (the reuse tiling buys).
      auto offset = [&](NodeId id) {
        for (const auto& acc : accesses_)
          if (acc.node == id) return acc.ptr.byte_offset;
        return Poly();
      };
      auto broadcast = [&](NodeId id) {
        auto ls = num_attr(fn_.nodes[id], "lane_stride");
        return ls && *ls == 0;
      };
      bool product_shape = two_buffers && !(offset(*la) == offset(*lb)) && (broadcast(*la) || broadcast(*lb));
      if (product_shape && !loops_[loop_].gemm_done) {
        loops_[loop_].gemm_done = true;
        const auto& na = fn_.nodes[*la];
        const auto& nb = fn_.nodes[*lb];
        auto space = [](const ir::Node& n) { return std::get<std::string>(n.attrs.at("space")); };
        bool global = space(na) == "global" && space(nb) == "global";
        add("gemm_loop", bo,
            {{"a", std::get<std::string>(na.attrs.at("param"))},
             {"b", std::get<std::string>(nb.attrs.at("param"))},
             {"a_space", space(na)},
             {"b_space", space(nb)},
             {"global_operands", global},
             {"bound", bound_text(loop_)}},
            {*la, *lb});
      }
      if (!product_shape) serial_reduction(bo, nodes_before, op);
      return opaque(bo, true, true);
    }
    Poly r = value(rhs);
    serial_reduction(bo, nodes_before, op);
    return r;
  }

  // A load made between node indices [from, to) whose index walks the innermost loop.
  std::optional<NodeId> load_walking(size_t from, size_t to) {
    if (loop_ < 0) return std::nullopt;
    for (const auto& acc : accesses_) {
      if (acc.node < from || acc.node >= to || acc.store) continue;
      const std::string& iter = loops_[loop_].iter;
      if (!iter.empty() && acc.ptr.byte_offset.mentions(iter)) return acc.node;
    }
    return std::nullopt;
  }

  static std::optional<int64_t> num_attr(const ir::Node& n, const char* key) {
    const Attr* a = n.attr(key);
    if (a && std::holds_alternative<int64_t>(*a)) return std::get<int64_t>(*a);
    return std::nullopt;
  }

  std::string bound_text(int l) const {
    auto it = fn_.regions[loops_[l].region].attrs.find("bound");
    return it == fn_.regions[loops_[l].region].attrs.end() ? "" : std::get<std::string>(it->second);
  }

  // One thread walking a long row and folding it into a scalar: sum += x[row*C + i].
  void serial_reduction(const clang::Stmt* at, size_t nodes_before, const char* op) {
    if (!device_ || loop_ < 0) return;
    LoopInfo& l = loops_[loop_];
    if (serial_reduction_done_ || l.stride_kind != "serial" || l.iter.empty()) return;
    bool long_row = l.bound_symbolic || (l.bound_const && *l.bound_const >= 64);
    if (!long_row) return;
    for (const auto& acc : accesses_) {
      if (acc.node < nodes_before || acc.store || acc.ptr.space != "global") continue;
      auto step = acc.ptr.byte_offset.coefficient(l.iter);
      if (!step || !step->as_constant() || *step->as_constant() != size_of(acc.ptr.elem)) continue;
      serial_reduction_done_ = true;  // one finding per kernel: the first pass that does it
      const auto& load = fn_.nodes[acc.node];
      auto lane = load.attr("lane_stride_text");
      bool per_row = lane && std::get<std::string>(*lane) != "0";
      add("serial_reduction", at,
          {{"param", acc.ptr.name}, {"op", std::string(op)}, {"bound", bound_text(loop_)},
           {"thread_per_row", per_row}},
          {acc.node});
      return;
    }
  }

  Poly call_value(const clang::CallExpr* call) {
    std::string name = callee_name(call);
    if (!device_) return host_call(call, name);
    auto args = [&]() {
      std::vector<Poly> parts;
      for (const clang::Expr* a : call->arguments()) parts.push_back(value(a));
      return parts;
    };
    if (is_one_of(name, {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
                         "__syncwarp"})) {
      auto parts = args();
      bool block = name != "__syncwarp";
      NodeId id = add("barrier", call,
                      {{"kind", std::string(block ? "block" : "warp")},
                       {"under_thread_dependent_branch", enclosing_region_has("if", "thread_dependent")},
                       {"in_thread_dependent_loop", enclosing_region_has("loop", "thread_dependent_bounds")},
                       {"after_thread_dependent_return", thread_dependent_return_},
                       {"in_loop", loop_ >= 0}});
      if (block) mark_loops(&LoopInfo::has_barrier);
      barriers_.push_back(id);
      return opaque_of(call, parts);
    }
    if (name.rfind("__shfl", 0) == 0 || name.rfind("__reduce_", 0) == 0) {
      auto parts = args();
      uses_shuffle_ = true;
      std::string kind = name.find("down") != std::string::npos  ? "down"
                         : name.find("xor") != std::string::npos ? "xor"
                         : name.find("up") != std::string::npos  ? "up"
                                                                 : "idx";
      add("shuffle", call, {{"kind", kind}, {"callee", name}});
      return opaque(call, true, true);
    }
    if (name.rfind("atomic", 0) == 0 && call->getNumArgs() >= 1) {
      auto target = pointer_of(call->getArg(0));
      size_t before = fn_.nodes.size();
      std::vector<Poly> parts;
      for (unsigned i = 1; i < call->getNumArgs(); ++i) parts.push_back(value(call->getArg(i)));
      bool value_from_load = false;
      for (size_t n = before; n < fn_.nodes.size(); ++n)
        if (fn_.nodes[n].op == "load") value_from_load = true;
      std::map<std::string, Attr> a{{"op", name.substr(6)}, {"in_loop", loop_ >= 0},
                                    {"value_from_load", value_from_load}};
      std::vector<NodeId> inputs;
      if (target) {
        a["space"] = target->space;
        a["param"] = target->name;
        a["index"] = target->byte_offset.text();
        // Every thread of the block (or grid) updates one address: they serialize.
        a["same_address"] = !thread_dependent(target->byte_offset);
        if (target->decl != ir::kNoNode) inputs.push_back(target->decl);
        mark_param(*target, true, true);
      } else {
        value(call->getArg(0));
      }
      atomics_.push_back(add("atomic", call, std::move(a), std::move(inputs)));
      return opaque(call, true, true);
    }
    if (is_one_of(name, {"__ldg", "__ldcs", "__ldcg", "__ldca", "__ldlu"}) && call->getNumArgs() == 1) {
      auto p = pointer_of(call->getArg(0));
      if (p) {
        emit_access(call, *p, false);
        bool t = thread_dependent(p->byte_offset);
        return opaque(call, t, t);
      }
    }
    if (is_one_of(name, {"__stcs", "__stcg", "__stwt", "__stwb"}) && call->getNumArgs() == 2) {
      auto p = pointer_of(call->getArg(0));
      value(call->getArg(1));
      if (p) emit_access(call, *p, true);
      return Poly();
    }
    if (is_exp_call(name)) mark_loops(&LoopInfo::has_exp);
    if (is_max_call(name)) mark_loops(&LoopInfo::has_max);
    if (name == "powf" && call->getNumArgs() == 2) {
      auto e = call->getArg(1)->getIntegerConstantExpr(ctx_);
      if (const auto* fl = llvm::dyn_cast<clang::FloatingLiteral>(strip(call->getArg(1)));
          (fl && fl->getValueAsApproximateDouble() == 2.0) || (e && *e == 2))
        mark_loops(&LoopInfo::has_square_diff);
    }
    if (auto* callee = call->getDirectCallee(); callee && callee->hasBody()) callees_.insert(callee->getNameAsString());
    // A pointer handed to another function may be written there.
    for (const clang::Expr* a : call->arguments()) {
      if (!a->getType()->isPointerType() || a->getType()->getPointeeType().isConstQualified()) continue;
      if (auto p = pointer_of(a)) mark_param(*p, true, true);
    }
    auto parts = args();
    return opaque_of(call, parts);
  }

  // --- host side -----------------------------------------------------------

  static std::string buffer_name(const clang::Expr* e) {
    e = strip(e);
    while (true) {
      if (auto* cast = llvm::dyn_cast<clang::CastExpr>(e)) { e = strip(cast->getSubExpr()); continue; }
      if (auto* bo = llvm::dyn_cast<clang::BinaryOperator>(e); bo && bo->getType()->isPointerType()) {
        e = strip(bo->getLHS()->getType()->isPointerType() ? bo->getLHS() : bo->getRHS());
        continue;
      }
      if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e); uo && uo->getOpcode() == clang::UO_AddrOf) {
        e = strip(uo->getSubExpr());
        continue;
      }
      if (auto* ase = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) { e = strip(ase->getBase()); continue; }
      break;
    }
    if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) return dre->getDecl()->getNameAsString();
    if (auto* me = llvm::dyn_cast<clang::MemberExpr>(e)) return me->getMemberDecl()->getNameAsString();
    return "";
  }

  // A device operation (launch, GEMM) reading `reads` and writing `writes`: it
  // consumes the previous one's output when it reads a buffer that one wrote.
  NodeId device_op(const char* op, const clang::Stmt* at, std::map<std::string, Attr> attrs,
                   const std::set<std::string>& reads, const std::set<std::string>& writes) {
    bool consumes = false;
    for (const auto& r : reads) consumes |= last_device_writes_.count(r) > 0;
    attrs["consumes_previous_output"] = consumes;
    attrs["in_loop"] = loop_ >= 0;
    std::vector<NodeId> inputs;
    if (consumes) inputs.push_back(last_device_op_);
    NodeId id = add(op, at, std::move(attrs), std::move(inputs));
    last_device_op_ = id;
    last_device_writes_ = writes;
    mark_loops(&LoopInfo::has_launch);
    return id;
  }

  Poly launch(const clang::CUDAKernelCallExpr* kc) {
    for (const clang::Expr* a : kc->arguments()) value(a);
    if (device_) return opaque(kc, false, false);  // dynamic parallelism: not modelled
    const clang::FunctionDecl* kernel = kc->getDirectCallee();
    std::string name = kernel ? kernel->getNameAsString() : text(kc->getCallee());
    if (kernel) {
      if (auto* pattern = kernel->getTemplateInstantiationPattern()) kernel = pattern;
    }
    const clang::CallExpr* config = kc->getConfig();
    std::map<std::string, Attr> attrs{{"kernel", name}};
    if (config && config->getNumArgs() >= 2) {
      attrs["grid"] = text(config->getArg(0));
      attrs["block"] = text(config->getArg(1));
    }
    auto it = kernels_.find(kernel ? kernel->getQualifiedNameAsString() : name);
    const KernelSummary* summary = it == kernels_.end() ? nullptr : &it->second;
    attrs["kernel_known"] = summary != nullptr;
    attrs["kernel_pointwise"] = summary && summary->pointwise;
    attrs["kernel_gemm"] = summary && summary->gemm;
    std::set<std::string> reads, writes;
    std::string args;
    for (unsigned i = 0; i < kc->getNumArgs(); ++i) {
      const clang::Expr* a = kc->getArg(i);
      args += (i ? ", " : "") + text(a);
      if (!a->getType()->isPointerType()) continue;
      std::string buf = buffer_name(a);
      if (buf.empty()) continue;
      bool read = true, written = !a->getType()->getPointeeType().isConstQualified();
      if (summary && i < summary->param_read.size()) {
        read = summary->param_read[i];
        written = summary->param_written[i];
      } else if (kernel && i < kernel->getNumParams()) {
        written = !kernel->getParamDecl(i)->getType()->getPointeeType().isConstQualified();
      }
      if (read) reads.insert(buf);
      if (written) writes.insert(buf);
    }
    attrs["args"] = args;
    device_op("launch", kc, std::move(attrs), reads, writes);
    return Poly();
  }

  Poly host_call(const clang::CallExpr* call, const std::string& name) {
    for (const clang::Expr* a : call->arguments()) value(a);
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "cudaLaunchKernel" && call->getNumArgs() >= 1) {
      std::string kernel = buffer_name(call->getArg(0));
      auto it = kernels_.find(kernel);
      bool known = it != kernels_.end();
      device_op("launch", call,
                {{"kernel", kernel}, {"kernel_known", known},
                 {"kernel_pointwise", known && it->second.pointwise}, {"kernel_gemm", known && it->second.gemm},
                 {"args", std::string()}},
                {}, {});
      return Poly();
    }
    if (name.rfind("cublas", 0) == 0 && (lower.find("gemm") != std::string::npos || name == "cublasLtMatmul")) {
      // The output operand: C of the classic API, D of cublasLtMatmul.
      unsigned out = name == "cublasLtMatmul" ? 10 : lower.find("gemmex") != std::string::npos ? 14
                     : lower.find("batched") != std::string::npos && lower.find("strided") != std::string::npos ? 14
                                                                                                                : 12;
      std::set<std::string> reads, writes;
      for (unsigned i = 0; i < call->getNumArgs(); ++i) {
        std::string buf = call->getArg(i)->getType()->isPointerType() ? buffer_name(call->getArg(i)) : "";
        if (buf.empty()) continue;
        (i == out ? writes : reads).insert(buf);
      }
      device_op("gemm_call", call, {{"callee", name}}, reads, writes);
      return Poly();
    }
    static const std::map<std::string, std::string> kSyncs = {
        {"cudaDeviceSynchronize", "device"}, {"cudaStreamSynchronize", "stream"},
        {"cudaEventSynchronize", "event"},   {"cudaMemcpy", "memcpy"},
        {"cudaMemcpyFromSymbol", "memcpy"},  {"cudaMemcpyToSymbol", "memcpy"},
        {"cudaMalloc", "alloc"},             {"cudaFree", "alloc"}};
    if (auto it = kSyncs.find(name); it != kSyncs.end()) {
      host_syncs_.push_back(add("host_sync", call, {{"callee", name}, {"kind", it->second}, {"in_loop", loop_ >= 0}}));
      return Poly();
    }
    return opaque(call, false, false);
  }

  // --- statements ----------------------------------------------------------

  void walk(const clang::Stmt* s) {
    if (!s) return;
    if (auto* cs = llvm::dyn_cast<clang::CompoundStmt>(s)) {
      for (const clang::Stmt* c : cs->body()) walk(c);
    } else if (auto* ds = llvm::dyn_cast<clang::DeclStmt>(s)) {
      for (const clang::Decl* d : ds->decls()) declare_local(d);
    } else if (auto* f = llvm::dyn_cast<clang::ForStmt>(s)) {
      for_loop(f);
    } else if (auto* w = llvm::dyn_cast<clang::WhileStmt>(s)) {
      generic_loop(w, w->getCond(), w->getBody());
    } else if (auto* d = llvm::dyn_cast<clang::DoStmt>(s)) {
      generic_loop(d, d->getCond(), d->getBody());
    } else if (auto* r = llvm::dyn_cast<clang::CXXForRangeStmt>(s)) {
      generic_loop(r, nullptr, r->getBody());
    } else if (auto* i = llvm::dyn_cast<clang::IfStmt>(s)) {
      if_stmt(i);
    } else if (auto* ret = llvm::dyn_cast<clang::ReturnStmt>(s)) {
      if (ret->getRetValue()) value(ret->getRetValue());
      if (enclosing_region_has("if", "thread_dependent")) thread_dependent_return_ = true;
    } else if (auto* sw = llvm::dyn_cast<clang::SwitchStmt>(s)) {
      value(sw->getCond());
      walk(sw->getBody());
    } else if (auto* e = llvm::dyn_cast<clang::Expr>(s)) {
      value(e);
    } else {
      for (const clang::Stmt* c : s->children()) walk(c);
    }
  }

  void declare_local(const clang::Decl* d) {
    auto* v = llvm::dyn_cast<clang::VarDecl>(d);
    if (!v) return;
    if (v->hasAttr<clang::CUDASharedAttr>() && device_) {
      declare_shared(v);
      return;
    }
    if (!v->hasInit()) return;
    const clang::Expr* init = v->getInit();
    if (v->getType()->isPointerType()) {
      // const float* row = x + r * C; float4* x4 = reinterpret_cast<float4*>(x);
      if (auto p = pointer_of(init)) {
        pointers_[v] = *p;
        values_[v] = opaque_of(init, {p->byte_offset});
        return;
      }
    }
    size_t before = fn_.nodes.size();
    Poly val = value(init);
    values_[v] = bounded(init, val);
    // float m = x[...]; m = fmaxf(m, ...) is handled at the assignment; here a
    // declaration from a max call is the start of a running maximum.
    if (auto* call = llvm::dyn_cast<clang::CallExpr>(strip(init)); call && is_max_call(callee_name(call)))
      mark_loops(&LoopInfo::has_max);
    (void)before;
  }

  // Variables assigned in a loop body take an unknown value there.
  void collect_assigned(const clang::Stmt* s, std::set<const clang::VarDecl*>& out) {
    if (!s) return;
    const clang::Expr* target = nullptr;
    if (auto* bo = llvm::dyn_cast<clang::BinaryOperator>(s); bo && bo->isAssignmentOp()) target = bo->getLHS();
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(s); uo && uo->isIncrementDecrementOp()) target = uo->getSubExpr();
    if (target) {
      if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(target->IgnoreParenImpCasts()))
        if (auto* v = llvm::dyn_cast<clang::VarDecl>(dre->getDecl())) out.insert(v);
    }
    for (const clang::Stmt* c : s->children()) collect_assigned(c, out);
  }

  void forget_assigned(const clang::Stmt* body, const clang::VarDecl* except) {
    std::set<const clang::VarDecl*> assigned;
    collect_assigned(body, assigned);
    for (const auto* v : assigned) {
      if (v == except) continue;
      bool t = values_.count(v) ? thread_dependent(values_[v]) : false;
      std::string name = v->getNameAsString() + "~";
      if (t) thread_atoms_.insert(name), lane_atoms_.insert(name);
      values_[v] = Poly::symbol(name);
      pointers_.erase(v);
    }
  }

  struct Step {
    std::string kind = "none";  // add | mul | div
    Poly amount;
  };

  Step step_of(const clang::Expr* inc, const clang::VarDecl* var) {
    Step st;
    if (!inc || !var) return st;
    inc = inc->IgnoreParenImpCasts();
    auto is_var = [&](const clang::Expr* e) {
      auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
      return dre && dre->getDecl() == var;
    };
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(inc); uo && uo->isIncrementDecrementOp() && is_var(uo->getSubExpr())) {
      st.kind = "add";
      st.amount = Poly::constant(uo->isIncrementOp() ? 1 : -1);
      return st;
    }
    auto* bo = llvm::dyn_cast<clang::BinaryOperator>(inc);
    if (!bo || !is_var(bo->getLHS())) return st;
    const clang::Expr* rhs = bo->getRHS();
    switch (bo->getOpcode()) {
      case clang::BO_AddAssign: st.kind = "add"; st.amount = value(rhs); break;
      case clang::BO_SubAssign: st.kind = "add"; st.amount = -value(rhs); break;
      case clang::BO_MulAssign: case clang::BO_ShlAssign: st.kind = "mul"; value(rhs); break;
      case clang::BO_DivAssign: case clang::BO_ShrAssign: st.kind = "div"; value(rhs); break;
      case clang::BO_Assign: {
        // i = i + step, s = s / 2, s = s >> 1
        if (auto* r = llvm::dyn_cast<clang::BinaryOperator>(rhs->IgnoreParenImpCasts()); r && is_var(r->getLHS())) {
          if (r->getOpcode() == clang::BO_Add) { st.kind = "add"; st.amount = value(r->getRHS()); }
          else if (r->getOpcode() == clang::BO_Sub) { st.kind = "add"; st.amount = -value(r->getRHS()); }
          else if (r->getOpcode() == clang::BO_Mul || r->getOpcode() == clang::BO_Shl) { st.kind = "mul"; }
          else if (r->getOpcode() == clang::BO_Div || r->getOpcode() == clang::BO_Shr) { st.kind = "div"; }
        }
        break;
      }
      default: break;
    }
    return st;
  }

  void for_loop(const clang::ForStmt* f) {
    walk(f->getInit());
    const clang::VarDecl* var = nullptr;
    if (auto* ds = llvm::dyn_cast_or_null<clang::DeclStmt>(f->getInit()); ds && ds->isSingleDecl())
      var = llvm::dyn_cast<clang::VarDecl>(ds->getSingleDecl());
    if (auto* bo = llvm::dyn_cast_or_null<clang::BinaryOperator>(f->getInit()); bo && bo->getOpcode() == clang::BO_Assign)
      if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(bo->getLHS()->IgnoreParenImpCasts()))
        var = llvm::dyn_cast<clang::VarDecl>(dre->getDecl());
    Poly init = var && values_.count(var) ? values_[var] : Poly();
    Step step = step_of(f->getInc(), var);

    LoopInfo info;
    info.parent = loop_;
    info.step_kind = step.kind;
    info.header = clang::SourceRange(f->getBeginLoc(), f->getRParenLoc());
    std::map<std::string, Attr> attrs{{"step", step.kind}};
    bool thread_dep = thread_dependent(init) || thread_dependent(step.amount);
    if (var) {
      attrs["induction"] = var->getNameAsString();
      std::string iter = step.kind == "add" ? var->getNameAsString() + "'" : var->getNameAsString();
      info.iter = iter;
      if (step.kind == "add") {
        values_[var] = init + step.amount * Poly::symbol(iter);
      } else {
        values_[var] = Poly::symbol(iter);
        if (thread_dependent(init)) thread_atoms_.insert(iter);
      }
      auto lx = lane_stride(init, 1, kThreadX);
      bool block_or_grid_step = step.amount.mentions("blockDim.x") || step.amount.mentions("gridDim.x");
      info.stride_kind = step.kind != "add" ? "other"
                         : (thread_dependent(init) && block_or_grid_step)
                             ? (step.amount.mentions("gridDim.x") ? "grid" : "block")
                         : (!thread_dependent(init) && step.amount.as_constant()) ? "serial"
                                                                                  : "other";
      (void)lx;
    }
    forget_assigned(f->getBody(), var);
    Poly bound;
    if (f->getCond()) {
      saw_thread_modulo_ = false;
      // The bound: the side of the comparison that is not the induction variable.
      if (auto* cmp = llvm::dyn_cast<clang::BinaryOperator>(f->getCond()->IgnoreParenImpCasts());
          cmp && cmp->isComparisonOp()) {
        value(cmp->getLHS());
        bound = value(cmp->getRHS());
        attrs["bound"] = text(cmp->getRHS());
        if (auto c = bound.as_constant()) info.bound_const = *c;
        else info.bound_symbolic = true;
        // Halving loops that run to s > 0 (or s >= 1) reach strides below a warp.
        if (step.kind == "div") info.reaches_one = info.bound_const && *info.bound_const < 32;
        if (step.kind == "mul") info.reaches_one = true;
      } else {
        bound = value(f->getCond());
      }
      thread_dep |= thread_dependent(bound);
    }
    attrs["thread_dependent_bounds"] = thread_dep;
    attrs["stride_kind"] = info.stride_kind.empty() ? std::string("other") : info.stride_kind;
    uint32_t saved_region = push_region("loop", f, std::move(attrs));
    info.region = region_;
    loops_.push_back(info);
    int saved_loop = loop_;
    loop_ = static_cast<int>(loops_.size() - 1);
    walk(f->getBody());
    if (f->getInc()) value(f->getInc());
    finish_loop(f);
    loop_ = saved_loop;
    region_ = saved_region;
    if (var) values_[var] = Poly::symbol(var->getNameAsString() + "~");
  }

  void generic_loop(const clang::Stmt* s, const clang::Expr* cond, const clang::Stmt* body) {
    forget_assigned(body, nullptr);
    Poly c = cond ? value(cond) : Poly();
    LoopInfo info;
    info.parent = loop_;
    info.step_kind = "none";
    info.stride_kind = "other";
    info.header = s->getSourceRange();
    uint32_t saved_region = push_region("loop", s,
                                        {{"thread_dependent_bounds", thread_dependent(c)},
                                         {"step", std::string("none")},
                                         {"stride_kind", std::string("other")}});
    info.region = region_;
    loops_.push_back(info);
    int saved_loop = loop_;
    loop_ = static_cast<int>(loops_.size() - 1);
    walk(body);
    finish_loop(s);
    loop_ = saved_loop;
    region_ = saved_region;
  }

  void finish_loop(const clang::Stmt* s) {
    LoopInfo& l = loops_[loop_];
    auto& attrs = fn_.regions[l.region].attrs;
    if (!device_) {
      attrs["launches"] = l.has_launch;
      return;
    }
    // A shared-memory tree reduction: a halving (or doubling) stride, a barrier per step.
    if ((l.step_kind == "div" || l.step_kind == "mul") && l.has_barrier && l.shared_read_ahead) {
      add("tree_reduction", nullptr,
          {{"reaches_warp", l.reaches_one}, {"interleaved", l.shared_stride_uses_iter},
           {"direction", std::string(l.step_kind == "div" ? "halving" : "doubling")}});
      fn_.nodes.back().range = range(l.header);
      (void)s;
    }
  }

  void if_stmt(const clang::IfStmt* i) {
    if (i->getInit()) walk(i->getInit());
    saw_thread_modulo_ = false;
    Poly c = value(i->getCond());
    bool thread_dep = thread_dependent(c);
    bool modulo = saw_thread_modulo_ && is_zero_test(i->getCond());
    bool single = thread_dep && !modulo && is_single_thread_test(i->getCond());
    if (device_ && thread_dep)
      add("branch", i->getCond(),
          {{"thread_dependent", true}, {"interleaved_modulo", modulo}, {"single_thread", single},
           {"text", text(i->getCond())}});
    uint32_t saved = push_region("if", i->getThen(),
                                 {{"thread_dependent", thread_dep}, {"single_thread", single},
                                  {"interleaved_modulo", modulo}});
    auto values_before = values_;
    walk(i->getThen());
    region_ = saved;
    if (i->getElse()) {
      auto values_then = values_;
      values_ = values_before;
      saved = push_region("if", i->getElse(), {{"thread_dependent", thread_dep}, {"else", true}});
      walk(i->getElse());
      region_ = saved;
      merge_values(values_then);
    } else {
      merge_values(values_before);
    }
  }

  // After an if: a variable whose value differs between the branches is unknown.
  void merge_values(const std::map<const clang::VarDecl*, Poly>& other) {
    for (auto& [v, p] : values_) {
      auto it = other.find(v);
      if (it != other.end() && it->second == p) continue;
      bool t = thread_dependent(p) || (it != other.end() && thread_dependent(it->second));
      std::string name = v->getNameAsString() + "~";
      if (t) thread_atoms_.insert(name), lane_atoms_.insert(name);
      p = Poly::symbol(name);
    }
  }

  static bool is_zero_literal(const clang::Expr* e) {
    auto* il = llvm::dyn_cast<clang::IntegerLiteral>(e->IgnoreParenImpCasts());
    return il && il->getValue() == 0;
  }
  // (tid % (2*s)) == 0, !(tid & m): the interleaved-pairs test.
  static bool is_zero_test(const clang::Expr* cond) {
    cond = cond->IgnoreParenImpCasts();
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(cond); uo && uo->getOpcode() == clang::UO_LNot) return true;
    if (auto* bo = llvm::dyn_cast<clang::BinaryOperator>(cond)) {
      if (bo->getOpcode() == clang::BO_LAnd || bo->getOpcode() == clang::BO_LOr)
        return is_zero_test(bo->getLHS()) || is_zero_test(bo->getRHS());
      if (bo->getOpcode() == clang::BO_EQ) return is_zero_literal(bo->getLHS()) || is_zero_literal(bo->getRHS());
    }
    return false;
  }
  // threadIdx.x == 0, lane == 0: one thread (or one lane per warp) does the work.
  bool is_single_thread_test(const clang::Expr* cond) {
    cond = cond->IgnoreParenImpCasts();
    auto* bo = llvm::dyn_cast<clang::BinaryOperator>(cond);
    if (!bo) return false;
    if (bo->getOpcode() == clang::BO_LAnd) return is_single_thread_test(bo->getLHS()) || is_single_thread_test(bo->getRHS());
    return bo->getOpcode() == clang::BO_EQ &&
           (bo->getRHS()->getIntegerConstantExpr(ctx_) || bo->getLHS()->getIntegerConstantExpr(ctx_));
  }

  // --- whole-function facts ------------------------------------------------

  void finish_device() {
    bool uses_shared = false, pointwise = fd_->hasAttr<clang::CUDAGlobalAttr>(), any_global_store = false;
    int64_t scalar_loads = 0;
    for (const auto& acc : accesses_) {
      const auto& n = fn_.nodes[acc.node];
      if (acc.ptr.space == "shared") uses_shared = true;
      if (acc.ptr.space != "global") continue;
      if (acc.store) {
        any_global_store = true;
        auto ls = n.attr("lane_stride");
        if (!ls || std::get<int64_t>(*ls) != 1) pointwise = false;
      } else if (std::get<int64_t>(n.attrs.at("vector_width")) == 1) {
        ++scalar_loads;
      }
    }
    // Pointwise: each thread maps its elements independently; any reduction (an
    // accumulator, a running max, a shuffle) makes it a row or block kernel.
    for (const auto& l : loops_)
      if ((l.stride_kind != "grid" && l.stride_kind != "block") || l.has_accumulate || l.has_max) pointwise = false;
    if (uses_shuffle_) pointwise = false;
    pointwise = pointwise && any_global_store && !uses_shared && barriers_.empty() && atomics_.empty();
    bool gemm = false;
    for (const auto& n : fn_.nodes) gemm |= n.op == "gemm_loop";
    pointwise = pointwise && !gemm;
    summary_.pointwise = pointwise;
    summary_.gemm = gemm;
    fn_.attrs["uses_shared"] = uses_shared;
    fn_.attrs["uses_shuffle"] = uses_shuffle_;
    fn_.attrs["pointwise"] = pointwise;
    fn_.attrs["gemm"] = gemm;

    bool vectorizable_marked = false;
    for (auto& n : fn_.nodes) {
      if (n.op == "gemm_loop") n.attrs["kernel_uses_shared"] = uses_shared;
      // Scalar stores of a pointwise kernel: 16-byte vectors would move the same bytes
      // in a quarter of the instructions. Marked on the kernel's first such store only:
      // the advice is about the kernel.
      if (n.op == "store" && pointwise && !has_vector_access_ && std::get<std::string>(n.attrs["space"]) == "global") {
        int64_t bytes = std::get<int64_t>(n.attrs["elem_bytes"]);
        auto ls = num_attr(n, "lane_stride");
        bool scalar_unit = (bytes == 4 || bytes == 2) && ls && *ls == 1;
        n.attrs["vectorizable"] = scalar_unit && !vectorizable_marked;
        n.attrs["scalar_loads"] = scalar_loads;
        vectorizable_marked |= scalar_unit;
      }
    }
    // Parameters: read, written, and what they promise.
    for (auto& [decl, idx] : param_index_) {
      auto& n = fn_.nodes[decl_nodes_[decl]];
      n.attrs["read"] = static_cast<bool>(summary_.param_read[idx]);
      n.attrs["written"] = static_cast<bool>(summary_.param_written[idx]);
    }
    find_passes();
  }

  // Loads of the same row in sibling loops: the kernel makes several passes over
  // global memory. Classified as softmax (a max pass, then an exp pass), statistics
  // (a sum pass, then a squared-difference pass) or a plain re-read.
  void find_passes() {
    struct PassLoad { int pass; NodeId node; uint32_t begin; };
    std::map<std::string, std::vector<PassLoad>> by_row;
    for (const auto& acc : accesses_) {
      if (acc.store || acc.ptr.space != "global" || acc.loops.empty()) continue;
      Poly key = acc.ptr.byte_offset;
      int pass = -1;
      // The pass is the innermost loop the index walks; loops around it (rows) stay symbolic.
      for (int l : acc.loops)
        if (!loops_[l].iter.empty() && key.mentions(loops_[l].iter)) pass = l;
      if (pass < 0) continue;
      int depth = 0;
      for (int l : acc.loops) {
        if (l != pass && depth == 0) continue;
        if (!loops_[l].iter.empty())
          key = key.substitute(loops_[l].iter, Poly::symbol("@" + std::to_string(depth)));
        ++depth;
      }
      by_row[acc.ptr.name + "|" + key.text()].push_back({pass, acc.node, fn_.nodes[acc.node].range.begin_byte});
    }
    auto nested = [&](int a, int b) {  // a inside b, or b inside a
      for (int l = a; l >= 0; l = loops_[l].parent) if (l == b) return true;
      for (int l = b; l >= 0; l = loops_[l].parent) if (l == a) return true;
      return false;
    };
    auto feature = [&](int l, bool LoopInfo::*f) {
      // Features of nested loops were propagated up when they were seen.
      return loops_[l].*f;
    };
    std::set<std::string> reported_params;
    for (auto& [key, loads] : by_row) {
      std::sort(loads.begin(), loads.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
      std::vector<PassLoad> passes;  // first load of each sibling pass, in source order
      for (const auto& ld : loads) {
        bool separate = true;
        for (const auto& p : passes) separate &= !nested(p.pass, ld.pass);
        if (separate) passes.push_back(ld);
      }
      if (passes.size() < 2) continue;
      std::string param = key.substr(0, key.find('|'));
      if (reported_params.count(param)) continue;
      reported_params.insert(param);
      std::string kind = "reread";
      for (size_t i = 0; i < passes.size(); ++i) {
        for (size_t j = i + 1; j < passes.size(); ++j) {
          int a = passes[i].pass, b = passes[j].pass;
          if (feature(a, &LoopInfo::has_max) && !feature(a, &LoopInfo::has_exp) && feature(b, &LoopInfo::has_exp))
            kind = "softmax";
          else if (kind == "reread" && feature(a, &LoopInfo::has_accumulate) && !feature(a, &LoopInfo::has_square_diff) &&
                   !feature(a, &LoopInfo::has_max) && feature(b, &LoopInfo::has_square_diff))
            kind = "statistics";
        }
      }
      std::vector<NodeId> inputs;
      for (const auto& p : passes) inputs.push_back(p.node);
      const auto& second = fn_.nodes[passes[1].node];
      ir::Node n;
      n.op = "multi_pass";
      n.attrs = {{"param", param},
                 {"kind", kind},
                 {"passes", static_cast<int64_t>(passes.size())},
                 {"index", std::get<std::string>(second.attrs.at("index"))}};
      n.inputs = inputs;
      n.range = second.range;
      n.region = second.region;
      fn_.nodes.push_back(std::move(n));
    }
  }

  void finish_host() {
    for (NodeId id : host_syncs_) {
      auto& n = fn_.nodes[id];
      bool launches = false;
      for (uint32_t r = n.region; r != 0; r = fn_.regions[r].parent) {
        auto it = fn_.regions[r].attrs.find("launches");
        if (fn_.regions[r].kind == "loop" && it != fn_.regions[r].attrs.end() && std::get<bool>(it->second))
          launches = true;
      }
      n.attrs["loop_launches"] = launches;
    }
  }
};

// ---------------------------------------------------------------------------
// The AST consumer: device functions first (their summaries feed the host side).

class Lowering : public clang::ASTConsumer {
 public:
  Lowering(ir::Module& module, const Positions& pos) : module_(module), pos_(pos) {}

  void HandleTranslationUnit(clang::ASTContext& ctx) override {
    const auto& sm = ctx.getSourceManager();
    std::vector<const clang::FunctionDecl*> device, host;
    std::function<void(const clang::DeclContext*)> collect = [&](const clang::DeclContext* dc) {
      // noload_decls: only what this parse produced; decls() would deserialize every
      // declaration of the toolkit headers from the precompiled preamble.
      for (const clang::Decl* d : dc->noload_decls()) {
        if (auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) { collect(ns); continue; }
        if (auto* ls = llvm::dyn_cast<clang::LinkageSpecDecl>(d)) { collect(ls); continue; }
        const clang::FunctionDecl* fd = llvm::dyn_cast<clang::FunctionDecl>(d);
        if (auto* ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) fd = ft->getTemplatedDecl();
        if (!fd || !fd->doesThisDeclarationHaveABody() || !fd->getBody()) continue;
        auto loc = sm.getFileLoc(fd->getLocation());
        if (sm.getFileID(loc) != sm.getMainFileID()) continue;
        bool is_device = fd->hasAttr<clang::CUDAGlobalAttr>() || fd->hasAttr<clang::CUDADeviceAttr>();
        (is_device ? device : host).push_back(fd);
      }
    };
    collect(ctx.getTranslationUnitDecl());

    std::map<std::string, KernelSummary> kernels;
    std::map<std::string, std::set<std::string>> callees;
    std::map<std::string, size_t> index;
    for (const auto* fd : device) {
      FunctionLowering lowering(ctx, pos_, fd, true, kernels);
      module_.functions.push_back(lowering.lower());
      kernels[fd->getQualifiedNameAsString()] = lowering.summary();
      callees[module_.functions.back().name] = lowering.callees();
      index[module_.functions.back().name] = module_.functions.size() - 1;
    }
    propagate_shuffle(callees, index);
    for (const auto* fd : host) {
      FunctionLowering lowering(ctx, pos_, fd, false, kernels);
      ir::Function f = lowering.lower();
      bool relevant = std::any_of(f.nodes.begin(), f.nodes.end(), [](const ir::Node& n) {
        return n.op == "launch" || n.op == "gemm_call" || n.op == "host_sync";
      });
      if (relevant) module_.functions.push_back(std::move(f));
    }
  }

 private:
  ir::Module& module_;
  const Positions& pos_;

  // A kernel that calls a warp-reduce helper uses shuffles too; so do its tree reductions.
  void propagate_shuffle(const std::map<std::string, std::set<std::string>>& callees,
                         const std::map<std::string, size_t>& index) {
    auto uses = [&](const std::string& name) {
      auto it = index.find(name);
      if (it == index.end()) return false;
      const auto* a = module_.functions[it->second].attrs.count("uses_shuffle")
                          ? &module_.functions[it->second].attrs.at("uses_shuffle") : nullptr;
      return a && std::get<bool>(*a);
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [name, called] : callees) {
        if (uses(name)) continue;
        for (const auto& c : called)
          if (uses(c)) {
            module_.functions[index.at(name)].attrs["uses_shuffle"] = true;
            changed = true;
            break;
          }
      }
    }
    for (auto& f : module_.functions) {
      bool shuffle = f.attrs.count("uses_shuffle") && std::get<bool>(f.attrs["uses_shuffle"]);
      for (auto& n : f.nodes)
        if (n.op == "tree_reduction") n.attrs["kernel_uses_shuffle"] = shuffle;
    }
  }
};

class LowerAction : public clang::ASTFrontendAction {
 public:
  LowerAction(ir::Module& module, const Positions& pos) : module_(module), pos_(pos) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&, llvm::StringRef) override {
    return std::make_unique<Lowering>(module_, pos_);
  }

 private:
  ir::Module& module_;
  const Positions& pos_;
};

// ---------------------------------------------------------------------------
// Toolkit mode: the toolkit headers are parsed once per process into an in-memory
// precompiled preamble, shared by every file parsed with the same flags.

struct PreambleCache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<clang::PrecompiledPreamble>> by_flags;
};
PreambleCache& preamble_cache() {
  static PreambleCache cache;
  return cache;
}

std::shared_ptr<clang::PrecompiledPreamble> toolkit_preamble(const std::string& flags_key,
                                                             const clang::CompilerInvocation& invocation,
                                                             llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> vfs) {
  auto& cache = preamble_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.by_flags.find(flags_key);
  if (it != cache.by_flags.end()) return it->second;
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(kToolkitPreamble);
  clang::DiagnosticOptions diag_opts;
  clang::IgnoringDiagConsumer ignore;
  auto diags = clang::CompilerInstance::createDiagnostics(*vfs, diag_opts, &ignore, false);
  clang::PreambleCallbacks callbacks;
  auto built = clang::PrecompiledPreamble::Build(
      invocation, buffer.get(), clang::PreambleBounds(static_cast<unsigned>(std::strlen(kToolkitPreamble)), true),
      diags, vfs, std::make_shared<clang::PCHContainerOperations>(), /*StoreInMemory=*/true, "", callbacks);
  std::shared_ptr<clang::PrecompiledPreamble> result;
  if (built) result = std::make_shared<clang::PrecompiledPreamble>(std::move(*built));
  cache.by_flags[flags_key] = result;  // a failure is remembered too: no retry per file
  return result;
}

void parse_suppressions(const std::string& text, ir::Module& module) {
  uint32_t line = 1;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view l(text.data() + start, end - start);
    size_t c = l.find("//");
    size_t m = c == std::string_view::npos ? c : l.find("mlsem: ignore", c);
    if (m != std::string_view::npos) {
      std::vector<std::string> rules;
      size_t open = m + 13;
      if (open < l.size() && l[open] == '[') {
        size_t close = l.find(']', open);
        std::string_view list = l.substr(open + 1, (close == std::string_view::npos ? l.size() : close) - open - 1);
        size_t p = 0;
        while (p <= list.size()) {
          size_t comma = list.find(',', p);
          if (comma == std::string_view::npos) comma = list.size();
          std::string id(list.substr(p, comma - p));
          id.erase(0, id.find_first_not_of(' '));
          id.erase(id.find_last_not_of(' ') + 1);
          if (!id.empty()) rules.push_back(id);
          p = comma + 1;
        }
      }
      module.suppressions[line] = rules;
    }
    if (end == text.size()) break;
    start = end + 1;
    ++line;
  }
}

}  // namespace

ir::Module build_ir(const SourceFile& file, const CudaOptions& options) {
  ir::Module module;
  module.path = file.path;
  module.language = "cuda";
  parse_suppressions(file.text, module);

  std::error_code ec;
  fs::path abs = fs::absolute(file.path.empty() ? fs::path("input.cu") : fs::path(file.path), ec);
  std::string main_path = abs.lexically_normal().string();
  if (abs.extension() != ".cu" && abs.extension() != ".cuh") main_path += ".cu";

  CommandLine cl = make_command_line(main_path, options, module.diagnostics, file.path);
  bool toolkit = !cl.toolkit.empty();
  std::string prefix = toolkit ? kToolkitPreamble : "";
  std::string contents = prefix + file.text;

  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  memory->addFile(main_path, 0, llvm::MemoryBuffer::getMemBufferCopy(contents, main_path));
  if (!toolkit) {
    memory->addFile(std::string(kVirtualDir) + "/prelude.h", 0, llvm::MemoryBuffer::getMemBufferCopy(kPrelude));
    for (const char* h : kPreludeHeaders)
      memory->addFile(std::string(kVirtualDir) + "/include/" + h, 0, llvm::MemoryBuffer::getMemBuffer(""));
    for (const char* h : kPreludeCHeaders)
      memory->addFile(std::string(kVirtualDir) + "/include/" + h, 0, llvm::MemoryBuffer::getMemBuffer(""));
  }
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(memory);
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> vfs = overlay;

  Positions positions(file.text, prefix.size());
  std::vector<const char*> argv;
  for (const auto& a : cl.args) argv.push_back(a.c_str());
  argv.push_back(main_path.c_str());

  clang::DiagnosticOptions driver_diag_opts;
  clang::IgnoringDiagConsumer driver_ignore;
  clang::CreateInvocationOptions cio;
  cio.Diags = clang::CompilerInstance::createDiagnostics(*vfs, driver_diag_opts, &driver_ignore, false);
  cio.VFS = vfs;
  cio.RecoverOnError = true;
  std::shared_ptr<clang::CompilerInvocation> invocation = clang::createInvocation(argv, cio);
  if (!invocation) {
    module.diagnostics.push_back({file.path, {}, "cannot set up the CUDA parse (clang driver rejected the flags)"});
    return module;
  }

  // Diagnostics go to the module only: no "N errors generated" on stderr.
  invocation->getDiagnosticOpts().ShowCarets = false;
  std::unique_ptr<llvm::MemoryBuffer> main_buffer;
  std::shared_ptr<clang::PrecompiledPreamble> preamble;
  if (toolkit) {
    std::string key;
    for (const auto& a : cl.args) key += a + '\x1f';
    preamble = toolkit_preamble(key, *invocation, vfs);
    main_buffer = llvm::MemoryBuffer::getMemBufferCopy(contents, main_path);
    if (preamble && preamble->CanReuse(*invocation, main_buffer->getMemBufferRef(), preamble->getBounds(), *vfs)) {
      invocation->getPreprocessorOpts().RetainRemappedFileBuffers = true;
      preamble->AddImplicitPreamble(*invocation, vfs, main_buffer.get());
    }
  }

  clang::CompilerInstance ci(invocation);
  ci.setVirtualFileSystem(vfs);
  CollectDiagnostics collect(file.path, module.diagnostics,
                             [&](clang::SourceLocation loc, const clang::SourceManager& sm) {
                               return positions.range(loc, loc, sm, ci.getLangOpts());
                             });
  ci.createDiagnostics(&collect, false);
  ci.getDiagnostics().setFatalsAsError(true);  // keep parsing after a missing include
  ci.createFileManager();
  LowerAction action(module, positions);
  // ExecuteAction reports false on any error; only a run that said nothing is news.
  if (!ci.ExecuteAction(action) && module.diagnostics.empty())
    module.diagnostics.push_back({file.path, {}, "the CUDA parse failed; results for this file are incomplete"});
  return module;
}

}  // namespace mlsem::cuda
