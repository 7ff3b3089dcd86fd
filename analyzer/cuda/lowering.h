// AST to kernel IR: the declarations shared by the lowering stages.
//   lower.cpp        statements, regions, loops, declarations (the walk over a body)
//   lower_expr.cpp   index analysis: expressions as polynomials (index.h), pointers,
//                    memory accesses, accumulations, device calls
//   lower_host.cpp   host side: launches, GEMM calls, host synchronisation
//   kernel_facts.cpp whole-kernel facts computed after the walk
//   host_graph.cpp   the file's call graph: calls and launches, in loops or not
// One FunctionLowering lowers one function; device functions first, so that their
// summaries (KernelSummary) inform the host functions that launch them.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/Stmt.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Lex/Lexer.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/source.h"
#include "cuda/index.h"
#include "cuda/run_once.h"
#include "ir/ir.h"

namespace mlsem::cuda::detail {

using ir::Attr;
using ir::NodeId;

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

struct LaunchBound {
  int dim = 0;                // D: 0, 1, 2 for x, y, z
  unsigned param = 0;         // P's index among the kernel's parameters
  int template_param = -1;    // T's index among its template parameters; -1: none
};

struct KernelSummary {
  std::vector<bool> param_read, param_written;
  // Bytes one thread stores through each parameter when all its stores to it are outside
  // loops (the sum over those stores); -1 when any is in a loop or made another way (a
  // helper, an atomic), or it is not written.
  std::vector<int64_t> param_store_bytes;
  bool pointwise = false;
  bool gemm = false;
  // Early returns under `if (threadIdx.D >= P)`, P a parameter, or a local initialized
  // `T == 0 ? P : T` with T a template parameter (ggml's `k_template == 0 ? k_arg :
  // k_template`). Such a return never runs when every launch makes blockDim.D what P is
  // there: the argument it passes for P (ggml's argsort: block_dims(ncols_pad, 1, 1) and
  // ncols_pad), or the value it instantiates T with when that is not 0.
  std::vector<LaunchBound> launch_bound_returns;
};

// A host function that queues device work (llm.c's `residual_forward` around
// `residual_forward_kernel<<<...>>>`): its first and last device operations, the buffers
// each reads and writes given as indices of the wrapper's parameters. A call of the
// wrapper in another host function stands for those operations, so launch sequences are
// seen across the functions of a file. Only wrappers whose first and last operations run
// whenever the wrapper does: not under a loop, an if/else, a switch or a conditional
// expression (an early return before them is allowed). A parameter reassigned before the
// launch is still taken for the caller's argument.
struct WrapperOp {
  std::string op;  // "launch" | "gemm_call"
  std::map<std::string, ir::Attr> attrs;
  std::set<unsigned> reads, writes;
};
struct WrapperSummary {
  std::vector<WrapperOp> ops;  // the first, and the last when there are several
};

// ---------------------------------------------------------------------------
// AST helpers.

const clang::Expr* strip(const clang::Expr* e);
std::string callee_name(const clang::CallExpr* call);
bool is_one_of(const std::string& s, std::initializer_list<const char*> names);
bool is_max_call(const std::string& n);
bool is_exp_call(const std::string& n);

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
  Poly bound;                // the bound of `i < bound` when the loop counts from 0 by 1, else zero
  bool bound_symbolic = false;
  bool reaches_one = false;  // halving loops: runs down to a stride below a warp
  // Its trip count grows with a runtime size (a row length, the element count): not only
  // with literals, template parameters and the block's shape (blockDim, warpSize).
  bool over_data = true;
  bool has_max = false, has_exp = false, has_accumulate = false, has_square_diff = false;
  bool has_shared_combine = false;  // shared elements combined in place (s[i] += s[i + k])
  bool has_barrier = false, has_shared_access = false, has_launch = false;
  bool passes_global = false;  // hands a global pointer to a device helper (a vector load_store)
  bool has_timing = false;  // host loops: records events or reads a timer (a benchmark loop)
  std::set<std::string> copied_back;  // host loops: variables a device-to-host copy fills
  bool exit_on_copy = false;  // host loops: a break or return decided by such a variable
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

// ---------------------------------------------------------------------------
// Lowering one function.

class FunctionLowering {
 public:
  FunctionLowering(clang::ASTContext& ctx, const Positions& pos, const clang::FunctionDecl* fd, bool device,
                   const std::map<std::string, KernelSummary>& kernels,
                   const std::map<const clang::FunctionDecl*, WrapperSummary>* wrappers = nullptr)
      : ctx_(ctx), sm_(ctx.getSourceManager()), pos_(pos), fd_(fd), device_(device), kernels_(kernels),
        wrappers_(wrappers) {}

  ir::Function lower();

  KernelSummary summary() const { return summary_; }
  // Host functions, after lower(): what a call of this one queues, if it is a wrapper.
  const std::optional<WrapperSummary>& wrapper() const { return wrapper_; }
  const std::set<std::string>& callees() const { return callees_; }

 private:
  clang::ASTContext& ctx_;
  const clang::SourceManager& sm_;
  const Positions& pos_;
  const clang::FunctionDecl* fd_;
  bool device_;
  const std::map<std::string, KernelSummary>& kernels_;
  const std::map<const clang::FunctionDecl*, WrapperSummary>* wrappers_;
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
  std::map<std::string, int64_t> small_params_;  // small_template_params(), once per function
  std::vector<std::pair<uint32_t, uint32_t>> if_arms_;  // (then, else) regions of each if with an else
  std::set<std::string> float_atoms_;   // integers converted from a floating-point value
  std::set<std::string> lane_atoms_;    // ... and between lanes, not affinely
  std::vector<Access> accesses_;
  bool saw_thread_modulo_ = false;
  bool thread_dependent_return_ = false;
  bool launch_bound_return_ = false;  // after a return summary_.launch_bound_returns holds
  std::map<uint32_t, LaunchBound> launch_bound_guards_;  // if region -> its bound
  std::map<const clang::VarDecl*, int64_t> case_values_;  // host: `case C:` of a switch on the variable
  bool one_thread_left_ = false;  // after if (threadIdx.x != 0) return;
  std::vector<NodeId> barriers_, atomics_;
  bool uses_shuffle_ = false, has_vector_access_ = false, serial_reduction_done_ = false;
  // Host side: the last device operation and which buffers each one wrote.
  NodeId last_device_op_ = ir::kNoNode;
  std::set<std::string> last_device_writes_;
  // The last device operation, saved and restored around branches that exclude each other.
  struct DeviceOpState {
    NodeId op;
    std::set<std::string> writes;
  };
  DeviceOpState device_ops() const { return {last_device_op_, last_device_writes_}; }
  void restore_device_ops(const DeviceOpState& s) {
    last_device_op_ = s.op;
    last_device_writes_ = s.writes;
  }
  // Every device operation queued, in order, with the buffers it reads and writes.
  struct QueuedOp {
    NodeId node;
    std::set<std::string> reads, writes;
  };
  std::vector<QueuedOp> queued_;
  std::optional<WrapperSummary> wrapper_;
  std::optional<WrapperSummary> find_wrapper() const;
  bool wrapper_call(const clang::CallExpr* call);

  // --- helpers -------------------------------------------------------------

  Range range(clang::SourceRange r) const;
  std::string text(const clang::Stmt* s) const;
  // Whether two expressions are the same computation (Clang's structural profile, which
  // sees through parentheses and casts as written; not their text, which inside a macro
  // is the whole invocation for every argument).
  bool same_expr(const clang::Expr* a, const clang::Expr* b) const;

  NodeId add(std::string op, const clang::Stmt* where, std::map<std::string, Attr> attrs = {},
             std::vector<NodeId> inputs = {});

  uint32_t push_region(std::string kind, const clang::Stmt* s, std::map<std::string, Attr> attrs);

  bool enclosing_region_has(const char* kind, const char* flag) const;
  // The same from region `from` outward.
  bool region_has(uint32_t from, const char* kind, const char* flag) const;

  bool thread_dependent(const Poly& p) const;
  // Every symbol of p is a small template parameter of the kernel, blockDim.* or warpSize,
  // and with those parameters at their largest p is not a constant above 256.
  bool fixed_at_launch(const Poly& p) const;
  std::map<std::string, int64_t> small_template_params() const;
  bool lane_varying_nonaffine(const Poly& p) const;

  // An opaque value: named by its text, thread- and lane-dependence inherited.
  Poly opaque(const clang::Stmt* e, bool thread_dep, bool lane_dep);
  Poly opaque_of(const clang::Stmt* e, const std::vector<Poly>& parts);
  // Polynomials stay small: a runaway expression becomes one opaque symbol.
  Poly bounded(const clang::Stmt* e, Poly p);

  void mark_loops(bool LoopInfo::*flag);

  // --- declarations --------------------------------------------------------

  static bool is_restrict(clang::QualType t) { return t.isRestrictQualified(); }

  void declare_params();

  NodeId declare_shared(const clang::VarDecl* v);

  // --- pointers ------------------------------------------------------------

  int64_t size_of(clang::QualType t) const;
  int64_t record_width(clang::QualType t) const;
  bool is_minus_one(const clang::Expr* e) const;  // X - 1
  bool is_single_block_test(const clang::Expr* cond);  // fields of a vector-like struct, else 1
  clang::QualType widest_instantiation(const Pointer& p, clang::QualType dependent) const;

  std::optional<Pointer> pointer_of(const clang::Expr* e);

  // The memory location an lvalue expression names (x[i], *p, tile[r][c], v.x of x4[i]).
  std::optional<Pointer> location_of(const clang::Expr* e);

  // --- memory accesses -----------------------------------------------------

  NodeId emit_access(const clang::Expr* e, const Pointer& p, bool store);

  // A parameter read or written through p. store_bytes: what this one write stores, for
  // KernelSummary::param_store_bytes (0: no store; -1: not known, as for a store in a
  // loop, an atomic, or a pointer handed to a helper that may write through it).
  void mark_param(const Pointer& p, bool read, bool written, int64_t store_bytes);

  // --- expressions ---------------------------------------------------------

  Poly builtin_var(const clang::Expr* e);

  // p / d and p % d for a constant d: with d a multiple of the warp size and p
  // unit-stride in threadIdx.x, p / d is the same for all lanes of a warp (a warp or
  // row id) and p % d is p - d*(p/d): the lane. Otherwise the result is opaque.
  Poly divide(const clang::Expr* e, const Poly& p, int64_t d, bool remainder);

  Poly value(const clang::Expr* e);

  Poly decl_value(const clang::DeclRefExpr* dre);

  Poly unary(const clang::UnaryOperator* uo);

  Poly read_location(const clang::Expr* e);

  Poly binary(const clang::BinaryOperator* bo);

  // Marks the innermost loop as accumulating when `target` is a scalar updated from itself.
  void note_accumulate(const clang::Expr* target);

  Poly assign(const clang::BinaryOperator* bo);

  static bool refers_to(const clang::Stmt* s, const clang::ValueDecl* d);

  static bool is_max_of_self(const clang::Expr* rhs, const clang::ValueDecl* d);

  // The right side of `acc += rhs` (or acc = acc + rhs, fmaf(a, b, acc)): detects
  // the per-thread dot product of a matmul and the serial reduction over a row.
  Poly accumulation(const clang::BinaryOperator* bo, const clang::Expr* rhs, size_t nodes_before, const char* op);

  // A load made between node indices [from, to) whose index walks the innermost loop.
  std::optional<NodeId> load_walking(size_t from, size_t to);

  static std::optional<int64_t> num_attr(const ir::Node& n, const char* key);

  std::string bound_text(int l) const;

  // One thread walking a long row and folding it into a scalar: sum += x[row*C + i].
  void serial_reduction(const clang::Stmt* at, size_t nodes_before, const char* op);

  Poly call_value(const clang::CallExpr* call);

  // --- host side -----------------------------------------------------------

  static std::string buffer_name(const clang::Expr* e);

  // A device operation (launch, GEMM) reading `reads` and writing `writes`: it
  // consumes the previous one's output when it reads a buffer that one wrote.
  NodeId device_op(const char* op, const clang::Stmt* at, std::map<std::string, Attr> attrs,
                   const std::set<std::string>& reads, const std::set<std::string>& writes);

  Poly launch(const clang::CUDAKernelCallExpr* kc);
  // The kernels a function-pointer callee is assigned in this function (empty: not one).
  std::set<std::string> pointer_kernels(const clang::Expr* callee) const;

  // A launch's block argument, one component: the expression the source gives for it,
  // or none for a component left out (1).
  struct BlockDim {
    const clang::Expr* expr = nullptr;
  };
  std::optional<BlockDim> block_dim(const clang::Expr* e, int dim) const;
  std::optional<int64_t> block_x(const clang::Expr* e) const;  // blockDim.x when a constant
  // `if (threadIdx.D >= P)`: (D, P's index), P an integer parameter of this kernel.
  std::optional<LaunchBound> launch_bound_guard(const clang::Expr* cond);

  Poly host_call(const clang::CallExpr* call, const std::string& name);
  // A cudaMemcpy* call's kind, by its enumerator's name ("cudaMemcpyDeviceToHost"); "" if unknown.
  std::string memcpy_kind(const clang::CallExpr* call) const;

  // A host integer the function fixes: a constant expression, or arithmetic on locals
  // initialized so and never written after. nullopt otherwise.
  std::optional<int64_t> host_constant(const clang::Expr* e, int depth = 0);
  std::optional<std::set<const clang::VarDecl*>> written_;  // locals written after their declaration

  // --- statements ----------------------------------------------------------

  void walk(const clang::Stmt* s);

  void declare_local(const clang::Decl* d);

  // Variables assigned in a loop body take an unknown value there.
  void collect_assigned(const clang::Stmt* s, std::set<const clang::VarDecl*>& out);

  void forget_assigned(const clang::Stmt* body, const clang::VarDecl* except);

  struct Step {
    std::string kind = "none";  // add | mul | div
    Poly amount;
  };

  Step step_of(const clang::Expr* inc, const clang::VarDecl* var);

  void for_loop(const clang::ForStmt* f);

  void generic_loop(const clang::Stmt* s, const clang::Expr* cond, const clang::Stmt* body);

  void finish_loop(const clang::Stmt* s);

  void if_stmt(const clang::IfStmt* i);

  // After an if: a variable whose value differs between the branches is unknown.
  void merge_values(const std::map<const clang::VarDecl*, Poly>& other);

  static bool is_zero_literal(const clang::Expr* e);
  // (tid % (2*s)) == 0, !(tid & m): the interleaved-pairs test.
  static bool is_zero_test(const clang::Expr* cond);
  // threadIdx.x == 0, lane == 0: one thread (or one lane per warp) does the work.
  // With op = BO_NE: threadIdx.x != 0, every thread but one (an early return then leaves one).
  bool is_single_thread_test(const clang::Expr* cond, clang::BinaryOperatorKind op = clang::BO_EQ);

  // --- whole-function facts ------------------------------------------------

  void finish_device();

  // Read-only buffers read more than once ("shared" by threads or blocks, or "reread").
  std::map<const clang::ValueDecl*, std::string> find_reuse() const;

  // Loads of the same row in sibling loops: the kernel makes several passes over
  // global memory. Classified as softmax (a max pass, then an exp pass), statistics
  // (a sum pass, then a squared-difference pass) or a plain re-read.
  void find_passes();

  void finish_host();
};

// Whole-module facts after every function is lowered: a kernel that calls a
// warp-reduce helper uses shuffles too (kernel_facts.cpp).
void propagate_shuffle(ir::Module& module, const std::map<std::string, std::set<std::string>>& callees,
                       const std::map<std::string, size_t>& index);

// What every function written in the main file calls and launches, for the run-once
// context (host_graph.cpp, run_once.h).
HostGraph read_host_graph(const clang::ASTContext& ctx, const Positions& pos);

}  // namespace mlsem::cuda::detail
