// Graph breaks in code torch.compile traces (graph_breaks.h; docs/IR.md, "Graph breaks").
//
// Which code is traced: a function decorated @torch.compile / @torch.compile(...); what a
// torch.compile(X, ...) call of the file compiles, X resolved through the file's
// assignments (a same-file function, a same-file nn.Module class built and assigned to X,
// X.forward or another method); then, transitively, the methods of the same class (and
// its same-file bases) a traced method calls through self or super(), same-file functions
// a traced function calls, and the forward of same-file module classes a traced class
// builds (its submodules). Functions decorated @torch.compiler.disable,
// @torch._dynamo.disable or allow_in_graph are not traced.
//
// What breaks a graph there (each checked against torch._dynamo.explain on torch 2.11:
// bench/graph_break_probe.py): .item(), .tolist(), float()/int()/bool() of a tensor value,
// Python control flow on a tensor value (if/elif/while/ternary/and/or on a reduction or a
// comparison of one, torch.equal/allclose), operators with a data-dependent output shape
// (nonzero, unique, masked_select, x[x > 0]), print(), and calls of untraceable functions:
// the node records the callee through the file's imports and the patterns list which
// callees break (time.time, random.random, warnings.warn, logging, numpy.random.rand, ...).
// Not breaks, and not reported: .cpu(), .numpy() and NumPy calls (traced since torch 2.1),
// assert on a tensor, shape-dependent control flow (x.shape, x.dim(), self.training), code
// under `if not torch.compiler.is_compiling():` (or the else of `if is_compiling():`, or
// after `if is_compiling(): return`), raise statements, except handlers, assert messages.
// Test files and PyTorch's own sources (Dynamo traces torch by its own rules) get none.
#include "python/graph_breaks.h"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "python/program_util.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {

using program::add_node;

bool is_type(TSNode n, const char* type) { return !ts_node_is_null(n) && std::string_view(ts_node_type(n)) == type; }

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return o;
}

// Tensor methods and torch functions whose result is a tensor a branch would read.
const std::set<std::string_view> kReduceMethods = {"any",  "all", "sum", "mean", "max",   "min",
                                                   "amax", "amin", "norm", "std", "var",  "prod",
                                                   "count_nonzero", "equal", "allclose"};
const std::set<std::string_view> kDynamicShape = {"nonzero", "unique", "masked_select", "argwhere",
                                                  "unique_consecutive"};
const std::set<std::string_view> kLoggerMethods = {"debug", "info",      "warning", "warn",
                                                   "error", "exception", "critical", "log"};

struct ClassInfo {
  TSNode node{};
  std::vector<std::string> bases;
  std::map<std::string, TSNode, std::less<>> methods;
};

struct Traced {
  std::string cls;   // the class a method belongs to; empty for functions
  std::string why;   // why the root of its chain is traced, in words
  std::string via;   // decorator | compile_call | callee | submodule
  std::string chain; // the traced functions from that root to it (`GPT.forward → Block.forward`)
};

struct Pass {
  Pass(const Syntax& syntax, const SourceFile& file, ir::Module& module) : S(syntax), f(file), out(module) {}
  const Syntax& S;
  const SourceFile& f;
  ir::Module& out;
  std::map<std::string, ClassInfo, std::less<>> classes;
  std::map<std::string, TSNode, std::less<>> functions;  // module-level defs
  std::map<std::string, std::string, std::less<>> imports;  // local name -> canonical
  std::map<std::string, std::vector<TSNode>, std::less<>> assigned;  // target text -> values
  std::set<uint32_t> disabled;                         // defs (start byte) not traced
  std::map<uint32_t, std::pair<TSNode, Traced>> traced;  // def start byte -> def, why
  std::vector<uint32_t> queue;
  std::set<std::string> classes_expanded;
  bool fullgraph = false, scalar_capture = false, dynamic_capture = false;
  std::string current_class;  // the class holding the torch.compile call being resolved

  std::string_view text(TSNode n) const { return text_of(n, f.text); }

  // ---- index -------------------------------------------------------------------------

  void index(TSNode n, int depth) {
    TSSymbol k = ts_node_symbol(n);
    if (k == S.class_definition) {
      std::string name(text(field(n, S.f_name)));
      if (!classes.count(name)) {
        ClassInfo ci;
        ci.node = n;
        TSNode sup = field(n, S.f_superclasses);
        if (!ts_node_is_null(sup))
          for (TSNode b : named_children(sup, S.comment)) ci.bases.emplace_back(program::last_part(text(b)));
        for (TSNode c : named_children(field(n, S.f_body), S.comment)) {
          TSNode def = c;
          if (ts_node_symbol(c) == S.decorated_definition) def = field(c, S.f_definition);
          if (!ts_node_is_null(def) && ts_node_symbol(def) == S.function_definition)
            ci.methods.emplace(std::string(text(field(def, S.f_name))), def);
        }
        classes.emplace(name, ci);
      }
    } else if (k == S.function_definition && depth <= 1) {
      functions.emplace(std::string(text(field(n, S.f_name))), n);
    } else if (k == S.import_statement || k == S.import_from_statement) {
      index_import(n);
    } else if (k == S.assignment) {
      TSNode l = field(n, S.f_left), r = field(n, S.f_right);
      if (!ts_node_is_null(l) && !ts_node_is_null(r)) assigned[std::string(text(l))].push_back(r);
    } else if (k == S.decorated_definition) {
      each_decorator(n, [&](TSNode def, TSNode, std::string_view t) {
        if ((contains(t, "disable") && (contains(t, "dynamo") || contains(t, "compiler"))) ||
            contains(t, "allow_in_graph"))
          disabled.insert(ts_node_start_byte(def));
      });
    }
    // Functions nested in a class or a decorated definition are still at "depth" 1 for
    // module-level purposes only when directly under the module (or its decorator).
    int next = depth + (k == S.module || k == S.decorated_definition ? 0 : 1);
    for (TSNode c : named_children(n, S.comment)) index(c, next);
  }

  // Calls `f(def, decorator, text)` for each decorator of the decorated function `n`, its
  // text without the `@`.
  template <typename F>
  void each_decorator(TSNode n, F f) {
    TSNode def = field(n, S.f_definition);
    if (ts_node_is_null(def) || ts_node_symbol(def) != S.function_definition) return;
    for (TSNode c : named_children(n, S.comment)) {
      if (ts_node_symbol(c) != S.decorator) continue;
      std::string_view t = text(c);
      t.remove_prefix(t.starts_with("@") ? 1 : 0);
      f(def, c, t);
    }
  }

  void index_import(TSNode n) {
    bool from = ts_node_symbol(n) == S.import_from_statement;
    std::string module = from ? std::string(text(field(n, S.f_module_name))) : std::string();
    for (TSNode c : named_children(n, S.comment)) {
      if (from && ts_node_eq(c, field(n, S.f_module_name))) continue;
      std::string name, alias;
      if (ts_node_symbol(c) == S.aliased_import) {
        name = text(field(c, S.f_name));
        alias = text(field(c, S.f_alias));
      } else if (ts_node_symbol(c) == S.dotted_name) {
        name = text(c);
        alias = from ? name : name.substr(0, name.find('.'));
        if (!from) {  // `import a.b` binds `a`
          imports[alias] = alias;
          continue;
        }
      } else {
        continue;
      }
      imports[alias] = from ? module + "." + name : name;
    }
  }

  // ---- what torch.compile traces -----------------------------------------------------

  TSNode method_of(const std::string& cls, std::string_view name, int depth = 0) const {
    auto it = classes.find(cls);
    if (it == classes.end() || depth > 5) return TSNode{};
    if (auto m = it->second.methods.find(name); m != it->second.methods.end()) return m->second;
    for (const std::string& b : it->second.bases)
      if (b != cls)
        if (TSNode m = method_of(b, name, depth + 1); !ts_node_is_null(m)) return m;
    return TSNode{};
  }

  std::string class_holding(TSNode def) const {
    for (TSNode p = parent_of(def); !ts_node_is_null(p); p = parent_of(p))
      if (ts_node_symbol(p) == S.class_definition) return std::string(text(field(p, S.f_name)));
      else if (ts_node_symbol(p) == S.function_definition) return {};
    return {};
  }

  void trace(TSNode def, const std::string& why, const std::string& via, const std::string& from = {}) {
    if (ts_node_is_null(def)) return;
    uint32_t key = ts_node_start_byte(def);
    if (disabled.count(key) || traced.count(key)) return;
    std::string chain = from.empty() ? std::string() : from + " → " + qualified(def);
    traced.emplace(key, std::make_pair(def, Traced{class_holding(def), why, via, chain}));
    queue.push_back(key);
  }

  std::string qualified(TSNode def) const {
    std::string name(text(field(def, S.f_name)));
    for (TSNode p = parent_of(def); !ts_node_is_null(p); p = parent_of(p))
      if (ts_node_symbol(p) == S.class_definition || ts_node_symbol(p) == S.function_definition)
        name = std::string(text(field(p, S.f_name))) + "." + name;
    return name;
  }

  // The class an expression builds, or empty: `GPT(cfg)`, `GPT.from_pretrained(...)`,
  // `GPT(cfg).to(device)`, a name assigned one of these, `DDP(model)`, `torch.compile(m)`.
  void resolve(TSNode x, int depth, const std::string& why, std::string_view method) {
    if (ts_node_is_null(x) || depth > 3) return;
    TSSymbol k = ts_node_symbol(x);
    if (k == S.parenthesized_expression) {
      for (TSNode c : named_children(x, S.comment)) resolve(c, depth + 1, why, method);
      return;
    }
    if (k == S.identifier || k == S.attribute) {
      std::string t(text(x));
      if (k == S.identifier && method == "forward") {
        if (auto it = functions.find(t); it != functions.end()) {
          trace(it->second, why, "compile_call");
          return;
        }
      }
      if (auto it = assigned.find(t); it != assigned.end()) {
        for (TSNode v : it->second) resolve(v, depth + 1, why, method);
        return;
      }
      if (k == S.attribute && method == "forward") {  // torch.compile(model.forward)
        std::string attr(text(field(x, S.f_attribute)));
        TSNode obj = field(x, S.f_object);
        if (text(obj) == "self" && !current_class.empty()) trace(method_of(current_class, attr), why, "compile_call");
        else resolve(obj, depth + 1, why, attr);
      }
      return;
    }
    if (k != S.call) return;
    TSNode fn = field(x, S.f_function);
    std::string callee(text(fn));
    if (ts_node_symbol(fn) == S.identifier && classes.count(callee)) {
      trace(method_of(callee, method), why, "compile_call");
      return;
    }
    std::string canon = canonical(callee);
    std::string_view last = program::last_part(callee);
    TSNode first = first_argument(x);
    if (canon == "torch.compile" || last == "DistributedDataParallel" || last == "DDP" || last == "DataParallel" ||
        last == "FullyShardedDataParallel" || last == "FSDP") {
      resolve(first, depth + 1, why, method);
      return;
    }
    if (ts_node_symbol(fn) == S.attribute) {
      TSNode obj = field(fn, S.f_object);
      std::string o(text(obj));
      if (ts_node_symbol(obj) == S.identifier && classes.count(o)) {  // GPT.from_pretrained(...)
        trace(method_of(o, method), why, "compile_call");
        return;
      }
      if (last == "to" || last == "cuda" || last == "train" || last == "eval" || last == "half" || last == "float" ||
          last == "bfloat16" || last == "requires_grad_")
        resolve(obj, depth + 1, why, method);
    }
  }

  TSNode first_argument(TSNode call) const {
    TSNode args = field(call, S.f_arguments);
    if (ts_node_is_null(args)) return TSNode{};
    for (TSNode a : named_children(args, S.comment)) {
      if (ts_node_symbol(a) == S.keyword_argument) {
        std::string_view n = text(field(a, S.f_name));
        if (n == "model" || n == "module") return field(a, S.f_value);
        continue;
      }
      return a;
    }
    return TSNode{};
  }

  std::string canonical(std::string_view callee) const {
    size_t dot = callee.find('.');
    std::string_view root = callee.substr(0, dot);
    auto it = imports.find(root);
    if (it == imports.end()) return std::string(callee);
    return it->second + (dot == std::string_view::npos ? std::string() : std::string(callee.substr(dot)));
  }

  void find_roots(TSNode n) {
    TSSymbol k = ts_node_symbol(n);
    if (k == S.decorated_definition) {
      each_decorator(n, [&](TSNode def, TSNode c, std::string_view t) {
        if (t == "torch.compile" || t.starts_with("torch.compile(")) {
          if (contains(t, "fullgraph=True")) fullgraph = true;
          trace(def, "`" + qualified(def) + "` is decorated @torch.compile (line " + line_of(c) + ")", "decorator");
        }
      });
    }
    if (k == S.decorator) return;
    if (k == S.call) {
      TSNode fn = field(n, S.f_function);
      if (canonical(text(fn)) == "torch.compile") {
        TSNode target = first_argument(n);
        if (!ts_node_is_null(target)) {
          if (contains(text(n), "fullgraph=True")) fullgraph = true;
          current_class.clear();
          for (TSNode p = parent_of(n); !ts_node_is_null(p); p = parent_of(p))
            if (ts_node_symbol(p) == S.class_definition) {
              current_class = text(field(p, S.f_name));
              break;
            }
          resolve(target, 0,
                  "`" + std::string(text(target).substr(0, 60)) + "` is passed to torch.compile (line " + line_of(n) + ")",
                  "forward");
        }
      }
    }
    for (TSNode c : named_children(n, S.comment)) find_roots(c);
  }

  // The calls a traced function makes that run traced too.
  void expand(TSNode def, const Traced& t) {
    std::string name = qualified(def);
    std::string from = t.chain.empty() ? name : t.chain;
    std::string via = t.via == "submodule" ? "submodule" : "callee";
    if (!t.cls.empty() && !classes_expanded.count(t.cls)) {  // its submodules' forward
      classes_expanded.insert(t.cls);
      TSNode cls = classes.at(t.cls).node;
      visit_calls(field(cls, S.f_body), [&](TSNode call) {
        TSNode fn = field(call, S.f_function);
        std::string c(text(fn));
        if (ts_node_symbol(fn) == S.identifier && c != t.cls && classes.count(c))
          trace(method_of(c, "forward"), t.why, "submodule", from);
      });
    }
    visit_calls(field(def, S.f_body), [&](TSNode call) {
      TSNode fn = field(call, S.f_function);
      std::string c(text(fn));
      if (ts_node_symbol(fn) == S.identifier) {
        if (auto it = functions.find(c); it != functions.end()) trace(it->second, t.why, via, from);
        return;
      }
      if (ts_node_symbol(fn) != S.attribute) return;
      TSNode obj = field(fn, S.f_object);
      std::string o(text(obj)), attr(text(field(fn, S.f_attribute)));
      if (!t.cls.empty() && o == "self") {
        TSNode m = method_of(t.cls, attr);
        if (!ts_node_is_null(m)) {
          trace(m, t.why, via, from);
        } else if (auto it = assigned.find("self." + attr); it != assigned.end()) {
          for (TSNode v : it->second)
            if (ts_node_symbol(v) == S.call) {
              std::string cc(text(field(v, S.f_function)));
              if (classes.count(cc)) trace(method_of(cc, "forward"), t.why, "submodule", from);
            }
        }
      } else if (!t.cls.empty() && o.starts_with("super(")) {
        for (const std::string& b : classes.at(t.cls).bases) trace(method_of(b, attr), t.why, via, from);
      } else if (classes.count(o)) {
        trace(method_of(o, attr), t.why, via, from);
      }
    });
  }

  template <class F>
  void visit_calls(TSNode n, F&& visit) {
    if (ts_node_is_null(n)) return;
    TSSymbol k = ts_node_symbol(n);
    if (k == S.class_definition || k == S.lambda) return;
    if (k == S.call) visit(n);
    for (TSNode c : named_children(n, S.comment)) visit_calls(c, visit);
  }

  // ---- what breaks a graph -----------------------------------------------------------

  struct Ctx {
    const Traced* t = nullptr;
    std::string qname;
    const std::map<std::string, std::vector<TSNode>, std::less<>>* locals = nullptr;  // name -> values
    bool conditional = false;
    std::string debug_guard;
  };

  static bool debug_name(std::string_view cond) {
    std::string l = lower(cond);
    for (const char* w : {"debug", "verbose", "print", "log", "profil", "trace", "warn", "dump", "visual", "plot"})
      if (contains(l, w)) return true;
    return false;
  }

  // 1: the branch's body does not run under compile (`if not is_compiling()`);
  // -1: only the body runs under compile (`if is_compiling()`); 0: no such guard.
  int compile_guard(TSNode cond) const {
    std::string_view c = text(cond);
    size_t at = c.find("compiling");
    if (at == std::string_view::npos) at = c.find("is_exporting");
    if (at == std::string_view::npos) return 0;
    size_t conj = std::max(c.rfind(" and ", at) == std::string_view::npos ? 0 : c.rfind(" and ", at),
                           c.rfind(" or ", at) == std::string_view::npos ? 0 : c.rfind(" or ", at));
    size_t neg = c.rfind("not ", at);
    return neg != std::string_view::npos && neg >= conj ? 1 : -1;
  }

  // Whether `e` is a tensor value a Python branch or conversion would read: a reduction
  // (`x.sum()`, `(x > 0).any()`, `torch.isnan(x).any()`, `torch.equal(a, b)`), a
  // comparison or boolean combination with one, or a local name bound to one.
  bool tensor_valued(TSNode e, const Ctx& ctx, int depth = 0) const {
    if (ts_node_is_null(e) || depth > 6) return false;
    TSSymbol k = ts_node_symbol(e);
    if (k == S.parenthesized_expression || k == S.not_operator) {
      for (TSNode c : named_children(e, S.comment))
        if (tensor_valued(c, ctx, depth + 1)) return true;
      return false;
    }
    if (k == S.boolean_operator)
      return tensor_valued(field(e, S.f_left), ctx, depth + 1) || tensor_valued(field(e, S.f_right), ctx, depth + 1);
    if (k == S.comparison_operator) {
      std::string_view t = text(e);
      if (contains(t, " is ") || contains(t, " in ")) return false;
      for (TSNode c : named_children(e, S.comment))
        if (tensor_valued(c, ctx, depth + 1)) return true;
      return false;
    }
    if (k == S.subscript) return tensor_valued(field(e, S.f_value), ctx, depth + 1);
    if (k == S.identifier) {
      auto it = ctx.locals->find(text(e));
      if (it == ctx.locals->end()) return false;
      TSNode last{};
      for (TSNode v : it->second)
        if (ts_node_start_byte(v) < ts_node_start_byte(e)) last = v;
      return !ts_node_is_null(last) && tensor_valued(last, ctx, depth + 1);
    }
    if (k != S.call) return false;
    return !reduction_callee(e).empty();
  }

  // The reduction a call is, spelled for a message (`Tensor.any`, `torch.equal`), or empty.
  std::string reduction_callee(TSNode call) const {
    TSNode fn = field(call, S.f_function);
    if (ts_node_symbol(fn) != S.attribute) return {};
    std::string canon = canonical(text(fn));
    std::string_view last = program::last_part(canon);
    if (canon.starts_with("torch.") && std::string_view(canon).substr(6).find('.') == std::string_view::npos)
      return kReduceMethods.count(last) ? canon : std::string();
    if (!kReduceMethods.count(last)) return {};
    TSNode obj = field(fn, S.f_object);
    std::string_view o = text(obj);
    if (contains(o, "shape") || contains(o, "size(") || contains(o, "numel(") || o.starts_with("len(") ||
        o.starts_with("math.") || o.starts_with("np.") || o.starts_with("numpy."))
      return {};
    TSSymbol ok = ts_node_symbol(obj);
    if (ok == S.list || ok == S.tuple || ok == S.dictionary || ok == S.string || ok == S.integer || ok == S.float_)
      return {};
    if (ok == S.identifier && (imports.count(o) || classes.count(o))) return {};
    return "Tensor." + std::string(last);
  }

  void emit(TSNode at, const Ctx& ctx, const char* kind, const std::string& callee, const char* reason) {
    ir::Node* node = add_node(out, range_of(at), "graph_break");
    if (!node) return;
    node->attrs["kind"] = std::string(kind);
    if (!callee.empty()) node->attrs["callee"] = callee;
    node->attrs["reason"] = std::string(reason);
    node->attrs["traced"] = "`" + ctx.qname + "` runs under torch.compile: " + ctx.t->why +
                            (ctx.t->chain.empty() ? std::string() : ", through " + ctx.t->chain);
    node->attrs["via"] = ctx.t->via;
    node->attrs["text"] = std::string(text(at).substr(0, 120));
    if (fullgraph) node->attrs["fullgraph"] = true;
    if (scalar_capture) node->attrs["scalar_capture"] = true;
    if (dynamic_capture) node->attrs["dynamic_capture"] = true;
    if (ctx.conditional) node->attrs["conditional"] = true;
    if (!ctx.debug_guard.empty()) node->attrs["debug_guard"] = ctx.debug_guard;
  }

  void check_condition(TSNode cond, const Ctx& ctx) {
    if (ts_node_is_null(cond) || !tensor_valued(cond, ctx)) return;
    bool eq = contains(text(cond), "equal(") || contains(text(cond), "allclose(");
    emit(cond, ctx, "branch", "", eq ? "Data dependent operator" : "generic_jump TensorVariable()");
  }

  void scan_locals(TSNode n, std::map<std::string, std::vector<TSNode>, std::less<>>& locals) {
    if (ts_node_is_null(n)) return;
    TSSymbol k = ts_node_symbol(n);
    if (k == S.function_definition || k == S.class_definition || k == S.lambda) return;
    if (k == S.assignment) {
      TSNode l = field(n, S.f_left), r = field(n, S.f_right);
      if (!ts_node_is_null(l) && ts_node_symbol(l) == S.identifier && !ts_node_is_null(r))
        locals[std::string(text(l))].push_back(r);
    }
    for (TSNode c : named_children(n, S.comment)) scan_locals(c, locals);
  }

  static bool ends_in_exit(const Syntax& S, TSNode block) {
    std::vector<TSNode> st = named_children(block, S.comment);
    return !st.empty() && (ts_node_symbol(st.back()) == S.return_statement || is_type(st.back(), "raise_statement"));
  }

  void scan_block(TSNode block, Ctx& ctx) {
    for (TSNode st : named_children(block, S.comment)) {
      scan(st, ctx, false);
      if (ts_node_symbol(st) == S.if_statement) {  // `if is_compiling(): return ...` ends the traced part
        TSNode cond = field(st, S.f_condition);
        if (compile_guard(cond) == -1 && ts_node_is_null(field(st, S.f_alternative)) &&
            ends_in_exit(S, field(st, S.f_consequence)))
          return;
      }
    }
  }

  void scan_branch(TSNode body, TSNode cond, Ctx& ctx) {
    Ctx sub = ctx;
    sub.conditional = true;
    if (!ts_node_is_null(cond) && sub.debug_guard.empty() && debug_name(text(cond)) && !tensor_valued(cond, ctx))
      sub.debug_guard = std::string(text(cond).substr(0, 80));
    scan(body, sub, false);
  }

  void scan_if(TSNode n, Ctx& ctx) {
    TSNode cond = field(n, S.f_condition);
    int guard = compile_guard(cond);
    if (guard == 0) {
      check_condition(cond, ctx);
      scan(cond, ctx, true);
    }
    if (guard != 1) scan_branch(field(n, S.f_consequence), cond, ctx);
    if (guard == -1) return;  // elif/else run only when not compiling
    for (TSNode c : named_children(n, S.comment)) {
      if (ts_node_symbol(c) == S.elif_clause) {
        scan_if(c, ctx);
        if (compile_guard(field(c, S.f_condition)) == -1) return;
      } else if (ts_node_symbol(c) == S.else_clause) {
        scan_branch(field(c, S.f_body), TSNode{}, ctx);
      }
    }
  }

  // `in_condition`: inside an if/while condition already checked as a whole.
  void scan(TSNode n, Ctx& ctx, bool in_condition) {
    if (ts_node_is_null(n)) return;
    TSSymbol k = ts_node_symbol(n);
    if (k == S.function_definition || k == S.class_definition || k == S.lambda || k == S.decorated_definition)
      return;
    if (k == S.except_clause || is_type(n, "raise_statement")) return;  // error paths
    if (k == S.block) {
      scan_block(n, ctx);
      return;
    }
    if (is_type(n, "assert_statement")) {  // traced; its message runs only on failure
      std::vector<TSNode> cs = named_children(n, S.comment);
      if (!cs.empty()) scan(cs.front(), ctx, true);
      return;
    }
    if (k == S.if_statement || k == S.elif_clause) {
      scan_if(n, ctx);
      return;
    }
    if (k == S.while_statement) {
      TSNode cond = field(n, S.f_condition);
      if (compile_guard(cond) == 1) return;
      check_condition(cond, ctx);
      scan(cond, ctx, true);
      scan(field(n, S.f_body), ctx, false);
      scan(field(n, S.f_alternative), ctx, false);
      return;
    }
    if (k == S.conditional_expression) {
      std::vector<TSNode> cs = named_children(n, S.comment);  // a if cond else b
      if (cs.size() == 3) {
        int guard = compile_guard(cs[1]);
        if (guard == 0) {
          check_condition(cs[1], ctx);
          scan(cs[1], ctx, true);
        }
        if (guard != 1) scan(cs[0], ctx, in_condition);
        if (guard != -1) scan(cs[2], ctx, in_condition);
        return;
      }
    }
    if (k == S.boolean_operator && !in_condition) {
      TSNode left = field(n, S.f_left);
      if (compile_guard(left) == 1) return;  // `not is_compiling() and ...`
      if (tensor_valued(left, ctx)) emit(n, ctx, "branch", "", "generic_jump TensorVariable()");
    }
    if (k == S.boolean_operator && in_condition && compile_guard(field(n, S.f_left)) == 1) return;
    if (k == S.call) classify(n, ctx);
    if (k == S.subscript) mask_index(n, ctx);
    for (TSNode c : named_children(n, S.comment)) scan(c, ctx, in_condition);
  }

  size_t positional_args(TSNode call) const {
    size_t n = 0;
    TSNode args = field(call, S.f_arguments);
    if (ts_node_is_null(args)) return 0;
    for (TSNode a : named_children(args, S.comment))
      if (ts_node_symbol(a) != S.keyword_argument) ++n;
    return n;
  }

  void classify(TSNode call, const Ctx& ctx) {
    TSNode fn = field(call, S.f_function);
    std::string c(text(fn));
    TSNode args = field(call, S.f_arguments);
    size_t nargs = ts_node_is_null(args) ? 0 : named_children(args, S.comment).size();
    if (ts_node_symbol(fn) == S.attribute) {
      std::string attr(text(field(fn, S.f_attribute)));
      std::string canon = canonical(c);
      bool torch_fn = canon.starts_with("torch.");
      if (!torch_fn && attr == "item" && nargs == 0) {
        emit(call, ctx, "item", "Tensor.item", "Unsupported Tensor.item() call with capture_scalar_outputs=False");
        return;
      }
      if (!torch_fn && attr == "tolist" && nargs == 0) {
        emit(call, ctx, "tolist", "Tensor.tolist", "Tensor.tolist()");
        return;
      }
      if (kDynamicShape.count(attr) || (canon == "torch.where" && positional_args(call) == 1)) {
        if (!torch_fn || canon == "torch." + attr || canon == "torch.where") {
          if (!torch_fn && imports.count(c.substr(0, c.find('.')))) return;  // np.unique(...)
          emit(call, ctx, "dynamic_shape", torch_fn ? canon : "Tensor." + attr, "Dynamic shape operator");
        }
        return;
      }
      if (torch_fn && !canon.starts_with("torch.cuda.")) return;
      std::string root = c.substr(0, c.find('.'));
      if (imports.count(root) || torch_fn) {
        emit(call, ctx, "call", canon, "Attempted to call function marked as skipped");
        return;
      }
      // A logger: `logger.info`, `self.logger.warning`, `_log.debug` (not `log_probs.log()`).
      std::string owner = lower(program::last_part(text(field(fn, S.f_object))));
      bool logger = owner.ends_with("logger") || owner == "log" || owner == "_log";
      if (kLoggerMethods.count(attr) && logger && ts_node_symbol(field(fn, S.f_object)) != S.call)
        emit(call, ctx, "call", "logging.Logger." + attr, "logging.Logger method not supported for non-export cases");
      return;
    }
    if (ts_node_symbol(fn) != S.identifier) return;
    if (functions.count(c) || classes.count(c) || ctx.locals->count(c)) return;
    if (c == "print" && !imports.count(c)) {
      emit(call, ctx, "print", "print", "Failed to trace builtin operator print");
      return;
    }
    if ((c == "float" || c == "int" || c == "bool") && nargs == 1) {
      std::vector<TSNode> as = named_children(args, S.comment);
      if (tensor_valued(as.front(), ctx))
        emit(call, ctx, "scalar", c, "Unsupported Tensor.item() call with capture_scalar_outputs=False");
      return;
    }
    emit(call, ctx, "call", canonical(c), "Failed to trace builtin operator");
  }

  // x[x > 0], x[mask] with `mask = x > 0` in the function: a data-dependent shape. Not an
  // assignment's target (x[x > 0] = 0 is a masked fill, traced).
  void mask_index(TSNode n, const Ctx& ctx) {
    TSNode idx = field(n, S.f_subscript);
    if (ts_node_is_null(idx)) return;
    TSNode p = parent_of(n);
    if (!ts_node_is_null(p) && (ts_node_symbol(p) == S.assignment || ts_node_symbol(p) == S.augmented_assignment) &&
        ts_node_eq(field(p, S.f_left), n))
      return;
    auto comparison = [&](TSNode e) {
      if (ts_node_symbol(e) != S.comparison_operator) return false;
      std::string_view t = text(e);
      return !contains(t, " is ") && !contains(t, " in ") && !contains(t, "shape") && !contains(t, "size(");
    };
    bool mask = comparison(idx);
    if (!mask && ts_node_symbol(idx) == S.identifier) {
      if (auto it = ctx.locals->find(text(idx)); it != ctx.locals->end()) {
        TSNode last{};
        for (TSNode v : it->second)
          if (ts_node_start_byte(v) < ts_node_start_byte(idx)) last = v;
        mask = !ts_node_is_null(last) && comparison(last);
      }
    }
    if (mask) emit(n, ctx, "dynamic_shape", "Tensor.__getitem__", "Dynamic shape operator");
  }

  void run(TSNode root) {
    index(root, 0);
    std::string_view t = f.text;
    scalar_capture = contains(t, "capture_scalar_outputs = True") || contains(t, "capture_scalar_outputs=True");
    dynamic_capture = contains(t, "capture_dynamic_output_shape_ops = True") ||
                      contains(t, "capture_dynamic_output_shape_ops=True");
    find_roots(root);
    for (size_t i = 0; i < queue.size(); ++i) {
      const auto& [def, tr] = traced.at(queue[i]);
      expand(def, tr);
    }
    for (const auto& [key, entry] : traced) {
      const auto& [def, tr] = entry;
      std::map<std::string, std::vector<TSNode>, std::less<>> locals;
      scan_locals(field(def, S.f_body), locals);
      Ctx ctx;
      ctx.t = &tr;
      ctx.qname = qualified(def);
      ctx.locals = &locals;
      scan(field(def, S.f_body), ctx, false);
    }
  }
};

// A file of PyTorch itself (torch/nn/modules/module.py compiles `self._call_impl`):
// TorchDynamo traces torch's own modules by its own rules (trace_rules), not as user code.
bool torch_package(std::string_view path) {
  for (const char* dir : {"/torch/nn/", "/torch/_", "/torch/optim/", "/torch/distributed/", "/torch/utils/",
                          "/torch/fx/", "/torch/export/", "/torch/compiler/", "/torch/cuda/", "/torch/autograd/",
                          "/torch/jit/", "/torch/ao/", "/torch/testing/", "/torch/onnx/", "/torch/amp/",
                          "/torch/nested/", "/torch/profiler/", "/torch/backends/", "/torch/func/", "/torch/masked/",
                          "/torch/sparse/"})
    if (contains(path, dir) || path.starts_with(dir + 1)) return true;
  return false;
}

}  // namespace

void add_graph_breaks(const SourceFile& file, TSNode root, ir::Module& out) {
  if (!contains(file.text, "torch.compile")) return;
  if (program::test_path(file.path)) return;  // tests compile code that breaks on purpose
  if (torch_package(file.path)) return;
  Pass pass(Syntax::get(), file, out);
  pass.run(root);
}

}  // namespace mlsem::python
