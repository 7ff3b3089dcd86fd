// Index analysis: expressions lowered to integer polynomials over thread, block, loop
// and parameter symbols (index.h); pointers and the memory accesses they make, with
// their lane stride, vector width and bank conflicts; accumulations (matmul-shaped and
// serial reductions). Device calls are lowered in lower_calls.cpp.
#include "cuda/lowering.h"

#include <algorithm>

namespace mlsem::cuda::detail {

int64_t FunctionLowering::size_of(clang::QualType t) const {
  if (t.isNull() || t->isDependentType() || t->isIncompleteType() || t->isVoidType() ||
      t->isFunctionType())
    return 4;  // unknown: count in 4-byte units
  return ctx_.getTypeSizeInChars(t).getQuantity();
}

int64_t FunctionLowering::record_width(clang::QualType t) const {
  // float4, __half2, int2, packed structs: fields of one scalar type.
  const auto* rt = t.isNull() ? nullptr : t->getAsRecordDecl();
  const auto* def = rt ? rt->getDefinition() : nullptr;
  if (!def) return 1;
  int64_t fields = 0;
  for (auto* f : def->fields()) { (void)f; ++fields; }
  return fields > 1 ? fields : 1;
}

clang::QualType FunctionLowering::widest_instantiation(const Pointer& p, clang::QualType dependent) const {
  const auto* pv = llvm::dyn_cast_or_null<clang::ParmVarDecl>(p.decl_ptr);
  const clang::FunctionTemplateDecl* ft = fd_->getDescribedFunctionTemplate();
  if (!pv || !ft || pv->getDeclContext() != fd_ ||
      pv->getType()->getPointeeType().getCanonicalType() != dependent.getCanonicalType())
    return dependent;
  clang::QualType widest = dependent;
  int64_t widest_bytes = 0;
  for (const clang::FunctionDecl* spec : ft->specializations()) {
    unsigned i = pv->getFunctionScopeIndex();
    if (i >= spec->getNumParams() || !spec->getParamDecl(i)->getType()->isPointerType()) continue;
    clang::QualType t = spec->getParamDecl(i)->getType()->getPointeeType();
    if (t->isDependentType() || t->isIncompleteType()) continue;
    int64_t bytes = ctx_.getTypeSizeInChars(t).getQuantity();
    // Only vector-like instantiations count (float4, a packed struct, 16 bytes): a kernel
    // instantiated with uint8_t..uint64_t (a copy by type size) still moves scalars.
    if (record_width(t) == 1 && bytes < 16) continue;
    if (bytes > widest_bytes || (bytes == widest_bytes && record_width(t) > record_width(widest))) {
      widest = t;
      widest_bytes = bytes;
    }
  }
  return widest;
}

std::optional<Pointer> FunctionLowering::pointer_of(const clang::Expr* e) {
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
std::optional<Pointer> FunctionLowering::location_of(const clang::Expr* e) {
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

NodeId FunctionLowering::emit_access(const clang::Expr* e, const Pointer& p, bool store) {
  if (!device_) return ir::kNoNode;
  // Offsets and strides are counted in elements of the pointee type (4 bytes when it is
  // a template parameter).
  int64_t elem_bytes = size_of(p.elem);
  // What one access moves: for a parameter of a template kernel whose element type is a
  // template parameter (T* x), the widest vector-like type the file instantiates it with,
  // so a copy kernel also run on 16-byte structs is not called scalar.
  clang::QualType moved = p.elem;
  if (!moved.isNull() && moved->isDependentType() && p.space == "global") moved = widest_instantiation(p, moved);
  int64_t moved_bytes = moved == p.elem ? elem_bytes : size_of(moved);
  std::map<std::string, Attr> a{{"space", p.space}, {"param", p.name}, {"elem_bytes", moved_bytes}};
  a["elem_type"] = p.elem.isNull() ? std::string("?") : p.elem.getUnqualifiedType().getAsString();
  int64_t width = record_width(moved);
  a["vector_width"] = width;
  if (width > 1 || moved_bytes >= 8) has_vector_access_ = true;
  auto elems = p.byte_offset.divide(elem_bytes);
  a["index"] = elems ? elems->text() : p.byte_offset.text() + " bytes";
  bool thread_dep = thread_dependent(p.byte_offset);
  a["thread_dependent"] = thread_dep;
  for (const std::string& atom : float_atoms_)
    if (p.byte_offset.mentions(atom)) a["float_coordinate"] = true;
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
    // Lanes at most 4 bytes apart (a uchar RGB or RGBA pixel each, x[3*i + c] on bytes):
    // a warp's access spans one 128-byte line, as 32 unit-stride floats do.
    bool within_line = lx.constant && (*lx.constant < 0 ? -*lx.constant : *lx.constant) * elem_bytes <= 4;
    if (p.space == "global") a["uncoalesced"] = !unit_x && !zero_x && !within_line;
    // x[L*lane + k] for k < L in a loop (or L*lane + k for a vector's k components):
    // each thread walks its own L consecutive elements, and over the loop the warp reads
    // one contiguous span, so L1 merges the sectors. Wider loads are the advice, not
    // re-indexing (CU002's concern), so the access is not reported as uncoalesced.
    if (p.space == "global" && !unit_x && !zero_x && lx.elements)
      for (int l = loop_; l >= 0; l = loops_[l].parent) {
        const LoopInfo& li = loops_[l];
        auto unit = elems ? elems->coefficient(li.iter) : std::nullopt;
        if (li.iter.empty() || li.step_kind != "add" || !unit || !unit->as_constant() || *unit->as_constant() != 1) continue;
        // Short chunks only (a 16-byte vector or so): a long row per thread (x[row*C + i]
        // over i < C) spreads the warp over 32 rows and is the uncoalesced case itself.
        auto len = li.bound.as_constant();
        if (li.bound == *lx.elements && len && *len * elem_bytes <= 64) a["chunk_per_thread"] = true;
      }
    if (p.space == "global" && !unit_x && !zero_x && elems && runtime_strides(*elems, *lx.elements))
      a["runtime_strides"] = true;
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
  if (store) mark_param(p, false, true, p.space != "global" ? 0 : loop_ >= 0 || moved_bytes <= 0 ? -1 : moved_bytes);
  else mark_param(p, true, false, 0);
  return id;
}

void FunctionLowering::mark_param(const Pointer& p, bool read, bool written, int64_t store_bytes) {
  auto* pv = llvm::dyn_cast_or_null<clang::ParmVarDecl>(p.decl_ptr);
  if (!pv) return;
  auto it = param_index_.find(pv);
  if (it == param_index_.end()) return;
  size_t i = it->second;
  if (read) summary_.param_read[i] = true;
  if (written) summary_.param_written[i] = true;
  // The sum over its stores, or -1 as soon as one is of unknown size.
  int64_t& bytes = summary_.param_store_bytes[i];
  if (bytes >= 0) bytes = store_bytes < 0 ? -1 : bytes + store_bytes;
}

Poly FunctionLowering::builtin_var(const clang::Expr* e) {
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
Poly FunctionLowering::divide(const clang::Expr* e, const Poly& p, int64_t d, bool remainder) {
  auto lx = lane_stride(p, 1, kThreadX);
  bool warp_uniform_quotient = d > 0 && d % 32 == 0 && lx.constant && (*lx.constant == 1 || *lx.constant == 0) &&
                               !lane_varying_nonaffine(p);
  if (!warp_uniform_quotient) {
    if (auto c = p.as_constant(); c && d != 0) return Poly::constant(remainder ? *c % d : *c / d);
    if (!remainder) {
      if (auto q = p.divide(d)) return *q;  // (4*C*i)/4
    }
    // A constant modulus is not the interleaved-pairs test, whose modulus grows with the
    // tree's stride (tid % (2*s)): iqs % 16 == 0 picks the one thread of each group that
    // writes its result (ggml's quantize), sector % 3 one of three sections (RoPE).
    return opaque_of(e, {p});
  }
  std::string name = "(" + p.text() + ")/" + std::to_string(d);
  if (thread_dependent(p)) thread_atoms_.insert(name);
  Poly q = Poly::symbol(name);
  return remainder ? p - Poly::constant(d) * q : q;
}

Poly FunctionLowering::value(const clang::Expr* e) {
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
    // (int)(i / scale): a coordinate computed in floating point (a resize, a bilinear
    // tap). Nothing is known of its lanes but that they are not a contiguous walk.
    if (cast->getCastKind() == clang::CK_FloatingToIntegral) {
      Poly p = opaque_of(e, {value(cast->getSubExpr())});
      for (const std::string& atom : p.symbols()) float_atoms_.insert(atom);
      return p;
    }
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
    size_t n0 = fn_.nodes.size();
    Poly t = value(co->getTrueExpr());
    size_t n1 = fn_.nodes.size();
    Poly f = value(co->getFalseExpr());
    size_t n2 = fn_.nodes.size();
    // use_shared ? tmp[i] : x[i]: the row is read from shared memory when it was cached
    // there; the global read is the fallback, not a second pass over global memory.
    auto reads = [&](size_t from, size_t to, const char* space) {
      for (size_t k = from; k < to; ++k)
        if (fn_.nodes[k].op == "load" && std::get<std::string>(fn_.nodes[k].attrs["space"]) == space) return true;
      return false;
    };
    if (reads(n0, n1, "shared") != reads(n1, n2, "shared") && (reads(n0, n1, "global") || reads(n1, n2, "global")))
      for (size_t k = n0; k < n2; ++k)
        if (fn_.nodes[k].op == "load" && std::get<std::string>(fn_.nodes[k].attrs["space"]) == "global")
          fn_.nodes[k].attrs["shared_alternative"] = true;
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

Poly FunctionLowering::decl_value(const clang::DeclRefExpr* dre) {
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

Poly FunctionLowering::unary(const clang::UnaryOperator* uo) {
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

Poly FunctionLowering::read_location(const clang::Expr* e) {
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

Poly FunctionLowering::binary(const clang::BinaryOperator* bo) {
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
      if (!integral && same_expr(bo->getLHS(), bo->getRHS())) mark_loops(&LoopInfo::has_square_diff);
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
      // tid & (2*s - 1): a modulus. tid & k with k one bit is a bitonic sort's direction
      // test, not a modulus.
      if (thread_dependent(l) && is_minus_one(bo->getRHS())) saw_thread_modulo_ = true;
      return opaque_of(bo, {l, r});
    default:
      return opaque_of(bo, {l, r});
  }
}

bool FunctionLowering::is_minus_one(const clang::Expr* e) const {
  auto* bo = llvm::dyn_cast<clang::BinaryOperator>(strip(e));
  if (!bo || bo->getOpcode() != clang::BO_Sub) return false;
  auto one = strip(bo->getRHS())->getIntegerConstantExpr(ctx_);
  return one && *one == 1;
}

// Marks the innermost loop as accumulating when `target` is a scalar updated from itself,
// or a field of a local struct (ggml's `float2 mean_var; mean_var.x += xi`).
void FunctionLowering::note_accumulate(const clang::Expr* target) {
  target = target->IgnoreParenImpCasts();
  if (auto* me = llvm::dyn_cast<clang::MemberExpr>(target); me && !me->isArrow()) target = me->getBase()->IgnoreParenImpCasts();
  if (llvm::isa<clang::DeclRefExpr>(target)) mark_loops(&LoopInfo::has_accumulate);
}

Poly FunctionLowering::assign(const clang::BinaryOperator* bo) {
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
  // y[i] += a * x[i] over i: an element-wise update (an axpy), each element its own sum,
  // not a reduction: the target moves with the innermost loop.
  if (accumulate && loc && loop_ >= 0 && !loops_[loop_].iter.empty() && loc->byte_offset.mentions(loops_[loop_].iter))
    accumulate = false;
  Poly r;
  if (accumulate) {
    note_accumulate(lhs);
    bool is_max = dre && is_max_of_self(rhs, dre->getDecl());
    r = accumulation(bo, rhs, before, is_max ? "max" : "sum");
  } else {
    r = value(rhs);
    // tile[ty][tx] = A[...]: a global element staged in shared memory, read from there.
    const clang::Expr* src = strip(rhs);
    if (!compound && loc && loc->space == "shared" &&
        (llvm::isa<clang::ArraySubscriptExpr>(src) || llvm::isa<clang::UnaryOperator>(src)))
      for (size_t k = before; k < fn_.nodes.size(); ++k)
        if (fn_.nodes[k].op == "load" && std::get<std::string>(fn_.nodes[k].attrs["space"]) == "global")
          fn_.nodes[k].attrs["staged"] = true;
  }
  if (!compound && dre && is_max_of_self(rhs, dre->getDecl())) mark_loops(&LoopInfo::has_max);
  // s[tid] += s[tid + k], s[tid] = fmaxf(s[tid], s[tid + k]): elements of shared memory
  // combined in place, a reduction's step (a sort's compare-and-swap only moves them).
  if (loc && loc->space == "shared") {
    bool combine = compound || std::any_of(accesses_.begin(), accesses_.end(), [&](const Access& acc) {
      return acc.node >= before && !acc.store && acc.ptr.decl == loc->decl && acc.ptr.byte_offset == loc->byte_offset;
    });
    if (combine) mark_loops(&LoopInfo::has_shared_combine);
  }
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

bool FunctionLowering::refers_to(const clang::Stmt* s, const clang::ValueDecl* d) {
  if (!s) return false;
  if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(s); dre && dre->getDecl() == d) return true;
  for (const clang::Stmt* c : s->children())
    if (refers_to(c, d)) return true;
  return false;
}

bool FunctionLowering::is_max_of_self(const clang::Expr* rhs, const clang::ValueDecl* d) {
  auto* call = llvm::dyn_cast<clang::CallExpr>(strip(rhs));
  return call && is_max_call(callee_name(call)) && refers_to(call, d);
}

// The right side of `acc += rhs` (or acc = acc + rhs, fmaf(a, b, acc)): detects
// the per-thread dot product of a matmul and the serial reduction over a row.
Poly FunctionLowering::accumulation(const clang::BinaryOperator* bo, const clang::Expr* rhs, size_t nodes_before, const char* op) {
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
  if (a && b && same_expr(a, b)) mark_loops(&LoopInfo::has_square_diff);  // var += d * d
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
    // The per-thread q·k of an attention kernel: two rows walked element by element, from
    // one buffer or two, each picked by the thread in its own way (query row t, key row
    // t2): every output is a row times a row, and neighbouring threads re-read the same
    // rows. Rows picked alike (x[row*C + i] * y[row*C + i]) are a plain dot product.
    if (!product_shape && la && lb && *la != *lb) {
      const std::string& iter = loops_[loop_].iter;
      auto unit = [&](NodeId id) {
        auto step = offset(id).coefficient(iter);
        const auto* bytes = fn_.nodes[id].attr("elem_bytes");
        return step && step->as_constant() && bytes && *step->as_constant() == std::get<int64_t>(*bytes) &&
               std::get<std::string>(fn_.nodes[id].attrs.at("space")) == "global";
      };
      Poly rows = offset(*la) - offset(*lb);
      product_shape = !iter.empty() && unit(*la) && unit(*lb) && !rows.mentions(iter) && thread_dependent(rows) &&
                      thread_dependent(offset(*la)) && thread_dependent(offset(*lb));
    }
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
std::optional<NodeId> FunctionLowering::load_walking(size_t from, size_t to) {
  if (loop_ < 0) return std::nullopt;
  for (const auto& acc : accesses_) {
    if (acc.node < from || acc.node >= to || acc.store) continue;
    const std::string& iter = loops_[loop_].iter;
    if (!iter.empty() && acc.ptr.byte_offset.mentions(iter)) return acc.node;
  }
  return std::nullopt;
}

std::optional<int64_t> FunctionLowering::num_attr(const ir::Node& n, const char* key) {
  const Attr* a = n.attr(key);
  if (a && std::holds_alternative<int64_t>(*a)) return std::get<int64_t>(*a);
  return std::nullopt;
}

std::string FunctionLowering::bound_text(int l) const {
  auto it = fn_.regions[loops_[l].region].attrs.find("bound");
  return it == fn_.regions[loops_[l].region].attrs.end() ? "" : std::get<std::string>(it->second);
}

// One thread walking a long row and folding it into a scalar: sum += x[row*C + i].
void FunctionLowering::serial_reduction(const clang::Stmt* at, size_t nodes_before, const char* op) {
  if (!device_ || loop_ < 0) return;
  LoopInfo& l = loops_[loop_];
  if (serial_reduction_done_ || l.stride_kind != "serial" || l.iter.empty()) return;
  bool long_row = l.bound_symbolic || (l.bound_const && *l.bound_const >= 64);
  if (!long_row) return;
  for (const auto& acc : accesses_) {
    if (acc.node < nodes_before || acc.store || acc.ptr.space != "global") continue;
    auto step = acc.ptr.byte_offset.coefficient(l.iter);
    if (!step || !step->as_constant() || *step->as_constant() != size_of(acc.ptr.elem)) continue;
    const auto& load = fn_.nodes[acc.node];
    auto lane = load.attr("lane_stride_text");
    bool per_row = lane && std::get<std::string>(*lane) != "0";
    // Either each lane folds its own row, or one thread folds it while the others wait.
    // A loop every thread runs over its own output's inputs (a direct convolution's taps,
    // lanes indexed through divisions) is neither.
    if (!per_row && !one_thread_left_ && !enclosing_region_has("if", "single_thread")) continue;
    serial_reduction_done_ = true;  // one finding per kernel: the first pass that does it
    add("serial_reduction", at,
        {{"param", acc.ptr.name}, {"op", std::string(op)}, {"bound", bound_text(loop_)},
         {"thread_per_row", per_row}},
        {acc.node});
    return;
  }
}

}  // namespace mlsem::cuda::detail
