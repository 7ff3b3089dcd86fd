// AST to kernel IR, the walk: a function's statements become regions (loops, branches)
// and its declarations params and shared arrays; expressions are lowered by
// lower_expr.cpp, host calls by lower_host.cpp, whole-kernel facts by kernel_facts.cpp.
#include "cuda/lowering.h"

namespace mlsem::cuda::detail {

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

ir::Function FunctionLowering::lower() {
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
  small_params_ = small_template_params();
  walk(fd_->getBody());
  if (device_) finish_device();
  else finish_host();
  return std::move(fn_);
}

Range FunctionLowering::range(clang::SourceRange r) const {
  return pos_.range(r.getBegin(), r.getEnd(), sm_, ctx_.getLangOpts());
}

bool FunctionLowering::same_expr(const clang::Expr* a, const clang::Expr* b) const {
  llvm::FoldingSetNodeID x, y;
  strip(a)->Profile(x, ctx_, /*Canonical=*/true);
  strip(b)->Profile(y, ctx_, /*Canonical=*/true);
  return x == y;
}

std::string FunctionLowering::text(const clang::Stmt* s) const {
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

NodeId FunctionLowering::add(std::string op, const clang::Stmt* where, std::map<std::string, Attr> attrs,
           std::vector<NodeId> inputs) {
  ir::Node n;
  n.op = std::move(op);
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  n.range = where ? range(where->getSourceRange()) : Range{};
  n.region = region_;
  fn_.nodes.push_back(std::move(n));
  return static_cast<NodeId>(fn_.nodes.size() - 1);
}

uint32_t FunctionLowering::push_region(std::string kind, const clang::Stmt* s, std::map<std::string, Attr> attrs) {
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

bool FunctionLowering::enclosing_region_has(const char* kind, const char* flag) const {
  return region_has(region_, kind, flag);
}

bool FunctionLowering::region_has(uint32_t from, const char* kind, const char* flag) const {
  for (uint32_t r = from; r != 0; r = fn_.regions[r].parent) {
    const auto& reg = fn_.regions[r];
    auto it = reg.attrs.find(flag);
    if (reg.kind == kind && it != reg.attrs.end() && std::get_if<bool>(&it->second) &&
        std::get<bool>(it->second))
      return true;
  }
  return false;
}

bool FunctionLowering::thread_dependent(const Poly& p) const {
  for (const auto& s : p.symbols())
    if (thread_atoms_.count(s)) return true;
  return false;
}

// Non-type template parameters that every instantiation of the kernel in the file sets to
// at most 256 (a head size, a filter width), with the largest value they are given; one
// instantiated with 4096, or never, is not.
std::map<std::string, int64_t> FunctionLowering::small_template_params() const {
  std::map<std::string, int64_t> params;
  const clang::FunctionTemplateDecl* ft = fd_->getDescribedFunctionTemplate();
  if (!ft) return params;
  const clang::TemplateParameterList* list = ft->getTemplateParameters();
  for (unsigned i = 0; i < list->size(); ++i) {
    if (!llvm::isa<clang::NonTypeTemplateParmDecl>(list->getParam(i))) continue;
    std::optional<int64_t> largest;
    for (const clang::FunctionDecl* spec : ft->specializations()) {
      const clang::TemplateArgumentList* args = spec->getTemplateSpecializationArgs();
      if (!args || i >= args->size() || args->get(i).getKind() != clang::TemplateArgument::Integral ||
          args->get(i).getAsIntegral().getSExtValue() > 256) {
        largest.reset();
        break;
      }
      largest = std::max(largest.value_or(INT64_MIN), args->get(i).getAsIntegral().getSExtValue());
    }
    if (largest) params[list->getParam(i)->getNameAsString()] = *largest;
  }
  return params;
}

// A loop bound that launches fix: small template parameters, blockDim, warpSize, and
// literals; with each template parameter at its largest value, at most 256 when that
// makes it a constant (ROWS * COLS instantiated <64, 64> is 4096: a loop over data).
bool FunctionLowering::fixed_at_launch(const Poly& p) const {
  Poly largest = p;
  for (const auto& s : p.symbols()) {
    auto it = small_params_.find(s);
    if (it != small_params_.end()) largest = largest.substitute(s, Poly::constant(it->second));
    else if (s.rfind("blockDim.", 0) != 0 && s != "warpSize") return false;
  }
  auto c = largest.as_constant();
  return !c || *c <= 256;
}

bool FunctionLowering::lane_varying_nonaffine(const Poly& p) const {
  for (const auto& s : p.symbols())
    if (lane_atoms_.count(s)) return true;
  return false;
}

// An opaque value: named by its text, thread- and lane-dependence inherited.
Poly FunctionLowering::opaque(const clang::Stmt* e, bool thread_dep, bool lane_dep) {
  std::string name = "{" + text(e) + "}";
  if (thread_dep) thread_atoms_.insert(name);
  if (lane_dep) lane_atoms_.insert(name);
  return Poly::symbol(name);
}

Poly FunctionLowering::opaque_of(const clang::Stmt* e, const std::vector<Poly>& parts) {
  bool t = false, l = false;
  for (const auto& p : parts) {
    t |= thread_dependent(p);
    l |= lane_varying_nonaffine(p) || p.mentions(kThreadX);
  }
  return opaque(e, t, l);
}

// Polynomials stay small: a runaway expression becomes one opaque symbol.
Poly FunctionLowering::bounded(const clang::Stmt* e, Poly p) {
  if (p.terms().size() <= 24) return p;
  return opaque_of(e, {p});
}

void FunctionLowering::mark_loops(bool LoopInfo::*flag) {
  for (int l = loop_; l >= 0; l = loops_[l].parent) loops_[l].*flag = true;
}

void FunctionLowering::declare_params() {
  for (unsigned i = 0; i < fd_->getNumParams(); ++i) {
    const clang::ParmVarDecl* p = fd_->getParamDecl(i);
    param_index_[p] = i;
    summary_.param_read.push_back(false);
    summary_.param_written.push_back(false);
    summary_.param_store_bytes.push_back(0);
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

NodeId FunctionLowering::declare_shared(const clang::VarDecl* v) {
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

void FunctionLowering::walk(const clang::Stmt* s) {
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
    if (enclosing_region_has("if", "thread_dependent")) {
      // Under launch-bound guards only (`if (col >= ncols) return;` with col =
      // threadIdx.x): whether any thread returns depends on the launches.
      bool only_bounds = true;
      std::vector<LaunchBound> guards;
      for (uint32_t r = region_; r != 0; r = fn_.regions[r].parent) {
        const auto& reg = fn_.regions[r];
        auto it = reg.attrs.find("thread_dependent");
        if (reg.kind != "if" || it == reg.attrs.end() || !std::get<bool>(it->second)) continue;
        auto g = launch_bound_guards_.find(r);
        if (g == launch_bound_guards_.end()) only_bounds = false;
        else guards.push_back(g->second);
      }
      if (only_bounds && device_) {
        launch_bound_return_ = true;
        for (const auto& g : guards) summary_.launch_bound_returns.push_back(g);
      } else {
        thread_dependent_return_ = true;
      }
    }
    // if (threadIdx.x != 0) return;  what follows runs on one thread (or lane).
    if (enclosing_region_has("if", "all_but_one_thread")) one_thread_left_ = true;
  } else if (auto* sw = llvm::dyn_cast<clang::SwitchStmt>(s)) {
    value(sw->getCond());
    // Each case starts from what ran before the switch: a launch in one case does not
    // follow the launch of another (fall-through aside).
    DeviceOpState ops_before = device_ops();
    // Under `case C:` of a switch on a variable, the variable is C (a launch's width).
    auto* on_ref = llvm::dyn_cast<clang::DeclRefExpr>(strip(sw->getCond()));
    auto* on = on_ref ? llvm::dyn_cast<clang::VarDecl>(on_ref->getDecl()) : nullptr;
    if (auto* body = llvm::dyn_cast_or_null<clang::CompoundStmt>(sw->getBody())) {
      for (const clang::Stmt* c : body->body()) {
        if (llvm::isa<clang::SwitchCase>(c)) {
          restore_device_ops(ops_before);
          if (on) case_values_.erase(on);
          auto* cs = llvm::dyn_cast<clang::CaseStmt>(c);
          if (on && cs && !cs->caseStmtIsGNURange() && !llvm::isa<clang::SwitchCase>(cs->getSubStmt()) &&
              !cs->getLHS()->isValueDependent())
            if (auto v = cs->getLHS()->getIntegerConstantExpr(ctx_)) case_values_[on] = v->getExtValue();
        }
        walk(c);
      }
    } else {
      walk(sw->getBody());
    }
    if (on) case_values_.erase(on);
  } else if (auto* e = llvm::dyn_cast<clang::Expr>(s)) {
    value(e);
  } else {
    for (const clang::Stmt* c : s->children()) walk(c);
  }
}

void FunctionLowering::declare_local(const clang::Decl* d) {
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
void FunctionLowering::collect_assigned(const clang::Stmt* s, std::set<const clang::VarDecl*>& out) {
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

void FunctionLowering::forget_assigned(const clang::Stmt* body, const clang::VarDecl* except) {
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

FunctionLowering::Step FunctionLowering::step_of(const clang::Expr* inc, const clang::VarDecl* var) {
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

void FunctionLowering::for_loop(const clang::ForStmt* f) {
  walk(f->getInit());
  const clang::VarDecl* var = nullptr;
  if (auto* ds = llvm::dyn_cast_or_null<clang::DeclStmt>(f->getInit()); ds && ds->isSingleDecl())
    var = llvm::dyn_cast<clang::VarDecl>(ds->getSingleDecl());
  if (auto* bo = llvm::dyn_cast_or_null<clang::BinaryOperator>(f->getInit()); bo && bo->getOpcode() == clang::BO_Assign)
    if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(bo->getLHS()->IgnoreParenImpCasts()))
      var = llvm::dyn_cast<clang::VarDecl>(dre->getDecl());
  // for (; l < n; l += s): a variable of the function, stepped by the increment (the
  // remainder loop after an unrolled one continues from where that one stopped).
  if (!var && !f->getInit() && f->getInc()) {
    const clang::Expr* target = nullptr;
    const clang::Expr* inc = f->getInc()->IgnoreParenImpCasts();
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(inc); uo && uo->isIncrementDecrementOp()) target = uo->getSubExpr();
    if (auto* bo = llvm::dyn_cast<clang::CompoundAssignOperator>(inc)) target = bo->getLHS();
    if (auto* dre = target ? llvm::dyn_cast<clang::DeclRefExpr>(target->IgnoreParenImpCasts()) : nullptr)
      if (auto* v = llvm::dyn_cast<clang::VarDecl>(dre->getDecl()); v && v->hasLocalStorage() && values_.count(v))
        var = v;
  }
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
  bool uniform_trips = false;
  if (f->getCond()) {
    saw_thread_modulo_ = false;
    // The bound: the side of the comparison that is not the induction variable.
    if (auto* cmp = llvm::dyn_cast<clang::BinaryOperator>(f->getCond()->IgnoreParenImpCasts());
        cmp && cmp->isComparisonOp()) {
      Poly lhs = value(cmp->getLHS());
      bound = value(cmp->getRHS());
      // t = base + tid; t < end + tid; t += C: every thread runs the same number of
      // iterations although its indices differ (the bound moves with the start).
      if (var && step.kind == "add" && !thread_dependent(step.amount) && thread_dependent(init) &&
          lhs == values_[var] && !thread_dependent(bound - init))
        uniform_trips = true;
      attrs["bound"] = text(cmp->getRHS());
      if (auto c = bound.as_constant()) info.bound_const = *c;
      else info.bound_symbolic = true;
      info.over_data = !fixed_at_launch(bound) || (info.bound_const && *info.bound_const > 256);
      if (step.kind == "add" && init.is_zero() && step.amount.as_constant() == std::optional<int64_t>(1) &&
          (cmp->getOpcode() == clang::BO_LT || cmp->getOpcode() == clang::BO_NE))
        info.bound = bound;
      // Halving loops that run to s > 0 (or s >= 1) reach strides below a warp.
      if (step.kind == "div") info.reaches_one = info.bound_const && *info.bound_const < 32;
      if (step.kind == "mul") info.reaches_one = true;
    } else {
      bound = value(f->getCond());
    }
    thread_dep |= thread_dependent(bound);
  }
  if (uniform_trips) thread_dep = false;
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
  if (var) {
    // After the loop: unknown, and still different between threads if it was.
    std::string name = var->getNameAsString() + "~";
    if (values_.count(var) && thread_dependent(values_[var])) thread_atoms_.insert(name), lane_atoms_.insert(name);
    values_[var] = Poly::symbol(name);
  }
}

void FunctionLowering::generic_loop(const clang::Stmt* s, const clang::Expr* cond, const clang::Stmt* body) {
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

void FunctionLowering::finish_loop(const clang::Stmt* s) {
  LoopInfo& l = loops_[loop_];
  auto& attrs = fn_.regions[l.region].attrs;
  if (!device_) {
    attrs["launches"] = l.has_launch;
    attrs["timing"] = l.has_timing;
    attrs["exit_on_copy"] = l.exit_on_copy;
    return;
  }
  // A shared-memory tree reduction: a halving (or doubling) stride, a barrier per step.
  // Something is combined at each step (a sum or a max, in place or through a running
  // value): a bitonic sort's halving loop only compares and swaps.
  bool combines = l.has_shared_combine || l.has_accumulate || l.has_max;
  if ((l.step_kind == "div" || l.step_kind == "mul") && l.has_barrier && l.shared_read_ahead && combines) {
    add("tree_reduction", nullptr,
        {{"reaches_warp", l.reaches_one}, {"interleaved", l.shared_stride_uses_iter},
         {"direction", std::string(l.step_kind == "div" ? "halving" : "doubling")}});
    fn_.nodes.back().range = range(l.header);
    (void)s;
  }
}

void FunctionLowering::if_stmt(const clang::IfStmt* i) {
  if (i->getInit()) walk(i->getInit());
  // Host: `if (sum <= tol) break;` on a value a device-to-host copy in the loop filled:
  // the loop waits for the device to decide whether to go on (a convergence check).
  if (!device_ && loop_ >= 0 && !loops_[loop_].copied_back.empty()) {
    std::function<bool(const clang::Stmt*)> mentions = [&](const clang::Stmt* st) {
      if (!st) return false;
      if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(st))
        if (loops_[loop_].copied_back.count(dre->getDecl()->getNameAsString())) return true;
      for (const clang::Stmt* c : st->children())
        if (mentions(c)) return true;
      return false;
    };
    std::function<bool(const clang::Stmt*)> exits = [&](const clang::Stmt* st) {
      if (!st) return false;
      if (llvm::isa<clang::BreakStmt>(st) || llvm::isa<clang::ReturnStmt>(st)) return true;
      if (llvm::isa<clang::ForStmt>(st) || llvm::isa<clang::WhileStmt>(st) || llvm::isa<clang::DoStmt>(st) ||
          llvm::isa<clang::SwitchStmt>(st))
        return false;
      for (const clang::Stmt* c : st->children())
        if (exits(c)) return true;
      return false;
    };
    if (mentions(i->getCond()) && (exits(i->getThen()) || exits(i->getElse()))) loops_[loop_].exit_on_copy = true;
  }
  saw_thread_modulo_ = false;
  Poly c = value(i->getCond());
  bool thread_dep = thread_dependent(c);
  // Interleaved pairs: the other threads idle. With an else branch (a bitonic sort's
  // two directions) both sides work.
  bool modulo = saw_thread_modulo_ && is_zero_test(i->getCond()) && !i->getElse();
  bool single = thread_dep && !modulo && is_single_thread_test(i->getCond());
  bool all_but_one = thread_dep && is_single_thread_test(i->getCond(), clang::BO_NE);
  if (device_ && thread_dep)
    add("branch", i->getCond(),
        {{"thread_dependent", true}, {"interleaved_modulo", modulo}, {"single_thread", single},
         {"text", text(i->getCond())}});
  std::optional<LaunchBound> bound = thread_dep ? launch_bound_guard(i->getCond()) : std::nullopt;
  uint32_t saved = push_region("if", i->getThen(),
                               {{"thread_dependent", thread_dep}, {"single_thread", single},
                                {"all_but_one_thread", all_but_one},
                                {"interleaved_modulo", modulo},
                                {"single_block", is_single_block_test(i->getCond())}});
  if (bound) launch_bound_guards_[region_] = *bound;
  const uint32_t then_region = region_;
  auto values_before = values_;
  DeviceOpState ops_before = device_ops();
  walk(i->getThen());
  region_ = saved;
  if (i->getElse()) {
    auto values_then = values_;
    values_ = values_before;
    restore_device_ops(ops_before);  // the else branch does not follow the then branch
    saved = push_region("if", i->getElse(), {{"thread_dependent", thread_dep}, {"else", true}});
    // Only one arm runs when the condition is the same for every thread; a thread-dependent
    // one (threadIdx.y == 0) runs both arms in one block.
    if (!thread_dep) if_arms_.emplace_back(then_region, region_);
    walk(i->getElse());
    region_ = saved;
    merge_values(values_then);
  } else {
    merge_values(values_before);
  }
}

std::optional<LaunchBound> FunctionLowering::launch_bound_guard(const clang::Expr* cond) {
  auto* bo = llvm::dyn_cast<clang::BinaryOperator>(strip(cond));
  if (!bo || (bo->getOpcode() != clang::BO_GE && bo->getOpcode() != clang::BO_LE)) return std::nullopt;
  const clang::Expr* index = strip(bo->getOpcode() == clang::BO_GE ? bo->getLHS() : bo->getRHS());
  const clang::Expr* bound = strip(bo->getOpcode() == clang::BO_GE ? bo->getRHS() : bo->getLHS());
  auto param_of = [&](const clang::Expr* e) -> const clang::ParmVarDecl* {
    auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(strip(e));
    auto* param = ref ? llvm::dyn_cast<clang::ParmVarDecl>(ref->getDecl()) : nullptr;
    return param && param->getDeclContext() == fd_ && param->getType()->isIntegerType() ? param : nullptr;
  };
  LaunchBound out;
  if (auto* param = param_of(bound)) {
    out.param = param->getFunctionScopeIndex();
  } else {
    // const int k = k_template == 0 ? k_arg : k_template;
    auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(bound);
    auto* local = ref ? llvm::dyn_cast<clang::VarDecl>(ref->getDecl()) : nullptr;
    auto* choice = local && local->getType().isConstQualified() && local->getInit()
                       ? llvm::dyn_cast<clang::ConditionalOperator>(strip(local->getInit()))
                       : nullptr;
    auto* test = choice ? llvm::dyn_cast<clang::BinaryOperator>(strip(choice->getCond())) : nullptr;
    auto template_param = [](const clang::Expr* e) -> const clang::NonTypeTemplateParmDecl* {
      auto* r = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
      return r ? llvm::dyn_cast<clang::NonTypeTemplateParmDecl>(r->getDecl()) : nullptr;
    };
    if (!test || test->getOpcode() != clang::BO_EQ || !is_zero_literal(test->getRHS())) return std::nullopt;
    const auto* t = template_param(test->getLHS());
    const auto* p = param_of(choice->getTrueExpr());
    if (!t || !p || template_param(choice->getFalseExpr()) != t) return std::nullopt;
    out.param = p->getFunctionScopeIndex();
    out.template_param = static_cast<int>(t->getIndex());
  }
  Poly p;
  if (auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(index)) {
    auto* v = llvm::dyn_cast<clang::VarDecl>(ref->getDecl());
    auto it = v ? values_.find(v) : values_.end();
    if (it == values_.end()) return std::nullopt;
    p = it->second;
  } else {
    p = builtin_var(index);
  }
  const char* dims[] = {kThreadX, kThreadY, kThreadZ};
  for (int d = 0; d < 3; ++d)
    if (p == Poly::symbol(dims[d])) {
      out.dim = d;
      return out;
    }
  return std::nullopt;
}

// After an if: a variable whose value differs between the branches is unknown.
void FunctionLowering::merge_values(const std::map<const clang::VarDecl*, Poly>& other) {
  for (auto& [v, p] : values_) {
    auto it = other.find(v);
    if (it != other.end() && it->second == p) continue;
    bool t = thread_dependent(p) || (it != other.end() && thread_dependent(it->second));
    std::string name = v->getNameAsString() + "~";
    if (t) thread_atoms_.insert(name), lane_atoms_.insert(name);
    p = Poly::symbol(name);
  }
}

bool FunctionLowering::is_zero_literal(const clang::Expr* e) {
  auto* il = llvm::dyn_cast<clang::IntegerLiteral>(e->IgnoreParenImpCasts());
  return il && il->getValue() == 0;
}

// (tid % (2*s)) == 0, !(tid & m): the interleaved-pairs test.
bool FunctionLowering::is_zero_test(const clang::Expr* cond) {
  cond = cond->IgnoreParenImpCasts();
  if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(cond); uo && uo->getOpcode() == clang::UO_LNot) return true;
  if (auto* bo = llvm::dyn_cast<clang::BinaryOperator>(cond)) {
    if (bo->getOpcode() == clang::BO_LAnd || bo->getOpcode() == clang::BO_LOr)
      return is_zero_test(bo->getLHS()) || is_zero_test(bo->getRHS());
    if (bo->getOpcode() == clang::BO_EQ) return is_zero_literal(bo->getLHS()) || is_zero_literal(bo->getRHS());
  }
  return false;
}

// blockIdx.x == 0 (or a conjunction holding such a test): one block runs the branch.
bool FunctionLowering::is_single_block_test(const clang::Expr* cond) {
  auto* bo = llvm::dyn_cast<clang::BinaryOperator>(strip(cond));
  if (!bo) return false;
  if (bo->getOpcode() == clang::BO_LAnd) return is_single_block_test(bo->getLHS()) || is_single_block_test(bo->getRHS());
  if (bo->getOpcode() != clang::BO_EQ) return false;
  for (auto [index, value] : {std::pair{bo->getLHS(), bo->getRHS()}, std::pair{bo->getRHS(), bo->getLHS()}}) {
    if (!strip(value)->getIntegerConstantExpr(ctx_)) continue;
    Poly p = builtin_var(strip(index));
    for (const char* b : {"blockIdx.x", "blockIdx.y", "blockIdx.z"})
      if (p == Poly::symbol(b)) return true;
  }
  return false;
}

// threadIdx.x == 0, lane == 0: one thread (or one lane per warp) does the work.
bool FunctionLowering::is_single_thread_test(const clang::Expr* cond, clang::BinaryOperatorKind op) {
  cond = cond->IgnoreParenImpCasts();
  auto* bo = llvm::dyn_cast<clang::BinaryOperator>(cond);
  if (!bo) return false;
  if (bo->getOpcode() == clang::BO_LAnd) return op == clang::BO_EQ && (is_single_thread_test(bo->getLHS(), op) || is_single_thread_test(bo->getRHS(), op));
  // One side a constant, or a variable every thread holds the same value of (a leader
  // lane computed from __activemask()).
  auto uniform = [&](const clang::Expr* e) {
    if (e->getIntegerConstantExpr(ctx_)) return true;
    auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
    auto* v = dre ? llvm::dyn_cast<clang::VarDecl>(dre->getDecl()) : nullptr;
    auto it = v ? values_.find(v) : values_.end();
    return it != values_.end() && !thread_dependent(it->second);
  };
  return bo->getOpcode() == op && (uniform(bo->getRHS()) || uniform(bo->getLHS()));
}

}  // namespace mlsem::cuda::detail
