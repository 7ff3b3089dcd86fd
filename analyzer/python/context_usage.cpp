// Context facts on how code is used, beside the fallback facts of context.cpp
// (docs/IR.md, "Context facts"):
//  - `modular` (file): a transformers modular source whose generated sibling exists and
//    names it in its header; the generated file is the code that runs;
//  - `unused` (function): a module-level function never called in its file, mentioned
//    only by decorators (a kernel registration), or only from such dead functions;
//  - `fallback` (function): the forward of a class decorated @use_experts_implementation,
//    which the decorator replaces with the configured experts implementation;
//  - `cold` (function): the forward of a module class whose every call in the file passes
//    one vector per sequence (a pooled output, `x[:, 0]`, a mean over positions).
// Looks names up by their words in the text, not by visiting the whole tree; only adds
// attributes.
#include "python/context_usage.h"

#include "core/text.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "python/syntax.h"

namespace mlsem::python {
namespace {

namespace fs = std::filesystem;


struct Span {
  uint32_t begin = 0, end = 0;
  bool holds(uint32_t b) const { return b >= begin && b < end; }
};

struct TopFunction {
  std::string name;
  Span span;             // the def with its decorators
  std::vector<TSNode> decorator_mentions;  // decorators naming it
  std::set<size_t> callers;  // indices of the module-level functions referencing it
  bool live = false;         // referenced from module or class code, or a string
  bool dead = false;
};

struct ClassDef {
  std::string name;  // qualified as the IR names its methods' prefix
  TSNode node{};     // class_definition
  Span span;         // with its decorators
  std::vector<TSNode> decorators;
};

class UsageStage {
 public:
  UsageStage(const SourceFile& file, TSNode root, ir::Module& out)
      : path_(file.path), src_(file.text), root_(root), out_(out), S(Syntax::get()) {}

  void run() {
    modular_source();
    walk();
    dead_helpers();
    if (contains(src_, "use_experts_implementation")) expert_fallbacks();
    cold_call_sites();
    off_by_default();
  }

 private:
  std::string_view path_;
  std::string_view src_;
  TSNode root_;
  ir::Module& out_;
  const Syntax& S;

  std::vector<TopFunction> top_;
  std::unordered_map<std::string, size_t> top_index_;  // owns its keys: top_ reallocates
  std::vector<ClassDef> classes_;
  std::vector<Span> decorators_;
  mutable bool words_built_ = false;
  mutable std::unordered_map<std::string_view, std::vector<uint32_t>> words_;  // word -> offsets

  std::string_view text(TSNode n) const { return text_of(n, src_); }
  TSSymbol sym(TSNode n) const { return ts_node_symbol(n); }

  std::vector<TSNode> named(TSNode n) const { return named_children(n, S.comment); }

  void set_fact(const std::string& name, const char* kind, const std::string& why) {
    std::string prefix = name + ".";
    for (ir::Function& fn : out_.functions)
      if ((fn.name == name || fn.name.starts_with(prefix)) && !fn.attrs.count(kind)) fn.attrs[kind] = why;
  }

  // ------------------------------------------------------------ modular sources

  void modular_source() {
    if (out_.attrs.count("file_kind")) return;
    auto sibling = generated_sibling(path_);
    if (!sibling) return;
    std::string base = fs::path(std::string(path_)).filename().string();
    std::string generated = fs::path(*sibling).filename().string();
    out_.attrs["file_kind"] = std::string("modular");
    out_.attrs["file_kind_reason"] =
        "modular source: `" + generated + "` beside it is generated from `" + base +
        "` (its header says so) and is the code that runs; the same finding is reported there (edit `" + base +
        "`, then regenerate)";
  }

  // ------------------------------------------------------------ mentions

  // Module-level functions (also under module-level if/try), classes at any depth, and
  // the decorators of every definition those visits pass. Mentions of a name are found
  // by scanning the text for the word and asking the tree what is there (an identifier,
  // the content of a string, or something else such as a comment): much cheaper than
  // visiting every node of the tree, and only names that matter are looked up.
  void walk() {
    top_level(root_, 0);
    classes(root_, "", 0);
    std::sort(decorators_.begin(), decorators_.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  }

  // What the tree has at a word: an identifier node, or a string's content equal to the
  // word (`__all__`, a registry key, getattr by name), or nothing of interest.
  struct Mention {
    TSNode node{};
    bool identifier = false;
    bool string_name = false;
  };
  Mention mention_at(uint32_t b, size_t len) const {
    TSNode n = ts_node_named_descendant_for_byte_range(root_, b, b + static_cast<uint32_t>(len));
    Mention m;
    if (ts_node_is_null(n)) return m;
    if (sym(n) == S.identifier && ts_node_start_byte(n) == b && ts_node_end_byte(n) == b + len) {
      m.node = n;
      m.identifier = true;
    } else if (ts_node_start_byte(n) == b && ts_node_end_byte(n) == b + len) {
      TSNode parent = parent_of(n);
      if (!ts_node_is_null(parent) && sym(parent) == S.string) {
        m.node = parent;
        m.string_name = true;  // the string's whole content is the name
      }
    }
    return m;
  }

  // Where `name` stands as a whole word, in order. A file with hundreds of top-level
  // functions asks for each one's mentions: one pass over the text, on the first lookup,
  // indexes every word (a scan per name was quadratic in the file's size). A name that is
  // not one word (a dotted one) is searched for directly.
  std::vector<uint32_t> offsets_of(std::string_view name, uint32_t from = 0,
                                   uint32_t to = std::numeric_limits<uint32_t>::max()) const {
    bool one_word = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return word_byte(static_cast<unsigned char>(c));
    });
    if (!one_word) return word_offsets(src_, name, from, to);
    if (!words_built_) {
      words_built_ = true;
      for (size_t i = 0; i < src_.size();) {
        if (!word_byte(static_cast<unsigned char>(src_[i]))) { ++i; continue; }
        size_t e = i;
        while (e < src_.size() && word_byte(static_cast<unsigned char>(src_[e]))) ++e;
        words_[src_.substr(i, e - i)].push_back(static_cast<uint32_t>(i));
        i = e;
      }
    }
    std::vector<uint32_t> out;
    if (auto it = words_.find(name); it != words_.end())
      for (uint32_t b : it->second)
        if (b >= from && b + name.size() <= to) out.push_back(b);
    return out;
  }

  // The identifiers named `name` in [from, to), in source order.
  std::vector<TSNode> identifiers(std::string_view name, uint32_t from = 0,
                                  uint32_t to = std::numeric_limits<uint32_t>::max()) const {
    return identifiers_at(root_, offsets_of(name, from, to), name.size(), S.identifier);
  }

  // Whether some string's whole content is `name`.
  bool named_by_string(std::string_view name) const {
    for (uint32_t b : offsets_of(name))
      if (mention_at(b, name.size()).string_name) return true;
    return false;
  }

  void top_level(TSNode container, int depth) {
    if (depth > 8) return;
    for (TSNode s : named(container)) {
      TSSymbol k = sym(s);
      TSNode def = s;
      if (k == S.decorated_definition) def = field(s, S.f_definition);
      if (!ts_node_is_null(def) && sym(def) == S.function_definition) {
        TopFunction f;
        f.name = std::string(text(field(def, S.f_name)));
        f.span = {ts_node_start_byte(s), ts_node_end_byte(s)};
        if (!top_index_.count(f.name)) {  // a redefinition keeps the first (both stay live below)
          top_.push_back(std::move(f));
          top_index_[top_.back().name] = top_.size() - 1;
        } else {
          top_[top_index_[f.name]].live = true;  // defined twice (a platform switch): not ours to judge
        }
      } else if (k == S.if_statement || k == S.try_statement || k == S.else_clause || k == S.elif_clause ||
                 k == S.except_clause || k == S.finally_clause || k == S.block) {
        top_level(s, depth + 1);
      }
    }
  }

  void classes(TSNode container, const std::string& prefix, int depth) {
    if (depth > 20) return;
    for (TSNode s : named(container)) {
      TSSymbol k = sym(s);
      TSNode def = s;
      std::vector<TSNode> decorators;
      if (k == S.decorated_definition) {
        def = field(s, S.f_definition);
        for (TSNode d : named(s))
          if (sym(d) == S.decorator) {
            decorators.push_back(d);
            decorators_.push_back({ts_node_start_byte(d), ts_node_end_byte(d)});
          }
      }
      if (ts_node_is_null(def)) continue;
      TSSymbol dk = sym(def);
      if (dk == S.class_definition) {
        std::string name = prefix + std::string(text(field(def, S.f_name)));
        classes_.push_back({name, def, {ts_node_start_byte(s), ts_node_end_byte(s)}, decorators});
        classes(field(def, S.f_body), name + ".", depth + 1);
      } else if (dk == S.function_definition) {
        classes(field(def, S.f_body), prefix + std::string(text(field(def, S.f_name))) + ".", depth + 1);
      } else if (dk == S.if_statement || dk == S.try_statement || dk == S.else_clause || dk == S.elif_clause ||
                 dk == S.except_clause || dk == S.finally_clause || dk == S.block || dk == S.with_statement) {
        classes(def, prefix, depth + 1);
      }
    }
  }

  bool in_decorator(uint32_t byte) const {
    return std::any_of(decorators_.begin(), decorators_.end(), [&](const Span& s) { return s.holds(byte); });
  }

  // The module-level function whose def holds `byte`, or npos.
  size_t enclosing_top(uint32_t byte) const {
    for (size_t i = 0; i < top_.size(); ++i)
      if (top_[i].span.holds(byte)) return i;
    return std::string::npos;
  }

  // ------------------------------------------------------------ dead helpers

  // Whether a word of some decorator's text is the name of a module-level function.
  bool decorator_names_a_function() const {
    for (const Span& d : decorators_) {
      std::string_view t = src_.substr(d.begin, d.end - d.begin);
      for (size_t i = 0; i < t.size();) {
        if (!word_byte(static_cast<unsigned char>(t[i]))) {
          ++i;
          continue;
        }
        size_t j = i;
        while (j < t.size() && word_byte(static_cast<unsigned char>(t[j]))) ++j;
        if (top_index_.count(std::string(t.substr(i, j - i)))) return true;
        i = j;
      }
    }
    return false;
  }

  // Whether the file says it was generated from a transformers modular source. Such a
  // file's code is copied from the modular sources with everything it depends on, and
  // other models copy rather than import it: what it never mentions is an artifact.
  bool generated_file() const {
    std::string_view head = src_.substr(0, std::min<size_t>(src_.size(), 2048));
    return contains(head, "automatically generated from") && contains(head, "/modular_");
  }

  // A module-level function whose only mentions in its file are decorators (it is
  // registered, e.g. for kernel replacement, and never called), or whose every caller
  // is such a function, is dead code. A function never mentioned at all is left alone
  // (a utility module's functions are imported by other files), except in a generated
  // file, which is not imported from; so are its top-level classes.
  void dead_helpers() {
    bool generated = generated_file();
    if (generated) unused_classes();
    if (top_.empty()) return;
    // Outside a generated file a function is dead only if some function is named in a
    // decorator: when none is, nothing below can mark one, and no mention need be found.
    if (!generated && !decorator_names_a_function()) return;
    for (size_t fi = 0; fi < top_.size(); ++fi) {
      TopFunction& f = top_[fi];
      for (TSNode id : identifiers(f.name)) {
        uint32_t b = ts_node_start_byte(id);
        TSNode parent = parent_of(id);
        if (!ts_node_is_null(parent) && sym(parent) == S.function_definition &&
            ts_node_eq(field(parent, S.f_name), id))
          continue;  // a def's own name (this one, or a method of the same name)
        if (f.span.holds(b)) continue;  // recursion
        if (in_decorator(b)) {
          TSNode d = id;
          while (!ts_node_is_null(d) && sym(d) != S.decorator) d = parent_of(d);
          if (!ts_node_is_null(d)) f.decorator_mentions.push_back(d);
          continue;
        }
        size_t caller = enclosing_top(b);
        if (caller == std::string::npos) f.live = true;
        else f.callers.insert(caller);
      }
      // A string that is the name (`__all__`, getattr, a registry key) keeps it live; prose
      // in docstrings that mentions it does not.
      if (!f.live && named_by_string(f.name)) f.live = true;
    }
    for (TopFunction& f : top_) f.dead = !f.live && (generated || !f.decorator_mentions.empty()) && f.callers.empty();
    for (bool changed = true; changed;) {
      changed = false;
      for (TopFunction& f : top_) {
        if (f.dead || f.live || f.callers.empty()) continue;
        if (std::all_of(f.callers.begin(), f.callers.end(), [&](size_t c) { return top_[c].dead; })) {
          f.dead = true;
          changed = true;
        }
      }
    }
    for (TopFunction& f : top_) {
      if (!f.dead) continue;
      std::string why;
      if (f.callers.empty() && f.decorator_mentions.empty()) {
        why = "unused: `" + f.name + "` is never mentioned in this file, which is generated from a modular source "
              "(its header says so) and is not imported from";
      } else if (!f.decorator_mentions.empty()) {
        TSNode d = f.decorator_mentions.front();
        why = "unused: `" + f.name + "` is never called in this file; its only mention is the decorator `" +
              std::string(text(d)) + "` (line " + line_of(d) + "), which registers it and does not call it";
      } else {
        std::string names;
        for (size_t c : f.callers) names += (names.empty() ? "`" : ", `") + top_[c].name + "`";
        why = "unused: `" + f.name + "` is called only from " + names + ", which is never called in this file";
      }
      set_fact(f.name, "unused", why);
    }
  }

  void unused_classes() {
    std::set<std::string_view> mentioned;
    std::unordered_map<std::string_view, const ClassDef*> top;
    for (const ClassDef& c : classes_)
      if (!contains(c.name, ".")) top[c.name] = &c;
    for (const auto& [name, c] : top) {
      for (TSNode id : identifiers(name))
        if (!c->span.holds(ts_node_start_byte(id))) {
          mentioned.insert(name);
          break;
        }
      if (!mentioned.count(name) && named_by_string(name)) mentioned.insert(name);  // `__all__`, registries
    }
    for (const auto& [name, c] : top)
      if (!mentioned.count(name))
        set_fact(c->name, "unused",
                 "unused: `" + c->name + "` is never used in this file, which is generated from a modular source "
                 "(its header says so) and is not imported from: nothing builds this class");
  }

  // ------------------------------------------------------------ experts implementations

  // transformers' @use_experts_implementation (integrations/moe.py) wraps the class's
  // forward: each call looks up config._experts_implementation in ALL_EXPERTS_FUNCTIONS
  // and runs the original forward only for "eager" (or when none is configured on a
  // standalone module). PreTrainedModel resolves an unset implementation to
  // "grouped_mm", so the hand-written per-expert loop is the fallback.
  void expert_fallbacks() {
    for (const ClassDef& c : classes_) {
      for (TSNode d : c.decorators) {
        std::string_view t = text(d);
        size_t at = t.find("use_experts_implementation");
        if (at == std::string_view::npos) continue;
        size_t end = at + std::string_view("use_experts_implementation").size();
        if (end < t.size() && (std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '_')) continue;
        set_fact(c.name + ".forward", "fallback",
                 "eager fallback: `" + c.name + "` is decorated `@use_experts_implementation` (line " + line_of(d) +
                     "), which replaces its forward with the experts implementation the config names "
                     "(grouped_mm, all experts in one torch._grouped_mm, when none is requested): this "
                     "per-expert forward runs only with experts_implementation=\"eager\"");
        break;
      }
    }
  }

  // ------------------------------------------------------------ cold call sites

  struct Call {
    TSNode call{};
    std::string why;  // why its input is one vector per sequence; empty: not shown cold
  };

  // The function_definition around a node, or null.
  TSNode enclosing_def(TSNode n) const {
    for (TSNode p = parent_of(n); !ts_node_is_null(p); p = parent_of(p))
      if (sym(p) == S.function_definition) return p;
    return TSNode{};
  }

  bool is_index_constant(TSNode e) const {
    if (sym(e) == S.integer) return true;
    if (sym(e) == S.unary_operator && ts_node_named_child_count(e) == 1)
      return sym(ts_node_named_child(e, 0)) == S.integer;
    return false;
  }

  // Why `e`, an input in function `def`, is one vector per sequence; "" when nothing says
  // so. Names alone are weak evidence: transformers' vision towers return every merged
  // patch as `pooler_output`, so an attribute such as `out.pooler_output` counts only
  // where each `pooler_output=...` this file produces is itself shown cold.
  std::string cold_input(TSNode e, TSNode def, int depth) const {
    if (ts_node_is_null(e) || depth > 6) return "";
    TSSymbol k = sym(e);
    std::string_view t = text(e);
    if (k == S.parenthesized_expression && ts_node_named_child_count(e) == 1)
      return cold_input(ts_node_named_child(e, 0), def, depth + 1);
    if (k == S.conditional_expression) {  // a if c else None: every arm but None
      std::string found;
      for (TSNode arm : named(e)) {
        if (ts_node_eq(arm, field(e, S.f_condition)) || sym(arm) == S.none) continue;
        if (ts_node_eq(arm, ts_node_named_child(e, 1))) continue;  // the condition
        std::string why = cold_input(arm, def, depth + 1);
        if (why.empty()) return "";
        if (found.empty()) found = why;
      }
      return found;
    }
    if (k == S.subscript) return one_position(e, def);
    if (k == S.call) return cold_call(e, def, depth);
    if (k == S.attribute) {
      std::string_view attr = text(field(e, S.f_attribute));
      if (!contains(lower_ascii(attr), "pool")) return "";
      return produced_cold(attr, depth) ? "a pooled vector (`" + std::string(t) + "`)" : "";
    }
    if (k == S.identifier && !ts_node_is_null(def)) {
      // The last assignment of the name before this use must be cold; a parameter
      // named as pooled (`pooled_output`) is taken at its word.
      TSNode last{};
      bool any = false;
      assignments(field(def, S.f_body), t, ts_node_start_byte(e), [&](TSNode right) {
        any = true;
        last = right;
      });
      if (!any) return contains(lower_ascii(t), "pool") ? "a pooled vector (`" + std::string(t) + "`)" : "";
      if (ts_node_is_null(last)) return "";
      std::string why = cold_input(last, def, depth + 1);
      if (!why.empty() && !contains(why, "`" + std::string(t) + "`")) why += " through `" + std::string(t) + "`";
      return why;
    }
    return "";
  }

  // x[:, 0], x[:, -1, :], x[:, :, i, :] with i a range() loop variable: one position.
  std::string one_position(TSNode e, TSNode def) const {
    std::vector<TSNode> idx;
    TSTreeCursor c = ts_tree_cursor_new(e);
    if (ts_tree_cursor_goto_first_child(&c)) {
      do {
        if (ts_tree_cursor_current_field_id(&c) == S.f_subscript) idx.push_back(ts_tree_cursor_current_node(&c));
      } while (ts_tree_cursor_goto_next_sibling(&c));
    }
    ts_tree_cursor_delete(&c);
    if (idx.size() < 2 || sym(idx[0]) != S.slice || text(idx[0]) != ":") return "";
    for (size_t i = 1; i < idx.size(); ++i) {
      bool one = is_index_constant(idx[i]);
      if (!one && sym(idx[i]) == S.identifier && !ts_node_is_null(def))
        one = contains(text(def), "for " + std::string(text(idx[i])) + " in range(");
      if (one) return "one position per sequence (`" + std::string(text(e)) + "`)";
    }
    return "";
  }

  std::string cold_call(TSNode e, TSNode def, int depth) const {
    std::string_view t = text(e);
    TSNode f = field(e, S.f_function);
    if (ts_node_is_null(f)) return "";
    TSNode args = field(e, S.f_arguments);
    std::vector<TSNode> positional;
    for (TSNode a : named(args))
      if (sym(a) != S.keyword_argument) positional.push_back(a);
    if (sym(f) == S.attribute) {
      std::string_view method = text(field(f, S.f_attribute));
      TSNode object = field(f, S.f_object);
      if (method == "mean" || method == "amax" || method == "max" || method == "sum" || method == "logsumexp") {
        // Over a dim other than the features, of a plain tensor (not gathered rows).
        std::string_view a = ts_node_is_null(args) ? std::string_view{} : text(args);
        bool over_positions = a.size() > 2 && !contains(a, "-1") && (contains(a, "1") || contains(a, "dim"));
        TSSymbol ok = sym(object);
        if (over_positions && (ok == S.identifier || ok == S.attribute))
          return "a reduction over positions (`" + std::string(t) + "`)";
        return "";
      }
      // Shape-only methods keep what their object is.
      if (method == "flatten" || method == "reshape" || method == "view" || method == "squeeze" ||
          method == "unsqueeze" || method == "contiguous" || method == "to" || method == "float" ||
          method == "type_as") {
        if (sym(object) == S.identifier && text(object) == "torch" && !positional.empty())
          return cold_input(positional[0], def, depth + 1);
        return cold_input(object, def, depth + 1);
      }
      // A pooling module of the class: self.pooler(...), self.avgpool(...).
      std::string name = lower_ascii(method);
      if (contains(name, "pooler") || contains(name, "avgpool") || contains(name, "avg_pool") ||
          contains(name, "global_pool"))
        return "a pooled vector (`" + std::string(t) + "`)";
    }
    return "";
  }

  // Whether every `attr=value` keyword argument in this file (the outputs that fill
  // `out.attr`) passes a cold value, and there is one. Pass-throughs (`attr=x.attr`) are
  // skipped.
  bool produced_cold(std::string_view attr, int depth) const {
    if (depth > 3) return false;
    int producers = 0;
    for (TSNode id : identifiers(attr)) {
      TSNode kw = parent_of(id);
      if (ts_node_is_null(kw) || sym(kw) != S.keyword_argument || !ts_node_eq(field(kw, S.f_name), id)) continue;
      TSNode value = field(kw, S.f_value);
      if (ts_node_is_null(value) || sym(value) == S.none) continue;
      if (sym(value) == S.attribute && text(field(value, S.f_attribute)) == attr) continue;
      ++producers;
      if (cold_input(value, enclosing_def(kw), depth + 2).empty()) return false;
    }
    return producers > 0;
  }

  // Calls `fn(right)` for each `name = right` in a body before byte `before`, in order
  // (not entering nested defs); `fn(null)` for other bindings (x += y, a loop target).
  template <class Fn>
  void assignments(TSNode block, std::string_view name, uint32_t before, Fn&& fn, int depth = 0) const {
    if (ts_node_is_null(block) || depth > 30) return;
    for (TSNode s : named(block)) {
      if (ts_node_start_byte(s) >= before) return;
      TSSymbol k = sym(s);
      if (k == S.function_definition || k == S.class_definition || k == S.decorated_definition) continue;
      if (k == S.expression_statement && ts_node_named_child_count(s) > 0) {
        if (ts_node_end_byte(s) > before) continue;  // the statement of the use itself
        TSNode a = ts_node_named_child(s, 0);
        if (sym(a) == S.assignment || sym(a) == S.augmented_assignment) {
          TSNode left = field(a, S.f_left);
          if (!ts_node_is_null(left) && text(left) == name)
            fn(sym(a) == S.assignment ? field(a, S.f_right) : TSNode{});
        }
        continue;
      }
      if (k == S.for_statement) {
        TSNode left = field(s, S.f_left);
        if (!ts_node_is_null(left) && text(left) == name) fn(TSNode{});
      }
      assignments(s, name, before, fn, depth + 1);
    }
  }

  // A module class is cold where it is built only as `self.attr = Cls(...)` and every
  // use of those attributes is a call whose input is one vector per sequence.
  void cold_call_sites() {
    if (classes_.empty()) return;
    std::unordered_map<std::string_view, size_t> by_name;  // top-level classes only
    for (size_t i = 0; i < classes_.size(); ++i)
      if (!contains(classes_[i].name, ".")) by_name[classes_[i].name] = i;
    // Mentions of each class name outside its own definition.
    std::vector<std::vector<TSNode>> mentions(classes_.size());
    for (const auto& [name, ci] : by_name) {
      if (!function_named(classes_[ci].name + ".forward")) continue;  // nothing to mark
      for (TSNode id : identifiers(name))
        if (!classes_[ci].span.holds(ts_node_start_byte(id))) mentions[ci].push_back(id);
    }
    for (size_t ci = 0; ci < classes_.size(); ++ci) {
      const ClassDef& c = classes_[ci];
      if (mentions[ci].empty() || !by_name.count(c.name) || !function_named(c.name + ".forward")) continue;
      // Every mention: `self.attr = C(...)` inside a method of another class.
      std::vector<std::pair<TSNode, std::string_view>> owners;  // (owning class node, attr)
      bool followed = true;
      for (TSNode id : mentions[ci]) {
        TSNode call = parent_of(id);
        TSNode assign = ts_node_is_null(call) ? TSNode{} : parent_of(call);
        if (ts_node_is_null(assign) || sym(call) != S.call || !ts_node_eq(field(call, S.f_function), id) ||
            sym(assign) != S.assignment || !ts_node_eq(field(assign, S.f_right), call)) {
          followed = false;
          break;
        }
        TSNode left = field(assign, S.f_left);
        TSNode def = enclosing_def(assign);
        std::string self = self_name(def);
        if (sym(left) != S.attribute || self.empty() || text(field(left, S.f_object)) != self) {
          followed = false;
          break;
        }
        TSNode owner = def;
        while (!ts_node_is_null(owner) && sym(owner) != S.class_definition) owner = parent_of(owner);
        if (ts_node_is_null(owner)) {
          followed = false;
          break;
        }
        owners.emplace_back(owner, text(field(left, S.f_attribute)));
      }
      if (!followed) continue;
      std::vector<Call> calls;
      for (const auto& [owner, attr] : owners)
        if (!attribute_calls(owner, attr, calls)) {
          followed = false;
          break;
        }
      if (!followed || calls.empty()) continue;
      if (!std::all_of(calls.begin(), calls.end(), [](const Call& k) { return !k.why.empty(); })) continue;
      std::string why = "cold: `" + c.name + "` runs on one vector per sequence: every call in this file passes ";
      for (size_t i = 0; i < calls.size() && i < 2; ++i) {
        if (i) why += "; ";
        why += calls[i].why + " at line " + line_of(calls[i].call);
      }
      if (calls.size() > 2) why += "; and " + std::to_string(calls.size() - 2) + " more";
      set_fact(c.name + ".forward", "cold", why);
    }
  }

  // ------------------------------------------------------------ off by default

  // A module class every construction of which in this file sits under a configuration
  // flag that the model's configuration file (configuration_X.py beside modeling_X.py)
  // turns off by default runs only for non-default configurations: `unused`.
  void off_by_default() {
    if (classes_.empty()) return;
    auto config_path = configuration_sibling(path_);
    if (!config_path) return;
    std::string config;
    {
      std::ifstream in(*config_path, std::ios::binary);
      if (!in) return;
      config.resize(1 << 20);
      in.read(config.data(), static_cast<std::streamsize>(config.size()));
      config.resize(static_cast<size_t>(in.gcount()));
    }
    std::string config_name = fs::path(*config_path).filename().string();
    for (const ClassDef& c : classes_) {
      if (contains(c.name, ".") || !function_named(c.name + ".forward")) continue;
      std::vector<TSNode> uses;
      for (TSNode id : identifiers(c.name))
        if (!c.span.holds(ts_node_start_byte(id))) uses.push_back(id);
      if (uses.empty()) continue;
      std::string why;
      bool all = true;
      for (TSNode id : uses) {
        TSNode call = parent_of(id);
        if (ts_node_is_null(call) || sym(call) != S.call || !ts_node_eq(field(call, S.f_function), id)) {
          all = false;
          break;
        }
        // The nearest guard: an `if` whose consequence holds the call, or a conditional
        // expression whose true arm is the call.
        std::string flag;
        bool getattr_form = false;
        for (TSNode n = call, p = parent_of(call); !ts_node_is_null(p); n = p, p = parent_of(p)) {
          TSSymbol k = sym(p);
          if (k == S.function_definition || k == S.class_definition) break;
          TSNode cond{};
          if (k == S.if_statement && ts_node_eq(field(p, S.f_consequence), n)) cond = field(p, S.f_condition);
          else if (k == S.conditional_expression && ts_node_named_child_count(p) == 3 &&
                   ts_node_eq(ts_node_named_child(p, 0), n))
            cond = ts_node_named_child(p, 1);
          if (ts_node_is_null(cond)) continue;
          std::string_view t = text(cond);
          flag = config_flag(t);
          getattr_form = t.starts_with("getattr(");
          break;
        }
        std::optional<std::string> off = flag.empty() ? std::nullopt : false_default(config, flag, getattr_form);
        if (!off) {
          all = false;
          break;
        }
        if (why.empty()) why = "`" + flag + "`" + off->substr(off->find('`', 1) + 1) + " in " + config_name;
      }
      if (!all || why.empty()) continue;
      set_fact(c.name, "unused",
               "off by default: `" + c.name + "` is built only when the configuration turns it on, and " + why +
                   ": the default configuration never runs it (only checkpoints that turn it on do)");
    }
  }

  bool function_named(const std::string& name) const {
    return std::any_of(out_.functions.begin(), out_.functions.end(), [&](const ir::Function& f) { return f.name == name; });
  }

  // The first parameter of a method, "" otherwise.
  std::string self_name(TSNode def) const {
    if (ts_node_is_null(def)) return "";
    TSNode params = field(def, S.f_parameters);
    if (ts_node_is_null(params) || ts_node_named_child_count(params) == 0) return "";
    TSNode p = ts_node_named_child(params, 0);
    return sym(p) == S.identifier ? std::string(text(p)) : "";
  }

  // Each use of `self.attr` in the class: a call (collected with why its input is cold)
  // or the assignment that builds it. Any other use (iterated, passed on, indexed):
  // false.
  bool attribute_calls(TSNode owner, std::string_view attr, std::vector<Call>& calls) const {
    uint32_t b = ts_node_start_byte(owner), e = ts_node_end_byte(owner);
    for (TSNode id : identifiers(attr, b, e)) {
      TSNode a = parent_of(id);
      if (ts_node_is_null(a) || sym(a) != S.attribute || !ts_node_eq(field(a, S.f_attribute), id)) continue;
      TSNode def = enclosing_def(a);
      std::string self = self_name(def);
      if (self.empty() || text(field(a, S.f_object)) != self) continue;
      TSNode p = parent_of(a);
      if (ts_node_is_null(p)) return false;
      if (sym(p) == S.assignment && ts_node_eq(field(p, S.f_left), a)) continue;
      if (sym(p) != S.call || !ts_node_eq(field(p, S.f_function), a)) return false;
      TSNode args = field(p, S.f_arguments);
      TSNode input{};
      for (TSNode x : named(args)) {
        if (sym(x) == S.keyword_argument) {
          if (ts_node_is_null(input)) input = field(x, S.f_value);
          continue;
        }
        if (sym(x) == S.list_splat || sym(x) == S.dictionary_splat) return false;
        input = x;
        break;
      }
      calls.push_back({p, ts_node_is_null(input) ? "" : cold_input(input, def, 0)});
    }
    return true;
  }
};

}  // namespace

void add_usage_facts(const SourceFile& file, TSNode root, ir::Module& out) { UsageStage(file, root, out).run(); }

}  // namespace mlsem::python
