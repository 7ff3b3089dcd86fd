// CUDA frontend: parses a .cu/.cuh file with Clang (in memory, device side of a CUDA
// compile, which still parses host functions) and lowers each function to the IR
// vocabulary of docs/IR.md ("CUDA vocabulary"). The stages, each in its own file:
//   invocation.cpp    toolkit detection, driver arguments, shared toolkit preamble
//   lower*.cpp        AST to kernel IR (lowering.h), with the index analysis in lower_expr.cpp
//   kernel_facts.cpp  whole-kernel facts
//   context.cpp       context facts: variants kept for comparison, small fixed-size launches
//   host_graph.cpp,   kernels launched a fixed number of times per run (from main, outside
//   run_once.cpp      any loop), from the file's call graph
// This file drives them: one Clang parse per file, then the AST consumer below.
#include "cuda/frontend.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTMutationListener.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Driver/CreateInvocationFromArgs.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <clang/Sema/Sema.h>
#include <clang/Sema/SemaConsumer.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>
#include <shared_mutex>

#include "cuda/context.h"
#include "cuda/invocation.h"
#include "cuda/lowering.h"
#include "cuda/nesting.h"
#include "cuda/prelude.h"

namespace mlsem::cuda {
namespace {

namespace fs = std::filesystem;
using namespace detail;

// ---------------------------------------------------------------------------
// Instantiations the lowering does not read. Clang instantiates, at the end of the
// file, the body of every specialization of the file's templates that the file uses: a
// DeepSpeed file launching a kernel template with many sets of arguments substitutes
// that kernel's body once for each (85% of quant_reduce.cu's parse). The lowering reads the
// templates' own bodies and their specializations' arguments and signatures, never a
// specialization's body; but instantiating a body can create specializations of the
// file's other templates (a host template launching a kernel template), whose arguments
// it does read. So a specialization's body is left out (marked skipped, as the bodies of
// header functions are) only when its template's definition names nothing the file
// declares (a function, a type, an alias), so that its instantiation could not reach
// any of the file's templates; and only once the whole file has been parsed (explicit
// instantiations and constant evaluation instantiate during the parse). Files that
// declare operators, conversions or begin/end/get (reachable without being named) keep
// every instantiation.
class LeafInstantiations : public clang::ASTMutationListener {
 public:
  explicit LeafInstantiations(const clang::SourceManager& sm) : sm_(sm) {}

  // At the end of the main file: every declaration is known; marks the pending
  // specializations, and from now on each new one as it is made.
  void start(clang::Sema& sema) {
    if (started_) return;
    started_ = true;
    collect(sema.getASTContext().getTranslationUnitDecl());
    for (const char* n : {"begin", "end", "get"})
      if (names_.count(n)) disabled_ = true;
    if (disabled_) return;
    for (const auto& pending : sema.PendingInstantiations)
      if (auto* fd = llvm::dyn_cast<clang::FunctionDecl>(pending.first)) skip_if_leaf(fd);
  }

  void AddedCXXTemplateSpecialization(const clang::FunctionTemplateDecl*, const clang::FunctionDecl* d) override {
    if (started_ && !disabled_) skip_if_leaf(const_cast<clang::FunctionDecl*>(d));
  }

 private:
  bool in_main(const clang::Decl* d) const { return sm_.isWrittenInMainFile(sm_.getFileLoc(d->getLocation())); }

  void add(const clang::NamedDecl* d) {
    clang::DeclarationName name = d->getDeclName();
    if (name.isIdentifier()) {
      names_.insert(name.getAsString());
    } else if (name.getNameKind() == clang::DeclarationName::CXXOperatorName ||
               name.getNameKind() == clang::DeclarationName::CXXConversionFunctionName ||
               name.getNameKind() == clang::DeclarationName::CXXLiteralOperatorName) {
      disabled_ = true;
    }
  }

  // The names of what the file itself declares: functions, templates, types, aliases.
  void collect(const clang::DeclContext* dc) {
    for (const clang::Decl* d : dc->noload_decls()) {
      if (auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) { collect(ns); continue; }
      if (auto* ls = llvm::dyn_cast<clang::LinkageSpecDecl>(d)) { collect(ls); continue; }
      if (!in_main(d)) continue;
      if (auto* ct = llvm::dyn_cast<clang::ClassTemplateDecl>(d)) d = ct->getTemplatedDecl();
      if (auto* ft = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) d = ft->getTemplatedDecl();
      if (auto* rd = llvm::dyn_cast<clang::CXXRecordDecl>(d)) {
        add(rd);
        collect(rd);
      } else if (auto* td = llvm::dyn_cast<clang::TypedefNameDecl>(d)) {
        // An alias of a header's type (using rop = reduce::ROpType) leads nowhere here.
        clang::QualType t = td->getUnderlyingType();
        const clang::TagDecl* tag = t->getAsTagDecl();
        if (t->isDependentType() || (tag && in_main(tag))) add(td);
      } else if (llvm::isa<clang::FunctionDecl, clang::TypeAliasTemplateDecl, clang::VarTemplateDecl,
                           clang::TagDecl>(d)) {
        add(llvm::cast<clang::NamedDecl>(d));
      }
    }
  }

  // Whether a template's definition (signature and body, lambdas included) names
  // anything the file declares.
  class Names : public clang::RecursiveASTVisitor<Names> {
   public:
    explicit Names(const std::set<std::string>& names) : names_(names) {}
    bool found = false;
    bool see(clang::DeclarationName n) {
      if (!n.isEmpty() && n.isIdentifier() && names_.count(n.getAsString())) found = true;
      return !found;
    }
    bool VisitDeclRefExpr(clang::DeclRefExpr* e) { return see(e->getDecl()->getDeclName()); }
    bool VisitOverloadExpr(clang::OverloadExpr* e) { return see(e->getName()); }
    bool VisitMemberExpr(clang::MemberExpr* e) { return see(e->getMemberDecl()->getDeclName()); }
    bool VisitCXXDependentScopeMemberExpr(clang::CXXDependentScopeMemberExpr* e) { return see(e->getMember()); }
    bool VisitDependentScopeDeclRefExpr(clang::DependentScopeDeclRefExpr* e) { return see(e->getDeclName()); }
    bool VisitTypeLoc(clang::TypeLoc tl) {
      const clang::Type* t = tl.getTypePtr();
      if (auto* td = t->getAs<clang::TypedefType>()) see(td->getDecl()->getDeclName());
      if (auto* tag = t->getAsTagDecl()) see(tag->getDeclName());
      if (auto* ts = t->getAs<clang::TemplateSpecializationType>())
        if (auto* tmpl = ts->getTemplateName().getAsTemplateDecl()) see(tmpl->getDeclName());
      if (auto* dn = t->getAs<clang::DependentNameType>()) see(clang::DeclarationName(dn->getIdentifier()));
      return !found;
    }

   private:
    const std::set<std::string>& names_;
  };

  void skip_if_leaf(clang::FunctionDecl* spec) {
    if (spec->getTemplateSpecializationKind() != clang::TSK_ImplicitInstantiation || spec->isDefined()) return;
    const clang::FunctionDecl* pattern = spec->getTemplateInstantiationPattern();
    if (!pattern || !pattern->doesThisDeclarationHaveABody() || !in_main(pattern) || pattern->isConstexpr() ||
        pattern->getReturnType()->getContainedDeducedType())
      return;
    auto known = leaf_.find(pattern);
    if (known == leaf_.end()) {
      Names names(names_);
      names.TraverseDecl(const_cast<clang::FunctionDecl*>(pattern));
      known = leaf_.emplace(pattern, !names.found).first;
    }
    if (known->second) spec->setHasSkippedBody();
  }

  const clang::SourceManager& sm_;
  bool started_ = false, disabled_ = false;
  std::set<std::string> names_;
  std::map<const clang::FunctionDecl*, bool> leaf_;
};

// ---------------------------------------------------------------------------
// The AST consumer: device functions first (their summaries feed the host side).

class Lowering : public clang::SemaConsumer {
 public:
  Lowering(ir::Module& module, const Positions& pos, const clang::SourceManager& sm, const clang::Preprocessor& pp)
      : module_(module), pos_(pos), sm_(sm), pp_(pp), leaves_(sm) {}

  void InitializeSema(clang::Sema& sema) override { sema_ = &sema; }
  clang::ASTMutationListener* GetASTMutationListener() override { return &leaves_; }
  // After the main file's last declaration the preprocessor has no file left.
  bool HandleTopLevelDecl(clang::DeclGroupRef) override {
    if (sema_ && !pp_.getCurrentFileLexer()) leaves_.start(*sema_);
    return true;
  }

  // Only the main file's functions are lowered: the bodies of functions declared in
  // headers (libstdc++, cub, cooperative_groups, a project's common.cuh) are skipped,
  // and so are the instantiations they would bring. Clang keeps the bodies it needs to
  // go on (constexpr functions, deduced return types: Sema::canSkipFunctionBody).
  bool shouldSkipFunctionBody(clang::Decl* d) override {
    return !sm_.isWrittenInMainFile(sm_.getFileLoc(d->getLocation()));
  }

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
    propagate_shuffle(module_, callees, index);
    // Host functions in file order: a wrapper defined above its callers is known to them.
    std::map<const clang::FunctionDecl*, WrapperSummary> wrappers;  // by canonical declaration
    for (const auto* fd : host) {
      FunctionLowering lowering(ctx, pos_, fd, false, kernels, &wrappers);
      ir::Function f = lowering.lower();
      if (const auto& w = lowering.wrapper()) wrappers[fd->getCanonicalDecl()] = *w;
      bool relevant = std::any_of(f.nodes.begin(), f.nodes.end(), [](const ir::Node& n) {
        return n.op == "launch" || n.op == "gemm_call" || n.op == "host_sync";
      });
      if (relevant) module_.functions.push_back(std::move(f));
    }
    mark_variants(module_, callees);
    mark_small_launches(module_);
    mark_run_once(module_, read_host_graph(ctx, pos_), std::filesystem::path(module_.path).filename().string());
    mark_cold_callees(module_, callees);
    apply_launch_shapes(module_);
  }

 private:
  ir::Module& module_;
  const Positions& pos_;
  const clang::SourceManager& sm_;
  const clang::Preprocessor& pp_;
  clang::Sema* sema_ = nullptr;
  LeafInstantiations leaves_;
};

class LowerAction : public clang::ASTFrontendAction {
 public:
  LowerAction(ir::Module& module, const Positions& pos) : module_(module), pos_(pos) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef) override {
    return std::make_unique<Lowering>(module_, pos_, ci.getSourceManager(), ci.getPreprocessor());
  }

 private:
  ir::Module& module_;
  const Positions& pos_;
};

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

// One file: the parse and the AST consumer above.
ir::Module parse_and_lower(const SourceFile& file, const CudaOptions& options) {
  ir::Module module;
  module.path = file.path;
  module.language = "cuda";
  parse_suppressions(file.text, module);
  // Clang's parser would overflow the stack and take the whole run down with it.
  if (std::optional<Position> deep = too_deep(file.text)) {
    Diagnostic d;
    d.path = file.path;
    d.range.begin = d.range.end = *deep;
    d.message = "brackets and template arguments nest deeper than " + std::to_string(kMaxNesting) +
                " levels here: the file is not parsed (Clang would run out of stack)";
    module.diagnostics.push_back(std::move(d));
    return module;
  }

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
  if (toolkit)
    memory->addFile(std::string(kVirtualDir) + "/nvcc_compat.h", 0, llvm::MemoryBuffer::getMemBuffer(kNvccCompat));
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
  // The driver asks for -disable-free (a compiler exits after one file); a server and a
  // many-file run must free each file's AST, Sema and preprocessor.
  invocation->getFrontendOpts().DisableFree = false;
  invocation->getFrontendOpts().SkipFunctionBodies = true;  // outside the main file: Lowering
  std::unique_ptr<llvm::MemoryBuffer> main_buffer;
  std::shared_lock<std::shared_mutex> parsing;  // no preamble build beside this parse
  std::shared_ptr<clang::PrecompiledPreamble> preamble;  // released before `parsing`
  if (toolkit) {
    preamble = toolkit_preamble(preamble_key(cl.args), *invocation, vfs);
    parsing = std::shared_lock<std::shared_mutex>(preamble_build_gate());
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
  bool ok = ci.ExecuteAction(action);
  collect.finish();
  if (!ok && module.diagnostics.empty() && !collect.accepted_any())
    module.diagnostics.push_back({file.path, {}, "the CUDA parse failed; results for this file are incomplete"});
  return module;
}

}  // namespace

ir::Module build_ir(const SourceFile& file, const CudaOptions& options) {
  ir::Module module = parse_and_lower(file, options);
  release_free_memory();  // the file's AST, Sema and preprocessor, freed on return
  return module;
}

}  // namespace mlsem::cuda
