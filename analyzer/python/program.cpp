// Program facts for host-device syncs, computed after lowering from the syntax tree:
// the guard a statement runs under inside its loop (`if step % log_every == 0`), a
// read whose value decides when the loop ends (convergence checks), values that are not
// tensors (`int(os.environ[...])`), test and timing code, and whether the file places
// anything on a GPU. docs/IR.md lists the attributes.
#include "python/program.h"

#include "core/text.h"

#include <string>
#include <string_view>
#include <vector>

#include "python/program_util.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {

using program::home_of;
using program::last_part;
using program::test_path;


// A condition that holds on a few iterations only: every N steps, the first step,
// a logging/evaluation/checkpoint switch.
bool periodic_condition(std::string_view c) {
  if (contains(c, "%")) return true;  // step % log_interval == 0
  if (contains(c, "== 0") || contains(c, "==0") || contains(c, "== 1")) return true;  // i == 0
  for (std::string_view w : {"log", "verbose", "debug", "print", "report", "display", "save", "checkpoint",
                             "is_last", "last_step", "should_", "eval", "profil"})
    if (contains(c, w)) return true;
  return false;
}

// Whether a call ends the program: sys.exit(), exit(), quit(), os._exit().
bool exit_call(const Syntax& S, const SourceFile& f, TSNode stmt) {
  if (ts_node_symbol(stmt) != S.expression_statement || ts_node_named_child_count(stmt) == 0) return false;
  TSNode call = ts_node_named_child(stmt, 0);
  if (ts_node_symbol(call) != S.call) return false;
  std::string_view callee = text_of(field(call, S.f_function), f.text);
  return callee == "sys.exit" || callee == "exit" || callee == "quit" || callee == "os._exit";
}

// Whether a block leaves the loop: a `break`, `return`, `raise` or a call ending the
// program, outside nested loops.
bool exits_loop(const Syntax& S, const SourceFile& f, TSNode block) {
  for (TSNode c : named_children(block, S.comment)) {
    TSSymbol k = ts_node_symbol(c);
    std::string_view type = ts_node_type(c);
    if (type == "break_statement" || type == "raise_statement" || k == S.return_statement || exit_call(S, f, c))
      return true;
    if (k == S.for_statement || k == S.while_statement || k == S.function_definition) continue;
    if (ts_node_named_child_count(c) > 0 && exits_loop(S, f, c)) return true;
  }
  return false;
}

// `int(imgsz * 0.5)`, `int(4 * t / n)`: a conversion of arithmetic over names and
// number literals, with no call or subscript, is Python arithmetic (a tensor's value
// would come from a call: int(x.sum()), float(loss)).
bool python_arithmetic(std::string_view t) {
  size_t open = t.find('(');
  if (open == std::string_view::npos || (t.substr(0, open) != "int" && t.substr(0, open) != "float") || t.back() != ')')
    return false;
  std::string_view inner = t.substr(open + 1, t.size() - open - 2);
  if (inner.find_first_of("([") != std::string_view::npos) return false;
  bool literal = false, op = false;
  for (size_t i = 0; i < inner.size(); ++i) {
    char c = inner[i];
    if (c >= '0' && c <= '9' && (i == 0 || !word_byte(inner[i - 1]))) literal = true;
    op |= c == '*' || c == '/' || c == '+' || c == '-';
  }
  return literal && op;
}

struct Facts {
  std::string guard;       // the periodic condition the sync runs under, if any
  bool decides_exit = false;
  bool printed = false;    // its value only reaches a print or a progress bar
};

// A call that shows a value: print(...), pbar.set_description(...), set_postfix, a
// logger's info/debug, tqdm.write.
bool display_call(const Syntax& S, const SourceFile& f, TSNode n) {
  if (ts_node_symbol(n) != S.call) return false;
  std::string_view callee = text_of(field(n, S.f_function), f.text);
  std::string_view last = last_part(callee);
  return callee == "print" || last == "set_description" || last == "set_postfix" || last == "set_postfix_str" ||
         (last != callee && (last == "info" || last == "debug" || last == "write"));
}

// Whether `n` is (inside) an argument of a display call, within its statement.
bool inside_display(const Syntax& S, const SourceFile& f, TSNode n, TSNode stop) {
  for (TSNode p = ts_node_parent(n); !ts_node_is_null(p) && !ts_node_eq(p, stop); p = ts_node_parent(p)) {
    if (display_call(S, f, p)) return true;
    if (ts_node_symbol(p) == S.block) return false;
  }
  return false;
}

// Whether every use of `name` in `body`, but its bindings, is an argument of a display call.
bool only_displayed(const Syntax& S, const SourceFile& f, TSNode body, std::string_view name) {
  bool any = false;
  for (TSNode id : identifiers_named(body, f.text, name, S.identifier, ts_node_start_byte(body), ts_node_end_byte(body))) {
    TSNode p = ts_node_parent(id);
    if (!ts_node_is_null(p) && (ts_node_symbol(p) == S.assignment || ts_node_symbol(p) == S.augmented_assignment) &&
        ts_node_eq(field(p, S.f_left), id))
      continue;
    if (!inside_display(S, f, id, body)) return false;
    any = true;
  }
  return any;
}

// Whether `name` is tested, in `body` (a loop's body), by a condition that leaves the
// loop: `if not math.isfinite(loss_value): sys.exit(1)`, `assert math.isfinite(v)`.
bool tested_before_exit(const Syntax& S, const SourceFile& f, TSNode body, std::string_view name) {
  for (TSNode id : identifiers_named(body, f.text, name, S.identifier, ts_node_start_byte(body), ts_node_end_byte(body))) {
    for (TSNode p = ts_node_parent(id); !ts_node_is_null(p) && !ts_node_eq(p, body); p = ts_node_parent(p)) {
      TSSymbol k = ts_node_symbol(p);
      if (std::string_view(ts_node_type(p)) == "assert_statement") return true;
      if (k == S.if_statement || k == S.elif_clause) {
        TSNode cond = field(p, S.f_condition), cons = field(p, S.f_consequence);
        if (!ts_node_is_null(cond) && ts_node_start_byte(cond) <= ts_node_start_byte(id) &&
            ts_node_end_byte(id) <= ts_node_end_byte(cond) && !ts_node_is_null(cons) && exits_loop(S, f, cons))
          return true;
        break;
      }
      if (k == S.for_statement || k == S.while_statement || k == S.function_definition) break;
    }
  }
  return false;
}

// Walks from the sync's syntax node up to its loop (or function) and records the guard:
// a periodic condition, or the branch of an abort (`if not finite: sys.exit(1)`), which
// runs at most once. A read decides the exit when it is the loop's or an abort's
// condition, sits in an assert, or is bound to a name such a condition tests.
Facts walk(const Syntax& S, const SourceFile& f, TSNode root, const Range& r) {
  Facts out;
  TSNode n = ts_node_descendant_for_byte_range(root, r.begin_byte, r.end_byte);
  TSNode child = n;
  std::string_view bound;  // `name` of `name = <read>`
  out.printed = inside_display(S, f, n, root);
  for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); child = p, p = ts_node_parent(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.function_definition || k == S.lambda) break;
    if (std::string_view(ts_node_type(p)) == "assert_statement") out.decides_exit = true;
    if (k == S.assignment && bound.empty()) {
      TSNode left = field(p, S.f_left), right = field(p, S.f_right);
      if (!ts_node_is_null(left) && ts_node_symbol(left) == S.identifier && ts_node_eq(right, child))
        bound = text_of(left, f.text);
    }
    if (k == S.for_statement || k == S.while_statement) {
      TSNode cond = ts_node_child_by_field_id(p, S.f_condition);
      if (k == S.while_statement && !ts_node_is_null(cond) && ts_node_eq(cond, child)) out.decides_exit = true;
      TSNode body = field(p, S.f_body);
      if (!bound.empty() && !ts_node_is_null(body) && tested_before_exit(S, f, body, bound)) out.decides_exit = true;
      if (!bound.empty() && !ts_node_is_null(body) && only_displayed(S, f, body, bound)) out.printed = true;
      // A loop that neither calls backward() nor steps (an evaluation pass, a loop over
      // loss terms) runs when the step around it runs it: keep looking for its guard.
      std::string_view loop_text = text_of(p, f.text);
      if (contains(loop_text, "backward(") || contains(loop_text, ".step(")) break;
      bound = {};
      continue;
    }
    if (k == S.if_statement || k == S.elif_clause) {
      TSNode cond = ts_node_child_by_field_id(p, S.f_condition);
      TSNode cons = ts_node_child_by_field_id(p, S.f_consequence);
      if (!ts_node_is_null(cond) && ts_node_eq(cond, child)) {
        if (!ts_node_is_null(cons) && exits_loop(S, f, cons)) out.decides_exit = true;
      } else if (!ts_node_is_null(cons) && ts_node_eq(cons, child) && out.guard.empty()) {
        std::string_view c = text_of(cond, f.text);
        if (periodic_condition(c) || exits_loop(S, f, cons)) out.guard = std::string(c);
      }
    }
  }
  return out;
}


// The condition of a branch that aborts (`if not math.isfinite(loss): sys.exit(1)`): it
// runs at most once. Empty for other regions.
std::string abort_branch(const Syntax& S, const SourceFile& file, TSNode root, const ir::Region& reg) {
  auto which = reg.attrs.find("branch");
  if (reg.kind != "branch" || !reg.range.valid() || which == reg.attrs.end() ||
      std::get<std::string>(which->second) == "else")
    return {};
  TSNode b = ts_node_descendant_for_byte_range(root, reg.range.begin_byte, reg.range.end_byte);
  while (!ts_node_is_null(b) && ts_node_symbol(b) != S.block) b = ts_node_parent(b);
  if (ts_node_is_null(b) || !exits_loop(S, file, b)) return {};
  auto cond = reg.attrs.find("condition");
  return cond != reg.attrs.end() && std::get_if<std::string>(&cond->second) ? std::get<std::string>(cond->second)
                                                                             : "abort";
}

}  // namespace

void annotate_program(const SourceFile& file, TSNode root, ir::Module& out) {
  const Syntax& S = Syntax::get();
  bool gpu_file = program::gpu_text(file.text);
  program::annotate_nodes(file, root, out, gpu_file);
  bool any_sync = false;
  for (const ir::Function& fn : out.functions)
    for (const ir::Node& node : fn.nodes) any_sync |= node.op == "sync";
  if (!any_sync) return;
  bool test_file = test_path(file.path);
  bool bench_file = contains(file.path, "bench");
  // A benchmark or profiling script (bench.py, benchmark_x.py): its loops measure.
  std::string_view base = last_part(file.path, '/');
  bool bench_script = base.rfind("bench", 0) == 0 || contains(base, "benchmark") || base.rfind("profile", 0) == 0;
  for (ir::Function& fn : out.functions) {
    // `if` regions: the periodic guard of their condition (the first clause's).
    for (ir::Region& reg : fn.regions) {
      if (reg.kind != "if" || !reg.range.valid()) continue;
      TSNode s = ts_node_descendant_for_byte_range(root, reg.range.begin_byte, reg.range.end_byte);
      while (!ts_node_is_null(s) && ts_node_symbol(s) != S.if_statement) s = ts_node_parent(s);
      if (ts_node_is_null(s)) continue;
      std::string_view c = text_of(ts_node_child_by_field_id(s, S.f_condition), file.text);
      if (periodic_condition(c)) reg.attrs["guard"] = std::string(c);
    }
    std::string_view short_name = last_part(fn.name);
    std::string_view fn_text = file.slice(fn.range);
    bool test_fn = short_name.rfind("test", 0) == 0;
    bool timed = bench_file || contains(fn_text, "time.time(") || contains(fn_text, "perf_counter") ||
                 contains(fn_text, "elapsed_time") || contains(fn_text, "timeit");
    for (ir::Node& node : fn.nodes) {
      if (node.op != "sync" || !node.range.valid()) continue;
      bool own = node.range.begin_byte >= fn.range.begin_byte && node.range.end_byte <= fn.range.end_byte;
      Facts facts;
      if (own) {
        facts = walk(S, file, root, node.range);
      } else {
        // Inlined from a helper: the guards are those of the call site's regions.
        for (uint32_t r = node.region;; r = fn.regions[r].parent) {
          if (r >= fn.regions.size()) break;
          const ir::Region& reg = fn.regions[r];
          if (reg.kind == "loop") break;
          auto g = reg.attrs.find("guard");
          if (g != reg.attrs.end() && std::get_if<std::string>(&g->second)) {
            facts.guard = std::get<std::string>(g->second);
            break;
          }
          if (std::string abort = abort_branch(S, file, root, reg); !abort.empty()) {
            facts.guard = abort;
            break;
          }
          if (r == 0) break;
        }
      }
      // A read inside a function that writes a checkpoint (save_checkpoint, inlined into
      // the loop under its own save interval) moves what must reach the host.
      if (const ir::Function* origin = home_of(out, node.range); origin && facts.guard.empty()) {
        std::string origin_name = lower_ascii(last_part(origin->name));
        if (contains(origin_name, "save") || contains(origin_name, "checkpoint"))
          facts.guard = "writes a checkpoint (" + origin->name + ")";
      }
      if (!facts.guard.empty()) node.attrs["guarded"] = facts.guard;
      if (facts.decides_exit) node.attrs["decides_exit"] = true;
      if (facts.printed) node.attrs["printed"] = true;
      std::string_view t = file.slice(node.range);
      if (contains(t, "environ") || contains(t, "getenv") || contains(t, "argv") || contains(t, "args.") ||
          python_arithmetic(t))
        node.attrs["host_value"] = true;
      if (test_file || test_fn) node.attrs["test_code"] = true;
      auto m = node.attrs.find("method");
      if (bench_script || (timed && m != node.attrs.end() && std::get_if<std::string>(&m->second) &&
                           std::get<std::string>(m->second) == "synchronize"))
        node.attrs["timing"] = true;
      if (gpu_file) node.attrs["gpu_file"] = true;
    }
  }
}

}  // namespace mlsem::python
