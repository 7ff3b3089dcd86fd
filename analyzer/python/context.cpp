// Context facts for the engine's context policy (docs/IR.md, "Context facts"):
//  - file_kind: tests and PyTorch's op references, from the path;
//  - per function: `self` (methods), `reference` and `parity` (from names and
//    docstrings), `fallback` (registered as the eager entry of an attention dispatch),
//    `returns-weights` (returns its attention probabilities);
//  - per `branch` region: `fallback` when a sibling branch calls a fused attention.
// A stage of its own, run after lowering: it reads the syntax tree and the IR and only
// adds attributes. Files without the trigger words cost one substring search each.
#include "python/context.h"

#include "core/text.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "python/context_usage.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {




// A fused attention call: an `sdpa` node, or a call into flash-attention / xformers.
const char* fused_name(const ir::Node& n) {
  if (n.op == "sdpa") return "F.scaled_dot_product_attention";
  if (n.op != "call") return nullptr;
  const auto* a = n.attr("callee");
  const std::string* callee = a ? std::get_if<std::string>(a) : nullptr;
  if (!callee || !contains(*callee, "att")) return nullptr;  // in every name below
  if (contains(*callee, "flash_attn") || contains(*callee, "flash_attention")) return "flash-attention";
  if (contains(*callee, "memory_efficient_attention")) return "xformers memory_efficient_attention";
  if (contains(*callee, "scaled_dot_product_attention")) return "F.scaled_dot_product_attention";
  return nullptr;
}

struct Def {
  std::string name;   // qualified, as the IR names functions
  TSNode def{};       // function_definition
  TSNode cls{};       // class_definition when a method
  bool is_static = false;
};

class ContextStage {
 public:
  ContextStage(const SourceFile& file, TSNode root, ir::Module& out)
      : src_(file.text), root_(root), out_(out), S(Syntax::get()) {}

  void run() {
    for (size_t i = 0; i < out_.functions.size(); ++i) fn_index_[out_.functions[i].name] = i;
    file_has_softmax_ = contains(src_, "oftmax");
    collect_defs(root_, "", TSNode{}, 0);
    for (const Def& d : defs_) function_facts(d);
    if (contains(src_, "get_interface") || contains(src_, "ATTENTION_FUNCTIONS") || contains(src_, "\"eager\":") ||
        contains(src_, "'eager':") || contains(src_, "eager_"))
      dispatch_registrations();
    for (ir::Function& fn : out_.functions) branch_facts(fn);
  }

 private:
  std::string_view src_;
  TSNode root_;
  ir::Module& out_;
  const Syntax& S;
  std::unordered_map<std::string, size_t> fn_index_;
  std::vector<Def> defs_;
  std::optional<bool> optional_weights_;
  bool file_has_softmax_ = false;

  std::string_view text(TSNode n) const { return text_of(n, src_); }
  TSSymbol sym(TSNode n) const { return ts_node_symbol(n); }

  std::vector<TSNode> named(TSNode n) const { return named_children(n, S.comment); }

  ir::Function* function(const std::string& name) {
    auto it = fn_index_.find(name);
    return it == fn_index_.end() ? nullptr : &out_.functions[it->second];
  }

  // ------------------------------------------------------------ definitions

  // Defs and classes, named as the frontend names IR functions (Class.method, outer.inner).
  void collect_defs(TSNode container, const std::string& prefix, TSNode cls, int depth) {
    if (depth > 40) return;
    for (TSNode s : named(container)) statement(s, prefix, cls, depth, false);
  }

  void statement(TSNode s, const std::string& prefix, TSNode cls, int depth, bool is_static) {
    TSSymbol k = sym(s);
    if (k == S.function_definition) {
      Def d;
      d.name = prefix + std::string(text(field(s, S.f_name)));
      d.def = s;
      d.cls = cls;
      d.is_static = is_static;
      defs_.push_back(d);
      collect_defs(field(s, S.f_body), d.name + ".", TSNode{}, depth + 1);
    } else if (k == S.class_definition) {
      collect_defs(field(s, S.f_body), prefix + std::string(text(field(s, S.f_name))) + ".", s, depth + 1);
    } else if (k == S.decorated_definition) {
      bool st = false;
      for (TSNode d : named(s))
        if (sym(d) == S.decorator && (contains(text(d), "staticmethod") || contains(text(d), "classmethod"))) st = true;
      TSNode def = field(s, S.f_definition);
      if (!ts_node_is_null(def)) statement(def, prefix, cls, depth, st);
    } else if (k == S.if_statement || k == S.try_statement || k == S.with_statement || k == S.elif_clause ||
               k == S.else_clause || k == S.except_clause || k == S.finally_clause || k == S.block ||
               k == S.for_statement || k == S.while_statement || ts_node_is_error(s)) {
      for (TSNode c : named(s)) {
        TSSymbol ck = sym(c);
        if (ck == S.block || ck == S.elif_clause || ck == S.else_clause || ck == S.except_clause ||
            ck == S.finally_clause || ck == S.function_definition || ck == S.class_definition ||
            ck == S.decorated_definition || ck == S.if_statement || ck == S.try_statement ||
            ck == S.with_statement || ts_node_is_error(c))
          statement(c, prefix, cls, depth + 1, false);
      }
    }
  }

  // The docstring of a def or class body, or "".
  std::string_view docstring(TSNode def) const {
    if (ts_node_is_null(def)) return {};
    TSNode body = field(def, S.f_body);
    if (ts_node_is_null(body) || ts_node_named_child_count(body) == 0) return {};
    TSNode first = ts_node_named_child(body, 0);
    if (sym(first) != S.expression_statement || ts_node_named_child_count(first) == 0) return {};
    TSNode e = ts_node_named_child(first, 0);
    if (sym(e) != S.string && sym(e) != S.concatenated_string) return {};
    return text(e);
  }

  // ------------------------------------------------------------ per function

  void function_facts(const Def& d) {
    ir::Function* fn = function(d.name);
    if (!fn) return;
    std::string_view short_name = text(field(d.def, S.f_name));
    if (!ts_node_is_null(d.cls) && !d.is_static) {
      TSNode params = field(d.def, S.f_parameters);
      if (!ts_node_is_null(params) && ts_node_named_child_count(params) > 0) {
        TSNode p = ts_node_named_child(params, 0);
        if (sym(p) == S.identifier) fn->attrs["self"] = std::string(text(p));
      }
    }
    std::string lower = lower_ascii(short_name);
    std::string_view ln = lower;
    if (ln.ends_with("_reference") || ln.ends_with("_ref") || ln.starts_with("reference_") || ln.starts_with("ref_") ||
        ln == "reference")
      fn->attrs["reference"] = "reference implementation: `" + std::string(short_name) +
                               "` is named as a reference, kept to check the fused op against";
    if (contains(ln, "_python"))
      fn->attrs["parity"] = "Python variant: `" + std::string(short_name) +
                            "` is an opt-in formula kept for numerical parity; the fused op is the default path";
    else if (auto why = parity_docstring(d))
      fn->attrs["parity"] = *why;
    std::string_view body = text(d.def);
    // Returned weights make a fallback only where another path exists for when they are
    // not requested (a fused call, a dispatch, an output_attentions switch in the file,
    // and not a model that declares it does not support SDPA): code whose only path is
    // the eager one is what users run.
    if (file_has_softmax_ && contains(body, "oftmax") && weights_are_optional()) returns_weights(d, *fn);
  }

  bool weights_are_optional() {
    if (!optional_weights_) {
      optional_weights_ = false;
      if (!sdpa_is_default()) return false;
      for (const char* w : {"scaled_dot_product_attention", "flash_attn", "ALL_ATTENTION_FUNCTIONS", "_attn_implementation",
                            "output_attentions", "need_weights"})
        if (contains(src_, w)) optional_weights_ = true;
    }
    return *optional_weights_;
  }

  // `phrase` in `text`, or with its first letter in upper case: one search for the rest
  // of the phrase, then a look at the letter before it.
  static bool contains_capitalized(std::string_view text, std::string_view phrase) {
    std::string_view rest = phrase.substr(1);
    char lower = phrase[0], upper = static_cast<char>(std::toupper(static_cast<unsigned char>(phrase[0])));
    for (size_t at = text.find(rest, 1); at != std::string_view::npos; at = text.find(rest, at + 1))
      if (text[at - 1] == lower || text[at - 1] == upper) return true;
    return false;
  }

  std::optional<std::string> parity_docstring(const Def& d) const {
    static const char* kPhrases[] = {"numerical parity", "numerically identical", "exact numerical",
                                     "bit-exact", "bitwise identical", "subtly different", "subtly wrong", "for parity"};
    for (TSNode n : {d.def, d.cls}) {
      std::string_view doc = docstring(n);
      if (doc.empty()) continue;
      for (const char* phrase : kPhrases)
        if (contains_capitalized(doc, phrase))
          return "numerical-parity variant: its docstring says it exists to match another implementation's numbers (\"" +
                 std::string(phrase) + "\")";
    }
    return std::nullopt;
  }

  // Statements of a function body in order, not entering nested defs, classes or lambdas.
  template <class Fn>
  void each_statement(TSNode block, Fn&& fn, int depth = 0) {
    if (ts_node_is_null(block) || depth > 40) return;
    for (TSNode s : named(block)) {
      TSSymbol k = sym(s);
      if (k == S.function_definition || k == S.class_definition || k == S.decorated_definition) continue;
      fn(s);
      if (k == S.if_statement || k == S.for_statement || k == S.while_statement || k == S.with_statement ||
          k == S.try_statement || k == S.elif_clause || k == S.else_clause || k == S.except_clause ||
          k == S.finally_clause || k == S.block || k == S.match_statement || k == S.case_clause)
        each_statement(s, fn, depth + 1);
    }
  }

  // Identifiers anywhere in an expression (not inside lambdas).
  void identifiers(TSNode e, std::vector<std::string_view>& out, int depth = 0) const {
    if (ts_node_is_null(e) || depth > 60) return;
    if (sym(e) == S.identifier) {
      out.push_back(text(e));
      return;
    }
    if (sym(e) == S.lambda) return;
    for (TSNode c : named(e)) identifiers(c, out, depth + 1);
  }

  // The names a return hands back beside others: elements of returned tuples (both arms
  // of a conditional), through one variable holding such a tuple.
  void tuple_names(TSNode e, std::vector<std::string_view>& out, const std::map<std::string_view, TSNode>& tuples,
                   int depth = 0) const {
    if (ts_node_is_null(e) || depth > 6) return;
    TSSymbol k = sym(e);
    if (k == S.parenthesized_expression || k == S.conditional_expression) {
      for (TSNode c : named(e)) tuple_names(c, out, tuples, depth + 1);
    } else if (k == S.tuple || k == S.expression_list) {
      std::vector<TSNode> items = named(e);
      if (items.size() < 2) return;
      for (TSNode c : items)
        if (sym(c) == S.identifier) out.push_back(text(c));
    } else if (k == S.identifier) {
      if (auto it = tuples.find(text(e)); it != tuples.end()) tuple_names(it->second, out, tuples, depth + 1);
    }
  }

  void returns_weights(const Def& d, ir::Function& fn) {
    // Names holding probabilities: assigned from a softmax, then through calls that are
    // not products (dropout, casts): `w = softmax(s); w = dropout(w); w = w.to(q.dtype)`.
    std::set<std::string_view> probs;
    std::map<std::string_view, TSNode> tuples;  // name -> the tuple it was last assigned
    std::vector<TSNode> returns;
    each_statement(field(d.def, S.f_body), [&](TSNode s) {
      if (sym(s) == S.return_statement) {
        if (ts_node_named_child_count(s) > 0) returns.push_back(ts_node_named_child(s, 0));
        return;
      }
      if (sym(s) != S.expression_statement || ts_node_named_child_count(s) == 0) return;
      TSNode a = ts_node_named_child(s, 0);
      if (sym(a) != S.assignment) return;
      TSNode left = field(a, S.f_left), right = field(a, S.f_right);
      if (ts_node_is_null(left) || ts_node_is_null(right) || sym(left) != S.identifier) return;
      std::string_view name = text(left), rhs = text(right);
      TSSymbol rk = sym(right);
      if (rk == S.tuple || rk == S.conditional_expression || rk == S.parenthesized_expression) tuples[name] = right;
      bool product = contains(rhs, "@") || contains(rhs, "matmul") || contains(rhs, "einsum") || contains(rhs, "bmm");
      if (contains(rhs, "oftmax") && !product) {  // softmax, nn.Softmax
        probs.insert(name);
        return;
      }
      std::vector<std::string_view> ids;
      identifiers(right, ids);
      bool from_probs = std::any_of(ids.begin(), ids.end(), [&](std::string_view i) { return probs.count(i); });
      if (from_probs && !product) probs.insert(name);
      else probs.erase(name);
    });
    for (TSNode r : returns) {
      std::vector<std::string_view> names;
      tuple_names(r, names, tuples);
      for (std::string_view n : names)
        if (probs.count(n)) {
          fn.attrs["returns-weights"] =
              "returns its attention probabilities (`" + std::string(n) + "`, line " + line_of(r) +
              ") to the caller: F.scaled_dot_product_attention cannot; this path serves output_attentions, "
              "use SDPA when they are not requested";
          return;
        }
    }
  }

  // ------------------------------------------------------------ dispatch tables

  void mark_fallback(std::string_view name, const std::string& why) {
    std::string prefix = std::string(name) + ".";
    for (ir::Function& fn : out_.functions)
      if ((fn.name == name || fn.name.starts_with(prefix)) && !fn.attrs.count("fallback"))
        fn.attrs["fallback"] = "eager fallback: `" + std::string(name) + "` " + why;
  }

  bool defined_here(std::string_view name) const {
    std::string prefix = std::string(name) + ".";
    return std::any_of(out_.functions.begin(), out_.functions.end(),
                       [&](const ir::Function& f) { return f.name == name || f.name.starts_with(prefix); });
  }

  // Positional arguments of a call.
  std::vector<TSNode> positional(TSNode call) const {
    std::vector<TSNode> out;
    TSNode args = field(call, S.f_arguments);
    if (ts_node_is_null(args)) return out;
    for (TSNode a : named(args))
      if (sym(a) != S.keyword_argument && sym(a) != S.list_splat && sym(a) != S.dictionary_splat) out.push_back(a);
    return out;
  }

  // Whether the eager entry of a dispatch is a fallback: transformers models choose SDPA
  // by default only when they declare `_supports_sdpa = True`; a model declaring it
  // false, or defining its PreTrainedModel without it (the base class's default is
  // false), runs the eager entry by default. Code outside that convention: a fallback.
  bool sdpa_is_default() const {
    if (contains(src_, "_supports_sdpa = True") || contains(src_, "_supports_sdpa: bool = True")) return true;
    return !contains(src_, "_supports_sdpa") && !contains(src_, "(PreTrainedModel)");
  }
  // A dict of implementations with an SDPA entry beside "eager".
  bool table_has_sdpa(TSNode dict) const {
    if (ts_node_is_null(dict) || sym(dict) != S.dictionary) return false;
    for (TSNode p : named(dict)) {
      if (sym(p) != S.pair) continue;
      TSNode key = field(p, S.f_key);
      if (!ts_node_is_null(key) && contains(text(key), "sdpa")) return true;
    }
    return false;
  }

  void dispatch_registrations() {
    // Per enclosing function: variables assigned a function of this file, and variables
    // (re)assigned from a registry lookup (subscript or call).
    struct Vars {
      std::map<std::string_view, std::pair<std::string_view, TSNode>> plain;  // var -> (function, where)
      std::set<std::string_view> looked_up;
    };
    std::map<uint32_t, Vars> by_function;  // by the enclosing def's start byte
    std::vector<std::pair<uint32_t, uint32_t>> def_stack;  // (end byte, start byte)

    TSTreeCursor cursor = ts_tree_cursor_new(root_);
    bool descend = true;
    while (true) {
      TSNode n = ts_tree_cursor_current_node(&cursor);
      if (descend) {
        uint32_t start = ts_node_start_byte(n);
        while (!def_stack.empty() && start >= def_stack.back().first) def_stack.pop_back();
        TSSymbol k = sym(n);
        if (k == S.function_definition) def_stack.emplace_back(ts_node_end_byte(n), start);
        if (k == S.call) {
          TSNode f = field(n, S.f_function);
          if (!ts_node_is_null(f) && sym(f) == S.attribute) {
            std::string_view method = text(field(f, S.f_attribute));
            std::string_view object = text(field(f, S.f_object));
            auto args = positional(n);
            bool registry = method == "get_interface" || (method == "get" && contains(object, "ATTENTION"));
            if (registry && args.size() >= 2 && sym(args[1]) == S.identifier && defined_here(text(args[1])) &&
                sdpa_is_default())
              mark_fallback(text(args[1]), "is the default of `" + std::string(object) + "." + std::string(method) +
                                               "(...)` (line " + line_of(n) +
                                               "): it runs only when the eager implementation is selected "
                                               "(attn_implementation=\"eager\"); SDPA and flash-attention are "
                                               "registered beside it");
          }
        } else if (k == S.pair) {
          TSNode key = field(n, S.f_key), value = field(n, S.f_value);
          std::string_view kt = ts_node_is_null(key) ? std::string_view{} : text(key);
          if ((kt == "\"eager\"" || kt == "'eager'") && !ts_node_is_null(value) && sym(value) == S.identifier &&
              defined_here(text(value)) &&
              (table_has_sdpa(parent_of(n)) || contains(src_, "_supports_sdpa = True")))
            mark_fallback(text(value), "is the \"eager\" entry of a table of attention implementations (line " +
                                           line_of(n) + "): it runs only when that implementation is selected");
        } else if (k == S.assignment && !def_stack.empty()) {
          TSNode left = field(n, S.f_left), right = field(n, S.f_right);
          if (!ts_node_is_null(left) && !ts_node_is_null(right) && sym(left) == S.identifier) {
            Vars& v = by_function[def_stack.back().second];
            TSSymbol rk = sym(right);
            if (rk == S.identifier && defined_here(text(right))) v.plain[text(left)] = {text(right), n};
            else if (rk == S.subscript || rk == S.call) v.looked_up.insert(text(left));
          }
        }
      }
      if (descend && ts_tree_cursor_goto_first_child(&cursor)) continue;
      if (ts_tree_cursor_goto_next_sibling(&cursor)) {
        descend = true;
        continue;
      }
      if (!ts_tree_cursor_goto_parent(&cursor)) break;
      descend = false;
    }
    ts_tree_cursor_delete(&cursor);
    for (const auto& [start, vars] : by_function)
      for (const auto& [var, target] : vars.plain)
        if (vars.looked_up.count(var))
          mark_fallback(target.first, "is the default of `" + std::string(var) + "` (line " + line_of(target.second) +
                                          "), replaced from a registry of implementations when another one is "
                                          "configured: it runs only when none is");
  }

  // ------------------------------------------------------------ if/else branches

  void branch_facts(ir::Function& fn) {
    const ir::Node* fused_node = nullptr;
    for (const ir::Node& n : fn.nodes)
      if (fused_name(n)) fused_node = &n;
    if (!fused_node || fn.regions.size() < 3) return;
    // The first fused call under each region (regions open after their parents).
    std::vector<const ir::Node*> fused(fn.regions.size(), nullptr);
    for (const ir::Node& n : fn.nodes)
      if (fused_name(n) && n.region < fused.size() && !fused[n.region]) fused[n.region] = &n;
    for (size_t r = fn.regions.size(); r-- > 1;) {
      uint32_t p = fn.regions[r].parent;
      if (p < r && fused[r] && !fused[p]) fused[p] = fused[r];
    }
    for (uint32_t r = 1; r < fn.regions.size(); ++r) {
      if (fn.regions[r].kind != "if") continue;
      std::vector<uint32_t> branches;
      for (uint32_t b = r + 1; b < fn.regions.size(); ++b)
        if (fn.regions[b].parent == r && fn.regions[b].kind == "branch") branches.push_back(b);
      const ir::Node* fused_call = nullptr;
      uint32_t fused_branch = 0;
      for (uint32_t b : branches)
        if (fused[b] && !fused_call) fused_call = fused[b], fused_branch = b;
      if (!fused_call) continue;
      const ir::Region& fb = fn.regions[fused_branch];
      auto attr = [](const ir::Region& reg, const char* key) {
        auto it = reg.attrs.find(key);
        const std::string* s = it == reg.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
        return s ? *s : std::string();
      };
      for (uint32_t b : branches) {
        if (fused[b]) continue;
        const ir::Region& br = fn.regions[b];
        std::string fused_cond = attr(fb, "condition"), own_cond = attr(br, "condition");
        std::string when = !fused_cond.empty() ? "runs only when `" + fused_cond + "` is false"
                         : !own_cond.empty()   ? "runs only when `" + own_cond + "` holds"
                                               : "runs only when the fused branch is not taken";
        fn.regions[b].attrs["fallback"] = "eager fallback: this branch " + when + "; the branch at line " +
                                          std::to_string(fb.range.begin.line) + " calls " +
                                          fused_name(*fused_call) + " (line " +
                                          std::to_string(fused_call->range.begin.line) + ")";
      }
    }
  }
};

}  // namespace

std::optional<std::pair<std::string, std::string>> file_kind(std::string_view path) {
  std::string p(path);
  std::replace(p.begin(), p.end(), '\\', '/');
  std::string_view v = p;
  size_t slash = v.rfind('/');
  std::string_view base = slash == std::string_view::npos ? v : v.substr(slash + 1);
  std::string_view dirs = slash == std::string_view::npos ? std::string_view{} : v.substr(0, slash + 1);
  std::string dir_path = "/" + std::string(dirs);
  // PyTorch's own op references, decompositions, higher-order op definitions and the
  // compiler's pattern library (torch/_inductor/fx_passes/fuse_attention.py spells the
  // attention it replaces): they define the ops rather than use them.
  for (const char* ref : {"/torch/_refs/", "/torch/_decomp/", "/torch/_prims/", "/torch/_higher_order_ops/",
                          "/torch/_inductor/"})
    if (contains(dir_path, ref))
      return std::make_pair(std::string("reference"),
                            std::string("op definition: PyTorch's own reference, decomposition or compiler pattern (") +
                                std::string(ref).substr(1) + ") defines the op rather than using it");
  // Code a project vendors from elsewhere (OLMo's inference/compression/dependencies/AutoGPTQ,
  // a third_party/ checkout): its maintainers are upstream.
  for (const char* dir : {"/third_party/", "/third-party/", "/thirdparty/", "/3rdparty/", "/vendor/", "/vendored/",
                          "/_vendor/", "/dependencies/"})
    if (contains(dir_path, dir))
      return std::make_pair(std::string("vendored"), std::string("vendored code: the file is under a ") + (dir + 1) +
                                                         " directory, maintained upstream");
  if ((base.starts_with("test_") && base.ends_with(".py")) || base.ends_with("_test.py") || base == "conftest.py")
    return std::make_pair(std::string("test"), "test code: `" + std::string(base) + "` is a test file");
  for (const char* dir : {"/tests/", "/test/", "/testing/"})
    if (contains(dir_path, dir))
      return std::make_pair(std::string("test"), std::string("test code: the file is under a ") + (dir + 1) +
                                                     " directory");
  return std::nullopt;
}

std::optional<std::string> environment_bound(std::string_view text) {
  // `envs.step(actions)`, `env.step(action)`, `self.env.step(...)` first: this runs on every
  // file, and most have no `.step(` at all, so one scan settles them; the imports only then.
  for (size_t at = text.find(".step("); at != std::string_view::npos; at = text.find(".step(", at + 1)) {
    size_t b = at;
    while (b > 0 && (std::isalnum(static_cast<unsigned char>(text[b - 1])) || text[b - 1] == '_')) --b;
    std::string receiver = lower_ascii(text.substr(b, at - b));
    if (!receiver.starts_with("env")) continue;
    bool gym = false;
    for (std::string_view lib : {"import gym", "from gym", "import envpool", "from envpool", "import procgen",
                                 "from procgen", "import dm_control", "from dm_control"})
      gym = gym || contains(text, lib);
    if (!gym) return std::nullopt;
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n'));
    return "environment-bound: the file steps a reinforcement-learning environment (`" + std::string(text.substr(b, at + 6 - b)) +
           "` at line " + std::to_string(line) +
           ") on every iteration: the time goes to the simulator and to launching the agent's small "
           "networks, not to GPU throughput";
  }
  return std::nullopt;
}

void add_context_facts(const SourceFile& file, TSNode root, ir::Module& out) {
  if (auto kind = file_kind(file.path)) {
    out.attrs["file_kind"] = kind->first;
    out.attrs["file_kind_reason"] = kind->second;
  } else if (auto why = environment_bound(file.text)) {
    out.attrs["file_kind"] = std::string("env-bound");
    out.attrs["file_kind_reason"] = *why;
  }
  ContextStage(file, root, out).run();
  add_usage_facts(file, root, out);
}

}  // namespace mlsem::python
