// Lowering a call inside a kernel or device function: barriers, shuffles, atomics, the
// cache-hint loads and stores, cooperative groups' ranks, math calls that mark a loop
// (exp, max, a square), and what a helper is handed (docs/IR.md, "CUDA").
#include "cuda/lowering.h"

#include <algorithm>

namespace mlsem::cuda::detail {

namespace {

// A callee with a body: defined here, or a specialization of one of the file's templates
// whose body Clang would have instantiated and the frontend left out (frontend.cpp,
// LeafInstantiations).
bool has_body(const clang::FunctionDecl* f) {
  if (f->hasBody()) return true;
  const clang::FunctionDecl* pattern = f->hasSkippedBody() ? f->getTemplateInstantiationPattern() : nullptr;
  return pattern && pattern->hasBody();
}

}  // namespace

Poly FunctionLowering::call_value(const clang::CallExpr* call) {
  std::string name = callee_name(call);
  if (!device_) return host_call(call, name);
  auto args = [&]() {
    std::vector<Poly> parts;
    for (const clang::Expr* a : call->arguments()) parts.push_back(value(a));
    return parts;
  };
  // `*result /= x` on a template type where operator overloads are visible (cuda_fp16's
  // __half operators): a call of an unresolved operator, still a write of its left side.
  if (auto* oc = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call); oc && oc->isAssignmentOp() && oc->getNumArgs() == 2) {
    std::optional<Pointer> loc = location_of(oc->getArg(0));
    Poly r = value(oc->getArg(1));
    if (loc) {
      if (oc->getOperator() != clang::OO_Equal) emit_access(oc->getArg(0), *loc, false);
      emit_access(oc->getArg(0), *loc, true);
    }
    return opaque_of(call, {r});
  }
  // Cooperative groups: block.sync() (or cg::sync(block)) on a thread_block is a block
  // barrier, tile.sync() on a thread_block_tile a warp barrier; a grid's is neither.
  std::string group_barrier;
  if (name == "sync") {
    // thread_block::sync() is a static member: b.sync() is a call through a member
    // expression, not a member call.
    const clang::Expr* group = nullptr;
    if (auto* me = llvm::dyn_cast<clang::MemberExpr>(call->getCallee()->IgnoreParenImpCasts())) group = me->getBase();
    else if (call->getNumArgs() == 1) group = call->getArg(0);
    std::string type = group ? group->getType().getCanonicalType().getUnqualifiedType().getAsString() : "";
    if (type.find("thread_block_tile") != std::string::npos || type.find("coalesced_group") != std::string::npos)
      group_barrier = "warp";
    else if (type.find("thread_block") != std::string::npos)
      group_barrier = "block";
  }
  if (!group_barrier.empty() || is_one_of(name, {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                                 "__syncthreads_or", "__syncwarp"})) {
    auto parts = args();
    bool block = group_barrier.empty() ? name != "__syncwarp" : group_barrier == "block";
    NodeId id = add("barrier", call,
                    {{"kind", std::string(block ? "block" : "warp")},
                     {"under_thread_dependent_branch", enclosing_region_has("if", "thread_dependent")},
                     {"in_thread_dependent_loop", enclosing_region_has("loop", "thread_dependent_bounds")},
                     {"after_thread_dependent_return", thread_dependent_return_},
                     {"after_launch_bound_return", launch_bound_return_},
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
  // atomicAdd & co., not a user's own helper that happens to be named atomic* (a
  // warp-aggregated atomicAggInc defined in the file).
  const clang::FunctionDecl* callee_decl = call->getDirectCallee();
  bool user_helper = callee_decl && has_body(callee_decl) &&
                     sm_.isInMainFile(sm_.getFileLoc(callee_decl->getLocation()));
  if (name.rfind("atomic", 0) == 0 && call->getNumArgs() >= 1 && !user_helper) {
    auto target = pointer_of(call->getArg(0));
    size_t before = fn_.nodes.size();
    std::vector<Poly> parts;
    for (unsigned i = 1; i < call->getNumArgs(); ++i) parts.push_back(value(call->getArg(i)));
    bool value_from_load = false;
    for (size_t n = before; n < fn_.nodes.size(); ++n)
      if (fn_.nodes[n].op == "load") value_from_load = true;
    std::map<std::string, Attr> a{{"op", name.substr(6)}, {"in_loop", loop_ >= 0},
                                  {"value_from_load", value_from_load},
                                  {"one_thread", one_thread_left_ || enclosing_region_has("if", "single_thread")}};
    std::vector<NodeId> inputs;
    if (target) {
      a["space"] = target->space;
      a["param"] = target->name;
      a["index"] = target->byte_offset.text();
      // Every thread of the block (or grid) updates one address: they serialize.
      a["same_address"] = !thread_dependent(target->byte_offset);
      if (target->decl != ir::kNoNode) inputs.push_back(target->decl);
      mark_param(*target, true, true, -1);
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
  // Cooperative groups: a thread's rank in its group differs between threads.
  if (is_one_of(name, {"thread_rank", "thread_index"})) {
    args();
    return opaque(call, true, true);
  }
  // A tile's rank among the block's tiles (warp.meta_group_rank(): the warp's index):
  // the same for a warp's lanes, different between its warps.
  if (name == "meta_group_rank") {
    args();
    return opaque(call, true, false);
  }
  if (is_exp_call(name)) mark_loops(&LoopInfo::has_exp);
  if (is_max_call(name)) mark_loops(&LoopInfo::has_max);
  if (name == "powf" && call->getNumArgs() == 2) {
    auto e = call->getArg(1)->getIntegerConstantExpr(ctx_);
    if (const auto* fl = llvm::dyn_cast<clang::FloatingLiteral>(strip(call->getArg(1)));
        (fl && fl->getValueAsApproximateDouble() == 2.0) || (e && *e == 2))
      mark_loops(&LoopInfo::has_square_diff);
  }
  if (auto* callee = call->getDirectCallee(); callee && has_body(callee)) callees_.insert(callee->getNameAsString());
  // Each argument lowered once: a pointer through pointer_of (which lowers its index),
  // standing for its offset as `&x[i]` does; anything else through value().
  bool global_pointer = false;
  std::vector<Poly> parts;
  for (const clang::Expr* a : call->arguments()) {
    std::optional<Pointer> p;
    if (a->getType()->isPointerType()) p = pointer_of(a);
    if (!p) {
      parts.push_back(value(a));
      continue;
    }
    global_pointer |= p->space == "global";
    // A pointer handed to another function may be written there.
    if (!a->getType()->getPointeeType().isConstQualified()) mark_param(*p, true, true, -1);
    parts.push_back(opaque_of(a, {p->byte_offset}));
  }
  // A global pointer and a thread's own index handed to a helper (apex's load_store(dst,
  // src, 0, flat_idx)): the helper moves the thread's data.
  if (global_pointer && std::any_of(parts.begin(), parts.end(), [&](const Poly& v) { return thread_dependent(v); }))
    mark_loops(&LoopInfo::passes_global);
  return opaque_of(call, parts);
}

}  // namespace mlsem::cuda::detail
