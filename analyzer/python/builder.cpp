// Python -> IR. One Builder per file: it indexes imports, classes and functions,
// then lowers each function body in one walk, resolving variables to dataflow
// edges and every spelling of an operation to its canonical op (docs/IR.md).
#include "python/builder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "python/names.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {

using ir::NodeId;
using ir::kNoNode;

constexpr int kMaxInlineDepth = 3;      // helper calls followed this deep
constexpr int kMaxNesting = 200;        // syntactic depth lowered; deeper is reported
constexpr size_t kInlineBudget = 2000;  // nodes one function may gain by inlining
constexpr uint32_t kMaxInlineBytes = 8000;  // larger callees are not inlined
constexpr size_t kTraceLimit = 32;      // nodes visited tracing a mask to its source
constexpr size_t kTextLimit = 80;       // longest `text` attribute kept

// What an expression evaluates to: a node, an nn.Module, or a tuple of nodes.
struct Value {
  NodeId node = kNoNode;
  int module = -1;               // index into Builder::modules_
  std::vector<NodeId> items;     // elements when is_tuple
  bool is_tuple = false;
};

// An nn.Module value: what calling it computes.
struct ModuleDesc {
  std::string cls;               // canonical class ("torch.nn.Linear") or a same-file class
  TSNode ctor{};                 // constructor call, for bias=False, dim=-1, p=0.1
  int local_class = -1;          // same-file class whose forward is inlined
  std::vector<int> items;        // nn.Sequential / nn.ModuleList([...]) elements
  int element = -1;              // nn.ModuleList([Block() for _ in ...])
  std::vector<std::pair<std::string, int>> members;  // nn.ModuleDict
};

// What __init__ assigned to self.<name>.
struct AttrFact {
  enum Kind { kModule, kScalar, kCausal } kind = kScalar;
  int module = -1;
  bool sqrt_like = false;
};

struct ClassInfo {
  std::string name;  // qualified
  std::vector<std::string_view> bases;
  std::unordered_map<std::string_view, int> methods;  // -> functions_
  std::unordered_map<std::string_view, AttrFact> facts;
  bool facts_ready = false;
};

struct FuncInfo {
  std::string name;   // qualified: "Class.method", "outer.inner"
  TSNode def{};       // function_definition
  TSNode decorated{}; // decorated_definition around it, or null
  int cls = -1;       // class it is a method of
  bool is_method = false;
};

// Arguments of one call. A method's receiver is logical argument 0.
struct Args {
  TSNode call{};  // the call expression, standing in for a receiver's source
  std::vector<TSNode> pos;
  std::vector<std::pair<std::string_view, TSNode>> kw;
  std::optional<Value> receiver;
  std::vector<std::optional<Value>> cache;  // lowered values by logical index

  size_t count() const { return pos.size() + (receiver ? 1 : 0); }
  // Source of logical argument i (null for the receiver or when absent).
  TSNode expr(size_t i) const {
    size_t shift = receiver ? 1 : 0;
    if (i < shift || i - shift >= pos.size()) return TSNode{};
    return pos[i - shift];
  }
  TSNode keyword(std::string_view name) const {
    for (const auto& [k, v] : kw)
      if (k == name) return v;
    return TSNode{};
  }
  // Positional i, else keyword `name`.
  TSNode get(size_t i, std::string_view name) const {
    TSNode n = expr(i);
    return ts_node_is_null(n) && !name.empty() ? keyword(name) : n;
  }
};

// Variables of one function body being lowered (a callee being inlined has its own).
struct Scope {
  std::unordered_map<std::string_view, Value> vars;
  std::unordered_map<std::string, Value> attrs;  // `self.cache = ...` in this body
  std::vector<std::pair<std::string_view, std::string>> local_aliases;  // imports in the body
  int cls = -1;                  // class of `self`
  std::string_view self_name;    // "self"
  std::string self_path = "self";  // how self is reached from the function being built
  int func = -1;
  Value ret;  // the last `return` lowered
};

// State of the ir::Function being built.
struct FnState {
  ir::Function fn;
  Scope* scope = nullptr;
  uint32_t region = 0;
  int nesting = 0;
  int inline_depth = 0;
  std::vector<int> inlining;  // FuncInfo indices on the inline stack
  int root = -1;
  size_t inlined_nodes = 0;
  uint32_t training_marks = 0;  // backward / optimizer_step nodes emitted so far
  std::vector<uint32_t> direct_marks;  // per open loop: those emitted outside nested loops
  uint32_t env_writes = 0;
  bool too_deep_reported = false;
};

bool is_very_negative(double v) { return v <= -1e4; }

std::string clip(std::string_view s) {
  if (s.size() <= kTextLimit) return std::string(s);
  return std::string(s.substr(0, kTextLimit - 3)) + "...";
}

class Builder {
 public:
  Builder(const SourceFile& file, TSNode root, ir::Module& out)
      : file_(file), src_(file.text), root_(root), out_(out), S(Syntax::get()) {}

  void run() {
    index_block(root_, "", -1, 0);
    summary_.assign(functions_.size(), Summary::kUnknown);
    for (size_t i = 0; i < functions_.size(); ++i)
      if (summary_[i] == Summary::kUnknown) lower_function(static_cast<int>(i));
    lower_module_code();
    std::stable_sort(out_.functions.begin(), out_.functions.end(),
                     [](const ir::Function& a, const ir::Function& b) {
                       return a.range.begin_byte < b.range.begin_byte;
                     });
  }

 private:
  const SourceFile& file_;
  std::string_view src_;
  TSNode root_;
  ir::Module& out_;
  const Syntax& S;
  Children children_;

  std::unordered_map<std::string_view, std::string> aliases_;  // imported name -> canonical
  std::vector<FuncInfo> functions_;
  std::unordered_map<std::string, int> function_by_name_;
  std::vector<ClassInfo> classes_;
  std::unordered_map<std::string_view, int> class_by_name_;
  std::vector<ModuleDesc> modules_;
  FnState* st_ = nullptr;
  // Per function, once lowered on its own: does its IR hold any modelled op? Helpers
  // that only call opaque functions (validators, logging) are not worth inlining.
  enum class Summary : uint8_t { kUnknown, kInProgress, kOpaque, kModelled };
  std::vector<Summary> summary_;

  // ------------------------------------------------------------------ helpers

  std::string_view text(TSNode n) const { return text_of(n, src_); }
  TSSymbol sym(TSNode n) const { return ts_node_symbol(n); }
  // Child lists borrow their storage from a pool: no allocation per visited node.
  class NodeList {
   public:
    explicit NodeList(std::vector<std::vector<TSNode>>* pool) : pool_(pool) {
      if (!pool->empty()) {
        v_ = std::move(pool->back());
        pool->pop_back();
      }
      v_.clear();
    }
    NodeList(NodeList&& o) noexcept : v_(std::move(o.v_)), pool_(o.pool_) { o.pool_ = nullptr; }
    NodeList(const NodeList&) = delete;
    NodeList& operator=(const NodeList&) = delete;
    ~NodeList() {
      if (pool_) pool_->push_back(std::move(v_));
    }
    std::vector<TSNode>& vec() { return v_; }
    auto begin() const { return v_.begin(); }
    auto end() const { return v_.end(); }
    auto rbegin() const { return v_.rbegin(); }
    auto rend() const { return v_.rend(); }
    size_t size() const { return v_.size(); }
    bool empty() const { return v_.empty(); }
    TSNode operator[](size_t i) const { return v_[i]; }

   private:
    std::vector<TSNode> v_;
    std::vector<std::vector<TSNode>>* pool_;
  };
  std::vector<std::vector<TSNode>> list_pool_;

  NodeList named(TSNode n) {
    NodeList out(&list_pool_);
    children_.named(n, out.vec(), S.comment);
    return out;
  }
  TSNode unparen(TSNode n) const {
    while (!ts_node_is_null(n) && sym(n) == S.parenthesized_expression && ts_node_named_child_count(n) > 0)
      n = ts_node_named_child(n, 0);
    return n;
  }
  static bool same(TSNode a, TSNode b) { return ts_node_eq(a, b); }

  void diagnose(TSNode at, std::string message) {
    out_.diagnostics.push_back({file_.path, range_of(at), std::move(message)});
  }

  // identifier chain `a.b.c` -> {"a","b","c"}; false when the root is not a name.
  bool dotted(TSNode n, std::vector<std::string_view>& parts) const {
    parts.clear();
    n = unparen(n);
    while (sym(n) == S.attribute) {
      TSNode attr = field(n, S.f_attribute);
      if (ts_node_is_null(attr)) return false;
      parts.push_back(text(attr));
      n = unparen(field(n, S.f_object));
      if (ts_node_is_null(n)) return false;
    }
    if (sym(n) != S.identifier) return false;
    parts.push_back(text(n));
    std::reverse(parts.begin(), parts.end());
    return true;
  }

  static std::string join(const std::vector<std::string_view>& parts, size_t from = 0) {
    std::string s;
    for (size_t i = from; i < parts.size(); ++i) {
      if (i > from) s += '.';
      s += parts[i];
    }
    return s;
  }

  const std::string* alias(std::string_view name) const {
    if (st_ && st_->scope) {
      for (const auto& [k, v] : st_->scope->local_aliases)
        if (k == name) return &v;
    }
    auto it = aliases_.find(name);
    return it == aliases_.end() ? nullptr : &it->second;
  }

  // Canonical dotted name of an expression naming an imported thing, e.g. `F.softmax`
  // -> "torch.nn.functional.softmax"; "" when the root is not an import or is a variable.
  std::string canonical(TSNode n) {
    std::vector<std::string_view> parts;
    if (!dotted(n, parts)) return "";
    if (st_ && st_->scope && st_->scope->vars.count(parts[0])) return "";
    const std::string* a = alias(parts[0]);
    if (!a) return "";
    std::string s = *a;
    for (size_t i = 1; i < parts.size(); ++i) (s += '.') += parts[i];
    return s;
  }

  // ------------------------------------------------------------------ index

  void add_import(TSNode stmt, std::unordered_map<std::string_view, std::string>* module_map,
                  std::vector<std::pair<std::string_view, std::string>>* local) {
    auto bind = [&](std::string_view name, std::string value) {
      if (module_map) (*module_map)[name] = std::move(value);
      else local->emplace_back(name, std::move(value));
    };
    if (sym(stmt) == S.import_statement) {
      for (TSNode c : named(stmt)) {
        if (sym(c) == S.aliased_import) {
          bind(text(field(c, S.f_alias)), std::string(text(field(c, S.f_name))));
        } else if (sym(c) == S.dotted_name) {
          std::string_view full = text(c);
          std::string_view root = full.substr(0, full.find('.'));
          bind(root, std::string(root));
        }
      }
      return;
    }
    TSNode mod = field(stmt, S.f_module_name);
    if (ts_node_is_null(mod)) return;
    std::string base(text(mod));
    for (TSNode c : named(stmt)) {
      if (same(c, mod)) continue;
      std::string prefix = base.empty() || base.back() == '.' ? base : base + ".";
      if (sym(c) == S.aliased_import) {
        bind(text(field(c, S.f_alias)), prefix + std::string(text(field(c, S.f_name))));
      } else if (sym(c) == S.dotted_name) {
        bind(text(c), prefix + std::string(text(c)));
      }
    }
  }

  // Registers defs and classes under `container` (module, class body, block, ...).
  // Walks statements only, never into expressions.
  void index_block(TSNode container, const std::string& prefix, int cls, int depth) {
    if (depth > kMaxNesting) return;
    for (TSNode s : named(container)) index_statement(s, prefix, cls, depth, TSNode{});
  }

  void index_statement(TSNode s, const std::string& prefix, int cls, int depth, TSNode decorated) {
    TSSymbol k = sym(s);
    if (k == S.function_definition) {
      FuncInfo f;
      std::string_view short_name = text(field(s, S.f_name));
      f.name = prefix + std::string(short_name);
      f.def = s;
      f.decorated = decorated;
      f.cls = cls;
      f.is_method = cls >= 0 && !has_decorator(decorated, "staticmethod");
      int id = static_cast<int>(functions_.size());
      function_by_name_[f.name] = id;
      if (cls >= 0) classes_[cls].methods[short_name] = id;
      std::string nested = f.name + ".";
      functions_.push_back(std::move(f));
      index_block(field(s, S.f_body), nested, -1, depth + 1);
    } else if (k == S.class_definition) {
      ClassInfo c;
      std::string_view short_name = text(field(s, S.f_name));
      c.name = prefix + std::string(short_name);
      TSNode supers = field(s, S.f_superclasses);
      if (!ts_node_is_null(supers))
        for (TSNode b : named(supers))
          if (sym(b) == S.identifier) c.bases.push_back(text(b));
      int id = static_cast<int>(classes_.size());
      class_by_name_[short_name] = id;
      std::string nested = c.name + ".";
      classes_.push_back(std::move(c));
      index_block(field(s, S.f_body), nested, id, depth + 1);
    } else if (k == S.decorated_definition) {
      TSNode def = field(s, S.f_definition);
      if (!ts_node_is_null(def)) index_statement(def, prefix, cls, depth, s);
    } else if (k == S.import_statement || k == S.import_from_statement) {
      if (prefix.empty()) add_import(s, &aliases_, nullptr);
    } else if (k == S.if_statement || k == S.try_statement || k == S.with_statement ||
               k == S.for_statement || k == S.while_statement || k == S.elif_clause ||
               k == S.else_clause || k == S.except_clause || k == S.finally_clause ||
               k == S.block || ts_node_is_error(s)) {
      // Defs under `if TYPE_CHECKING:`, `try:` and inside recovered syntax errors.
      for (TSNode c : named(s)) {
        TSSymbol ck = sym(c);
        if (ck == S.block || ck == S.elif_clause || ck == S.else_clause || ck == S.except_clause ||
            ck == S.finally_clause || ck == S.function_definition || ck == S.class_definition ||
            ck == S.decorated_definition || ck == S.import_statement ||
            ck == S.import_from_statement || ts_node_is_error(c) || ck == S.if_statement ||
            ck == S.try_statement || ck == S.with_statement)
          index_statement(c, prefix, cls, depth + 1, TSNode{});
      }
    }
  }

  bool has_decorator(TSNode decorated, std::string_view name) {
    if (ts_node_is_null(decorated)) return false;
    for (TSNode d : named(decorated)) {
      if (sym(d) != S.decorator) continue;
      std::string_view t = text(d);
      if (t.find(name) != std::string_view::npos) return true;
    }
    return false;
  }

  int find_method(int cls, std::string_view name, int depth = 0) {
    if (cls < 0 || depth > 4) return -1;
    auto it = classes_[cls].methods.find(name);
    if (it != classes_[cls].methods.end()) return it->second;
    for (std::string_view base : classes_[cls].bases) {
      auto b = class_by_name_.find(base);
      if (b != class_by_name_.end() && b->second != cls) {
        int m = find_method(b->second, name, depth + 1);
        if (m >= 0) return m;
      }
    }
    return -1;
  }

  // ------------------------------------------------------------------ modules and class facts

  // An nn.Module built by `e` (`nn.Linear(...)`, `MLP(config)`, `nn.ModuleList([...])`), or -1.
  int module_from_expr(TSNode e, int depth = 0) {
    e = unparen(e);
    if (depth > 8 || ts_node_is_null(e) || sym(e) != S.call) return -1;
    TSNode fn = field(e, S.f_function);
    std::string cls;
    int local = -1;
    if (sym(fn) == S.identifier && class_by_name_.count(text(fn)) &&
        !(st_ && st_->scope && st_->scope->vars.count(text(fn)))) {
      local = class_by_name_[text(fn)];
      cls = std::string(text(fn));
    } else {
      cls = canonical(fn);
      if (cls.empty() || !is_class_name(cls)) return -1;
    }
    ModuleDesc d;
    d.cls = cls;
    d.ctor = e;
    d.local_class = local;
    auto args = named(field(e, S.f_arguments));
    if (cls == "torch.nn.Sequential") {
      for (TSNode a : args) {
        int m = module_from_expr(a, depth + 1);
        if (m >= 0) d.items.push_back(m);
      }
    } else if (cls == "torch.nn.ModuleList" && !args.empty()) {
      TSNode list = unparen(args[0]);
      if (sym(list) == S.list) {
        for (TSNode a : named(list)) {
          int m = module_from_expr(a, depth + 1);
          if (m >= 0) d.items.push_back(m);
        }
      } else if (sym(list) == S.list_comprehension) {
        d.element = module_from_expr(field(list, S.f_body), depth + 1);
      }
    } else if (cls == "torch.nn.ModuleDict" && !args.empty()) {
      TSNode dict = unparen(args[0]);
      if (sym(dict) == S.call && text(field(dict, S.f_function)) == "dict") {
        for (TSNode kwa : named(field(dict, S.f_arguments))) {
          if (sym(kwa) != S.keyword_argument) continue;
          int m = module_from_expr(field(kwa, S.f_value), depth + 1);
          if (m >= 0) d.members.emplace_back(std::string(text(field(kwa, S.f_name))), m);
        }
      } else if (sym(dict) == S.dictionary) {
        for (TSNode p : named(dict)) {
          if (sym(p) != S.pair) continue;
          std::string_view key = text(field(p, S.f_key));
          if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'')) key = key.substr(1, key.size() - 2);
          int m = module_from_expr(field(p, S.f_value), depth + 1);
          if (m >= 0) d.members.emplace_back(std::string(key), m);
        }
      }
    }
    modules_.push_back(std::move(d));
    return static_cast<int>(modules_.size()) - 1;
  }

  // Is `e` (in __init__) a Python scalar: literals, config.*, arithmetic of those, math.*.
  bool static_scalar(TSNode e, int depth = 0) {
    e = unparen(e);
    if (ts_node_is_null(e) || depth > 16) return false;
    TSSymbol k = sym(e);
    if (k == S.integer || k == S.float_) return true;
    if (k == S.identifier) return is_scalar_name(text(e));
    if (k == S.attribute) {
      std::vector<std::string_view> parts;
      if (!dotted(e, parts)) return false;
      return is_config_root(parts[parts.size() >= 2 ? parts.size() - 2 : 0]) || is_scalar_name(parts.back()) ||
             (alias(parts[0]) && (*alias(parts[0]) == "math" || *alias(parts[0]) == "numpy"));
    }
    if (k == S.binary_operator) {
      return static_scalar(field(e, S.f_left), depth + 1) || static_scalar(field(e, S.f_right), depth + 1);
    }
    if (k == S.unary_operator) return static_scalar(field(e, S.f_argument), depth + 1);
    if (k == S.call) {
      std::string c = canonical(field(e, S.f_function));
      std::string_view f = text(field(e, S.f_function));
      return c.rfind("math.", 0) == 0 || c.rfind("numpy.", 0) == 0 || f == "float" || f == "int";
    }
    return false;
  }

  static bool mentions_sqrt(std::string_view t) {
    auto has = [&](std::string_view s) { return t.find(s) != std::string_view::npos; };
    return has("sqrt") || has("** -0.5") || has("**-0.5") || has("** 0.5") || has("**0.5") ||
           has("** (-0.5)") || has("**(-0.5)");
  }
  static bool mentions_causal(std::string_view t) {
    return t.find("tril") != std::string_view::npos || t.find("triu") != std::string_view::npos;
  }

  // Reads `self.x = ...` and `self.register_buffer(...)` in __init__ (and base classes').
  void class_facts(int cls, int depth = 0) {
    ClassInfo& c = classes_[cls];
    if (c.facts_ready || depth > 4) return;
    c.facts_ready = true;
    for (std::string_view base : c.bases) {
      auto b = class_by_name_.find(base);
      if (b != class_by_name_.end() && b->second != cls) {
        class_facts(b->second, depth + 1);
        for (const auto& f : classes_[b->second].facts) classes_[cls].facts.insert(f);
      }
    }
    auto init = classes_[cls].methods.find("__init__");
    if (init == classes_[cls].methods.end()) return;
    std::vector<std::string_view> causal_locals;
    scan_init(field(functions_[init->second].def, S.f_body), cls, causal_locals, 0);
  }

  void scan_init(TSNode block, int cls, std::vector<std::string_view>& causal_locals, int depth) {
    if (depth > 16) return;
    for (TSNode s : named(block)) {
      TSSymbol k = sym(s);
      if (k == S.if_statement || k == S.for_statement || k == S.with_statement || k == S.try_statement ||
          k == S.else_clause || k == S.elif_clause || k == S.block || k == S.except_clause) {
        scan_init(s, cls, causal_locals, depth + 1);
        continue;
      }
      if (k != S.expression_statement) continue;
      TSNode e = ts_node_named_child(s, 0);
      if (sym(e) == S.assignment) {
        TSNode left = field(e, S.f_left), right = field(e, S.f_right);
        if (ts_node_is_null(right)) continue;
        if (sym(left) == S.identifier) {
          if (mentions_causal(text(right))) causal_locals.push_back(text(left));
          continue;
        }
        std::vector<std::string_view> parts;
        if (!dotted(left, parts) || parts.size() != 2 || parts[0] != "self") continue;
        AttrFact f;
        int m = module_from_expr(right);
        if (m >= 0) {
          f.kind = AttrFact::kModule;
          f.module = m;
        } else if (mentions_causal(text(right)) || is_causal_local(text(right), causal_locals) ||
                   calls_causal_helper(right)) {
          f.kind = AttrFact::kCausal;
        } else if (static_scalar(right)) {
          f.kind = AttrFact::kScalar;
          f.sqrt_like = mentions_sqrt(text(right));
        } else {
          continue;
        }
        classes_[cls].facts[parts[1]] = f;
      } else if (sym(e) == S.call) {
        std::vector<std::string_view> parts;
        if (!dotted(field(e, S.f_function), parts) || parts.size() != 2 || parts[0] != "self" ||
            parts[1] != "register_buffer")
          continue;
        auto args = named(field(e, S.f_arguments));
        if (args.size() < 2 || sym(args[0]) != S.string) continue;
        std::string_view name = text(args[0]);
        if (name.size() < 2) continue;
        name = name.substr(1, name.size() - 2);
        if (mentions_causal(text(args[1])) || is_causal_local(text(args[1]), causal_locals) ||
            calls_causal_helper(args[1]))
          classes_[cls].facts[name] = AttrFact{AttrFact::kCausal, -1, false};
      }
    }
  }

  // `causal_bias(n)`: a same-file function whose body builds a tril/triu.
  bool calls_causal_helper(TSNode e) {
    e = unparen(e);
    if (sym(e) != S.call) return false;
    TSNode fn = field(e, S.f_function);
    if (sym(fn) != S.identifier) return false;
    auto it = function_by_name_.find(std::string(text(fn)));
    return it != function_by_name_.end() && mentions_causal(text(functions_[it->second].def));
  }

  static bool is_causal_local(std::string_view t, const std::vector<std::string_view>& locals) {
    return std::find(locals.begin(), locals.end(), t) != locals.end();
  }

  // ------------------------------------------------------------------ emission

  ir::Node& node(NodeId id) { return st_->fn.nodes[id]; }
  const ir::Node* node_if(NodeId id) const {
    return id == kNoNode ? nullptr : &st_->fn.nodes[id];
  }

  NodeId emit(std::string op, std::vector<NodeId> inputs, TSNode src) {
    ir::Node n;
    n.op = std::move(op);
    inputs.erase(std::remove(inputs.begin(), inputs.end(), kNoNode), inputs.end());
    n.inputs = std::move(inputs);
    n.range = range_of(src);
    n.region = st_->region;
    st_->fn.nodes.push_back(std::move(n));
    if (st_->inline_depth > 0) ++st_->inlined_nodes;
    return static_cast<NodeId>(st_->fn.nodes.size() - 1);
  }
  void set(NodeId id, const char* key, ir::Attr v) { node(id).attrs[key] = std::move(v); }

  Value val(NodeId id) { return Value{id, -1, {}, false}; }

  NodeId emit_const(TSNode src, std::optional<double> value) {
    NodeId id = emit("const", {}, src);
    if (value) set(id, "value", *value);
    set(id, "text", clip(text(src)));
    return id;
  }
  NodeId emit_scalar(TSNode src, bool sqrt_like) {
    NodeId id = emit("scalar", {}, src);
    set(id, "text", clip(text(src)));
    set(id, "sqrt_like", sqrt_like);
    return id;
  }
  NodeId emit_name(TSNode src, std::string name) {
    NodeId id = emit("name", {}, src);
    bool causal = contains_causal(name);
    set(id, "name", std::move(name));
    if (causal) set(id, "causal", true);
    return id;
  }

  // A value as one node (modules and tuples get a stand-in).
  NodeId as_node(const Value& v, TSNode src) {
    if (v.node != kNoNode) return v.node;
    if (v.module >= 0) return emit_name(src, std::string(text(src)));
    if (v.is_tuple) {
      NodeId id = emit("call", v.items, src);
      set(id, "callee", std::string("tuple"));
      return id;
    }
    return kNoNode;
  }

  std::string_view op_of(NodeId id) const {
    const ir::Node* n = node_if(id);
    return n ? std::string_view(n->op) : std::string_view{};
  }
  std::optional<double> const_value(NodeId id) const {
    const ir::Node* n = node_if(id);
    if (!n || n->op != "const") return std::nullopt;
    const ir::Attr* a = n->attr("value");
    if (!a || !std::holds_alternative<double>(*a)) return std::nullopt;
    return std::get<double>(*a);
  }
  bool flag(NodeId id, const char* key) const {
    const ir::Node* n = node_if(id);
    if (!n) return false;
    const ir::Attr* a = n->attr(key);
    return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
  }
  std::string_view str_attr(NodeId id, const char* key) const {
    const ir::Node* n = node_if(id);
    if (!n) return {};
    const ir::Attr* a = n->attr(key);
    return a && std::holds_alternative<std::string>(*a) ? std::string_view(std::get<std::string>(*a))
                                                         : std::string_view{};
  }

  // A Python number rather than a tensor.
  bool scalar_like(NodeId id) const {
    std::string_view op = op_of(id);
    if (op == "const") return const_value(id).has_value();
    if (op == "scalar") return true;
    if (op == "input" || op == "name") {
      std::string_view type = str_attr(id, "type");
      return type == "int" || type == "float" || is_scalar_name(str_attr(id, "name"));
    }
    return false;
  }
  bool scalar_like(const Value& v) const { return v.module < 0 && !v.is_tuple && scalar_like(v.node); }

  // Walks a mask back to where it came from: a tril/triu, a causal name.
  bool traces_to(NodeId start, bool want_causal) const {
    std::vector<NodeId> todo{start};
    size_t seen = 0;
    while (!todo.empty() && seen < kTraceLimit) {
      NodeId id = todo.back();
      todo.pop_back();
      const ir::Node* n = node_if(id);
      if (!n) continue;
      ++seen;
      if (n->op == "tril" || n->op == "triu" || flag(id, "causal")) return true;
      if (n->op == "name" || n->op == "input") {
        std::string_view name = str_attr(id, "name");
        if (want_causal ? contains_causal(name) : is_mask_name(name)) return true;
        continue;
      }
      if (n->op == "matmul" || n->op == "softmax" || n->op == "linear") continue;  // a tensor, not a mask
      for (NodeId in : n->inputs) todo.push_back(in);
    }
    return false;
  }

  // ------------------------------------------------------------------ constant evaluation

  std::optional<double> number(TSNode e, int depth = 0) {
    e = unparen(e);
    if (ts_node_is_null(e) || depth > 32) return std::nullopt;
    TSSymbol k = sym(e);
    if (k == S.integer || k == S.float_) return parse_number(text(e));
    if (k == S.true_) return 1.0;
    if (k == S.false_) return 0.0;
    if (k == S.unary_operator) {
      auto v = number(field(e, S.f_argument), depth + 1);
      if (!v) return std::nullopt;
      return text(field(e, S.f_operator)) == "-" ? -*v : *v;
    }
    if (k == S.binary_operator) {
      auto a = number(field(e, S.f_left), depth + 1);
      if (!a) return std::nullopt;
      auto b = number(field(e, S.f_right), depth + 1);
      if (!b) return std::nullopt;
      return fold(text(field(e, S.f_operator)), *a, *b);
    }
    if (k == S.attribute) {
      std::string c = canonical(e);
      if (c == "math.pi" || c == "numpy.pi") return M_PI;
      if (c == "math.e" || c == "numpy.e") return M_E;
      if (c == "math.inf" || c == "numpy.inf") return INFINITY;
      return std::nullopt;
    }
    if (k == S.call) {
      TSNode fn = field(e, S.f_function);
      auto args = named(field(e, S.f_arguments));
      if (args.size() != 1) return std::nullopt;
      if (text(fn) == "float" && sym(args[0]) == S.string) {
        std::string_view s = text(args[0]);
        if (s.size() < 2) return std::nullopt;
        s = s.substr(1, s.size() - 2);
        if (s == "inf" || s == "+inf" || s == "infinity") return INFINITY;
        if (s == "-inf" || s == "-infinity") return -INFINITY;
        return parse_number(s);
      }
      std::string c = canonical(fn);
      std::string_view f = c.rfind("numpy.", 0) == 0 ? std::string_view(c).substr(6)
                           : c.rfind("math.", 0) == 0 ? std::string_view(c).substr(5)
                                                      : std::string_view{};
      if (f.empty() && text(fn) != "float" && text(fn) != "int") return std::nullopt;
      auto v = number(args[0], depth + 1);
      if (!v) return std::nullopt;
      if (text(fn) == "float") return *v;
      if (text(fn) == "int") return std::trunc(*v);
      if (f == "sqrt") return std::sqrt(*v);
      if (f == "log") return std::log(*v);
      if (f == "exp") return std::exp(*v);
      return std::nullopt;
    }
    return std::nullopt;
  }

  static std::optional<double> parse_number(std::string_view t) {
    std::string s;
    for (char c : t)
      if (c != '_') s.push_back(c);
    if (s.empty() || s.back() == 'j' || s.back() == 'J') return std::nullopt;
    char* end = nullptr;
    double v;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'o' || s[1] == 'O' ||
                                        s[1] == 'b' || s[1] == 'B')) {
      int base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
      v = static_cast<double>(std::strtoull(s.c_str() + 2, &end, base));
    } else {
      v = std::strtod(s.c_str(), &end);
    }
    if (end != s.c_str() + s.size()) return std::nullopt;
    return v;
  }

  static std::optional<double> fold(std::string_view op, double a, double b) {
    if (op == "+") return a + b;
    if (op == "-") return a - b;
    if (op == "*") return a * b;
    if (op == "/") return b == 0 ? std::nullopt : std::optional<double>(a / b);
    if (op == "//") return b == 0 ? std::nullopt : std::optional<double>(std::floor(a / b));
    if (op == "**") return std::pow(a, b);
    return std::nullopt;
  }

  std::optional<int64_t> int_of(TSNode e) {
    auto v = number(e);
    if (!v || std::trunc(*v) != *v || std::fabs(*v) > 1e15) return std::nullopt;
    return static_cast<int64_t>(*v);
  }
  std::optional<bool> bool_of(TSNode e) {
    e = unparen(e);
    if (ts_node_is_null(e)) return std::nullopt;
    if (sym(e) == S.true_) return true;
    if (sym(e) == S.false_) return false;
    return std::nullopt;
  }
  bool is_none(TSNode e) { return !ts_node_is_null(e) && sym(unparen(e)) == S.none; }

  // dim= as an int attribute when literal, else as text.
  void set_dim(NodeId id, TSNode e, const char* key = "dim") {
    if (ts_node_is_null(e) || id == kNoNode) return;
    if (auto d = int_of(e)) set(id, key, *d);
    else set(id, key, clip(text(e)));
  }

  // ------------------------------------------------------------------ functions

  void lower_function(int fi) {
    summary_[fi] = Summary::kInProgress;
    const FuncInfo& f = functions_[fi];
    FnState st;
    st.fn.name = f.name;
    st.fn.range = range_of(f.def);
    st.fn.regions.push_back(ir::Region{"function", 0, {}, st.fn.range});
    st.root = fi;
    Scope scope;
    scope.func = fi;
    scope.cls = f.is_method ? f.cls : -1;
    st.scope = &scope;
    FnState* saved = st_;
    st_ = &st;
    if (scope.cls >= 0) class_facts(scope.cls);

    bind_parameters(field(f.def, S.f_parameters), f.is_method);
    // @torch.no_grad() / @torch.inference_mode() act as a `with` around the body.
    if (!ts_node_is_null(f.decorated)) {
      for (TSNode d : named(f.decorated)) {
        if (sym(d) != S.decorator || ts_node_named_child_count(d) == 0) continue;
        TSNode e = unparen(ts_node_named_child(d, 0));
        std::string c = canonical(sym(e) == S.call ? field(e, S.f_function) : e);
        if (c == "torch.no_grad" || c == "torch.inference_mode" || c == "torch.enable_grad" ||
            c.find("autocast") != std::string::npos) {
          uint32_t r = open_region("with", f.def);
          st.fn.regions[r].attrs["context"] = c;
          st.fn.regions[r].attrs["decorator"] = true;
        }
      }
    }
    lower_block(field(f.def, S.f_body));
    st_ = saved;
    bool modelled = std::any_of(st.fn.nodes.begin(), st.fn.nodes.end(), [](const ir::Node& n) {
      return n.op != "input" && n.op != "const" && n.op != "name" && n.op != "scalar" &&
             n.op != "call" && n.op != "compare" && n.op != "part" && n.op != "slice";
    });
    summary_[fi] = modelled ? Summary::kModelled : Summary::kOpaque;
    out_.functions.push_back(std::move(st.fn));
  }

  bool worth_inlining(int fi) {
    if (summary_[fi] == Summary::kUnknown) lower_function(fi);
    return summary_[fi] == Summary::kModelled;
  }

  // Top-level statements, as a function named "<module>" (training scripts loop there).
  void lower_module_code() {
    FnState st;
    st.fn.name = "<module>";
    st.fn.range = range_of(root_);
    st.fn.regions.push_back(ir::Region{"function", 0, {}, st.fn.range});
    Scope scope;
    st.scope = &scope;
    st_ = &st;
    lower_block(root_);
    st_ = nullptr;
    if (!st.fn.nodes.empty()) out_.functions.push_back(std::move(st.fn));
  }

  struct Param {
    std::string_view name;
    TSNode node{}, type{}, default_value{};
    bool variadic = false;
  };

  std::vector<Param> parameters(TSNode params) {
    std::vector<Param> out;
    if (ts_node_is_null(params)) return out;
    for (TSNode p : named(params)) {
      Param q;
      q.node = p;
      TSSymbol k = sym(p);
      if (k == S.identifier) {
        q.name = text(p);
      } else if (k == S.default_parameter || k == S.typed_default_parameter) {
        q.name = text(field(p, S.f_name));
        q.default_value = field(p, S.f_value);
        q.type = field(p, S.f_type);
      } else if (k == S.typed_parameter) {
        TSNode first = ts_node_named_child(p, 0);
        if (sym(first) != S.identifier) q.variadic = true;
        q.name = text(first);
        q.type = field(p, S.f_type);
      } else {
        q.variadic = true;  // *args, **kwargs, bare * and /
      }
      out.push_back(q);
    }
    return out;
  }

  // Parameters of the function being built become `input` nodes (an inlined callee's
  // are bound to the call's arguments in inline_call instead).
  void bind_parameters(TSNode params, bool is_method) {
    std::vector<Param> ps = parameters(params);
    size_t first = 0;
    if (is_method && !ps.empty() && !ps[0].variadic) {
      st_->scope->self_name = ps[0].name;
      first = 1;
    }
    for (size_t i = first; i < ps.size(); ++i) {
      if (ps[i].variadic || ps[i].name.empty()) continue;
      NodeId id = emit("input", {}, ps[i].node);
      set(id, "name", std::string(ps[i].name));
      if (!ts_node_is_null(ps[i].type)) set(id, "type", clip(text(ps[i].type)));
      st_->scope->vars[ps[i].name] = val(id);
    }
  }

  // ------------------------------------------------------------------ regions

  uint32_t open_region(const char* kind, TSNode src) {
    ir::Region r;
    r.kind = kind;
    r.parent = st_->region;
    r.range = range_of(src);
    st_->fn.regions.push_back(std::move(r));
    st_->region = static_cast<uint32_t>(st_->fn.regions.size() - 1);
    return st_->region;
  }
  void close_region(uint32_t id) { st_->region = st_->fn.regions[id].parent; }

  // ------------------------------------------------------------------ statements

  struct NestingGuard {
    FnState* st;
    explicit NestingGuard(FnState* s) : st(s) { ++st->nesting; }
    ~NestingGuard() { --st->nesting; }
  };
  bool too_deep(TSNode at) {
    if (st_->nesting <= kMaxNesting) return false;
    if (!st_->too_deep_reported) {
      st_->too_deep_reported = true;
      diagnose(at, "nested more than " + std::to_string(kMaxNesting) +
                       " levels deep: the rest of this construct is not analyzed");
    }
    return true;
  }

  void lower_block(TSNode block) {
    if (ts_node_is_null(block)) return;
    NestingGuard g(st_);
    if (too_deep(block)) return;
    for (TSNode s : named(block)) {
      lower_statement(s);
      // In an inlined helper, code after an unconditional return never runs. (After a
      // return under an `if`, the rest does; the last return lowered is the result.)
      if (sym(s) == S.return_statement && st_->inline_depth > 0) break;
    }
  }

  void lower_statement(TSNode s) {
    TSSymbol k = sym(s);
    if (k == S.expression_statement) {
      if (ts_node_child_count(s) == 1) lower_expression_statement(ts_node_child(s, 0));
      else
        for (TSNode e : named(s)) lower_expression_statement(e);
    } else if (k == S.return_statement) {
      Value v;
      if (ts_node_named_child_count(s) > 0) v = lower(ts_node_named_child(s, 0));
      st_->scope->ret = std::move(v);
    } else if (k == S.if_statement) {
      lower(field(s, S.f_condition));
      uint32_t r = open_region("if", s);
      lower_block(field(s, S.f_consequence));
      for (TSNode c : named(s)) {
        if (sym(c) == S.elif_clause) {
          lower(field(c, S.f_condition));
          lower_block(field(c, S.f_consequence));
        } else if (sym(c) == S.else_clause) {
          lower_block(field(c, S.f_body));
        }
      }
      close_region(r);
    } else if (k == S.for_statement) {
      TSNode right = field(s, S.f_right);
      Value it = lower(right);
      uint32_t r = open_region("loop", s);
      bind_loop_target(field(s, S.f_left), right, it);
      lower_loop_body(r, field(s, S.f_body));
      close_region(r);
      lower_else(s);
    } else if (k == S.while_statement) {
      uint32_t r = open_region("loop", s);
      lower(field(s, S.f_condition));
      lower_loop_body(r, field(s, S.f_body));
      close_region(r);
      lower_else(s);
    } else if (k == S.with_statement) {
      lower_with(s);
    } else if (k == S.try_statement) {
      for (TSNode c : named(s)) {
        TSSymbol ck = sym(c);
        if (ck == S.block) lower_block(c);
        else if (ck == S.except_clause || ck == S.finally_clause || ck == S.else_clause)
          for (TSNode b : named(c))
            if (sym(b) == S.block) lower_block(b);
      }
    } else if (k == S.import_statement || k == S.import_from_statement) {
      if (st_->fn.name != "<module>") add_import(s, nullptr, &st_->scope->local_aliases);
    } else if (k == S.function_definition || k == S.class_definition || k == S.decorated_definition ||
               k == S.future_import_statement) {
      // Lowered as functions of their own.
    } else if (k == S.block) {
      lower_block(s);
    } else if (k == S.match_statement) {
      if (ts_node_named_child_count(s) > 0) lower(ts_node_named_child(s, 0));  // the subject
      for (TSNode c : named(s))
        if (sym(c) == S.block) {
          for (TSNode cc : named(c))
            if (sym(cc) == S.case_clause)
              for (TSNode b : named(cc))
                if (sym(b) == S.block) lower_block(b);
        }
    } else if (ts_node_is_error(s)) {
      // Recovered statements inside a syntax error are still analyzed.
      NestingGuard g(st_);
      if (too_deep(s)) return;
      for (TSNode c : named(s)) lower_statement(c);
    } else {
      // assert, raise, del, print, global, pass, ...: their expressions may still sync.
      NestingGuard g(st_);
      if (too_deep(s)) return;
      for (TSNode c : named(s))
        if (is_expression(c)) lower(c);
    }
  }

  bool is_expression(TSNode n) const {
    TSSymbol k = sym(n);
    return k == S.call || k == S.attribute || k == S.identifier || k == S.binary_operator ||
           k == S.subscript || k == S.parenthesized_expression || k == S.unary_operator ||
           k == S.comparison_operator || k == S.boolean_operator || k == S.not_operator ||
           k == S.string || k == S.tuple || k == S.list || k == S.conditional_expression ||
           k == S.await_ || k == S.list_comprehension || k == S.generator_expression ||
           k == S.dictionary || k == S.expression_list || k == S.assignment || k == S.augmented_assignment;
  }

  void lower_loop_body(uint32_t region, TSNode body) {
    uint32_t before = st_->training_marks;
    st_->direct_marks.push_back(0);
    lower_block(body);
    bool direct = st_->direct_marks.back() > 0;
    st_->direct_marks.pop_back();
    st_->fn.regions[region].attrs["training"] = st_->training_marks > before;
    // The loop that is one training step per iteration (not an epoch loop around it).
    st_->fn.regions[region].attrs["innermost_training"] = direct;
  }

  void count_training_mark() {
    ++st_->training_marks;
    if (!st_->direct_marks.empty()) ++st_->direct_marks.back();
  }

  void lower_else(TSNode loop) {
    TSNode alt = field(loop, S.f_alternative);
    if (!ts_node_is_null(alt)) lower_block(field(alt, S.f_body));
  }

  void lower_with(TSNode s) {
    std::vector<uint32_t> opened;
    TSNode body{};
    for (TSNode c : named(s)) {
      if (sym(c) == S.block) body = c;
      if (sym(c) != S.with_clause) continue;
      for (TSNode item : named(c)) {
        if (sym(item) != S.with_item) continue;
        TSNode e = field(item, S.f_value), target{};
        if (sym(e) == S.as_pattern) {
          target = field(e, S.f_alias);
          e = ts_node_named_child(e, 0);
        }
        e = unparen(e);
        std::string context;
        Value v;
        if (sym(e) == S.call) context = canonical(field(e, S.f_function));
        if (context.rfind("torch.", 0) != 0) {
          v = lower(e);  // open(...), a variable holding a context, ...
          std::string_view callee = str_attr(v.node, "callee");
          if (context.empty()) context = callee.empty() ? std::string(text(e)) : std::string(callee);
        }
        uint32_t r = open_region("with", s);
        st_->fn.regions[r].attrs["context"] = context;
        opened.push_back(r);
        if (!ts_node_is_null(target)) {
          if (sym(target) == S.as_pattern_target && ts_node_named_child_count(target) > 0)
            target = ts_node_named_child(target, 0);
          bind_target(target, v, e);
        }
      }
    }
    lower_block(body);
    for (auto it = opened.rbegin(); it != opened.rend(); ++it) close_region(*it);
  }

  void lower_expression_statement(TSNode e) {
    TSSymbol k = sym(e);
    if (is_literal(e) || k == S.concatenated_string) return;  // docstrings
    if (k == S.assignment) lower_assignment(e);
    else if (k == S.augmented_assignment) lower_augmented(e);
    else lower(e);
  }

  Value lower_assignment(TSNode e) {
    TSNode right = field(e, S.f_right);
    Value v;
    if (!ts_node_is_null(right)) {
      if (sym(right) == S.assignment) v = lower_assignment(right);  // a = b = expr
      else v = lower(right);
    }
    if (!ts_node_is_null(right)) bind_target(field(e, S.f_left), v, right);
    return v;
  }

  void lower_augmented(TSNode e) {
    TSNode left = field(e, S.f_left);
    std::string_view op = text(field(e, S.f_operator));
    if (!op.empty() && op.back() == '=') op.remove_suffix(1);
    Value a = lower(left);
    Value b = lower(field(e, S.f_right));
    std::vector<Value> operands{a, b};
    Value r = arith(op, operands, e, SIZE_MAX);
    bind_target(left, r, e);
  }

  void bind_target(TSNode target, const Value& v, TSNode src) {
    target = unparen(target);
    if (ts_node_is_null(target)) return;
    NestingGuard g(st_);
    if (too_deep(target)) return;
    TSSymbol k = sym(target);
    ++st_->env_writes;
    if (k == S.identifier) {
      st_->scope->vars[text(target)] = v;
    } else if (k == S.attribute) {
      st_->scope->attrs[std::string(text(target))] = v;
    } else if (k == S.pattern_list || k == S.tuple_pattern || k == S.list_pattern || k == S.tuple ||
               k == S.list || k == S.expression_list) {
      auto elems = named(target);
      bool scalar_source = op_of(v.node) == "scalar";
      for (size_t i = 0; i < elems.size(); ++i) {
        if (sym(elems[i]) == S.list_splat_pattern || sym(elems[i]) == S.list_splat) continue;
        Value e;
        if (v.is_tuple) {
          if (i < v.items.size()) e = val(v.items[i]);
        } else if (scalar_source) {
          e = val(emit_scalar(elems[i], false));  // B, T, C = x.size()
        } else if (v.node != kNoNode) {
          NodeId p = emit("part", {v.node}, src);
          set(p, "index", static_cast<int64_t>(i));
          e = val(p);
        }
        bind_target(elems[i], e, src);
      }
    } else if (k == S.list_splat_pattern || k == S.as_pattern_target) {
      if (ts_node_named_child_count(target) > 0) bind_target(ts_node_named_child(target, 0), v, src);
    }
  }

  // Loop variables: elements of a ModuleList are modules; of range() are scalars.
  void bind_loop_target(TSNode target, TSNode iterable, const Value& it) {
    iterable = unparen(iterable);
    if (sym(iterable) == S.call) {
      std::string_view fn = text(field(iterable, S.f_function));
      auto args = named(field(iterable, S.f_arguments));
      if (fn == "range") {
        bind_names_as(target, true);
        return;
      }
      if (fn == "enumerate" && !args.empty()) {
        target = unparen(target);
        auto elems = named(target);
        if ((sym(target) == S.pattern_list || sym(target) == S.tuple_pattern) && elems.size() == 2) {
          bind_names_as(elems[0], true);
          Value inner = lower(args[0]);
          bind_loop_target(elems[1], args[0], inner);
          return;
        }
      }
    }
    if (it.module >= 0) {
      const ModuleDesc& d = modules_[it.module];
      int element = d.element >= 0 ? d.element : (d.items.empty() ? -1 : d.items.front());
      if (element >= 0 && sym(unparen(target)) == S.identifier) {
        Value e;
        e.module = element;
        bind_target(target, e, target);
        return;
      }
    }
    bind_names_as(target, false);
  }

  void bind_names_as(TSNode target, bool scalar) {
    target = unparen(target);
    NestingGuard g(st_);
    if (too_deep(target)) return;
    if (sym(target) == S.identifier) {
      NodeId id = scalar ? emit_scalar(target, false) : emit_name(target, std::string(text(target)));
      ++st_->env_writes;
      st_->scope->vars[text(target)] = val(id);
      return;
    }
    for (TSNode c : named(target)) bind_names_as(c, scalar);
  }

  // ------------------------------------------------------------------ expressions

  Value lower(TSNode e) {
    if (ts_node_is_null(e)) return {};
    NestingGuard g(st_);
    if (too_deep(e)) {
      NodeId id = emit("call", {}, e);
      set(id, "callee", std::string("<too deep>"));
      return val(id);
    }
    e = unparen(e);
    TSSymbol k = sym(e);
    if (k == S.identifier) return lower_identifier(e);
    if (k == S.attribute) return lower_attribute(e);
    if (k == S.call) return lower_call(e);
    if (k == S.binary_operator) return lower_binary(e);
    if (k == S.subscript) return lower_subscript(e);
    if (k == S.integer || k == S.float_) return val(emit_const(e, parse_number(text(e))));
    if (k == S.true_) return val(emit_const(e, 1.0));
    if (k == S.false_) return val(emit_const(e, 0.0));
    if (k == S.none) return val(emit_const(e, std::nullopt));
    if (k == S.string || k == S.concatenated_string) return lower_string(e);
    if (k == S.unary_operator) return lower_unary(e);
    if (k == S.tuple || k == S.expression_list || k == S.list) {
      Value v;
      v.is_tuple = true;
      for (TSNode c : named(e)) {
        if (sym(c) == S.list_splat) continue;
        Value item = lower(c);
        v.items.push_back(as_node(item, c));
      }
      return v;
    }
    if (k == S.comparison_operator) {
      std::vector<NodeId> ins;
      for (TSNode c : named(e)) ins.push_back(as_node(lower(c), c));
      NodeId id = emit("compare", std::move(ins), e);
      uint32_t n = ts_node_child_count(e);
      for (uint32_t i = 0; i < n; ++i) {
        TSNode c = ts_node_child(e, i);
        if (!ts_node_is_named(c)) {
          set(id, "operator", std::string(text(c)));
          break;
        }
      }
      return val(id);
    }
    if (k == S.conditional_expression) {
      auto parts = named(e);
      std::vector<Value> vs;
      for (TSNode p : parts) vs.push_back(lower(p));
      // `a if c else b`: the first branch, unless it is None.
      if (vs.size() == 3 && op_of(vs[0].node) == "const" && !const_value(vs[0].node) &&
          text(parts[0]) == "None")
        return vs[2];
      return vs.empty() ? Value{} : vs[0];
    }
    if (k == S.named_expression) {
      Value v = lower(field(e, S.f_value));
      bind_target(field(e, S.f_name), v, e);
      return v;
    }
    if (k == S.await_ && ts_node_named_child_count(e) > 0) return lower(ts_node_named_child(e, 0));
    if (k == S.lambda) return val(emit_name(e, "lambda"));
    if (k == S.assignment) return lower_assignment(e);
    return lower_generic(e);
  }

  // Containers, comprehensions, boolean operators, ...: an opaque `call` over the
  // values inside, so that nested calls (`[l.item() for l in losses]`) are seen.
  Value lower_generic(TSNode e) {
    std::vector<NodeId> ins;
    auto top = named(e);
    std::vector<TSNode> stack(top.rbegin(), top.rend());
    size_t visited = 0;
    while (!stack.empty()) {
      TSNode c = stack.back();
      stack.pop_back();
      TSSymbol k = sym(c);
      if (++visited > 100000) break;
      if (k == S.integer || k == S.float_ || k == S.true_ || k == S.false_ || k == S.none ||
          k == S.keyword_argument || k == S.ellipsis)
        continue;
      if (k == S.string && ts_node_named_child_count(c) <= 2) continue;  // no interpolation
      if (is_expression(c) && k != S.list && k != S.tuple && k != S.expression_list &&
          k != S.dictionary) {
        ins.push_back(as_node(lower(c), c));
        continue;
      }
      auto kids = named(c);  // pair, for_in_clause, if_clause, ERROR, ...
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
    }
    NodeId id = emit("call", std::move(ins), e);
    set(id, "callee", std::string(ts_node_type(e)));
    return val(id);
  }

  Value lower_string(TSNode e) {
    // f-strings: the interpolated expressions run (and may sync: f"{loss.item()}").
    std::vector<TSNode> stack;
    if (sym(e) == S.concatenated_string || is_fstring(e)) stack.push_back(e);
    while (!stack.empty()) {
      TSNode c = stack.back();
      stack.pop_back();
      for (TSNode k : named(c)) {
        if (sym(k) == S.interpolation) {
          if (ts_node_named_child_count(k) > 0) lower(ts_node_named_child(k, 0));
        } else if (sym(k) == S.string) {
          stack.push_back(k);
        }
      }
    }
    return val(emit_const(e, std::nullopt));
  }

  Value lower_identifier(TSNode e) {
    std::string_view name = text(e);
    auto& vars = st_->scope->vars;
    auto it = vars.find(name);
    if (it != vars.end()) return it->second;
    if (const std::string* a = alias(name)) return val(emit_name(e, *a));
    if (is_scalar_name(name)) return val(emit_scalar(e, false));
    return val(emit_name(e, std::string(name)));
  }

  Value lower_unary(TSNode e) {
    std::string_view op = text(field(e, S.f_operator));
    TSNode arg = field(e, S.f_argument);
    size_t mark = st_->fn.nodes.size();
    uint32_t writes = st_->env_writes;
    Value v = lower(arg);
    if (op == "+") return v;
    if (op == "-") {
      if (auto c = const_value(v.node)) {
        truncate(mark, writes);
        return val(emit_const(e, -*c));
      }
      if (scalar_like(v)) {
        bool sq = flag(v.node, "sqrt_like");
        truncate(mark, writes);
        return val(emit_scalar(e, sq));
      }
      NodeId id = emit("neg", {as_node(v, arg)}, e);
      return val(id);
    }
    NodeId id = emit("call", {as_node(v, arg)}, e);
    set(id, "callee", std::string("operator.invert"));
    return val(id);
  }

  // Drops nodes emitted since `mark` when they were only the operands of a scalar
  // that replaces them (`1.0 / math.sqrt(d)` is one scalar, not three nodes).
  void truncate(size_t mark, uint32_t writes) {
    if (mark == SIZE_MAX || writes != st_->env_writes || mark > st_->fn.nodes.size()) return;
    if (st_->inline_depth > 0) st_->inlined_nodes -= std::min(st_->inlined_nodes, st_->fn.nodes.size() - mark);
    st_->fn.nodes.resize(mark);
  }

  Value lower_binary(TSNode e) {
    std::string_view op = text(field(e, S.f_operator));
    std::vector<TSNode> operands;
    if (op == "+" || op == "*") {
      // Flatten `a + b + c` into one n-ary node, iteratively (20,000-term sums exist).
      std::vector<TSNode> stack{e};
      while (!stack.empty()) {
        TSNode n = unparen(stack.back());
        stack.pop_back();
        if (sym(n) == S.binary_operator && text(field(n, S.f_operator)) == op) {
          stack.push_back(field(n, S.f_right));
          stack.push_back(field(n, S.f_left));
        } else {
          operands.push_back(n);
        }
      }
    } else {
      operands = {field(e, S.f_left), field(e, S.f_right)};
    }
    size_t mark = st_->fn.nodes.size();
    uint32_t writes = st_->env_writes;
    std::vector<Value> vals;
    vals.reserve(operands.size());
    for (TSNode o : operands) vals.push_back(lower(o));
    for (size_t i = 0; i < vals.size(); ++i) vals[i].node = as_node(vals[i], operands[i]);
    return arith(op, vals, e, mark, writes);
  }

  Value arith(std::string_view op, std::vector<Value>& vals, TSNode e, size_t mark, uint32_t writes = 0) {
    if (mark == SIZE_MAX) writes = st_->env_writes;
    for (Value& v : vals) v.node = as_node(v, e);
    bool all_scalar = !vals.empty() &&
                      std::all_of(vals.begin(), vals.end(), [&](const Value& v) { return scalar_like(v); });
    bool arithmetic = op == "+" || op == "-" || op == "*" || op == "/" || op == "//" || op == "%" || op == "**";
    if (all_scalar && arithmetic) {
      std::optional<double> folded = const_value(vals[0].node);
      for (size_t i = 1; folded && i < vals.size(); ++i) {
        auto b = const_value(vals[i].node);
        folded = b ? fold(op, *folded, *b) : std::nullopt;
      }
      bool sq = false;
      for (const Value& v : vals) sq = sq || flag(v.node, "sqrt_like");
      if (op == "**" && vals.size() == 2) {
        auto ex = const_value(vals[1].node);
        sq = sq || (ex && std::fabs(std::fabs(*ex) - 0.5) < 1e-12);
      }
      truncate(mark, writes);
      if (folded && !sq) return val(emit_const(e, folded));
      return val(emit_scalar(e, sq));
    }
    auto nodes = [&](const std::vector<Value>& vs) {
      std::vector<NodeId> ids;
      for (const Value& v : vs) ids.push_back(v.node);
      return ids;
    };
    if (vals.size() != 2 && op != "+" && op != "*") return val(emit("call", nodes(vals), e));
    if (op == "@") return val(emit("matmul", nodes(vals), e));
    if (op == "*") {
      std::vector<Value> tensors, factors;
      for (const Value& v : vals) (scalar_like(v) ? factors : tensors).push_back(v);
      if (tensors.size() == 1 && !factors.empty()) {
        NodeId factor = factors[0].node;
        if (factors.size() > 1) {
          bool sq = false;
          for (const Value& f : factors) sq = sq || flag(f.node, "sqrt_like");
          factor = emit_scalar(e, sq);
        }
        return val(make_scale(tensors[0].node, factor, false, e));
      }
      return val(emit("mul", nodes(vals), e));
    }
    if (op == "/") {
      if (scalar_like(vals[1])) return val(make_scale(vals[0].node, vals[1].node, true, e));
      return val(emit("div", nodes(vals), e));
    }
    if (op == "+") {
      if (vals.size() == 2) {
        bool m0 = traces_to(vals[0].node, false), m1 = traces_to(vals[1].node, false);
        if (m0 != m1) {
          NodeId x = m0 ? vals[1].node : vals[0].node, m = m0 ? vals[0].node : vals[1].node;
          NodeId id = emit("mask", {x, m}, e);
          set(id, "kind", std::string("additive"));
          set(id, "causal", traces_to(m, true));
          return val(id);
        }
      }
      return val(emit("add", nodes(vals), e));
    }
    if (op == "-") return val(emit("sub", nodes(vals), e));
    if (op == "**") {
      NodeId id = emit("pow", {vals[0].node}, e);
      if (auto ex = const_value(vals[1].node)) set(id, "exponent", *ex);
      else node(id).inputs.push_back(vals[1].node);
      return val(id);
    }
    NodeId id = emit("call", nodes(vals), e);
    static const std::unordered_map<std::string_view, std::string_view> kNames = {
        {"//", "floordiv"}, {"%", "mod"}, {"&", "and"}, {"|", "or"}, {"^", "xor"},
        {"<<", "lshift"}, {">>", "rshift"}};
    auto n = kNames.find(op);
    set(id, "callee", "operator." + std::string(n == kNames.end() ? op : n->second));
    return val(id);
  }

  NodeId make_scale(NodeId x, NodeId factor, bool divide, TSNode e) {
    NodeId id = emit("scale", {x, factor}, e);
    set(id, "divide", divide);
    set(id, "sqrt_like", flag(factor, "sqrt_like"));
    return id;
  }

  Value lower_subscript(TSNode e) {
    TSNode obj = field(e, S.f_value);
    Value v = lower(obj);
    TSNode index = field(e, S.f_subscript);
    std::optional<int64_t> literal = ts_node_is_null(index) ? std::nullopt : int_of(index);
    bool has_index = literal.has_value();
    int64_t i = literal.value_or(0);
    if (v.is_tuple && has_index) {
      int64_t n = static_cast<int64_t>(v.items.size());
      int64_t j = i < 0 ? i + n : i;
      if (j >= 0 && j < n) return val(v.items[j]);
    }
    if (v.module >= 0) {  // self.h[0] of a ModuleList
      const ModuleDesc& d = modules_[v.module];
      Value m;
      if (d.element >= 0) m.module = d.element;
      else if (has_index && i >= 0 && i < static_cast<int64_t>(d.items.size())) m.module = d.items[i];
      if (m.module >= 0) return m;
    }
    std::string_view op = op_of(v.node);
    if (op == "scalar") return val(emit_scalar(e, false));  // x.shape[-1]
    if (has_index && (op == "split" || op == "call" || op == "max" || op == "min")) {
      NodeId p = emit("part", {v.node}, e);
      set(p, "index", i);
      return val(p);
    }
    NodeId id = emit("slice", {as_node(v, obj)}, e);
    set(id, "text", clip(text(e).substr(std::min<size_t>(text(e).size(), text(obj).size()))));
    return val(id);
  }

  // The nn.Module at self.parts[1].parts[2]... (ModuleDict members), or -1.
  int self_module(const std::vector<std::string_view>& parts, size_t n) {
    if (n < 2) return -1;
    ClassInfo& c = classes_[st_->scope->cls];
    auto f = c.facts.find(parts[1]);
    if (f == c.facts.end() || f->second.kind != AttrFact::kModule) return -1;
    int m = f->second.module;
    for (size_t i = 2; i < n && m >= 0; ++i) {
      int next = -1;
      for (const auto& [name, idx] : modules_[m].members)
        if (name == parts[i]) next = idx;
      m = next;
    }
    return m;
  }

  // `self.x...` through the class's __init__ facts and this body's assignments.
  Value lower_self_path(TSNode e, const std::vector<std::string_view>& parts) {
    Scope& sc = *st_->scope;
    std::string display = sc.self_path + "." + join(parts, 1);
    auto own = sc.attrs.find(std::string(text(e)));
    if (own != sc.attrs.end()) return own->second;
    if (int m = self_module(parts, parts.size()); m >= 0) {
      Value v;
      v.module = m;
      return v;
    }
    ClassInfo& c = classes_[sc.cls];
    auto f = c.facts.find(parts[1]);
    if (f != c.facts.end() && parts.size() == 2) {
      if (f->second.kind == AttrFact::kScalar) return val(emit_scalar(e, f->second.sqrt_like));
      if (f->second.kind == AttrFact::kCausal) {
        NodeId id = emit_name(e, display);
        set(id, "causal", true);
        return val(id);
      }
    }
    if (is_scalar_name(parts.back())) return val(emit_scalar(e, false));
    return val(emit_name(e, display));
  }

  Value lower_attribute(TSNode e) {
    std::vector<std::string_view> parts;
    if (dotted(e, parts)) {
      Scope& sc = *st_->scope;
      bool is_var = sc.vars.count(parts[0]) > 0;
      if (!is_var && sc.cls >= 0 && parts[0] == sc.self_name) return lower_self_path(e, parts);
      auto own = sc.attrs.find(std::string(text(e)));
      if (own != sc.attrs.end()) return own->second;
      if (!is_var) {
        if (alias(parts[0])) {
          if (auto v = number(e)) return val(emit_const(e, v));
          return val(emit_name(e, canonical(e)));
        }
        if (is_config_root(parts[0]) || is_scalar_name(parts.back())) return val(emit_scalar(e, false));
        return val(emit_name(e, std::string(text(e))));
      }
    }
    TSNode obj = field(e, S.f_object);
    std::string_view attr = text(field(e, S.f_attribute));
    TSNode objn = unparen(obj);
    if ((attr == "min" || attr == "max") && sym(objn) == S.call) {
      std::string c = canonical(field(objn, S.f_function));
      if (c == "torch.finfo" || c == "numpy.finfo")  // the most negative float: a mask fill value
        return val(emit_const(e, attr == "min" ? -3.4028234663852886e38 : 3.4028234663852886e38));
    }
    Value v = lower(obj);
    if (v.module >= 0) {
      const ModuleDesc& d = modules_[v.module];
      for (const auto& [name, idx] : d.members)
        if (name == attr) {
          Value m;
          m.module = idx;
          return m;
        }
      return val(emit_name(e, std::string(text(e))));
    }
    if (attr == "T" || attr == "mT" || attr == "H" || attr == "mH") {
      NodeId id = emit("transpose", {as_node(v, obj)}, e);
      set(id, "dim0", int64_t{-2});
      set(id, "dim1", int64_t{-1});
      return val(id);
    }
    if (attr == "shape" || attr == "ndim") return val(emit_scalar(e, false));
    if (attr == "data") return v;
    if (scalar_like(v) || is_config_root(str_attr(v.node, "name")) || is_scalar_name(attr))
      return val(emit_scalar(e, false));
    return val(emit_name(e, std::string(text(e))));
  }

  // ------------------------------------------------------------------ calls

  Args collect_args(TSNode list) {
    Args a;
    if (ts_node_is_null(list)) return a;
    if (sym(list) == S.generator_expression) {
      a.pos.push_back(list);
      return a;
    }
    for (TSNode c : named(list)) {
      TSSymbol k = sym(c);
      if (k == S.keyword_argument) a.kw.emplace_back(text(field(c, S.f_name)), field(c, S.f_value));
      else if (k == S.list_splat || k == S.dictionary_splat) lower(c);
      else a.pos.push_back(c);
    }
    return a;
  }

  Value arg(Args& a, size_t i) {
    if (a.cache.size() < a.count()) a.cache.resize(a.count());
    if (i >= a.count()) return {};
    if (a.receiver && i == 0) return *a.receiver;
    if (!a.cache[i]) a.cache[i] = lower(a.expr(i));
    return *a.cache[i];
  }
  // Positional i or keyword `name`, as one node.
  NodeId arg_node(Args& a, size_t i, std::string_view name = {}) {
    if (i < a.count()) {
      TSNode src = a.expr(i);
      return as_node(arg(a, i), ts_node_is_null(src) ? a.call : src);
    }
    TSNode k = name.empty() ? TSNode{} : a.keyword(name);
    return ts_node_is_null(k) ? kNoNode : as_node(lower(k), k);
  }
  // Every argument not yet lowered (for calls the frontend does not model).
  // Literals are left out: an opaque call's constants carry no dataflow.
  std::vector<NodeId> all_args(Args& a) {
    std::vector<NodeId> ins;
    for (size_t i = 0; i < a.count(); ++i)
      if (!is_literal(a.expr(i))) ins.push_back(arg_node(a, i));
    for (const auto& [k, v] : a.kw)
      if (!is_literal(v)) ins.push_back(as_node(lower(v), v));
    return ins;
  }

  bool is_literal(TSNode n) const {
    if (ts_node_is_null(n)) return false;
    TSSymbol k = sym(n);
    return k == S.integer || k == S.float_ || k == S.true_ || k == S.false_ || k == S.none ||
           (k == S.string && !is_fstring(n));
  }
  bool is_fstring(TSNode n) const {
    std::string_view t = text(n);
    for (char c : t.substr(0, 3)) {
      if (c == 'f' || c == 'F') return true;
      if (c == '"' || c == '\'') return false;
    }
    return false;
  }

  Value opaque(Args& a, TSNode e, std::string callee) {
    NodeId id = emit("call", all_args(a), e);
    set(id, "callee", std::move(callee));
    return val(id);
  }

  Value lower_call(TSNode e) {
    TSNode fn = unparen(field(e, S.f_function));
    Args a = collect_args(field(e, S.f_arguments));
    a.call = e;
    Scope& sc = *st_->scope;
    TSSymbol k = sym(fn);
    if (k == S.attribute) {
      std::vector<std::string_view> parts;
      if (dotted(fn, parts) && !sc.vars.count(parts[0])) {
        if (sc.cls >= 0 && parts[0] == sc.self_name) {
          std::string display = sc.self_path + "." + join(parts, 1);
          if (int m = self_module(parts, parts.size()); m >= 0) return apply_module(m, display, a, e);
          if (parts.size() == 2) {
            int m = find_method(sc.cls, parts[1]);
            if (m >= 0 && !classes_[sc.cls].facts.count(parts[1])) return inline_call(m, a, e, sc.cls, sc.self_path);
            return opaque(a, e, display);  // self.register_buffer(...), a callable attribute
          }
          if (int m = self_module(parts, parts.size() - 1); m >= 0)
            return module_method(m, sc.self_path + "." + join({parts.begin(), parts.end() - 1}, 1), parts.back(), a, e);
        } else if (alias(parts[0])) {
          return lower_named_call(canonical(fn), a, e);
        }
      }
      TSNode obj = field(fn, S.f_object);
      std::string_view method = text(field(fn, S.f_attribute));
      Value recv = lower(obj);
      if (recv.module >= 0) return module_method(recv.module, std::string(text(obj)), method, a, e);
      a.receiver = recv;
      return lower_method(method, obj, a, e);
    }
    if (k == S.identifier) {
      std::string_view name = text(fn);
      auto it = sc.vars.find(name);
      if (it != sc.vars.end()) {
        if (it->second.module >= 0) return apply_module(it->second.module, std::string(name), a, e);
        return opaque(a, e, std::string(name));
      }
      if (int f = local_function(name); f >= 0) return inline_call(f, a, e, -1, "");
      if (auto c = class_by_name_.find(name); c != class_by_name_.end()) {
        Value v;
        v.module = module_from_expr(e);
        return v;
      }
      if (const std::string* al = alias(name)) return lower_named_call(*al, a, e);
      return lower_builtin(name, a, e);
    }
    Value callee = lower(fn);
    if (callee.module >= 0) return apply_module(callee.module, std::string(text(fn)), a, e);
    NodeId callee_node = as_node(callee, fn);
    Value r = opaque(a, e, std::string(text(fn)).substr(0, kTextLimit));
    if (callee_node != kNoNode) node(r.node).inputs.insert(node(r.node).inputs.begin(), callee_node);
    return r;
  }

  int local_function(std::string_view name) {
    const FuncInfo* outer = st_->scope->func >= 0 ? &functions_[st_->scope->func] : nullptr;
    if (outer) {
      auto it = function_by_name_.find(outer->name + "." + std::string(name));
      if (it != function_by_name_.end()) return it->second;
    }
    auto it = function_by_name_.find(std::string(name));
    return it != function_by_name_.end() && functions_[it->second].cls < 0 ? it->second : -1;
  }

  Value lower_builtin(std::string_view name, Args& a, TSNode e) {
    if ((name == "float" || name == "int") && a.count() == 1) {
      if (auto v = number(e)) return val(emit_const(e, v));
      if (sym(unparen(a.expr(0))) == S.string) return val(emit_const(e, std::nullopt));
      size_t mark = st_->fn.nodes.size();
      uint32_t writes = st_->env_writes;
      Value x = arg(a, 0);
      if (scalar_like(x)) {
        bool sq = flag(x.node, "sqrt_like");
        truncate(mark, writes);
        return val(emit_scalar(e, sq));
      }
      NodeId id = emit("sync", {as_node(x, a.expr(0))}, e);  // float(loss): a device-to-host copy
      set(id, "method", std::string(name));
      set(id, "callee", std::string(name));
      return val(id);
    }
    if (name == "len") {
      arg(a, 0);
      return val(emit_scalar(e, false));
    }
    return opaque(a, e, std::string(name));
  }

  // A call through an imported name, by its canonical dotted name.
  Value lower_named_call(const std::string& callee, Args& a, TSNode e) {
    if (callee == "torch.compile" || callee.find("DataParallel") != std::string::npos) {
      Value inner = arg(a, 0);  // a wrapped model calls the model
      if (inner.module >= 0) return inner;
    }
    if (is_class_name(callee)) {
      Value v;
      v.module = module_from_expr(e);
      if (v.module >= 0) return v;
    }
    CalleeName c = classify_callee(callee);
    if (c.ns == Namespace::kMath) {
      size_t mark = st_->fn.nodes.size();
      uint32_t writes = st_->env_writes;
      if (auto v = number(e)) return val(emit_const(e, v));
      for (size_t i = 0; i < a.count(); ++i) arg(a, i);
      truncate(mark, writes);
      return val(emit_scalar(e, c.name == "sqrt" || c.name == "rsqrt"));
    }
    if (callee == "torch.cuda.synchronize") {
      NodeId id = emit("sync", {}, e);
      set(id, "method", std::string("synchronize"));
      set(id, "callee", callee);
      return val(id);
    }
    if (c.ns == Namespace::kTorch || c.ns == Namespace::kFunctional) {
      if (const OpSpec* spec = find_op(c.name, c.ns == Namespace::kTorch ? kTorchFn : kFunctionalFn))
        return lower_op(*spec, a, e, callee);
    }
    if (c.ns == Namespace::kEinops && (c.name == "rearrange" || c.name == "repeat" || c.name == "reduce")) {
      NodeId id = emit(c.name == "rearrange" ? "reshape" : c.name == "repeat" ? "repeat" : "call",
                       {arg_node(a, 0)}, e);
      TSNode pattern = a.get(1, "pattern");
      if (!ts_node_is_null(pattern)) set(id, "text", clip(text(pattern)));
      set(id, "callee", callee);
      return val(id);
    }
    return opaque(a, e, callee);
  }

  // A method on a value that is not an nn.Module: tensor methods by name.
  Value lower_method(std::string_view method, TSNode obj, Args& a, TSNode e) {
    bool in_place = method.size() > 1 && method.back() == '_' && method[method.size() - 2] != '_';
    std::string_view base = in_place ? method.substr(0, method.size() - 1) : method;
    const OpSpec* spec = find_op(base, kMethod);
    if (!spec) {
      if (method == "step" && (is_optimizer_name(text(obj)) ||
                               (a.count() > 1 && is_optimizer_name(text(a.expr(1)))))) {
        count_training_mark();
        NodeId id = emit("optimizer_step", {}, e);
        set(id, "callee", std::string(text(obj)) + ".step");
        return val(id);
      }
      return opaque(a, e, "." + std::string(method));
    }
    Value r = lower_op(*spec, a, e, "torch.Tensor." + std::string(method));
    TSNode target = unparen(obj);
    if (in_place && r.node != kNoNode && (sym(target) == S.identifier || sym(target) == S.attribute))
      bind_target(target, r, e);
    return r;
  }

  Value module_method(int m, std::string path, std::string_view method, Args& a, TSNode e) {
    const std::string& cls = modules_[m].cls;
    if (method == "forward" || method == "__call__") return apply_module(m, std::move(path), a, e);
    if (method == "step" && ((cls.rfind("torch.optim.", 0) == 0 && cls.find("lr_scheduler") == std::string::npos) ||
                             is_optimizer_name(path))) {
      count_training_mark();
      NodeId id = emit("optimizer_step", {}, e);
      set(id, "callee", cls + ".step");
      return val(id);
    }
    if (method == "to" || method == "cuda" || method == "train" || method == "eval" ||
        method == "float" || method == "half" || method == "bfloat16" || method == "requires_grad_") {
      Value v;
      v.module = m;
      return v;
    }
    return opaque(a, e, cls + "." + std::string(method));
  }

  Value apply_module(int m, std::string path, Args& a, TSNode e) {
    const ModuleDesc d = modules_[m];
    if (d.local_class >= 0) {
      class_facts(d.local_class);
      int fwd = find_method(d.local_class, "forward");
      if (fwd >= 0) return inline_call(fwd, a, e, d.local_class, path);
      return opaque(a, e, d.cls);
    }
    std::string_view op = module_op(d.cls);
    Args ctor = collect_args(ts_node_is_null(d.ctor) ? TSNode{} : field(d.ctor, S.f_arguments));
    if (op == "sequential") {
      Value x = arg(a, 0);
      for (size_t i = 0; i < d.items.size(); ++i) {
        Args step;
        step.call = e;
        step.receiver = x;
        x = apply_module(d.items[i], path + "." + std::to_string(i), step, e);
      }
      return x;
    }
    if (op == "identity") return arg(a, 0);
    if (op.empty() || op == "container") {
      Value r = opaque(a, e, d.cls);
      set(r.node, "module_class", d.cls);
      set(r.node, "module", path);
      return r;
    }
    std::vector<NodeId> ins{arg_node(a, 0)};
    if (op == "cross_entropy" || op == "nll_loss") ins.push_back(arg_node(a, 1, "target"));
    NodeId id = emit(std::string(op), std::move(ins), e);
    set(id, "module", path);
    set(id, "callee", d.cls);
    if (op == "linear" || op == "conv") {
      auto b = bool_of(ctor.keyword("bias"));
      set(id, "bias", !b || *b);
    } else if (op == "softmax" || op == "log_softmax") {
      set_dim(id, ctor.get(0, "dim"));
    } else if (op == "dropout") {
      TSNode p = ctor.get(0, "p");
      auto v = ts_node_is_null(p) ? std::optional<double>(0.5) : number(p);
      if (v) set(id, "p", *v);
      else set(id, "p_text", clip(text(p)));
    } else if (op == "gelu") {
      TSNode ap = ctor.keyword("approximate");
      set(id, "approximate", ts_node_is_null(ap) ? std::string("none") : unquote(text(ap)));
    }
    return val(id);
  }

  static std::string unquote(std::string_view s) {
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'')) s = s.substr(1, s.size() - 2);
    return std::string(s);
  }

  // Inlines a same-file function or method: arguments are bound to its parameters and
  // its body lowered into the caller, nodes keeping the callee's ranges.
  Value inline_call(int fi, Args& a, TSNode e, int cls, const std::string& self_path) {
    const FuncInfo& f = functions_[fi];
    bool recursive = fi == st_->root ||
                     std::find(st_->inlining.begin(), st_->inlining.end(), fi) != st_->inlining.end();
    if (recursive || st_->inline_depth >= kMaxInlineDepth || st_->inlined_nodes > kInlineBudget ||
        ts_node_end_byte(f.def) - ts_node_start_byte(f.def) > kMaxInlineBytes || !worth_inlining(fi)) {
      Value r = opaque(a, e, f.name);
      return r;
    }
    // Arguments are evaluated in the caller's scope.
    std::vector<Value> pos;
    for (size_t i = 0; i < a.count(); ++i) pos.push_back(arg(a, i));
    std::vector<std::pair<std::string_view, Value>> kws;
    for (const auto& [name, v] : a.kw) kws.emplace_back(name, lower(v));

    Scope callee;
    callee.cls = f.is_method ? cls : -1;
    callee.self_path = self_path.empty() ? "self" : self_path;
    callee.func = fi;
    Scope* caller = st_->scope;
    st_->scope = &callee;
    if (callee.cls >= 0) class_facts(callee.cls);
    std::vector<Param> ps = parameters(field(f.def, S.f_parameters));
    size_t first = 0;
    if (f.is_method && !ps.empty() && !ps[0].variadic) {
      callee.self_name = ps[0].name;
      first = 1;
    }
    size_t next_pos = 0;
    bool positional_open = true;
    for (size_t i = first; i < ps.size(); ++i) {
      const Param& p = ps[i];
      if (p.variadic) {
        positional_open = false;
        continue;
      }
      Value v;
      bool bound = false;
      if (positional_open && next_pos < pos.size()) {
        v = pos[next_pos++];
        bound = true;
      }
      for (const auto& [name, kv] : kws)
        if (!bound && name == p.name) {
          v = kv;
          bound = true;
        }
      if (!bound) {
        if (!ts_node_is_null(p.default_value)) v = lower(p.default_value);
        else v = val(emit_name(p.node, std::string(p.name)));
      }
      callee.vars[p.name] = v;
    }
    st_->inlining.push_back(fi);
    ++st_->inline_depth;
    lower_block(field(f.def, S.f_body));
    --st_->inline_depth;
    st_->inlining.pop_back();
    st_->scope = caller;
    if (callee.ret.node == kNoNode && callee.ret.module < 0 && !callee.ret.is_tuple)
      return val(emit_const(e, std::nullopt));  // no return: None
    return callee.ret;
  }

  // ------------------------------------------------------------------ the op table

  enum Where : uint8_t { kMethod = 1, kTorchFn = 2, kFunctionalFn = 4, kAll = 7, kTM = 3, kTF = 6 };
  enum class Kind {
    kMatmul, kBaddbmm, kEinsum, kSoftmax, kDropout, kMaskedFill, kWhere, kSdpa, kUnary, kGelu,
    kReduce, kTranspose, kT, kPermute, kReshape, kIdentity, kSplit, kCat, kSize, kCast, kTo,
    kTypeAs, kSync, kBackward, kLinear, kConv, kEmbedding, kNorm, kLoss, kGather, kPow, kClamp,
    kCreation, kTrilTriu, kShape, kRepeatInterleave, kArith
  };
  struct OpSpec {
    std::string_view name;
    uint8_t where;
    Kind kind;
    std::string_view op;  // IR op (or dtype for kCast, operator for kArith)
  };

  static const OpSpec* find_op(std::string_view name, uint8_t where) {
    static const std::unordered_map<std::string_view, OpSpec> kOps = [] {
      const OpSpec specs[] = {
          {"matmul", kTM, Kind::kMatmul, "matmul"},
          {"mm", kTM, Kind::kMatmul, "matmul"},
          {"bmm", kTM, Kind::kMatmul, "matmul"},
          {"baddbmm", kTM, Kind::kBaddbmm, "matmul"},
          {"einsum", kTorchFn, Kind::kEinsum, "matmul"},
          {"softmax", kAll, Kind::kSoftmax, "softmax"},
          {"log_softmax", kAll, Kind::kSoftmax, "log_softmax"},
          {"dropout", kTF, Kind::kDropout, "dropout"},
          {"masked_fill", kTM, Kind::kMaskedFill, "mask"},
          {"where", kTorchFn, Kind::kWhere, "mask"},
          {"scaled_dot_product_attention", kFunctionalFn, Kind::kSdpa, "sdpa"},
          {"exp", kTM, Kind::kUnary, "exp"},
          {"log", kTM, Kind::kUnary, "log"},
          {"sqrt", kTM, Kind::kUnary, "sqrt"},
          {"rsqrt", kTM, Kind::kUnary, "rsqrt"},
          {"reciprocal", kTM, Kind::kUnary, "reciprocal"},
          {"abs", kTM, Kind::kUnary, "abs"},
          {"tanh", kAll, Kind::kUnary, "tanh"},
          {"erf", kTM, Kind::kUnary, "erf"},
          {"sigmoid", kAll, Kind::kUnary, "sigmoid"},
          {"expit", kTorchFn, Kind::kUnary, "sigmoid"},
          {"sin", kTM, Kind::kUnary, "sin"},
          {"cos", kTM, Kind::kUnary, "cos"},
          {"neg", kTM, Kind::kUnary, "neg"},
          {"relu", kAll, Kind::kUnary, "relu"},
          {"silu", kAll, Kind::kUnary, "silu"},
          {"leaky_relu", kAll, Kind::kUnary, "leaky_relu"},
          {"softplus", kAll, Kind::kUnary, "softplus"},
          {"mish", kAll, Kind::kUnary, "mish"},
          {"hardswish", kAll, Kind::kUnary, "hardswish"},
          {"gelu", kAll, Kind::kGelu, "gelu"},
          {"mean", kTM, Kind::kReduce, "mean"},
          {"sum", kTM, Kind::kReduce, "sum"},
          {"var", kTM, Kind::kReduce, "var"},
          {"std", kTM, Kind::kReduce, "std"},
          {"max", kTM, Kind::kReduce, "max"},
          {"min", kTM, Kind::kReduce, "min"},
          {"amax", kTM, Kind::kReduce, "amax"},
          {"norm", kTM, Kind::kReduce, "norm"},
          {"logsumexp", kTM, Kind::kReduce, "logsumexp"},
          {"transpose", kTM, Kind::kTranspose, "transpose"},
          {"swapaxes", kTM, Kind::kTranspose, "transpose"},
          {"t", kTM, Kind::kT, "transpose"},
          {"permute", kTM, Kind::kPermute, "permute"},
          {"view", kMethod, Kind::kReshape, "reshape"},
          {"reshape", kTM, Kind::kReshape, "reshape"},
          {"flatten", kTM, Kind::kReshape, "reshape"},
          {"unflatten", kTM, Kind::kReshape, "reshape"},
          {"view_as", kMethod, Kind::kReshape, "reshape"},
          {"reshape_as", kMethod, Kind::kReshape, "reshape"},
          {"unsqueeze", kTM, Kind::kReshape, "reshape"},
          {"squeeze", kTM, Kind::kReshape, "reshape"},
          {"contiguous", kMethod, Kind::kIdentity, ""},
          {"split", kTM, Kind::kSplit, "split"},
          {"chunk", kTM, Kind::kSplit, "split"},
          {"unbind", kTM, Kind::kSplit, "split"},
          {"tensor_split", kTM, Kind::kSplit, "split"},
          {"cat", kTorchFn, Kind::kCat, "cat"},
          {"concat", kTorchFn, Kind::kCat, "cat"},
          {"concatenate", kTorchFn, Kind::kCat, "cat"},
          {"stack", kTorchFn, Kind::kCat, "stack"},
          {"size", kMethod, Kind::kSize, "scalar"},
          {"dim", kMethod, Kind::kSize, "scalar"},
          {"numel", kTM, Kind::kSize, "scalar"},
          {"float", kMethod, Kind::kCast, "float32"},
          {"half", kMethod, Kind::kCast, "float16"},
          {"bfloat16", kMethod, Kind::kCast, "bfloat16"},
          {"double", kMethod, Kind::kCast, "float64"},
          {"to", kMethod, Kind::kTo, "cast"},
          {"type", kMethod, Kind::kTo, "cast"},
          {"type_as", kMethod, Kind::kTypeAs, "cast"},
          {"item", kMethod, Kind::kSync, "item"},
          {"cpu", kMethod, Kind::kSync, "cpu"},
          {"tolist", kMethod, Kind::kSync, "tolist"},
          {"numpy", kMethod, Kind::kSync, "numpy"},
          {"backward", kMethod, Kind::kBackward, "backward"},
          {"linear", kFunctionalFn, Kind::kLinear, "linear"},
          {"conv1d", kTF, Kind::kConv, "conv"},
          {"conv2d", kTF, Kind::kConv, "conv"},
          {"conv3d", kTF, Kind::kConv, "conv"},
          {"embedding", kTF, Kind::kEmbedding, "embedding"},
          {"layer_norm", kTF, Kind::kNorm, "layer_norm"},
          {"rms_norm", kTF, Kind::kNorm, "rms_norm"},
          {"group_norm", kTF, Kind::kNorm, "group_norm"},
          {"batch_norm", kTF, Kind::kNorm, "batch_norm"},
          {"cross_entropy", kFunctionalFn, Kind::kLoss, "cross_entropy"},
          {"nll_loss", kFunctionalFn, Kind::kLoss, "nll_loss"},
          {"gather", kTM, Kind::kGather, "gather"},
          {"one_hot", kFunctionalFn, Kind::kUnary, "one_hot"},
          {"pow", kTM, Kind::kPow, "pow"},
          {"clamp", kTM, Kind::kClamp, "clamp"},
          {"clip", kTM, Kind::kClamp, "clamp"},
          {"tril", kTM, Kind::kTrilTriu, "tril"},
          {"triu", kTM, Kind::kTrilTriu, "triu"},
          {"ones", kTorchFn, Kind::kCreation, "ones"},
          {"zeros", kTorchFn, Kind::kCreation, "zeros"},
          {"full", kTorchFn, Kind::kCreation, "full"},
          {"arange", kTorchFn, Kind::kCreation, "arange"},
          {"empty", kTorchFn, Kind::kCreation, "empty"},
          {"randn", kTorchFn, Kind::kCreation, "randn"},
          {"rand", kTorchFn, Kind::kCreation, "randn"},
          {"expand", kMethod, Kind::kShape, "expand"},
          {"expand_as", kMethod, Kind::kShape, "expand"},
          {"repeat", kMethod, Kind::kShape, "repeat"},
          {"repeat_interleave", kTM, Kind::kRepeatInterleave, "repeat_interleave"},
          {"add", kTM, Kind::kArith, "+"},
          {"sub", kTM, Kind::kArith, "-"},
          {"mul", kTM, Kind::kArith, "*"},
          {"multiply", kTM, Kind::kArith, "*"},
          {"div", kTM, Kind::kArith, "/"},
          {"divide", kTM, Kind::kArith, "/"},
          {"true_divide", kTM, Kind::kArith, "/"},
      };
      std::unordered_map<std::string_view, OpSpec> m;
      for (const OpSpec& s : specs) m.emplace(s.name, s);
      return m;
    }();
    auto it = kOps.find(name);
    return it != kOps.end() && (it->second.where & where) ? &it->second : nullptr;
  }

  Value lower_op(const OpSpec& spec, Args& a, TSNode e, const std::string& callee) {
    std::string op(spec.op);
    auto finish = [&](NodeId id) {
      if (id != kNoNode && node(id).attrs.count("callee") == 0) set(id, "callee", callee);
      return val(id);
    };
    switch (spec.kind) {
      case Kind::kMatmul:
        return finish(emit("matmul", {arg_node(a, 0), arg_node(a, 1)}, e));
      case Kind::kBaddbmm: {
        NodeId bias = arg_node(a, 0, "input");
        NodeId mm = emit("matmul", {arg_node(a, 1, "batch1"), arg_node(a, 2, "batch2")}, e);
        set(mm, "callee", callee);
        NodeId out = mm;
        TSNode alpha = a.keyword("alpha");
        if (!ts_node_is_null(alpha) && number(alpha) != std::optional<double>(1.0))
          out = make_scale(out, as_node(lower(alpha), alpha), false, e);
        TSNode beta = a.keyword("beta");
        if (ts_node_is_null(beta) || number(beta) != std::optional<double>(0.0))
          out = emit("add", {bias, out}, e);
        return finish(out);
      }
      case Kind::kEinsum: {
        TSNode spec_node = a.expr(0);
        std::vector<std::pair<NodeId, TSNode>> operands;
        TSNode first = a.expr(1);
        if (a.count() == 2 && (sym(unparen(first)) == S.list || sym(unparen(first)) == S.tuple)) {
          for (TSNode c : named(unparen(first))) operands.emplace_back(as_node(lower(c), c), c);
        } else {
          for (size_t i = 1; i < a.count(); ++i) operands.emplace_back(arg_node(a, i), a.expr(i));
        }
        std::optional<EinsumMatmul> mm;
        if (!ts_node_is_null(spec_node) && sym(unparen(spec_node)) == S.string && operands.size() == 2)
          mm = einsum_as_matmul(unquote(text(unparen(spec_node))));
        if (!mm) {
          std::vector<NodeId> ins;
          for (auto& [id, n] : operands) ins.push_back(id);
          NodeId id = emit("call", std::move(ins), e);
          set(id, "callee", callee);
          return val(id);
        }
        auto t = [&](NodeId x, TSNode src) {
          NodeId id = emit("transpose", {x}, src);
          set(id, "dim0", int64_t{-2});
          set(id, "dim1", int64_t{-1});
          return id;
        };
        NodeId lhs = mm->transpose_a ? t(operands[0].first, operands[0].second) : operands[0].first;
        NodeId rhs = mm->transpose_b ? t(operands[1].first, operands[1].second) : operands[1].first;
        NodeId id = emit("matmul", {lhs, rhs}, e);
        set(id, "text", clip(text(spec_node)));
        return finish(id);
      }
      case Kind::kSoftmax: {
        NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
        set_dim(id, a.get(1, "dim"));
        TSNode dt = a.keyword("dtype");
        if (!ts_node_is_null(dt)) set(id, "dtype", dtype_name(text(dt)).empty() ? clip(text(dt)) : dtype_name(text(dt)));
        return finish(id);
      }
      case Kind::kDropout: {
        NodeId id = emit("dropout", {arg_node(a, 0, "input")}, e);
        TSNode p = a.get(1, "p");
        if (!ts_node_is_null(p)) {
          if (auto v = number(p)) set(id, "p", *v);
          else set(id, "p_text", clip(text(p)));
        } else {
          set(id, "p", 0.5);
        }
        return finish(id);
      }
      case Kind::kMaskedFill: {
        NodeId x = arg_node(a, 0), m = arg_node(a, 1, "mask");
        NodeId v = arg_node(a, 2, "value");
        NodeId id = emit("mask", {x, m}, e);
        set(id, "kind", std::string("fill"));
        if (auto c = const_value(v)) set(id, "value", *c);
        set(id, "causal", traces_to(m, true));
        return finish(id);
      }
      case Kind::kWhere: {
        NodeId cond = arg_node(a, 0, "condition"), x = arg_node(a, 1, "input"), y = arg_node(a, 2, "other");
        auto cy = const_value(y), cx = const_value(x);
        if ((cy && is_very_negative(*cy)) || (cx && is_very_negative(*cx))) {
          bool fill_y = cy && is_very_negative(*cy);
          NodeId id = emit("mask", {fill_y ? x : y, cond}, e);
          set(id, "kind", std::string("where"));
          set(id, "value", fill_y ? *cy : *cx);
          set(id, "causal", traces_to(cond, true));
          return finish(id);
        }
        NodeId id = emit("call", {cond, x, y}, e);
        return finish(id);
      }
      case Kind::kSdpa: {
        NodeId id = emit("sdpa", {arg_node(a, 0, "query"), arg_node(a, 1, "key"), arg_node(a, 2, "value")}, e);
        TSNode causal = a.get(5, "is_causal");
        if (auto b = bool_of(causal)) set(id, "is_causal", *b);
        else if (ts_node_is_null(causal)) set(id, "is_causal", false);
        else set(id, "is_causal_text", clip(text(causal)));
        set(id, "enable_gqa", bool_of(a.keyword("enable_gqa")).value_or(false));
        TSNode mask = a.get(3, "attn_mask");
        set(id, "has_mask", !ts_node_is_null(mask) && !is_none(mask));
        return finish(id);
      }
      case Kind::kUnary: {
        Value x = arg(a, 0);
        if (scalar_like(x)) return val(emit_scalar(e, op == "sqrt" || op == "rsqrt"));
        return finish(emit(op, {as_node(x, a.expr(0))}, e));
      }
      case Kind::kGelu: {
        NodeId id = emit("gelu", {arg_node(a, 0, "input")}, e);
        TSNode ap = a.keyword("approximate");
        set(id, "approximate", ts_node_is_null(ap) ? std::string("none") : unquote(text(ap)));
        return finish(id);
      }
      case Kind::kReduce: {
        NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
        set_dim(id, a.get(op == "norm" ? 2 : 1, "dim"));
        if (auto k = bool_of(a.get(op == "norm" ? 3 : 2, "keepdim"))) set(id, "keepdim", *k);
        if (op == "var" || op == "std") {
          if (auto u = bool_of(a.keyword("unbiased"))) set(id, "unbiased", *u);
          if (auto c = int_of(a.keyword("correction"))) set(id, "correction", *c);
        }
        return finish(id);
      }
      case Kind::kTranspose: {
        NodeId id = emit("transpose", {arg_node(a, 0, "input")}, e);
        set_dim(id, a.get(1, "dim0"), "dim0");
        set_dim(id, a.get(2, "dim1"), "dim1");
        return finish(id);
      }
      case Kind::kT: {
        NodeId id = emit("transpose", {arg_node(a, 0, "input")}, e);
        set(id, "dim0", int64_t{-2});
        set(id, "dim1", int64_t{-1});
        return finish(id);
      }
      case Kind::kPermute: {
        NodeId x = arg_node(a, 0, "input");
        std::vector<TSNode> dims;
        for (size_t i = 1; i < a.count(); ++i) dims.push_back(a.expr(i));
        TSNode kd = a.keyword("dims");
        if (dims.size() == 1 || !ts_node_is_null(kd)) {
          TSNode t = unparen(ts_node_is_null(kd) ? dims[0] : kd);
          if (sym(t) == S.tuple || sym(t) == S.list) dims = named(t).vec();
        }
        std::vector<int64_t> perm;
        for (TSNode d : dims) {
          auto v = int_of(d);
          if (!v) {
            perm.clear();
            break;
          }
          perm.push_back(*v);
        }
        bool swaps_last_two = perm.size() >= 2;
        size_t n = perm.size();
        for (size_t i = 0; swaps_last_two && i < n; ++i) {
          int64_t want = i + 2 < n ? static_cast<int64_t>(i) : static_cast<int64_t>(i == n - 2 ? n - 1 : n - 2);
          int64_t got = perm[i] < 0 ? perm[i] + static_cast<int64_t>(n) : perm[i];
          swaps_last_two = got == want;
        }
        NodeId id = emit(swaps_last_two ? "transpose" : "permute", {x}, e);
        if (swaps_last_two) {
          set(id, "dim0", int64_t{-2});
          set(id, "dim1", int64_t{-1});
        } else {
          std::string t;
          for (TSNode d : dims) t += (t.empty() ? "" : ", ") + std::string(text(d));
          set(id, "dims", clip(t));
        }
        return finish(id);
      }
      case Kind::kReshape:
      case Kind::kShape:
        return finish(emit(op, {arg_node(a, 0, "input")}, e));
      case Kind::kIdentity:
        return arg(a, 0);
      case Kind::kSplit:
        return finish(emit("split", {arg_node(a, 0, "input")}, e));
      case Kind::kCat: {
        TSNode list = unparen(a.get(0, "tensors"));
        std::vector<NodeId> ins;
        if (!ts_node_is_null(list) && (sym(list) == S.list || sym(list) == S.tuple)) {
          for (TSNode c : named(list))
            if (sym(c) != S.list_splat) ins.push_back(as_node(lower(c), c));
        } else {
          Value v = arg(a, 0);
          ins = v.is_tuple ? v.items : std::vector<NodeId>{as_node(v, list)};
        }
        NodeId id = emit(op, std::move(ins), e);
        set_dim(id, a.get(1, "dim"));
        return finish(id);
      }
      case Kind::kSize:
        return val(emit_scalar(e, false));
      case Kind::kCast: {
        NodeId id = emit("cast", {arg_node(a, 0)}, e);
        set(id, "dtype", std::string(op));
        return finish(id);
      }
      case Kind::kTo: {
        std::string dtype;
        TSNode kd = a.keyword("dtype");
        if (!ts_node_is_null(kd)) {
          dtype = dtype_name(text(kd));
          if (dtype.empty()) dtype = "like";
        }
        for (size_t i = 1; dtype.empty() && i < a.count(); ++i) {
          std::string_view t = text(a.expr(i));
          dtype = dtype_name(t);
          if (dtype.empty() && t.size() > 6 && t.substr(t.size() - 6) == ".dtype") dtype = "like";
        }
        if (dtype.empty()) return arg(a, 0);  // .to(device): a move, not a cast
        NodeId id = emit("cast", {arg_node(a, 0)}, e);
        set(id, "dtype", dtype);
        return finish(id);
      }
      case Kind::kTypeAs: {
        NodeId id = emit("cast", {arg_node(a, 0)}, e);
        set(id, "dtype", std::string("like"));
        return finish(id);
      }
      case Kind::kSync: {
        NodeId x = arg_node(a, 0);
        if (op_of(x) == "sync" || flag(x, "host")) {  // `.cpu().numpy().tolist()`: on the host already
          NodeId id = emit("call", {x}, e);
          set(id, "callee", "." + std::string(spec.name));
          set(id, "host", true);
          return val(id);
        }
        NodeId id = emit("sync", {x}, e);
        set(id, "method", std::string(op));
        return finish(id);
      }
      case Kind::kBackward: {
        count_training_mark();
        return finish(emit("backward", {arg_node(a, 0)}, e));
      }
      case Kind::kLinear:
      case Kind::kConv: {
        NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
        TSNode b = a.get(2, "bias");
        set(id, "bias", !ts_node_is_null(b) && !is_none(b));
        return finish(id);
      }
      case Kind::kEmbedding:
      case Kind::kNorm:
        return finish(emit(op, {arg_node(a, 0, "input")}, e));
      case Kind::kLoss:
        return finish(emit(op, {arg_node(a, 0, "input"), arg_node(a, 1, "target")}, e));
      case Kind::kGather: {
        NodeId id = emit("gather", {arg_node(a, 0, "input"), arg_node(a, 2, "index")}, e);
        set_dim(id, a.get(1, "dim"));
        return finish(id);
      }
      case Kind::kPow: {
        size_t mark = st_->fn.nodes.size();
        uint32_t writes = st_->env_writes;
        Value x = arg(a, 0);
        TSNode ex = a.get(1, "exponent");
        auto v = number(ex);
        if (scalar_like(x)) {
          bool sq = flag(x.node, "sqrt_like") || (v && std::fabs(std::fabs(*v) - 0.5) < 1e-12);
          truncate(mark, writes);
          return val(emit_scalar(e, sq));
        }
        NodeId id = emit("pow", {as_node(x, a.expr(0))}, e);
        if (v) set(id, "exponent", *v);
        else {
          NodeId exponent = arg_node(a, 1, "exponent");  // may emit: take the id first
          if (exponent != kNoNode) node(id).inputs.push_back(exponent);
        }
        return finish(id);
      }
      case Kind::kClamp: {
        NodeId id = emit("clamp", {arg_node(a, 0, "input")}, e);
        if (auto lo = number(a.get(1, "min"))) set(id, "min", *lo);
        if (auto hi = number(a.get(2, "max"))) set(id, "max", *hi);
        return finish(id);
      }
      case Kind::kCreation: {
        NodeId id = emit(op, {}, e);
        if (op == "full") {
          if (auto v = number(a.get(1, "fill_value"))) set(id, "value", *v);
        }
        return finish(id);
      }
      case Kind::kTrilTriu: {
        NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
        if (auto d = int_of(a.get(1, "diagonal"))) set(id, "diagonal", *d);
        return finish(id);
      }
      case Kind::kRepeatInterleave: {
        NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
        TSNode r = a.get(1, "repeats");
        if (!ts_node_is_null(r)) set(id, "repeats", clip(text(r)));
        set_dim(id, a.get(2, "dim"));
        return finish(id);
      }
      case Kind::kArith: {
        std::vector<Value> vs{arg(a, 0)};
        vs.push_back(arg(a, 1));
        if (vs[1].node == kNoNode) {
          TSNode other = a.keyword("other");
          if (!ts_node_is_null(other)) vs[1] = lower(other);
        }
        return finish(arith(op, vs, e, SIZE_MAX).node);
      }
    }
    return opaque(a, e, callee);
  }
};

}  // namespace

void lower_file(const SourceFile& file, TSNode root, ir::Module& out) {
  Builder(file, root, out).run();
}

}  // namespace mlsem::python
