// Lowering of a parsed Python file to IR functions (docs/IR.md, Python vocabulary).
// lower_file is the entry point. detail::Builder does the work: one Builder per file
// indexes imports, classes and functions, then lowers each function body in one walk.
// Its stages live in builder_*.cpp; each section of the class names its file.
#pragma once

#include <tree_sitter/api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/source.h"
#include "ir/ir.h"
#include "python/node_table.h"
#include "python/syntax.h"

namespace mlsem::python {

// Appends one ir::Function per def (and "<module>" for top-level code) to `out`,
// plus diagnostics for what could not be analyzed. `root` is the parse of `file`.
void lower_file(const SourceFile& file, TSNode root, ir::Module& out);

namespace detail {

using ir::NodeId;
using ir::kNoNode;

inline constexpr int kMaxInlineDepth = 3;           // helper calls followed this deep
inline constexpr int kMaxNesting = 200;             // syntactic depth lowered; deeper is reported
inline constexpr size_t kInlineBudget = 2000;       // nodes one function may gain by inlining
inline constexpr uint32_t kMaxInlineBytes = 8000;   // larger callees are not inlined
inline constexpr size_t kTraceLimit = 32;           // nodes visited tracing a mask to its source
inline constexpr size_t kTextLimit = 80;            // longest `text` attribute kept

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
  std::optional<double> literal;  // a scalar assigned a numeric literal (`self.n_rep = 1`)
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
  bool splat = false;  // *args or **kwargs: any argument may be set

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

inline bool is_very_negative(double v) { return v <= -1e4; }

inline std::string clip(std::string_view s) {
  if (s.size() <= kTextLimit) return std::string(s);
  return std::string(s.substr(0, kTextLimit - 3)) + "...";
}

// Python -> IR for one file. Resolves variables to dataflow edges and every spelling
// of an operation to its canonical op. run() (builder.cpp) drives the stages.
class Builder {
 public:
  Builder(const SourceFile& file, TSNode root, ir::Module& out)
      : file_(file), src_(file.text), root_(root), out_(out), S(Syntax::get()) {}

  // Defined in builder.cpp: the stages in order.
  void run();

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

  // ------------------------------------------------------------------ helpers (builder_names.cpp)

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
  // Each node's named children, listed once: tree-sitter spends hundreds of instructions
  // on each step between children (repetitions are hidden binary trees), and a helper's
  // body is lowered again for every call that inlines it. Keyed by the node's id.
  struct ChildSpan {
    uint32_t begin = 0, count = 0;
  };
  NodeTable child_spans_;  // -> child_span_list_
  std::vector<ChildSpan> child_span_list_;
  std::vector<TSNode> child_store_;

  NodeList named(TSNode n);
  // A field of `n`, looked up once per node and field: ts_node_child_by_field_id walks
  // the children from the first on every call, and the same fields are asked for again
  // (a call's function by every stage that reads it; a helper's body at each call that
  // inlines it). Member stages calling field() get this one, not syntax.h's.
  TSNode field(TSNode n, TSFieldId id) const;
  mutable NodeTable field_index_;  // -> field_nodes_
  mutable std::vector<TSNode> field_nodes_;
  // dotted() of a node, kept: the parts' begin and count in dotted_store_, or not dotted.
  struct DottedSpan {
    uint32_t begin = 0, count = 0;
    bool ok = false;
  };
  mutable NodeTable dotted_index_;  // -> dotted_spans_
  mutable std::vector<DottedSpan> dotted_spans_;
  mutable std::vector<std::string_view> dotted_store_;
  TSNode unparen(TSNode n) const;
  static bool same(TSNode a, TSNode b) { return ts_node_eq(a, b); }

  void diagnose(TSNode at, std::string message);

  // identifier chain `a.b.c` -> {"a","b","c"}; false when the root is not a name.
  // Kept per node (dotted_index_): callers ask again for the same callee.
  bool dotted(TSNode n, std::vector<std::string_view>& parts) const;
  bool dotted_walk(TSNode n, std::vector<std::string_view>& parts) const;

  static std::string join(const std::vector<std::string_view>& parts, size_t from = 0);

  const std::string* alias(std::string_view name) const;

  // Canonical dotted name of an expression naming an imported thing, e.g. `F.softmax`
  // -> "torch.nn.functional.softmax"; "" when the root is not an import or is a variable.
  std::string canonical(TSNode n);

  // -------------------------------------------------------------------- index (builder_index.cpp)

  void add_import(TSNode stmt, std::unordered_map<std::string_view, std::string>* module_map,
                  std::vector<std::pair<std::string_view, std::string>>* local);

  // Registers defs and classes under `container` (module, class body, block, ...).
  // Walks statements only, never into expressions.
  void index_block(TSNode container, const std::string& prefix, int cls, int depth);

  void index_statement(TSNode s, const std::string& prefix, int cls, int depth, TSNode decorated);

  bool has_decorator(TSNode decorated, std::string_view name);

  int find_method(int cls, std::string_view name, int depth = 0);

  // -------------------------------------------------- modules and class facts (builder_index.cpp)

  // An nn.Module built by `e` (`nn.Linear(...)`, `MLP(config)`, `nn.ModuleList([...])`), or -1.
  int module_from_expr(TSNode e, int depth = 0);

  // Is `e` (in __init__) a Python scalar: literals, config.*, arithmetic of those, math.*.
  bool static_scalar(TSNode e, int depth = 0);

  static bool mentions_sqrt(std::string_view t);
  static bool mentions_causal(std::string_view t);

  // Reads `self.x = ...` and `self.register_buffer(...)` in __init__ (and base classes').
  void class_facts(int cls, int depth = 0);

  void scan_init(TSNode block, int cls, std::vector<std::string_view>& causal_locals, int depth);

  // `causal_bias(n)`: a same-file function whose body builds a tril/triu.
  bool calls_causal_helper(TSNode e);

  static bool is_causal_local(std::string_view t, const std::vector<std::string_view>& locals);

  // ------------------------------------------------------------------ emission (builder_emit.cpp)

  ir::Node& node(NodeId id) { return st_->fn.nodes[id]; }
  const ir::Node* node_if(NodeId id) const;

  NodeId emit(std::string op, std::vector<NodeId> inputs, TSNode src);
  void set(NodeId id, const char* key, ir::Attr v) { node(id).attrs[key] = std::move(v); }

  Value val(NodeId id) { return Value{id, -1, {}, false}; }

  NodeId emit_const(TSNode src, std::optional<double> value);
  NodeId emit_scalar(TSNode src, bool sqrt_like);
  NodeId emit_name(TSNode src, std::string name);

  // A value as one node (modules and tuples get a stand-in).
  NodeId as_node(const Value& v, TSNode src);

  std::string_view op_of(NodeId id) const;
  std::optional<double> const_value(NodeId id) const;
  bool flag(NodeId id, const char* key) const;
  std::string_view str_attr(NodeId id, const char* key) const;

  // A Python number rather than a tensor.
  bool scalar_like(NodeId id) const;
  bool scalar_like(const Value& v) const { return v.module < 0 && !v.is_tuple && scalar_like(v.node); }

  // Walks a mask back to where it came from: a tril/triu, a causal name.
  bool traces_to(NodeId start, bool want_causal) const;

  // ------------------------------------------------------ constant evaluation (builder_names.cpp)

  std::optional<double> number(TSNode e, int depth = 0);

  static std::optional<double> parse_number(std::string_view t);

  static std::optional<double> fold(std::string_view op, double a, double b);

  std::optional<int64_t> int_of(TSNode e);
  std::optional<bool> bool_of(TSNode e);
  bool is_none(TSNode e) { return !ts_node_is_null(e) && sym(unparen(e)) == S.none; }

  // dim= as an int attribute when literal, else as text.
  void set_dim(NodeId id, TSNode e, const char* key = "dim");

  // ------------------------------------------------------------ functions (builder_functions.cpp)

  void lower_function(int fi);

  bool worth_inlining(int fi);

  // Top-level statements, as a function named "<module>" (training scripts loop there).
  void lower_module_code();

  struct Param {
    std::string_view name;
    TSNode node{}, type{}, default_value{};
    bool variadic = false;
  };

  std::vector<Param> parameters(TSNode params);

  // Parameters of the function being built become `input` nodes (an inlined callee's
  // are bound to the call's arguments in inline_call instead).
  void bind_parameters(TSNode params, bool is_method);

  // ------------------------------------------------------------- regions (builder_statements.cpp)

  uint32_t open_region(const char* kind, TSNode src);
  void close_region(uint32_t id) { st_->region = st_->fn.regions[id].parent; }

  // ---------------------------------------------------------- statements (builder_statements.cpp)

  struct NestingGuard {
    FnState* st;
    explicit NestingGuard(FnState* s) : st(s) { ++st->nesting; }
    ~NestingGuard() { --st->nesting; }
  };
  bool too_deep(TSNode at);

  void lower_block(TSNode block);
  void lower_branch(TSNode block, const char* which, TSNode condition);

  void lower_statement(TSNode s);

  bool is_expression(TSNode n) const;

  void lower_loop_body(uint32_t region, TSNode body);

  void count_training_mark();
  bool scaler_step(std::string_view callee, const Args& a);

  void lower_else(TSNode loop);

  void lower_with(TSNode s);

  void lower_expression_statement(TSNode e);

  Value lower_assignment(TSNode e);

  void lower_augmented(TSNode e);

  void bind_target(TSNode target, const Value& v, TSNode src);

  // Loop variables: elements of a ModuleList are modules; of range() are scalars.
  void bind_loop_target(TSNode target, TSNode iterable, const Value& it);

  void bind_names_as(TSNode target, bool scalar);

  // -------------------------------------------------------- expressions (builder_expressions.cpp)

  Value lower(TSNode e);

  // Containers, comprehensions, boolean operators, ...: an opaque `call` over the
  // values inside, so that nested calls (`[l.item() for l in losses]`) are seen.
  Value lower_generic(TSNode e);

  Value lower_string(TSNode e);

  Value lower_identifier(TSNode e);

  Value lower_unary(TSNode e);

  // Drops nodes emitted since `mark` when they were only the operands of a scalar
  // that replaces them (`1.0 / math.sqrt(d)` is one scalar, not three nodes).
  void truncate(size_t mark, uint32_t writes);

  Value lower_binary(TSNode e);

  Value arith(std::string_view op, std::vector<Value>& vals, TSNode e, size_t mark, uint32_t writes = 0);

  NodeId make_scale(NodeId x, NodeId factor, bool divide, TSNode e);

  Value lower_subscript(TSNode e);

  // The nn.Module at self.parts[1].parts[2]... (ModuleDict members), or -1.
  int self_module(const std::vector<std::string_view>& parts, size_t n);

  // `self.x...` through the class's __init__ facts and this body's assignments.
  Value lower_self_path(TSNode e, const std::vector<std::string_view>& parts);

  Value lower_attribute(TSNode e);

  // -------------------------------------------------------------------- calls (builder_calls.cpp)

  Args collect_args(TSNode list);

  Value arg(Args& a, size_t i);
  // Positional i or keyword `name`, as one node.
  NodeId arg_node(Args& a, size_t i, std::string_view name = {});
  // Every argument not yet lowered (for calls the frontend does not model).
  // Literals are left out: an opaque call's constants carry no dataflow.
  std::vector<NodeId> all_args(Args& a);

  bool is_literal(TSNode n) const;
  bool is_fstring(TSNode n) const;

  Value opaque(Args& a, TSNode e, std::string callee);

  Value lower_call(TSNode e);

  int local_function(std::string_view name);

  Value lower_builtin(std::string_view name, Args& a, TSNode e);

  // A call through an imported name, by its canonical dotted name.
  Value lower_named_call(const std::string& callee, Args& a, TSNode e);

  // A method on a value that is not an nn.Module: tensor methods by name.
  Value lower_method(std::string_view method, TSNode obj, Args& a, TSNode e);

  Value module_method(int m, std::string path, std::string_view method, Args& a, TSNode e);

  Value apply_module(int m, std::string path, Args& a, TSNode e);

  static std::string unquote(std::string_view s);

  // Inlines a same-file function or method: arguments are bound to its parameters and
  // its body lowered into the caller, nodes keeping the callee's ranges.
  // Defined in builder_functions.cpp, with the other inlining code.
  Value inline_call(int fi, Args& a, TSNode e, int cls, const std::string& self_path);

  // --------------------------------------------------------------- the op table (builder_ops.cpp)

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

  static const OpSpec* find_op(std::string_view name, uint8_t where);

  // ------------------------------------------------------ shape arguments (builder_shapes.cpp)

  // Keeps what the axis pass (axes.cpp) reads: `shape` on view/reshape/expand/repeat,
  // `dim` on unsqueeze/squeeze/split/chunk/unbind, `start`/`end` on flatten, and
  // `repeat_one` when a repeat count is known to be 1 (n_rep = 1: no head is copied).
  void shape_attrs(NodeId id, Args& a, std::string_view method);
  // A count written as a literal, a local bound to a constant, or an attribute that every
  // assignment in the file sets to the same literal (`self.num_key_value_groups = 1`).
  std::optional<double> count_value(TSNode e);
  std::optional<double> count_of_node(NodeId id);
  std::optional<double> file_literal_attr(std::string_view name);
  void scan_literal_attrs(TSNode block, int depth);
  // einsum with two operands that is not a plain matmul: a `matmul` with `subscripts`.
  Value einsum_contraction(NodeId a, NodeId b, TSNode spec, TSNode e, const std::string& callee);
  std::unordered_map<std::string, double> literal_attrs_;  // NaN: assigned different values
  bool literal_attrs_ready_ = false;

  Value lower_op(const OpSpec& spec, Args& a, TSNode e, const std::string& callee);
};

}  // namespace detail
}  // namespace mlsem::python
