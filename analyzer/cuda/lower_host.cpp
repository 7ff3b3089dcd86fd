// Host side of the lowering: kernel launches, GEMM library calls and host
// synchronisation, each a device operation that may consume the previous one's output.
#include "cuda/lowering.h"

#include <cctype>
#include <functional>

#include "core/text.h"

namespace mlsem::cuda::detail {

std::string FunctionLowering::buffer_name(const clang::Expr* e) {
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
  // x->data and dst->data are different buffers: the member is named with its base.
  if (auto* me = llvm::dyn_cast<clang::MemberExpr>(e)) {
    std::string base = buffer_name(me->getBase());
    std::string member = me->getMemberDecl()->getNameAsString();
    return base.empty() ? member : base + "." + member;
  }
  return "";
}

// A device operation (launch, GEMM) reading `reads` and writing `writes`: it
// consumes the previous one's output when it reads a buffer that one wrote.
NodeId FunctionLowering::device_op(const char* op, const clang::Stmt* at, std::map<std::string, Attr> attrs,
                 const std::set<std::string>& reads, const std::set<std::string>& writes) {
  bool consumes = false;
  for (const auto& r : reads) consumes |= last_device_writes_.count(r) > 0;
  attrs["read_buffers"] = join(reads, ",");
  attrs["write_buffers"] = join(writes, ",");
  attrs["consumes_previous_output"] = consumes;
  attrs["in_loop"] = loop_ >= 0;
  std::vector<NodeId> inputs;
  if (consumes) inputs.push_back(last_device_op_);
  NodeId id = add(op, at, std::move(attrs), std::move(inputs));
  last_device_op_ = id;
  last_device_writes_ = writes;
  mark_loops(&LoopInfo::has_launch);
  queued_.push_back({id, reads, writes});
  return id;
}

// What a call of this host function queues, if it is a wrapper. Called by finish_host(),
// while fn_ still holds the nodes.
std::optional<WrapperSummary> FunctionLowering::find_wrapper() const {
  if (device_ || queued_.empty()) return std::nullopt;
  // A dispatcher (switch (kernel_num) { case 1: softmax_forward1(...); ... }) picks one of
  // several: its cases hold no region of their own, so look for the switch itself.
  // A launch inside a conditional expression (`c ? a<<<...>>>() : b<<<...>>>()`) holds no
  // region either.
  std::function<bool(const clang::Stmt*, bool)> chooses = [&](const clang::Stmt* st, bool in_conditional) {
    if (!st) return false;
    if (llvm::isa<clang::SwitchStmt>(st)) return true;
    if (in_conditional && llvm::isa<clang::CUDAKernelCallExpr>(st)) return true;
    if (const auto* call = llvm::dyn_cast<clang::CallExpr>(st); in_conditional && call && call->getDirectCallee()) {
      const clang::FunctionDecl* f = call->getDirectCallee();
      std::string name = f->getNameAsString();
      if (name.rfind("cublas", 0) == 0 || name == "cudaLaunchKernel" ||
          (wrappers_ && wrappers_->count(f->getCanonicalDecl())))
        return true;  // device work queued or not, depending on the condition
    }
    bool conditional = in_conditional || llvm::isa<clang::AbstractConditionalOperator>(st);
    for (const clang::Stmt* child : st->children())
      if (chooses(child, conditional)) return true;
    return false;
  };
  if (chooses(fd_->getBody(), false)) return std::nullopt;
  std::map<std::string, unsigned> params;
  for (unsigned i = 0; i < fd_->getNumParams(); ++i) params[fd_->getParamDecl(i)->getNameAsString()] = i;
  auto indices = [&](const std::set<std::string>& buffers) {
    std::set<unsigned> out;
    for (const auto& b : buffers)
      if (auto it = params.find(b); it != params.end()) out.insert(it->second);
    return out;
  };
  WrapperSummary w;
  std::vector<size_t> picks{0};
  if (queued_.size() > 1) picks.push_back(queued_.size() - 1);
  for (size_t k : picks) {
    const QueuedOp& q = queued_[k];
    const ir::Node& n = fn_.nodes[q.node];
    if (n.region != 0) return std::nullopt;  // under a loop or a branch: not what every call queues
    WrapperOp op{n.op, {}, indices(q.reads), indices(q.writes)};
    for (const char* key : {"kernel", "kernel_known", "kernel_pointwise", "kernel_gemm", "callee"})
      if (auto it = n.attrs.find(key); it != n.attrs.end()) op.attrs[key] = it->second;
    w.ops.push_back(std::move(op));
  }
  return w;
}

// A call of a wrapper (a host function of this file that queues device work): its first
// and last operations, on the caller's buffers.
bool FunctionLowering::wrapper_call(const clang::CallExpr* call) {
  const clang::FunctionDecl* callee = call->getDirectCallee();
  // An overloaded operator's first argument is the object itself: its parameters do not
  // line up with the arguments. Not read as a wrapper.
  if (!wrappers_ || !callee || llvm::isa<clang::CXXOperatorCallExpr>(call)) return false;
  auto it = wrappers_->find(callee->getCanonicalDecl());
  if (it == wrappers_->end()) return false;
  std::string args;
  for (unsigned i = 0; i < call->getNumArgs(); ++i) args += (i ? ", " : "") + text(call->getArg(i));
  auto buffers = [&](const std::set<unsigned>& indices) {
    std::set<std::string> out;
    for (unsigned i : indices)
      if (i < call->getNumArgs() && call->getArg(i)->getType()->isPointerType())
        if (std::string b = buffer_name(call->getArg(i)); !b.empty()) out.insert(b);
    return out;
  };
  for (size_t k = 0; k < it->second.ops.size(); ++k) {
    const WrapperOp& op = it->second.ops[k];
    auto attrs = op.attrs;
    attrs["via"] = callee->getNameAsString();
    attrs["args"] = args;
    // The last operation followed others inside the wrapper, not the first one alone.
    if (k > 0) restore_device_ops({ir::kNoNode, {}});
    device_op(op.op.c_str(), call, std::move(attrs), buffers(op.reads), buffers(op.writes));
  }
  return true;
}

// Component `dim` (0 = x) of a launch's block argument as the source states it:
// <<<g, 256>>>, <<<g, dim3(1, N)>>>, <<<g, {256, 1, 1}>>>, or a dim3 variable initialized
// so (`const dim3 block_dims(ncols_pad, 1, 1);`). A component left out is 1 (`expr` null).
std::optional<FunctionLowering::BlockDim> FunctionLowering::block_dim(const clang::Expr* e, int dim) const {
  e = strip(e);
  if (!e) return std::nullopt;
  if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
    auto* v = llvm::dyn_cast<clang::VarDecl>(dre->getDecl());
    if (v && v->getInit() && v->getType()->isRecordType() && strip(v->getInit()) != e)
      return block_dim(v->getInit(), dim);  // a dim3 variable: its initializer
  }
  auto component = [&](unsigned count, auto arg) -> std::optional<BlockDim> {
    if (count == 0) return std::nullopt;
    return static_cast<unsigned>(dim) < count ? BlockDim{strip(arg(dim))} : BlockDim{};
  };
  if (auto* ce = llvm::dyn_cast<clang::CXXConstructExpr>(e)) {
    if (ce->getNumArgs() == 1 && strip(ce->getArg(0))->getType()->isRecordType())
      return block_dim(ce->getArg(0), dim);  // a copy of a dim3 (a variable or a temporary)
    return component(ce->getNumArgs(), [&](unsigned k) { return ce->getArg(k); });
  }
  if (auto* il = llvm::dyn_cast<clang::InitListExpr>(e))
    return component(il->getNumInits(), [&](unsigned k) { return il->getInit(k); });
  if (e->getType()->isIntegerType()) return dim == 0 ? BlockDim{e} : BlockDim{};
  return std::nullopt;
}

std::optional<int64_t> FunctionLowering::block_x(const clang::Expr* e) const {
  auto x = block_dim(e, 0);
  if (!x) return std::nullopt;
  if (!x->expr) return 1;
  if (auto v = x->expr->getIntegerConstantExpr(ctx_)) return v->getExtValue();
  return std::nullopt;
}

// The kernels a function-pointer variable is given in this function: its initializer and
// each `v = &kernel` (or `v = kernel`). Empty when the callee is not such a variable.
std::set<std::string> FunctionLowering::pointer_kernels(const clang::Expr* callee) const {
  std::set<std::string> out;
  const clang::Expr* e = callee->IgnoreParenCasts();
  if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e); uo && uo->getOpcode() == clang::UO_Deref)
    e = uo->getSubExpr()->IgnoreParenCasts();
  auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(e);
  auto* var = ref ? llvm::dyn_cast<clang::VarDecl>(ref->getDecl()) : nullptr;
  if (!var) return out;
  auto add = [&](const clang::Expr* value) {
    const clang::Expr* v = value->IgnoreParenCasts();
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(v); uo && uo->getOpcode() == clang::UO_AddrOf)
      v = uo->getSubExpr()->IgnoreParenCasts();
    if (auto* r = llvm::dyn_cast<clang::DeclRefExpr>(v))
      if (auto* f = llvm::dyn_cast<clang::FunctionDecl>(r->getDecl()); f && f->hasAttr<clang::CUDAGlobalAttr>())
        out.insert(f->getNameAsString());
  };
  if (var->getInit()) add(var->getInit());
  std::function<void(const clang::Stmt*)> walk = [&](const clang::Stmt* s) {
    if (!s) return;
    if (auto* bo = llvm::dyn_cast<clang::BinaryOperator>(s); bo && bo->getOpcode() == clang::BO_Assign)
      if (auto* lhs = llvm::dyn_cast<clang::DeclRefExpr>(bo->getLHS()->IgnoreParenImpCasts()); lhs && lhs->getDecl() == var)
        add(bo->getRHS());
    for (const clang::Stmt* c : s->children()) walk(c);
  };
  walk(fd_->getBody());
  return out;
}

Poly FunctionLowering::launch(const clang::CUDAKernelCallExpr* kc) {
  if (device_) {  // dynamic parallelism: not modelled
    for (const clang::Expr* a : kc->arguments()) value(a);
    return opaque(kc, false, false);
  }
  const clang::FunctionDecl* kernel = kc->getDirectCallee();
  const clang::FunctionDecl* instance = kernel;  // the specialization launched, for a template
  std::string name = kernel ? kernel->getNameAsString() : text(kc->getCallee());
  if (kernel) {
    if (auto* pattern = kernel->getTemplateInstantiationPattern()) kernel = pattern;
  }
  const clang::CallExpr* config = kc->getConfig();
  std::map<std::string, Attr> attrs{{"kernel", name}};
  if (!kernel) {
    // Through a function pointer (`kernel = &transposeNaive; ... kernel<<<g, b>>>(...)`):
    // the kernels this function assigns to it.
    if (std::string assigned = join(pointer_kernels(kc->getCallee()), ","); !assigned.empty())
      attrs["pointer_kernels"] = assigned;
  }
  if (config && config->getNumArgs() >= 2) {
    attrs["grid"] = text(config->getArg(0));
    attrs["block"] = text(config->getArg(1));
    if (auto x = block_x(config->getArg(1))) attrs["block_x"] = *x;
  }
  auto it = kernels_.find(kernel ? kernel->getQualifiedNameAsString() : name);
  const KernelSummary* summary = it == kernels_.end() ? nullptr : &it->second;
  attrs["kernel_known"] = summary != nullptr;
  attrs["kernel_pointwise"] = summary && summary->pointwise;
  attrs["kernel_gemm"] = summary && summary->gemm;
  // One walk over the arguments: each lowered, its text, and the buffer a pointer names
  // (kept for bounded_writes below).
  std::set<std::string> reads, writes;
  std::string args;
  std::vector<std::string> buffers(kc->getNumArgs());
  for (unsigned i = 0; i < kc->getNumArgs(); ++i) {
    const clang::Expr* a = kc->getArg(i);
    value(a);
    args += (i ? ", " : "") + text(a);
    if (!a->getType()->isPointerType()) continue;
    std::string& buf = buffers[i] = buffer_name(a);
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
  // Launched with a grid and block the function fixes: each buffer the kernel stores to
  // only outside loops gets at most threads x what a thread stores ("name:bytes,...").
  if (summary && config && config->getNumArgs() >= 2) {
    std::optional<int64_t> threads = 1;
    for (unsigned c = 0; c < 2 && threads; ++c)
      for (int d = 0; d < 3 && threads; ++d) {
        auto dim = block_dim(config->getArg(c), d);
        auto v = !dim ? std::nullopt : dim->expr ? host_constant(dim->expr) : std::optional<int64_t>(1);
        if (!v || *v <= 0 || __builtin_mul_overflow(*threads, *v, &*threads)) threads.reset();
      }
    std::vector<std::string> bounded;
    for (unsigned i = 0; threads && i < kc->getNumArgs() && i < summary->param_store_bytes.size(); ++i) {
      int64_t per_thread = summary->param_store_bytes[i], total = 0;
      const std::string& buf = buffers[i];
      if (per_thread > 0 && !buf.empty() && !__builtin_mul_overflow(*threads, per_thread, &total))
        bounded.push_back(buf + ":" + std::to_string(total));
    }
    if (!bounded.empty()) attrs["bounded_writes"] = join(bounded, ",");
  }
  // Its early returns under `threadIdx.D >= P` never run: blockDim.D is what it passes for P.
  if (summary && !summary->launch_bound_returns.empty() && config && config->getNumArgs() >= 2) {
    // The same expression (same_expr, not by text) or the same integer constant.
    auto same = [&](const clang::Expr* width, const clang::Expr* arg) {
      auto constant = [&](const clang::Expr* e) {
        return e && !e->isValueDependent() && !e->isTypeDependent() ? e->getIntegerConstantExpr(ctx_)
                                                                     : std::nullopt;
      };
      if (width && same_expr(width, arg)) return true;
      auto w = width ? constant(width) : std::optional<llvm::APSInt>(llvm::APSInt::get(1));
      auto a = constant(arg);
      return w && a && llvm::APSInt::isSameValue(*w, *a);
    };
    // The width is the value `v`: the same constant, or a variable this case of a switch
    // on it fixes (`switch (k) { case 32: kernel<64, 32><<<g, dim3(32, k)>>>(...); }`).
    auto is_value = [&](const clang::Expr* width, int64_t v) {
      if (!width) return v == 1;
      if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(strip(width)))
        if (auto it = case_values_.find(llvm::dyn_cast<clang::VarDecl>(dre->getDecl())); it != case_values_.end())
          return it->second == v;
      if (width->isValueDependent()) return false;
      auto c = width->getIntegerConstantExpr(ctx_);
      return c && c->getExtValue() == v;
    };
    const clang::TemplateArgumentList* targs = instance ? instance->getTemplateSpecializationArgs() : nullptr;
    bool dead = true;
    for (const LaunchBound& b : summary->launch_bound_returns) {
      auto block = block_dim(config->getArg(1), b.dim);
      std::optional<int64_t> t;  // the template argument chosen over the parameter, if not 0
      if (b.template_param >= 0) {
        if (!targs || static_cast<unsigned>(b.template_param) >= targs->size() ||
            targs->get(b.template_param).getKind() != clang::TemplateArgument::Integral) {
          dead = false;
          continue;
        }
        if (int64_t v = targs->get(b.template_param).getAsIntegral().getSExtValue(); v != 0) t = v;
      }
      dead = dead && block &&
             (t ? is_value(block->expr, *t) : b.param < kc->getNumArgs() && same(block->expr, kc->getArg(b.param)));
    }
    attrs["bound_returns_dead"] = dead;
  }
  device_op("launch", kc, std::move(attrs), reads, writes);
  return Poly();
}

// A host integer the function fixes: a constant expression, or arithmetic on locals
// initialized so and never written after (`int n = 50000; size_t bytes = n * sizeof(float);`).
std::optional<int64_t> FunctionLowering::host_constant(const clang::Expr* e, int depth) {
  if (!e || depth > 8) return std::nullopt;
  e = e->IgnoreParenCasts();
  if (e->isValueDependent() || e->isTypeDependent()) return std::nullopt;
  clang::Expr::EvalResult r;
  if (e->EvaluateAsInt(r, ctx_)) return r.Val.getInt().getExtValue();
  if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
    auto* v = llvm::dyn_cast<clang::VarDecl>(dre->getDecl());
    if (!v || !v->hasLocalStorage() || llvm::isa<clang::ParmVarDecl>(v) || !v->getInit()) return std::nullopt;
    if (!written_) {
      // Written after its declaration: assigned, incremented, its address taken, or bound
      // to a non-const reference parameter.
      written_.emplace();
      collect_assigned(fd_->getBody(), *written_);
      std::function<void(const clang::Stmt*)> walk = [&](const clang::Stmt* s) {
        if (!s) return;
        auto mark = [&](const clang::Expr* x) {
          if (auto* d = llvm::dyn_cast<clang::DeclRefExpr>(x->IgnoreParenImpCasts()))
            if (auto* w = llvm::dyn_cast<clang::VarDecl>(d->getDecl())) written_->insert(w);
        };
        if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(s); uo && uo->getOpcode() == clang::UO_AddrOf)
          mark(uo->getSubExpr());
        if (auto* call = llvm::dyn_cast<clang::CallExpr>(s)) {
          const clang::FunctionDecl* f = call->getDirectCallee();
          for (unsigned i = 0; i < call->getNumArgs(); ++i) {
            bool by_ref = !f || i >= f->getNumParams() ||
                          (f->getParamDecl(i)->getType()->isReferenceType() &&
                           !f->getParamDecl(i)->getType().getNonReferenceType().isConstQualified());
            if (by_ref && !(f && i >= f->getNumParams() && f->isVariadic())) mark(call->getArg(i));
          }
        }
        for (const clang::Stmt* c : s->children()) walk(c);
      };
      walk(fd_->getBody());
    }
    if (written_->count(v)) return std::nullopt;
    return host_constant(v->getInit(), depth + 1);
  }
  if (auto* bo = llvm::dyn_cast<clang::BinaryOperator>(e)) {
    auto l = host_constant(bo->getLHS(), depth + 1);
    auto r = l ? host_constant(bo->getRHS(), depth + 1) : std::nullopt;
    if (!l || !r) return std::nullopt;
    int64_t out = 0;
    switch (bo->getOpcode()) {
      case clang::BO_Add: if (__builtin_add_overflow(*l, *r, &out)) return std::nullopt; return out;
      case clang::BO_Sub: if (__builtin_sub_overflow(*l, *r, &out)) return std::nullopt; return out;
      case clang::BO_Mul: if (__builtin_mul_overflow(*l, *r, &out)) return std::nullopt; return out;
      case clang::BO_Div: if (*r == 0) return std::nullopt; return *l / *r;
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

// The kind of a cudaMemcpy, cudaMemcpyAsync or cudaMemcpy2D ("cudaMemcpyDeviceToHost"): its
// argument before the stream of an Async call, else its last. Read from the enumerator
// itself: the text of an argument inside a macro (checkCudaErrors(cudaMemcpy(...))) is the
// whole invocation, cut at 120 characters; a kind not named by its enumerator is read
// from its text.
std::string FunctionLowering::memcpy_kind(const clang::CallExpr* call) const {
  const clang::FunctionDecl* f = call->getDirectCallee();
  unsigned n = call->getNumArgs();
  bool async = f && f->getName().ends_with("Async");
  if (n < (async ? 5u : 4u)) return "";
  const clang::Expr* kind = strip(call->getArg(async ? n - 2 : n - 1));
  if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(kind)) return dre->getDecl()->getNameAsString();
  for (std::string_view k : {"cudaMemcpyDeviceToDevice", "cudaMemcpyDeviceToHost", "cudaMemcpyHostToDevice"})
    if (contains(text(kind), k.substr(std::string_view("cudaMemcpy").size()))) return std::string(k);
  return "";
}

Poly FunctionLowering::host_call(const clang::CallExpr* call, const std::string& name) {
  for (const clang::Expr* a : call->arguments()) value(a);
  if (wrapper_call(call)) return Poly();
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
  // Timing: a loop that records events or reads a timer is a benchmark, and waits on
  // purpose (cudaEventSynchronize to read the time, a copy back to check the result).
  static const std::set<std::string> kTimers = {"cudaEventRecord", "cudaEventElapsedTime", "sdkStartTimer",
                                                "sdkStopTimer", "sdkResetTimer", "gettimeofday", "clock_gettime",
                                                "clock", "now"};
  if (kTimers.count(name)) {
    mark_loops(&LoopInfo::has_timing);
    return Poly();
  }
  // A device-to-device copy is queued like a kernel: the host does not wait for it.
  if ((name == "cudaMemcpy" || name == "cudaMemcpy2D") && memcpy_kind(call) == "cudaMemcpyDeviceToDevice")
    return Poly();
  // Launches on another GPU do not follow the ones before (cuda-samples' simpleP2P).
  if (name == "cudaSetDevice") {
    restore_device_ops({ir::kNoNode, {}});
    return Poly();
  }
  // A device-to-host copy into a variable: the loops around it have its value on the host.
  if ((name == "cudaMemcpy" || name == "cudaMemcpyAsync") && loop_ >= 0 &&
      memcpy_kind(call) == "cudaMemcpyDeviceToHost")
    if (std::string dst = buffer_name(call->getArg(0)); !dst.empty())
      for (int l = loop_; l >= 0; l = loops_[l].parent) loops_[l].copied_back.insert(dst);
  static const std::map<std::string, std::string> kSyncs = {
      {"cudaDeviceSynchronize", "device"}, {"cudaStreamSynchronize", "stream"},
      {"cudaEventSynchronize", "event"},   {"cudaMemcpy", "memcpy"},
      {"cudaMemcpyFromSymbol", "memcpy"},  {"cudaMemcpyToSymbol", "memcpy"},
      {"cudaMalloc", "alloc"},             {"cudaFree", "alloc"}};
  if (auto it = kSyncs.find(name); it != kSyncs.end()) {
    std::map<std::string, Attr> attrs{{"callee", name}, {"kind", it->second}, {"in_loop", loop_ >= 0}};
    // cudaMalloc(&buf, bytes): the buffer, and its size when this function fixes it.
    if (name == "cudaMalloc" && call->getNumArgs() >= 2) {
      if (std::string buf = buffer_name(call->getArg(0)); !buf.empty()) {
        attrs["buffer"] = buf;
        if (auto bytes = host_constant(call->getArg(1))) attrs["bytes"] = *bytes;
      }
    }
    add("host_sync", call, std::move(attrs));
    return Poly();
  }
  return opaque(call, false, false);
}

}  // namespace mlsem::cuda::detail
