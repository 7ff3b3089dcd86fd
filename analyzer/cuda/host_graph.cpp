// The file's call graph for the run-once context (run_once.h): what every function
// written in the main file calls and launches, and whether each call or launch sits in a
// loop. Every function body of the file is read (in classes, templates, lambdas, device
// code), not only those the lowering keeps: a launch the graph missed would let a kernel
// pass for run once.
#include <clang/AST/DeclCXX.h>

#include <cctype>
#include <functional>

#include "cuda/lowering.h"
#include "cuda/run_once.h"

namespace mlsem::cuda::detail {
namespace {

// The declaration a call names, as the file defines it: a template's pattern, canonical.
const clang::FunctionDecl* entity(const clang::FunctionDecl* f) {
  if (!f) return nullptr;
  if (const clang::FunctionDecl* p = f->getTemplateInstantiationPattern()) f = p;
  return f->getCanonicalDecl();
}

bool is_kernel(const clang::FunctionDecl* f) { return f && f->hasAttr<clang::CUDAGlobalAttr>(); }

const clang::FunctionDecl* as_function(const clang::NamedDecl* d) {
  if (!d) return nullptr;
  d = d->getUnderlyingDecl();
  if (auto* t = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) return t->getTemplatedDecl();
  return llvm::dyn_cast<clang::FunctionDecl>(d);
}

class GraphReader {
 public:
  GraphReader(const clang::ASTContext& ctx, const Positions& pos, HostGraph& g) : ctx_(ctx), pos_(pos), g_(g) {}

  void read() {
    collect(ctx_.getTranslationUnitDecl());
    for (size_t i = 0; i < bodies_.size(); ++i) {
      const clang::FunctionDecl* fd = bodies_[i];
      std::string name = fd->getQualifiedNameAsString();
      std::string key = name + "#" + std::to_string(i);
      keys_[entity(fd)] = key;
      g_.names[key] = name;
      if (fd->isMain()) g_.main = key;
    }
    for (const clang::FunctionDecl* fd : bodies_) function(fd);
    for (const clang::VarDecl* v : globals_) {
      caller_.clear();  // a global's initializer runs before main: what it names escapes
      fd_ = nullptr;
      loop_ = 1;
      device_ = false;
      walk(v->getInit());
    }
  }

 private:
  bool in_main_file(const clang::Decl* d) const {
    const auto& sm = ctx_.getSourceManager();
    return sm.getFileID(sm.getFileLoc(d->getLocation())) == sm.getMainFileID();
  }

  // Every function body and global initializer written in the main file. noload_decls:
  // only what this parse produced (decls() would deserialize the precompiled preamble).
  void collect(const clang::DeclContext* dc) {
    for (const clang::Decl* d : dc->noload_decls()) {
      if (auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) { collect(ns); continue; }
      if (auto* ls = llvm::dyn_cast<clang::LinkageSpecDecl>(d)) { collect(ls); continue; }
      if (auto* ct = llvm::dyn_cast<clang::ClassTemplateDecl>(d)) {
        if (in_main_file(d) && ct->getTemplatedDecl()) collect(ct->getTemplatedDecl());
        continue;
      }
      if (llvm::isa<clang::ClassTemplateSpecializationDecl>(d)) continue;  // its pattern is read
      if (auto* rd = llvm::dyn_cast<clang::CXXRecordDecl>(d)) {
        if (in_main_file(d) && rd->isThisDeclarationADefinition()) collect(rd);
        continue;
      }
      const clang::FunctionDecl* fd = llvm::dyn_cast<clang::FunctionDecl>(d);
      if (auto* ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) fd = ft->getTemplatedDecl();
      if (fd) {
        if (fd->doesThisDeclarationHaveABody() && fd->getBody() && in_main_file(fd)) bodies_.push_back(fd);
        continue;
      }
      if (auto* v = llvm::dyn_cast<clang::VarDecl>(d); v && v->getInit() && in_main_file(v)) globals_.push_back(v);
    }
  }

  void function(const clang::FunctionDecl* fd) {
    caller_ = keys_[entity(fd)];
    fd_ = fd;
    device_ = fd->hasAttr<clang::CUDAGlobalAttr>() || fd->hasAttr<clang::CUDADeviceAttr>();
    // A goto may jump back: everything in the function may run any number of times.
    std::function<bool(const clang::Stmt*)> has_goto = [&](const clang::Stmt* s) {
      if (!s) return false;
      if (llvm::isa<clang::GotoStmt>(s) || llvm::isa<clang::IndirectGotoStmt>(s)) return true;
      for (const clang::Stmt* c : s->children())
        if (has_goto(c)) return true;
      return false;
    };
    loop_ = has_goto(fd->getBody()) ? 1 : 0;
    if (device_) device_launches(fd->getBody());
    if (auto* ctor = llvm::dyn_cast<clang::CXXConstructorDecl>(fd))
      for (const clang::CXXCtorInitializer* init : ctor->inits()) walk(init->getInit());
    walk(fd->getBody());
  }

  // Kernels launched from device code (dynamic parallelism) run once per thread that
  // launches them. Without relocatable device code (-rdc) Clang rejects such a launch and
  // drops it from the AST, so the body's text is read: the name before each `<<<`
  // (template arguments skipped) escapes.
  void device_launches(const clang::Stmt* body) {
    const auto& sm = ctx_.getSourceManager();
    auto [bfile, begin] = sm.getDecomposedLoc(sm.getFileLoc(body->getBeginLoc()));
    auto [efile, end] = sm.getDecomposedLoc(sm.getFileLoc(body->getEndLoc()));
    if (bfile != sm.getMainFileID() || efile != bfile || end <= begin) return;
    llvm::StringRef text = sm.getBufferData(bfile).substr(begin, end - begin);
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t at = text.find("<<<"); at != llvm::StringRef::npos; at = text.find("<<<", at + 3)) {
      size_t i = at;
      auto space = [&] { while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i; };
      space();
      if (i > 0 && text[i - 1] == '>')  // kernel<T, N>: skip the template arguments
        for (int depth = 0; i > 0;) {
          char c = text[--i];
          depth += c == '>' ? 1 : c == '<' ? -1 : 0;
          if (depth == 0) break;
        }
      space();
      size_t stop = i;
      while (i > 0 && ident(text[i - 1])) --i;
      if (i < stop) g_.escaped.insert(text.substr(i, stop - i).str());
    }
  }

  // A launch on buffers the function was handed: a pointer argument that names a
  // parameter of the function (a pointer, an array, a struct or a reference to one, not a
  // number), directly or through a local initialized from it (`float* q = qkvr + 0 * N;`).
  bool handed_buffers(const clang::CUDAKernelCallExpr* kc) const {
    std::function<bool(const clang::Stmt*, int)> names_param = [&](const clang::Stmt* s, int depth) {
      if (!s) return false;
      if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(s)) {
        if (auto* p = llvm::dyn_cast<clang::ParmVarDecl>(dre->getDecl())) {
          clang::QualType t = p->getType().getNonReferenceType();
          return p->getDeclContext() == fd_ && (t->isPointerType() || t->isArrayType() || t->isRecordType());
        }
        if (auto* v = llvm::dyn_cast<clang::VarDecl>(dre->getDecl()); v && v->hasLocalStorage() && depth == 0)
          return names_param(v->getInit(), depth + 1);
        return false;
      }
      for (const clang::Stmt* c : s->children())
        if (names_param(c, depth)) return true;
      return false;
    };
    for (const clang::Expr* a : kc->arguments())
      if (a->getType()->isPointerType() && names_param(a, 0)) return true;
    return false;
  }

  uint32_t line(const clang::Stmt* s) const {
    Range r = pos_.range(s->getBeginLoc(), s->getBeginLoc(), ctx_.getSourceManager(), ctx_.getLangOpts());
    return r.valid() ? r.begin.line : 0;
  }

  void site(const std::string& target, bool launch, const clang::Stmt* at) {
    if (caller_.empty()) {
      g_.escaped.insert(target);
      return;
    }
    g_.sites[caller_].push_back({target, launch, loop_ > 0, line(at)});
  }

  // A function named by `d` at `at`, other than by a call or a launch: it escapes.
  void escape(const clang::NamedDecl* d) {
    const clang::FunctionDecl* f = as_function(d);
    if (is_kernel(f)) {
      g_.escaped.insert(f->getNameAsString());
      return;
    }
    if (auto it = keys_.find(entity(f)); it != keys_.end()) g_.escaped.insert(it->second);
  }

  // The kernels an expression names directly (`kernel`, `&kernel`, `(void*)kernel`,
  // `kernel<T>`, an unresolved name in a template), each marked handled.
  std::vector<const clang::FunctionDecl*> kernels_named(const clang::Expr* e) {
    std::vector<const clang::FunctionDecl*> out;
    if (!e) return out;
    e = e->IgnoreParenCasts();
    if (auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e); uo && uo->getOpcode() == clang::UO_AddrOf)
      e = uo->getSubExpr()->IgnoreParenCasts();
    if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      if (const clang::FunctionDecl* f = as_function(dre->getDecl()); is_kernel(f)) out.push_back(f);
    } else if (auto* ule = llvm::dyn_cast<clang::UnresolvedLookupExpr>(e)) {
      for (const clang::NamedDecl* d : ule->decls())
        if (const clang::FunctionDecl* f = as_function(d); is_kernel(f)) out.push_back(f);
    }
    if (!out.empty()) handled_.insert(e);
    return out;
  }

  // The functions of this file a callee expression names (an overload set in a template:
  // each of them), marked handled.
  std::vector<std::string> functions_named(const clang::Expr* callee) {
    std::vector<std::string> out;
    const clang::Expr* e = callee->IgnoreParenImpCasts();
    std::vector<const clang::NamedDecl*> decls;
    if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) decls.push_back(dre->getDecl());
    else if (auto* me = llvm::dyn_cast<clang::MemberExpr>(e)) decls.push_back(me->getMemberDecl());
    else if (auto* ule = llvm::dyn_cast<clang::UnresolvedLookupExpr>(e)) decls.assign(ule->decls_begin(), ule->decls_end());
    else if (auto* ume = llvm::dyn_cast<clang::UnresolvedMemberExpr>(e)) decls.assign(ume->decls_begin(), ume->decls_end());
    for (const clang::NamedDecl* d : decls)
      if (auto it = keys_.find(entity(as_function(d))); it != keys_.end() && !is_kernel(as_function(d)))
        out.push_back(it->second);
    if (!decls.empty()) handled_.insert(e);
    return out;
  }

  void template_args(const clang::TemplateArgumentLoc* args, unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
      const clang::TemplateArgument& a = args[i].getArgument();
      if (a.getKind() == clang::TemplateArgument::Declaration) escape(llvm::dyn_cast<clang::NamedDecl>(a.getAsDecl()));
      else if (a.getKind() == clang::TemplateArgument::Expression) walk(a.getAsExpr());
    }
  }

  void walk(const clang::Stmt* s) {
    if (!s) return;
    if (llvm::isa<clang::ForStmt>(s) || llvm::isa<clang::WhileStmt>(s) || llvm::isa<clang::DoStmt>(s) ||
        llvm::isa<clang::CXXForRangeStmt>(s)) {
      ++loop_;
      for (const clang::Stmt* c : s->children()) walk(c);
      --loop_;
      return;
    }
    if (auto* lambda = llvm::dyn_cast<clang::LambdaExpr>(s)) {
      for (const clang::Expr* init : lambda->capture_inits()) walk(init);
      ++loop_;  // a lambda may be called any number of times
      walk(lambda->getBody());
      --loop_;
      return;
    }
    if (auto* kc = llvm::dyn_cast<clang::CUDAKernelCallExpr>(s)) {
      for (const clang::FunctionDecl* k : kernels_named(kc->getCallee())) {
        if (device_) g_.escaped.insert(k->getNameAsString());  // dynamic parallelism: per thread
        else site(k->getNameAsString(), true, kc);
      }
      if (!device_ && !caller_.empty() && handed_buffers(kc)) g_.entries.insert(caller_);
    } else if (auto* call = llvm::dyn_cast<clang::CallExpr>(s)) {
      std::string name = callee_name(call);
      bool launcher = name.rfind("cudaLaunch", 0) == 0 || name.rfind("cuLaunch", 0) == 0;
      // Asking about a kernel (its attributes, occupancy) does not run it.
      bool query = name.rfind("cudaOccupancy", 0) == 0 || name.rfind("cudaFuncGet", 0) == 0 ||
                   name.rfind("cudaFuncSet", 0) == 0;
      if (launcher || query)
        for (const clang::Expr* a : call->arguments())
          for (const clang::FunctionDecl* k : kernels_named(a))
            if (launcher) site(k->getNameAsString(), true, call);
      if (name == "cudaGraphLaunch" || name == "cuGraphLaunch") site(kGraphLaunch, true, call);
      for (const std::string& key : functions_named(call->getCallee())) site(key, false, call);
    } else if (auto* ctor = llvm::dyn_cast<clang::CXXConstructExpr>(s)) {
      if (auto it = keys_.find(entity(ctor->getConstructor())); it != keys_.end()) site(it->second, false, ctor);
    } else if (auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(s)) {
      if (!handled_.count(dre)) escape(dre->getDecl());
      template_args(dre->getTemplateArgs(), dre->getNumTemplateArgs());
    } else if (auto* me = llvm::dyn_cast<clang::MemberExpr>(s)) {
      if (!handled_.count(me)) escape(me->getMemberDecl());
      template_args(me->getTemplateArgs(), me->getNumTemplateArgs());
    } else if (auto* ule = llvm::dyn_cast<clang::UnresolvedLookupExpr>(s)) {
      if (!handled_.count(ule))
        for (const clang::NamedDecl* d : ule->decls()) escape(d);
      template_args(ule->getTemplateArgs(), ule->getNumTemplateArgs());
    } else if (auto* ume = llvm::dyn_cast<clang::UnresolvedMemberExpr>(s)) {
      if (!handled_.count(ume))
        for (const clang::NamedDecl* d : ume->decls()) escape(d);
    }
    for (const clang::Stmt* c : s->children()) walk(c);
  }

  const clang::ASTContext& ctx_;
  const Positions& pos_;
  HostGraph& g_;
  std::vector<const clang::FunctionDecl*> bodies_;
  std::vector<const clang::VarDecl*> globals_;
  std::map<const clang::FunctionDecl*, std::string> keys_;  // by entity()
  std::set<const clang::Expr*> handled_;  // names read as a call or a launch
  std::string caller_;
  const clang::FunctionDecl* fd_ = nullptr;
  bool device_ = false;
  int loop_ = 0;
};

}  // namespace

HostGraph read_host_graph(const clang::ASTContext& ctx, const Positions& pos) {
  HostGraph g;
  GraphReader(ctx, pos, g).read();
  return g;
}

}  // namespace mlsem::cuda::detail
