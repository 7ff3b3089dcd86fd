// Program facts for host-device syncs, computed after lowering from the syntax tree:
// the guard a statement runs under inside its loop (`if step % log_every == 0`), a
// read whose value decides when the loop ends (convergence checks), values that are not
// tensors (`int(os.environ[...])`), test and timing code, and whether the file places
// anything on a GPU. docs/IR.md lists the attributes.
#include "python/program.h"

#include "core/text.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "python/names.h"
#include "python/program_util.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {

using program::blocking_copy;
using program::flag_of;
using program::home_of;
using program::host_number;
using program::last_part;
using program::test_path;


// A condition that holds on a few iterations only: every N steps, the first step,
// a logging/evaluation/checkpoint switch.
bool periodic_condition(std::string_view c) {
  if (contains(c, "%")) return true;  // step % log_interval == 0
  if (contains(c, "== 0") || contains(c, "==0") || contains(c, "== 1")) return true;  // i == 0
  // ... or a helper named so: `divisible_by(step, validate_every)`.
  // "log" as in log_interval or do_log, not logits or logit_normal.
  for (size_t at = c.find("log"); at != std::string_view::npos; at = c.find("log", at + 1))
    if (c.substr(at, 5) != "logit") return true;
  for (std::string_view w : {"verbose", "debug", "print", "report", "display", "save", "checkpoint", "is_last",
                             "last_step", "should_", "eval", "profil", "divisible"})
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
  bool summed = false;     // its value is only summed or collected for later (deferrable)
  TSNode step_loop{};      // the training loop it runs in (null when none)
};

// Whether the read `n` only adds its value to a running total or a collection for later:
// `total += loss.item()`, `total = total + x.item()`, `losses.append(loss.item())`,
// `meter.update(loss.item(), n)` (an average meter): what can stay on the device and be
// read every N steps. A value passed to other code (`envs.step(action.cpu().numpy())`),
// tested, or stored under a key is used on the host as soon as it is read.
bool summed_for_later(const Syntax& S, const SourceFile& f, TSNode n) {
  for (TSNode p = parent_of(n), child = n; !ts_node_is_null(p); child = p, p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.block || k == S.function_definition || k == S.lambda || k == S.if_statement ||
        k == S.comparison_operator || k == S.boolean_operator || k == S.not_operator)
      return false;
    if (k == S.augmented_assignment) {
      TSNode left = field(p, S.f_left);
      std::string_view op = text_of(p, f.text);
      return !ts_node_is_null(left) && !ts_node_eq(left, child) &&
             (contains(op, "+=") || contains(op, "-="));
    }
    if (k == S.assignment) {
      TSNode left = field(p, S.f_left), right = field(p, S.f_right);
      if (ts_node_is_null(left) || ts_node_eq(left, child) || ts_node_symbol(left) != S.identifier) return false;
      // `total = total + x.item()`: the name read on the right, with a + or - at the top.
      return ts_node_symbol(right) == S.binary_operator &&
             !identifiers_named(right, f.text, text_of(left, f.text), S.identifier, ts_node_start_byte(right),
                                ts_node_end_byte(right)).empty();
    }
    if (k == S.call) {
      TSNode fn = field(p, S.f_function);
      if (ts_node_is_null(fn) || ts_node_eq(fn, child)) continue;
      std::string_view callee = text_of(fn, f.text);
      std::string_view last = last_part(callee);
      if (last == "append" || last == "extend" || (last == "update" && last != callee)) return true;
      // A conversion or arithmetic on the way (`float(...)`, `round(...)`): look further up.
      if (callee == "float" || callee == "int" || callee == "round" || callee == "abs") continue;
      return false;
    }
  }
  return false;
}

// A call that shows or logs a value: print(...), pbar.set_description(...), set_postfix, a
// logger's info/debug, tqdm.write, accelerator.print, and a metrics logger's
// `accelerator.log(logs, step=...)`, `wandb.log(...)`, `self.log(...)`, `writer.add_scalar`,
// `log_metrics`, `log_dict` (not `torch.log(x)`, `math.log(x)` nor `p.log()`).
bool display_call(const Syntax& S, const SourceFile& f, TSNode n) {
  if (ts_node_symbol(n) != S.call) return false;
  std::string_view callee = text_of(field(n, S.f_function), f.text);
  std::string_view last = last_part(callee);
  if (callee == "print" || last == "set_description" || last == "set_postfix" || last == "set_postfix_str")
    return true;
  if (last == callee) return false;
  if (last == "info" || last == "debug" || last == "write" || last == "print" || last == "add_scalar" ||
      last == "add_scalars" || last == "log_metrics" || last == "log_metric" || last == "log_dict")
    return true;
  if (last != "log") return false;
  std::string_view receiver = callee.substr(0, callee.size() - 4);
  for (std::string_view math : {"torch", "math", "np", "numpy", "F", "jnp", "scipy", "cmath"})
    if (receiver == math) return false;
  TSNode args = field(n, S.f_arguments);
  return !ts_node_is_null(args) && ts_node_named_child_count(args) > 0;
}

// A progress bar's text set by assignment: `pbar.desc = f"... {loss:.3g}"`.
bool display_assignment(const Syntax& S, const SourceFile& f, TSNode n) {
  if (ts_node_symbol(n) != S.assignment) return false;
  std::string_view left = last_part(text_of(field(n, S.f_left), f.text));
  return left == "desc" || left == "postfix";
}

// Whether `n` is (inside) an argument of a display call, or the value of a progress
// bar's text, within its statement.
bool inside_display(const Syntax& S, const SourceFile& f, TSNode n, TSNode stop) {
  for (TSNode p = parent_of(n); !ts_node_is_null(p) && !ts_node_eq(p, stop); p = parent_of(p)) {
    if (display_call(S, f, p) || display_assignment(S, f, p)) return true;
    if (ts_node_symbol(p) == S.block) return false;
  }
  return false;
}

// Whether `id` binds its name, or is read only to compute the name's new value: the left
// of `name = ...`/`name += ...`, or a use on the right of `name = (name * i + x) / (i + 1)`
// (a running mean).
bool binds_own_name(const Syntax& S, const SourceFile& f, TSNode id, std::string_view name) {
  for (TSNode p = parent_of(id); !ts_node_is_null(p); p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.assignment || k == S.augmented_assignment) {
      TSNode left = field(p, S.f_left);
      return !ts_node_is_null(left) && text_of(left, f.text) == name;
    }
    if (k == S.block || k == S.expression_statement) return false;
  }
  return false;
}

// Whether every use of `name` in `body`, but its bindings and its own updates, is an
// argument of a display call or a progress bar's text.
bool only_displayed(const Syntax& S, const SourceFile& f, TSNode body, std::string_view name) {
  bool any = false;
  for (TSNode id : identifiers_named(body, f.text, name, S.identifier, ts_node_start_byte(body), ts_node_end_byte(body))) {
    if (binds_own_name(S, f, id, name)) continue;
    if (!inside_display(S, f, id, body)) return false;
    any = true;
  }
  return any;
}

// Whether a use of `name` in `body` is an argument of a display or logging call that runs
// on every iteration (under no periodic `if` of the body): the value is shown or logged
// each step, so the step reads it back by design (`logs = {"loss": loss.item()}` then
// `accelerator.log(logs, step=step)`).
bool displayed_each_step(const Syntax& S, const SourceFile& f, TSNode body, std::string_view name) {
  for (TSNode id : identifiers_named(body, f.text, name, S.identifier, ts_node_start_byte(body), ts_node_end_byte(body))) {
    if (binds_own_name(S, f, id, name) || !inside_display(S, f, id, body)) continue;
    bool periodic = false;
    for (TSNode p = parent_of(id); !ts_node_is_null(p) && !ts_node_eq(p, body); p = parent_of(p)) {
      TSSymbol k = ts_node_symbol(p);
      if (k == S.if_statement || k == S.elif_clause) {
        TSNode cond = field(p, S.f_condition);
        if (!ts_node_is_null(cond) && periodic_condition(text_of(cond, f.text)) &&
            !(ts_node_start_byte(cond) <= ts_node_start_byte(id) && ts_node_end_byte(id) <= ts_node_end_byte(cond)))
          periodic = true;
      }
    }
    if (!periodic) return true;
  }
  return false;
}

// The name a read's value is collected into, from the statement holding it: `name = ...`,
// `name += ...`, `name[k] = ...`, `name.update(k=...)`/`name.append(...)`; empty otherwise.
std::string_view collector(const Syntax& S, const SourceFile& f, TSNode n) {
  for (TSNode p = parent_of(n), child = n; !ts_node_is_null(p); child = p, p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.block || k == S.function_definition || k == S.lambda) return {};
    if (k == S.call) {
      TSNode fn = field(p, S.f_function);
      if (!ts_node_is_null(fn) && ts_node_symbol(fn) == S.attribute && !ts_node_eq(fn, child)) {
        std::string_view method = text_of(field(fn, S.f_attribute), f.text);
        TSNode recv = field(fn, S.f_object);
        if ((method == "update" || method == "append") && !ts_node_is_null(recv) && ts_node_symbol(recv) == S.identifier)
          return text_of(recv, f.text);
      }
    }
    if (k == S.assignment || k == S.augmented_assignment) {
      TSNode left = field(p, S.f_left);
      if (ts_node_is_null(left) || ts_node_eq(left, child)) return {};
      while (!ts_node_is_null(left) && ts_node_symbol(left) == S.subscript) left = field(left, S.f_value);
      return !ts_node_is_null(left) && ts_node_symbol(left) == S.identifier ? text_of(left, f.text) : std::string_view{};
    }
  }
  return {};
}

// Whether `name` is tested, in `body` (a loop's body), by a condition that leaves the
// loop: `if not math.isfinite(loss_value): sys.exit(1)`, `assert math.isfinite(v)`.
bool tested_before_exit(const Syntax& S, const SourceFile& f, TSNode body, std::string_view name) {
  for (TSNode id : identifiers_named(body, f.text, name, S.identifier, ts_node_start_byte(body), ts_node_end_byte(body))) {
    for (TSNode p = parent_of(id); !ts_node_is_null(p) && !ts_node_eq(p, body); p = parent_of(p)) {
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

// The periodic condition `cond` amounts to, or empty: its own text, or, for a bare name
// (`if is_metric_step:`, `if not should_log:`), the value last bound to that name before
// it in the same function (`is_metric_step = (i % metric_every == 0) or last_batch`).
std::string periodic_guard(const Syntax& S, const SourceFile& f, TSNode cond) {
  if (ts_node_is_null(cond)) return {};
  std::string_view c = text_of(cond, f.text);
  if (periodic_condition(c)) return std::string(c);
  TSNode name = cond;
  if (ts_node_is_null(name) || ts_node_symbol(name) != S.identifier) return {};
  TSNode scope = cond;
  while (!ts_node_is_null(scope) && ts_node_symbol(scope) != S.function_definition && ts_node_symbol(scope) != S.module)
    scope = parent_of(scope);
  if (ts_node_is_null(scope)) return {};
  std::string_view value;
  for (TSNode id : identifiers_named(scope, f.text, text_of(name, f.text), S.identifier, ts_node_start_byte(scope),
                                     ts_node_start_byte(cond))) {
    TSNode a = parent_of(id);
    if (!ts_node_is_null(a) && ts_node_symbol(a) == S.assignment && ts_node_eq(field(a, S.f_left), id))
      value = text_of(field(a, S.f_right), f.text);
  }
  if (!value.empty() && periodic_condition(value)) return std::string(c) + " (" + std::string(value) + ")";
  return {};
}

// Whether a block skips the rest of the iteration or function: `return`, `continue`,
// `break` or `raise` among its statements.
bool skips_rest(const Syntax& S, TSNode block) {
  for (TSNode c : named_children(block, S.comment)) {
    std::string_view type = ts_node_type(c);
    if (ts_node_symbol(c) == S.return_statement || type == "continue_statement" || type == "break_statement" ||
        type == "raise_statement")
      return true;
  }
  return false;
}

// The periodic guard of an early exit before `stmt` in `block`, or empty (the first
// such exit in the block's order): `if not should_log: return` or
// `if step % n != 0: continue` above the read means the read runs only on the periodic
// steps. An exit on the periodic steps themselves (`if step % n == 0: continue`) leaves
// the read on all the others: no guard.
std::string early_exit_guard(const Syntax& S, const SourceFile& f, TSNode block, TSNode stmt) {
  // One listing of the block (ts_node_prev_named_sibling walks from the first child).
  for (TSNode prev : named_children(block, S.comment)) {
    if (ts_node_start_byte(prev) >= ts_node_start_byte(stmt)) break;
    if (ts_node_symbol(prev) != S.if_statement) continue;
    TSNode cons = field(prev, S.f_consequence);
    if (ts_node_is_null(cons) || !skips_rest(S, cons)) continue;
    TSNode cond = field(prev, S.f_condition);
    if (ts_node_is_null(cond)) continue;
    if (ts_node_symbol(cond) == S.not_operator) {
      if (std::string g = periodic_guard(S, f, field(cond, S.f_argument)); !g.empty()) return g;
      continue;
    }
    std::string_view c = text_of(cond, f.text);
    if (contains(c, "%") && (contains(c, "!= 0") || contains(c, "!=0"))) return std::string(c);
  }
  return {};
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
  out.summed = summed_for_later(S, f, n);
  std::string_view collected = collector(S, f, n);  // logs of `logs = {"loss": loss.item()}`
  for (TSNode p = parent_of(n); !ts_node_is_null(p); child = p, p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.block && out.guard.empty()) out.guard = early_exit_guard(S, f, p, child);
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
      if (!collected.empty() && !ts_node_is_null(body) && displayed_each_step(S, f, body, collected)) out.printed = true;
      // `preds = logits.argmax(-1).cpu()` only collected (`all.extend(preds.tolist())`), or
      // `lr = x.item()` read only after the loop (not in its `while` condition either):
      // summed for later too.
      if (!bound.empty() && !ts_node_is_null(body) && !out.summed) {
        bool later = true;
        for (TSNode id : identifiers_named(p, f.text, bound, S.identifier, ts_node_start_byte(p), ts_node_end_byte(p)))
          if (!binds_own_name(S, f, id, bound) && !summed_for_later(S, f, id)) later = false;
        out.summed = later;
      }
      // A loop that neither calls backward() nor steps (an evaluation pass, a loop over
      // loss terms) runs when the step around it runs it: keep looking for its guard.
      std::string_view loop_text = text_of(p, f.text);
      if (contains(loop_text, "backward(") || contains(loop_text, ".step(")) {
        out.step_loop = p;
        break;
      }
      bound = {};
      continue;
    }
    if (k == S.if_statement || k == S.elif_clause) {
      TSNode cond = ts_node_child_by_field_id(p, S.f_condition);
      TSNode cons = ts_node_child_by_field_id(p, S.f_consequence);
      if (!ts_node_is_null(cond) && ts_node_eq(cond, child)) {
        if (!ts_node_is_null(cons) && exits_loop(S, f, cons)) out.decides_exit = true;
      } else if (!ts_node_is_null(cons) && ts_node_eq(cons, child) && out.guard.empty()) {
        if (std::string g = periodic_guard(S, f, cond); !g.empty()) out.guard = g;
        else if (exits_loop(S, f, cons)) out.guard = std::string(text_of(cond, f.text));
      }
    }
  }
  return out;
}

// What a training step does on every iteration besides a given read: a display of a
// value read from the GPU (`print(..., loss.item())`), and an operation that syncs by
// itself: its result's shape depends on the data (`x[mask]`, `.nonzero()`,
// `torch.unique`), a copy to the GPU without non_blocking=True, `torch.cuda.synchronize()`.
// Each is kept with its range and line; code under a periodic guard or in a branch that
// leaves the loop does not run every step and is left out.
struct StepFacts {
  struct Site {
    uint32_t begin, end;
    std::string line;
    bool copy = false;  // a blocking copy to the GPU (the rest read back or wait)
  };
  std::vector<Site> displays, shape_syncs;
};
using Steps = std::map<uint32_t, StepFacts>;  // by the step loop's first byte

// `x[mask]`, `x[x > 0]` read (not assigned: `x[mask] = 0` is a masked_fill, no sync),
// `.nonzero()`, `torch.nonzero(x)`, `masked_select`, `torch.unique`.
bool shape_sync(const Syntax& S, const SourceFile& f, TSNode n) {
  TSSymbol k = ts_node_symbol(n);
  if (k == S.subscript) {
    TSNode parent = parent_of(n);
    if (!ts_node_is_null(parent) && (ts_node_symbol(parent) == S.assignment || ts_node_symbol(parent) == S.augmented_assignment) &&
        ts_node_eq(field(parent, S.f_left), n))
      return false;
    TSNode index = field(n, S.f_subscript);
    if (ts_node_is_null(index) || !ts_node_is_null(ts_node_next_named_sibling(index))) return false;
    TSSymbol ik = ts_node_symbol(index);
    if (ik == S.comparison_operator) return true;
    return ik == S.identifier && contains(lower_ascii(text_of(index, f.text)), "mask");
  }
  if (k != S.call) return false;
  std::string_view callee = text_of(field(n, S.f_function), f.text);
  std::string_view last = last_part(callee);
  return last == "nonzero" || last == "masked_select" || callee == "torch.unique" || (last == "unique" && last != callee);
}

// `torch.cuda.synchronize()`; a barrier (`dist.barrier()`, accelerate's
// `wait_for_everyone()`); an AMP scaler's `scaler.step(optimizer)`, which reads found_inf
// back to skip a step with infinite gradients; the step of an optimizer in a file that wraps
// one in apex's LARC, whose step tests each parameter's norms on the host
// (`if param_norm != 0 and grad_norm != 0`).
bool explicit_wait(const Syntax& S, const SourceFile& f, TSNode n) {
  if (ts_node_symbol(n) != S.call) return false;
  std::string_view callee = text_of(field(n, S.f_function), f.text);
  std::string_view last = last_part(callee);
  if (last == "synchronize" || last == "barrier" || last == "wait_for_everyone") return true;
  if (last != "step" || last == callee) return false;
  std::string_view receiver = callee.substr(0, callee.size() - 5);
  if (contains(lower_ascii(receiver), "scaler")) return true;
  return contains(f.text, "LARC(") && is_optimizer_name(receiver);
}

// The condition of a finiteness check that aborts (`if torch.isnan(loss): raise`, `if not
// math.isfinite(loss.item()): sys.exit(1)`): it reads the loss back on every step.
bool finiteness_check(const Syntax& S, const SourceFile& f, TSNode cond) {
  if (ts_node_is_null(cond)) return false;
  std::string_view c = text_of(cond, f.text);
  (void)S;
  return contains(c, "isnan(") || contains(c, "isinf(") || contains(c, "isfinite(") || contains(c, ".item()");
}

// `conditional`: `n` is inside an `if` of the step. A blocking copy or a synchronize()
// counts only outside one: `if not args.prefetcher: x = x.to(device)` and
// `if args.synchronize_step: torch.cuda.synchronize()` are not the default path.
void scan_step(const Syntax& S, const SourceFile& f, TSNode n, bool guarded, StepFacts& out, bool conditional) {
  TSSymbol k = ts_node_symbol(n);
  if (k == S.function_definition || k == S.lambda || k == S.class_definition) return;
  if (!guarded && std::string_view(ts_node_type(n)) == "assert_statement" &&
      finiteness_check(S, f, ts_node_named_child(n, 0)))
    out.shape_syncs.push_back({ts_node_start_byte(n), ts_node_end_byte(n), line_of(n)});
  if (!guarded) {
    if (display_call(S, f, n) || display_assignment(S, f, n)) {
      std::string_view t = text_of(n, f.text);
      if (contains(t, ".item()") || contains(t, ".tolist()") || contains(t, ".cpu()"))
        out.displays.push_back({ts_node_start_byte(n), ts_node_end_byte(n), line_of(n)});
    }
    if (shape_sync(S, f, n) || (!conditional && explicit_wait(S, f, n)))
      out.shape_syncs.push_back({ts_node_start_byte(n), ts_node_end_byte(n), line_of(n)});
    else if (!conditional && blocking_copy(S, f, n))
      out.shape_syncs.push_back({ts_node_start_byte(n), ts_node_end_byte(n), line_of(n), true});
  }
  if (k == S.if_statement || k == S.elif_clause) {
    // A periodic branch, and a branch that leaves the loop (an abort), do not run every step.
    TSNode cond = field(n, S.f_condition), cons = field(n, S.f_consequence);
    bool rare = !ts_node_is_null(cons) &&
                ((!ts_node_is_null(cond) && periodic_condition(text_of(cond, f.text))) || exits_loop(S, f, cons));
    // An abort on a non-finite loss is tested on every step: the step waits there.
    if (!guarded && !ts_node_is_null(cons) && exits_loop(S, f, cons) && finiteness_check(S, f, cond))
      out.shape_syncs.push_back({ts_node_start_byte(cond), ts_node_end_byte(cond), line_of(cond)});
    for (TSNode c : named_children(n, S.comment))
      scan_step(S, f, c, guarded || (rare && ts_node_eq(c, cons)), out, true);
    return;
  }
  for (TSNode c : named_children(n, S.comment)) scan_step(S, f, c, guarded, out, conditional);
}

// The first site that is not the read itself (a display containing it, or the sync
// operation it is part of), as "line N"; empty when none.
std::string other_site(const std::vector<StepFacts::Site>& sites, const Range& r) {
  for (const StepFacts::Site& s : sites)
    if (!(s.begin <= r.begin_byte && r.end_byte <= s.end)) return "line " + s.line;
  return {};
}

// The condition of a branch that aborts (`if not math.isfinite(loss): sys.exit(1)`): it
// runs at most once. Empty for other regions.
std::string abort_branch(const Syntax& S, const SourceFile& file, TSNode root, const ir::Region& reg) {
  auto which = reg.attrs.find("branch");
  if (reg.kind != "branch" || !reg.range.valid() || which == reg.attrs.end() ||
      std::get<std::string>(which->second) == "else")
    return {};
  TSNode b = ts_node_descendant_for_byte_range(root, reg.range.begin_byte, reg.range.end_byte);
  while (!ts_node_is_null(b) && ts_node_symbol(b) != S.block) b = parent_of(b);
  if (ts_node_is_null(b) || !exits_loop(S, file, b)) return {};
  auto cond = reg.attrs.find("condition");
  return cond != reg.attrs.end() && std::get_if<std::string>(&cond->second) ? std::get<std::string>(cond->second)
                                                                             : "abort";
}

// Whether a factory call's size is a whole tensor's shape (`x.shape`, `x.size()`), not
// one of its dimensions (`x.shape[0]`, `x.size(0)`).
bool whole_shape(std::string_view t) {
  for (size_t at = t.find(".shape"); at != std::string_view::npos; at = t.find(".shape", at + 1))
    if (at + 6 >= t.size() || t[at + 6] != '[') return true;
  return contains(t, ".size()");
}

// Whether a read from the GPU (a `sync` node) runs on every step it sits in: not under a
// periodic guard, of a tensor (not a Python number), not a module moved to the host.
bool waits_every_step(const ir::Node& node) {
  return node.op == "sync" && node.range.valid() && !node.attrs.count("guarded") && !node.attrs.count("host_value") &&
         !node.attrs.count("module_move");
}

// Host tensors moved to the GPU (`host_tensor`, PLC001) and pinned batches copied without
// non_blocking (`blocking_copy`, PLC002): the periodic guard they run under (`guarded`:
// an evaluation pass every N steps), and another place where the same step waits for the
// GPU anyway (`step_waits`: a read such as loss.item(), a synchronize, a scaler's step, a
// shape-dependent op; for a host tensor also a blocking copy of other data). Such a copy
// then finds the queue empty: what it costs is its own transfer, not a wait. The step is
// the training loop around the copy or, outside one, the innermost loop (an inference
// pass). A pinned-batch copy is not counted as another's wait: consecutive copies of one
// batch are one finding.
void annotate_copy_waits(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out, Steps& steps) {
  for (ir::Function& fn : out.functions) {
    std::vector<Range> factories;  // host tensors' own copies are not other waits
    std::vector<Range> reads;      // reads from the GPU that wait on every step they sit in
    for (const ir::Node& node : fn.nodes) {
      if (node.op == "host_tensor" && node.range.valid()) factories.push_back(node.range);
      if (waits_every_step(node)) reads.push_back(node.range);
    }
    for (ir::Node& node : fn.nodes) {
      bool host = node.op == "host_tensor";
      if ((!host && node.op != "blocking_copy") || !node.range.valid()) continue;
      Facts facts = walk(S, file, root, node.range);
      TSNode step = facts.step_loop;
      for (TSNode p = ts_node_descendant_for_byte_range(root, node.range.begin_byte, node.range.end_byte);
           ts_node_is_null(step) && !ts_node_is_null(p) && ts_node_symbol(p) != S.function_definition; p = parent_of(p))
        if (ts_node_symbol(p) == S.for_statement || ts_node_symbol(p) == S.while_statement) step = p;
      if (ts_node_is_null(step)) continue;  // a forward: its step is its caller's
      if (!facts.guard.empty()) node.attrs["guarded"] = facts.guard;
      // Random numbers of a whole batch's shape (`torch.randn(x.shape)`): the host draws
      // them slowly, whatever else the step waits on.
      if (host && node.attrs.count("random") && whole_shape(file.slice(node.range))) continue;
      auto [it, fresh] = steps.try_emplace(ts_node_start_byte(step));
      if (fresh) scan_step(S, file, field(step, S.f_body), false, it->second, false);
      uint32_t from = ts_node_start_byte(step), to = ts_node_end_byte(step);
      std::string wait;
      for (const Range& r : reads)
        if (wait.empty() && r.begin_byte >= from && r.end_byte <= to) wait = "line " + std::to_string(r.begin.line);
      for (const StepFacts::Site& site : it->second.shape_syncs) {
        if (!wait.empty()) break;
        if (site.begin <= node.range.begin_byte && node.range.end_byte <= site.end) continue;  // itself
        if (site.copy && !host) continue;
        bool factory = false;
        for (const Range& r : factories) factory |= site.begin <= r.begin_byte && r.end_byte <= site.end;
        if (!factory) wait = "line " + site.line;
      }
      if (!wait.empty()) node.attrs["step_waits"] = wait;
    }
  }
}

// The facts of each read from the GPU (`sync` nodes, SYN001): its guard, what else its
// step waits on, whether its value is printed, summed or decides the loop's exit.
void annotate_syncs(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out, bool gpu_file, Steps& steps) {
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
      while (!ts_node_is_null(s) && ts_node_symbol(s) != S.if_statement) s = parent_of(s);
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
      // Its own code, not a helper's inlined into it: the module's range holds every
      // function of the file, so ask which function's body the read is in.
      bool own = home_of(out, node.range) == &fn;
      Facts facts;
      if (own) {
        facts = walk(S, file, root, node.range);
      } else {
        // Inlined from a helper: the guards are the helper's own (a periodic `if`, an
        // early `if not should_log: return`) and those of the call site's regions.
        Facts own_facts = walk(S, file, root, node.range);
        facts.guard = own_facts.guard;
        facts.step_loop = own_facts.step_loop;
        for (uint32_t r = node.region; facts.guard.empty(); r = fn.regions[r].parent) {
          if (r >= fn.regions.size()) break;
          const ir::Region& reg = fn.regions[r];
          // The training step's loop ends the search; a loop that does not train (the
          // evaluation pass a helper runs) runs when its call site runs.
          if (reg.kind == "loop" && flag_of(reg, "innermost_training")) break;
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
      // The step: the training loop around the read, or, for a read in a helper the loop
      // calls on every step (`train_step`, inlined there), the helper's whole body.
      TSNode step = facts.step_loop;
      if (ts_node_is_null(step) && !own) {
        TSNode n = ts_node_descendant_for_byte_range(root, node.range.begin_byte, node.range.end_byte);
        while (!ts_node_is_null(n) && ts_node_symbol(n) != S.function_definition) n = parent_of(n);
        step = n;
      }
      if (!ts_node_is_null(step)) {
        auto [it, fresh] = steps.try_emplace(ts_node_start_byte(step));
        if (fresh) scan_step(S, file, field(step, S.f_body), false, it->second, false);
        if (std::string d = other_site(it->second.displays, node.range); !d.empty()) node.attrs["step_output"] = d;
        if (std::string d = other_site(it->second.shape_syncs, node.range); !d.empty()) node.attrs["step_syncs"] = d;
      }
      if (!facts.guard.empty()) node.attrs["guarded"] = facts.guard;
      if (facts.decides_exit) node.attrs["decides_exit"] = true;
      if (facts.printed) node.attrs["printed"] = true;
      // What deferring can remove: a value only summed for later, or a bare wait.
      auto method = node.attrs.find("method");
      bool wait = method != node.attrs.end() && std::get_if<std::string>(&method->second) &&
                  std::get<std::string>(method->second) == "synchronize";
      if (facts.summed || wait) node.attrs["deferrable"] = true;
      std::string_view t = file.slice(node.range);
      if (contains(t, "environ") || contains(t, "getenv") || contains(t, "argv") || contains(t, "args.") ||
          python_arithmetic(t) || host_number(S, file, root, fn, node))
        node.attrs["host_value"] = true;
      // `m.cpu().parameters()`: a module moved to the host (to send its weights or
      // gradients to a CPU process), not a value read back.
      std::string_view after = std::string_view(file.text).substr(std::min<size_t>(node.range.end_byte, file.text.size()));
      for (std::string_view m : {".parameters(", ".named_parameters(", ".state_dict(", ".buffers(", ".modules("})
        if (after.starts_with(m)) node.attrs["module_move"] = true;
      if (test_file || test_fn) node.attrs["test_code"] = true;
      auto m = node.attrs.find("method");
      if (bench_script || (timed && m != node.attrs.end() && std::get_if<std::string>(&m->second) &&
                           std::get<std::string>(m->second) == "synchronize"))
        node.attrs["timing"] = true;
      if (gpu_file) node.attrs["gpu_file"] = true;
    }
    // `float(loss.item())`: two syncs, one read; the outer one stands for both, unless it
    // is itself left out as no read (host_value, module_move).
    std::vector<Range> outer;
    for (const ir::Node& node : fn.nodes)
      if (node.op == "sync" && node.range.valid() && !node.attrs.count("host_value") && !node.attrs.count("module_move"))
        outer.push_back(node.range);
    for (ir::Node& node : fn.nodes) {
      if (node.op != "sync" || !node.range.valid()) continue;
      for (const Range& o : outer)
        if (o.begin_byte <= node.range.begin_byte && node.range.end_byte <= o.end_byte &&
            (o.begin_byte != node.range.begin_byte || o.end_byte != node.range.end_byte)) {
          node.attrs["nested"] = true;
          break;
        }
    }
  }
}

}  // namespace

void annotate_program(const SourceFile& file, TSNode root, ir::Module& out) {
  const Syntax& S = Syntax::get();
  bool gpu_file = program::gpu_text(file.text);
  program::annotate_nodes(file, root, out, gpu_file);
  Steps steps;  // each step scanned once, for the reads and for the copies
  annotate_syncs(S, file, root, out, gpu_file, steps);
  annotate_copy_waits(S, file, root, out, steps);
}

}  // namespace mlsem::python
