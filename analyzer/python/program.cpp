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

#include "python/syntax.h"

namespace mlsem::python {
namespace {


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

bool test_path(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return contains(path, "/test/") || contains(path, "/tests/") || contains(path, "/testing/") ||
         base.rfind("test_", 0) == 0 || contains(base, "_test.py") || base == "conftest.py";
}

bool gpu_text(std::string_view t) {
  return contains(t, ".cuda(") || contains(t, "\"cuda") || contains(t, "'cuda") || contains(t, ".to(device") ||
         contains(t, "device=device") || contains(t, ".to(self.device") || contains(t, "accelerator") ||
         contains(t, "setup_dataloaders") || contains(t, "dist_util.dev()") || contains(t, ".to(local_rank") ||
         contains(t, ".to(rank");
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
  size_t dot = callee.rfind('.');
  std::string_view last = dot == std::string_view::npos ? callee : callee.substr(dot + 1);
  return callee == "print" || last == "set_description" || last == "set_postfix" || last == "set_postfix_str" ||
         (dot != std::string_view::npos && (last == "info" || last == "debug" || last == "write"));
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

// Each call whose callee is `name` or `x.name` (`name(...)`, `x.name(...)`), with the
// callee's text: the identifiers spelled `name`, resolved up to their call.
template <class F>
void each_call_to(const Syntax& S, const SourceFile& f, TSNode root, std::string_view name, F&& visit) {
  for (TSNode id : identifiers_named(root, f.text, name, S.identifier)) {
    TSNode callee = id, p = ts_node_parent(id);
    if (!ts_node_is_null(p) && ts_node_symbol(p) == S.attribute) {
      if (!ts_node_eq(ts_node_child_by_field_id(p, S.f_attribute), id)) continue;
      callee = p;
      p = ts_node_parent(p);
    }
    if (ts_node_is_null(p) || ts_node_symbol(p) != S.call || !ts_node_eq(ts_node_child_by_field_id(p, S.f_function), callee))
      continue;
    visit(p, text_of(callee, f.text));
  }
}

// The innermost IR function whose range holds `r`, or null.
ir::Function* home_of(ir::Module& out, const Range& r) {
  ir::Function* home = nullptr;
  for (ir::Function& fn : out.functions)
    if (fn.range.begin_byte <= r.begin_byte && r.end_byte <= fn.range.end_byte &&
        (!home || fn.range.end_byte - fn.range.begin_byte < home->range.end_byte - home->range.begin_byte))
      home = &fn;
  return home;
}

// Keyword argument `name=` of a call's argument list: its text, empty when absent;
// "**" when the call passes **kwargs (anything may be set).
std::string keyword(const Syntax& S, const SourceFile& f, TSNode args, std::string_view name) {
  uint32_t n = ts_node_named_child_count(args);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode a = ts_node_named_child(args, i);
    if (ts_node_symbol(a) == S.dictionary_splat) return "**";
    if (ts_node_symbol(a) != S.keyword_argument) continue;
    if (text_of(ts_node_child_by_field_id(a, S.f_name), f.text) == name)
      return std::string(text_of(ts_node_child_by_field_id(a, S.f_value), f.text));
  }
  return {};
}

// DataLoader(...) calls in a file that trains on a GPU: a `data_loader` node each, in the
// innermost function holding it, with what the call leaves at its slow default.
void annotate_data_loaders(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out, bool gpu_file) {
  if (test_path(file.path) || !gpu_file || !contains(file.text, "DataLoader(")) return;
  bool trains = false;
  for (const ir::Function& fn : out.functions)
    for (const ir::Region& r : fn.regions)
      if (r.kind == "loop") {
        auto t = r.attrs.find("training");
        trains |= t != r.attrs.end() && std::get_if<bool>(&t->second) && std::get<bool>(t->second);
      }
  if (!trains) return;
  each_call_to(S, file, root, "DataLoader", [&](TSNode n, std::string_view callee) {
    if (callee != "DataLoader" && !(callee.size() > 11 && callee.substr(callee.size() - 11) == ".DataLoader")) return;
    TSNode args = ts_node_child_by_field_id(n, S.f_arguments);
    if (ts_node_is_null(args)) return;
    std::string workers = keyword(S, file, args, "num_workers"), pin = keyword(S, file, args, "pin_memory");
    if (workers == "**" || pin == "**") return;
    Range r = range_of(n);
    ir::Function* home = home_of(out, r);
    if (!home) return;
    ir::Node node;
    node.op = "data_loader";
    node.range = r;
    node.attrs["callee"] = std::string("torch.utils.data.DataLoader");
    if (workers.empty() || workers == "0") node.attrs["no_workers"] = true;
    if (pin.empty() || pin == "False") node.attrs["no_pin_memory"] = true;
    home->nodes.push_back(std::move(node));
  });
}

// Whether the code reads gradients through `.grad` (an attribute named `grad`, not
// `.grad_fn`, and not text in comments or strings): such code may see None after
// zero_grad(set_to_none=True) where it saw zeros before.
bool reads_grad(const Syntax& S, const SourceFile& f, TSNode root) {
  for (TSNode id : identifiers_named(root, f.text, "grad", S.identifier)) {
    TSNode p = ts_node_parent(id);
    if (!ts_node_is_null(p) && ts_node_symbol(p) == S.attribute && ts_node_eq(ts_node_child_by_field_id(p, S.f_attribute), id))
      return true;
  }
  return false;
}

// `x.zero_grad(...)` calls (an optimizer's or a module's): a `zero_grad` node each, in the
// innermost function holding it, with its `set_to_none` argument as written (keyword or
// first positional; empty when absent), the receiver's text, and whether the file reads
// `.grad` anywhere (`reads_grad`). Test files are skipped.
void annotate_zero_grads(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out) {
  if (test_path(file.path) || !contains(file.text, "zero_grad(")) return;
  bool grads_read = reads_grad(S, file, root);
  each_call_to(S, file, root, "zero_grad", [&](TSNode n, std::string_view callee) {
    if (callee.size() <= 10 || callee.substr(callee.size() - 10) != ".zero_grad") return;
    TSNode args = ts_node_child_by_field_id(n, S.f_arguments);
    if (ts_node_is_null(args)) return;
    std::string set_to_none = keyword(S, file, args, "set_to_none");
    if (set_to_none == "**") return;
    if (set_to_none.empty() && ts_node_named_child_count(args) > 0) {
      TSNode first = ts_node_named_child(args, 0);
      TSSymbol k = ts_node_symbol(first);
      if (k == S.list_splat) return;  // *args: anything may be passed
      if (k != S.keyword_argument) set_to_none = std::string(text_of(first, file.text));
    }
    Range r = range_of(n);
    ir::Function* home = home_of(out, r);
    if (!home) return;
    ir::Node node;
    node.op = "zero_grad";
    node.range = r;
    node.attrs["receiver"] = std::string(callee.substr(0, callee.size() - 10));
    node.attrs["set_to_none"] = set_to_none;
    if (grads_read) node.attrs["reads_grad"] = true;
    home->nodes.push_back(std::move(node));
  });
}


// Whether a region attribute is a true bool.
bool flag_of(const ir::Region& r, const char* name) {
  auto it = r.attrs.find(name);
  return it != r.attrs.end() && std::get_if<bool>(&it->second) && std::get<bool>(it->second);
}

// Why code at `r` in `fn` runs on every step, or empty when it need not: a module's
// forward, a training loop, or a loop of a generation/evaluation function.
std::string hot_reason(const ir::Function& fn, const Range& r) {
  std::string_view name = fn.name;
  if (size_t dot = name.rfind('.'); dot != std::string_view::npos) name = name.substr(dot + 1);
  if (name == "forward") return "forward pass";
  std::string lname = lower_ascii(name);
  bool step_fn = false;
  for (std::string_view w : {"generate", "sample", "decode", "eval", "valid", "infer", "predict"})
    step_fn |= contains(lname, w);
  for (const ir::Region& reg : fn.regions) {
    if (reg.kind != "loop" || !reg.range.valid()) continue;
    if (reg.range.begin_byte > r.begin_byte || r.end_byte > reg.range.end_byte) continue;
    if (flag_of(reg, "innermost_training")) return "training step";  // not the epoch loop around it
    if (step_fn) return "iteration of " + std::string(name);
  }
  return {};
}

// Whether `n` sits, inside a loop, in the body of `if x is None:` that assigns x: a lazy
// initialization that runs once, not on every iteration. (Outside a loop the same form
// fills a default argument, which runs on every call.)
bool lazy_init(const Syntax& S, const SourceFile& f, TSNode n) {
  for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); p = ts_node_parent(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.for_statement || k == S.while_statement || k == S.function_definition) return false;
    if (k != S.if_statement) continue;
    std::string_view cond = text_of(field(p, S.f_condition), f.text);
    if (cond.size() <= 8 || cond.substr(cond.size() - 8) != " is None") continue;
    std::string_view var = cond.substr(0, cond.size() - 8);
    bool assigns = false;
    for (TSNode a = ts_node_parent(n); !ts_node_is_null(a) && !ts_node_eq(a, p); a = ts_node_parent(a))
      assigns |= ts_node_symbol(a) == S.assignment && text_of(field(a, S.f_left), f.text) == var;
    if (!assigns) continue;
    for (TSNode up = ts_node_parent(p); !ts_node_is_null(up); up = ts_node_parent(up)) {
      TSSymbol u = ts_node_symbol(up);
      if (u == S.function_definition) return false;
      if (u == S.for_statement || u == S.while_statement) return true;
    }
    return false;
  }
  return false;
}

// Shape factories whose result device= would create on the GPU directly.
bool shape_factory(std::string_view callee) {
  if (callee.rfind("torch.", 0) != 0) return false;
  std::string_view f = callee.substr(6);
  for (std::string_view k : {"zeros", "ones", "empty", "full", "arange", "randn", "rand", "randint", "randperm",
                             "eye", "linspace", "logspace", "tensor"})
    if (f == k) return true;
  return false;
}

// How a `.to(...)` argument list moves a tensor: the device= text of the fix, or empty
// when it only converts the dtype, moves to the CPU, or cannot be read.
std::string moved_to(const Syntax& S, const SourceFile& f, TSNode args) {
  std::string dev = keyword(S, f, args, "device");
  if (dev == "**") return {};
  if (!dev.empty()) return contains(dev, "cpu") ? std::string() : "device=" + dev;
  std::vector<TSNode> a = named_children(args, S.comment);
  if (a.empty() || ts_node_symbol(a[0]) == S.keyword_argument || ts_node_symbol(a[0]) == S.list_splat) return {};
  std::string_view t = text_of(a[0], f.text);
  std::string lt = lower_ascii(t);
  if (contains(lt, "cpu") || contains(lt, "dtype") || contains(lt, "memory_format")) return {};
  if (t.rfind("torch.", 0) == 0 && !contains(t, "device")) return {};  // torch.float16, torch.int64
  if (ts_node_symbol(a[0]) == S.string || contains(lt, "device") || lt == "dev" || contains(lt, "cuda"))
    return "device=" + std::string(t);
  // Another tensor: .to(x) takes its device and its dtype.
  return "device=" + std::string(t) + ".device, dtype=" + std::string(t) + ".dtype";
}

// `torch.zeros(...)...cuda()` / `torch.arange(...).to(device)` in code that runs every
// step: a `host_tensor` node each, in the innermost function holding it, with the
// factory, the device= the fix passes, why the code is hot, and whether the factory draws
// random numbers. Test files and files that place nothing on a GPU are skipped.
void annotate_host_tensors(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out, bool gpu_file) {
  if (test_path(file.path) || !gpu_file) return;
  auto visit = [&](TSNode call, std::string_view callee) {
    bool cuda = callee.size() > 5 && callee.substr(callee.size() - 5) == ".cuda";
    bool to = callee.size() > 3 && callee.substr(callee.size() - 3) == ".to";
    if (!cuda && !to) return;
    TSNode args = field(call, S.f_arguments);
    if (ts_node_is_null(args)) return;
    std::string device;
    if (cuda) {
      std::vector<TSNode> a = named_children(args, S.comment);
      device = a.empty() ? "device=\"cuda\"" : a.size() == 1 && ts_node_symbol(a[0]) != S.keyword_argument
                                                  ? "device=" + std::string(text_of(a[0], file.text))
                                                  : "";
    } else {
      device = moved_to(S, file, args);
    }
    if (device.empty()) return;
    // Down the receiver chain (`.float()`, `.unsqueeze(0)`, ...) to the call it starts from.
    TSNode recv = field(field(call, S.f_function), S.f_object);
    while (!ts_node_is_null(recv) && ts_node_symbol(recv) == S.call) {
      TSNode fn = field(recv, S.f_function);
      if (ts_node_symbol(fn) != S.attribute) break;
      TSNode inner = field(fn, S.f_object);
      if (ts_node_symbol(inner) != S.call) break;
      recv = inner;
    }
    if (ts_node_is_null(recv) || ts_node_symbol(recv) != S.call) return;
    std::string_view factory = text_of(field(recv, S.f_function), file.text);
    if (!shape_factory(factory)) return;
    TSNode fargs = field(recv, S.f_arguments);
    if (ts_node_is_null(fargs) || !keyword(S, file, fargs, "device").empty()) return;  // device= or **kwargs
    for (TSNode a : named_children(fargs, S.comment))
      if (ts_node_symbol(a) == S.list_splat) return;
    // torch.empty(0): nothing to copy, and a copy of no elements does not wait.
    bool empty = true;
    for (TSNode a : named_children(fargs, S.comment)) {
      TSSymbol k = ts_node_symbol(a);
      if (k == S.keyword_argument) continue;
      std::string_view t = text_of(a, file.text);
      empty &= t == "0" || t == "(0,)" || t == "[0]";
    }
    if (empty && factory != "torch.tensor") return;
    if (lazy_init(S, file, call)) return;
    if (factory == "torch.tensor") {
      // Only a number: data from a list or an array lives on the host anyway.
      std::vector<TSNode> a = named_children(fargs, S.comment);
      TSSymbol k = a.empty() ? 0 : ts_node_symbol(a[0]);
      if (k != S.integer && k != S.float_ && k != S.unary_operator && k != S.attribute && k != S.true_ &&
          k != S.false_)
        return;
    }
    Range r = range_of(call);
    ir::Function* home = home_of(out, r);
    if (!home) return;
    std::string hot = hot_reason(*home, r);
    if (hot.empty()) return;
    ir::Node node;
    node.op = "host_tensor";
    node.range = r;
    node.attrs["factory"] = std::string(factory);
    node.attrs["device"] = device;
    node.attrs["hot"] = hot;
    std::string_view fname = factory.substr(6);
    if (fname.rfind("rand", 0) == 0) node.attrs["random"] = true;
    home->nodes.push_back(std::move(node));
  };
  each_call_to(S, file, root, "cuda", visit);
  each_call_to(S, file, root, "to", visit);
}


bool disables_grad(std::string_view t) {
  return contains(t, "no_grad") || contains(t, "inference_mode") || contains(t, "set_grad_enabled");
}

// Whether a call site runs with autograd off: inside `with torch.no_grad():` (or
// inference_mode, set_grad_enabled) or in a function decorated with one.
bool grad_off_at(const Syntax& S, const SourceFile& f, TSNode n) {
  for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); p = ts_node_parent(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.with_statement) {
      TSNode body = field(p, S.f_body);
      std::string_view head = std::string_view(f.text).substr(ts_node_start_byte(p),
                                            (ts_node_is_null(body) ? ts_node_end_byte(p) : ts_node_start_byte(body)) -
                                                ts_node_start_byte(p));
      if (disables_grad(head)) return true;
    }
    if (k == S.decorated_definition) {
      for (TSNode d : named_children(p, S.comment))
        if (ts_node_symbol(d) == S.decorator && disables_grad(text_of(d, f.text))) return true;
    }
  }
  return false;
}

// The names a function calls as a model: `model`, `net`, and whatever it puts in eval
// mode (`student.eval()` -> `student`).
std::vector<std::string> model_names(std::string_view fn_text) {
  std::vector<std::string> names = {"model", "net", "self.model"};
  for (size_t at = fn_text.find(".eval()"); at != std::string_view::npos; at = fn_text.find(".eval()", at + 1)) {
    size_t b = at;
    while (b > 0 && (word_byte(fn_text[b - 1]) || fn_text[b - 1] == '.')) --b;
    if (b < at) names.emplace_back(fn_text.substr(b, at - b));
  }
  return names;
}

// Evaluation, validation and generation loops that call a model with autograd on: an
// `eval_loop` node at the first model call of each such loop. The function is named
// like eval/valid/infer/predict/generate/sample or puts a model in eval mode, is not test
// code, never turns autograd off itself, and no call of it in this file does either;
// the loop neither calls backward() nor steps an optimizer. GPU files only.
void annotate_eval_loops(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out, bool gpu_file) {
  if (test_path(file.path) || !gpu_file) return;
  for (ir::Function& fn : out.functions) {
    if (!fn.range.valid()) continue;
    std::string_view name = fn.name;
    if (size_t dot = name.rfind('.'); dot != std::string_view::npos) name = name.substr(dot + 1);
    if (name == "<module>" || name.rfind("test", 0) == 0) continue;
    std::string_view fn_text = file.slice(fn.range);
    std::string lname = lower_ascii(name);
    bool named = false;
    for (std::string_view w : {"eval", "valid", "infer", "predict", "generate", "sample"})
      named |= contains(lname, w);
    if (!named && !contains(fn_text, ".eval()")) continue;
    if (disables_grad(fn_text) || contains(fn_text, "backward(") || contains(fn_text, ".step(")) continue;
    // Nested functions: only the innermost one holding the loop reports it.
    bool off = false;
    for (const ir::Region& reg : fn.regions)
      if (reg.kind == "with") {
        auto c = reg.attrs.find("context");
        off |= c != reg.attrs.end() && std::get_if<std::string>(&c->second) && disables_grad(std::get<std::string>(c->second));
      }
    if (off) continue;
    // Its own decorators (a wrapper such as @smart_inference_mode()), an enclosing
    // `with`, and every call of it in this file.
    TSNode def = ts_node_descendant_for_byte_range(root, fn.range.begin_byte, fn.range.end_byte);
    while (!ts_node_is_null(def) && ts_node_symbol(def) != S.function_definition) def = ts_node_parent(def);
    if (ts_node_is_null(def) || grad_off_at(S, file, def)) continue;
    bool called_off = false;
    each_call_to(S, file, root, name, [&](TSNode call, std::string_view) { called_off |= grad_off_at(S, file, call); });
    if (called_off) continue;
    std::vector<std::string> models = model_names(fn_text);
    for (const ir::Region& reg : fn.regions) {
      if (reg.kind != "loop" || !reg.range.valid() || flag_of(reg, "training")) continue;
      // A loop of an inlined callee is that function's own.
      if (reg.range.begin_byte < fn.range.begin_byte || reg.range.end_byte > fn.range.end_byte) continue;
      if (reg.parent < fn.regions.size() && reg.parent != 0) {
        // Only the outermost loop of the function reports.
        bool nested = false;
        for (uint32_t r = reg.parent; r < fn.regions.size(); r = fn.regions[r].parent) {
          nested |= fn.regions[r].kind == "loop";
          if (r == 0) break;
        }
        if (nested) continue;
      }
      // The first call of a model in the loop.
      TSNode first{};
      std::string callee;
      for (const std::string& m : models) {
        std::string_view last = m;
        if (size_t dot = last.rfind('.'); dot != std::string_view::npos) last = last.substr(dot + 1);
        for (TSNode id : identifiers_named(root, file.text, last, S.identifier, reg.range.begin_byte, reg.range.end_byte)) {
          TSNode callee_node = id, p = ts_node_parent(id);
          if (!ts_node_is_null(p) && ts_node_symbol(p) == S.attribute && ts_node_eq(field(p, S.f_attribute), id)) {
            callee_node = p;
            p = ts_node_parent(p);
          }
          if (!ts_node_is_null(p) && ts_node_symbol(p) == S.attribute && ts_node_eq(field(p, S.f_object), callee_node) &&
              text_of(field(p, S.f_attribute), file.text) == "generate") {
            callee_node = p;  // model.generate(...)
            p = ts_node_parent(p);
          }
          if (ts_node_is_null(p) || ts_node_symbol(p) != S.call || !ts_node_eq(field(p, S.f_function), callee_node)) continue;
          std::string_view ct = text_of(callee_node, file.text);
          if (ct != m && ct != m + ".generate") continue;
          if (ts_node_is_null(first) || ts_node_start_byte(p) < ts_node_start_byte(first)) {
            first = p;
            callee = std::string(ct);
          }
          break;
        }
      }
      if (ts_node_is_null(first)) continue;
      ir::Node node;
      node.op = "eval_loop";
      node.range = range_of(first);
      node.attrs["model"] = callee;
      node.attrs["loop_line"] = static_cast<int64_t>(reg.range.begin.line);
      if (!named) node.attrs["eval_mode_only"] = true;
      if (fn.name.find('.') != std::string::npos) node.attrs["method"] = true;
      fn.nodes.push_back(std::move(node));
    }
  }
}

}  // namespace

void annotate_program(const SourceFile& file, TSNode root, ir::Module& out) {
  const Syntax& S = Syntax::get();
  bool gpu_file = gpu_text(file.text);
  annotate_data_loaders(S, file, root, out, gpu_file);
  annotate_zero_grads(S, file, root, out);
  annotate_host_tensors(S, file, root, out, gpu_file);
  annotate_eval_loops(S, file, root, out, gpu_file);
  bool any_sync = false;
  for (const ir::Function& fn : out.functions)
    for (const ir::Node& node : fn.nodes) any_sync |= node.op == "sync";
  if (!any_sync) return;
  bool test_file = test_path(file.path);
  bool bench_file = contains(file.path, "bench");
  // A benchmark or profiling script (bench.py, benchmark_x.py): its loops measure.
  std::string_view base = file.path;
  if (size_t slash = base.rfind('/'); slash != std::string_view::npos) base = base.substr(slash + 1);
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
    std::string_view short_name = fn.name;
    if (size_t dot = short_name.rfind('.'); dot != std::string_view::npos) short_name = short_name.substr(dot + 1);
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
        std::string origin_name = lower_ascii(origin->name.substr(origin->name.rfind('.') + 1));
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
