// The nodes the training rules match, added to the lowered IR from the syntax tree
// (docs/IR.md, "Program facts"): DataLoader calls of GPU training files (`data_loader`),
// `x.zero_grad(...)` calls (`zero_grad`), tensors built on the host and copied to the GPU
// in per-step code (`host_tensor`), inference loops with autograd on (`eval_loop`), Adam
// without fused= (`optimizer`), debugging switches (`debug_mode`), and DDP gradient
// accumulation without no_sync() (`ddp_accumulation`).
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "python/names.h"
#include "python/program_util.h"

namespace mlsem::python::program {
namespace {

// What every annotator reads of the file, computed once.
struct FileFacts {
  const Syntax& S;
  const SourceFile& file;
  TSNode root;
  ir::Module& out;
  bool gpu;     // the file places tensors on a GPU
  bool trains;  // a loop of the file calls backward() or steps an optimizer
};

// Whether a loop of the file calls backward() or steps an optimizer.
bool trains(const ir::Module& out) {
  for (const ir::Function& fn : out.functions)
    for (const ir::Region& r : fn.regions)
      if (r.kind == "loop" && flag_of(r, "training")) return true;
  return false;
}

// The class a DataLoader's dataset is built from: the callee of `TensorDataset(...)` or of
// `ds = Cls(...)`, the last binding of the argument's name before the call in the same
// function; empty when it cannot be read.
std::string dataset_class(const Syntax& S, const SourceFile& f, TSNode root, TSNode loader_call, TSNode arg) {
  if (ts_node_symbol(arg) == S.call) return std::string(text_of(field(arg, S.f_function), f.text));
  if (ts_node_symbol(arg) != S.identifier) return {};
  TSNode def = loader_call;
  while (!ts_node_is_null(def) && ts_node_symbol(def) != S.function_definition) def = parent_of(def);
  size_t from = ts_node_is_null(def) ? 0 : ts_node_start_byte(def);
  std::string cls;
  for (TSNode id : identifiers_named(root, f.text, text_of(arg, f.text), S.identifier, from, ts_node_start_byte(loader_call))) {
    TSNode a = parent_of(id);
    if (ts_node_is_null(a) || ts_node_symbol(a) != S.assignment || !ts_node_eq(field(a, S.f_left), id)) continue;
    TSNode right = field(a, S.f_right);
    cls = ts_node_symbol(right) == S.call ? std::string(text_of(field(right, S.f_function), f.text)) : std::string();
  }
  return cls;
}

// Whether a dataset class holds its samples in memory: TensorDataset, or a class of this
// file whose __getitem__ reads, decodes or transforms nothing (it only indexes what
// __init__ loaded).
bool in_memory_dataset(const Syntax& S, const SourceFile& f, TSNode root, std::string_view cls) {
  if (calls(cls, "TensorDataset")) return true;
  if (cls.empty() || cls.find('.') != std::string_view::npos) return false;
  for (TSNode id : identifiers_named(root, f.text, cls, S.identifier)) {
    TSNode c = parent_of(id);
    if (ts_node_is_null(c) || ts_node_symbol(c) != S.class_definition || !ts_node_eq(field(c, S.f_name), id)) continue;
    for (TSNode g : identifiers_named(root, f.text, "__getitem__", S.identifier, ts_node_start_byte(c), ts_node_end_byte(c))) {
      TSNode fn = parent_of(g);
      if (ts_node_is_null(fn) || ts_node_symbol(fn) != S.function_definition) continue;
      std::string body = lower_ascii(text_of(fn, f.text));
      for (std::string_view work : {"open(", "load", "read", "image", "decode", "transform", "augment", "tokeniz", "cv2",
                                    "resize", "crop", "fetch", "get(", "subprocess"})
        if (contains(body, work)) return false;
      return true;
    }
    return false;  // no __getitem__ of its own: an iterable or inherited one
  }
  return false;
}

// Whether the loader the call `loader_call` builds (`name = DataLoader(...)`) is only ever
// read for one batch outside any loop: every later mention of the name is
// `next(iter(name))` (a fixed batch fetched once, to sample or plot).
bool one_batch_loader(const Syntax& S, const SourceFile& f, TSNode root, TSNode loader_call) {
  TSNode a = parent_of(loader_call);
  if (ts_node_is_null(a) || ts_node_symbol(a) != S.assignment) return false;
  TSNode left = field(a, S.f_left);
  if (ts_node_is_null(left) || ts_node_symbol(left) != S.identifier) return false;
  size_t uses = 0;
  for (TSNode id : identifiers_named(root, f.text, text_of(left, f.text), S.identifier, ts_node_end_byte(a))) {
    TSNode args = parent_of(id), iter = ts_node_is_null(args) ? args : parent_of(args);
    TSNode args2 = ts_node_is_null(iter) ? iter : parent_of(iter), next = ts_node_is_null(args2) ? args2 : parent_of(args2);
    if (ts_node_is_null(next) || ts_node_symbol(iter) != S.call || ts_node_symbol(next) != S.call ||
        text_of(field(iter, S.f_function), f.text) != "iter" || text_of(field(next, S.f_function), f.text) != "next")
      return false;
    for (TSNode p = parent_of(next); !ts_node_is_null(p); p = parent_of(p))
      if (ts_node_symbol(p) == S.for_statement || ts_node_symbol(p) == S.while_statement) return false;
    ++uses;
  }
  return uses > 0;
}

// DataLoader(...) calls in a file that trains on a GPU: a `data_loader` node each, in the
// innermost function holding it, with what the call leaves at its slow default.
void annotate_data_loaders(const FileFacts& c) {
  const auto& [S, file, root, out, gpu, trains] = c;
  if (!gpu || !trains || !contains(file.text, "DataLoader(")) return;
  each_call_to(S, file, root, "DataLoader", [&](TSNode n, std::string_view callee) {
    if (!calls(callee, "DataLoader")) return;
    TSNode args = ts_node_child_by_field_id(n, S.f_arguments);
    if (ts_node_is_null(args)) return;
    std::string workers = keyword(S, file, args, "num_workers"), pin = keyword(S, file, args, "pin_memory");
    if (workers == "**" || pin == "**") return;
    std::vector<TSNode> a = named_children(args, S.comment);
    TSNode dataset = !a.empty() && ts_node_symbol(a[0]) != S.keyword_argument ? a[0] : TSNode{};
    for (TSNode k : a)
      if (ts_node_symbol(k) == S.keyword_argument && text_of(field(k, S.f_name), file.text) == "dataset")
        dataset = field(k, S.f_value);
    // `DataLoader(range(n), batch_size, shuffle=True)`: a shuffler of indices, which the
    // step then uses to slice tensors it already holds. Nothing is loaded; workers would
    // only hand back integers.
    if (!ts_node_is_null(dataset) && text_of(dataset, file.text).starts_with("range(")) return;
    ir::Node* node = add_node(out, range_of(n), "data_loader");
    if (!node) return;
    node->attrs["callee"] = std::string("torch.utils.data.DataLoader");
    if (!ts_node_is_null(dataset)) {
      std::string cls = dataset_class(S, file, root, n, dataset);
      std::string name = lower_ascii(text_of(dataset, file.text));
      if (in_memory_dataset(S, file, root, cls)) node->attrs["in_memory"] = cls;
      // A reinforcement-learning replay buffer: experience the run generated, already in memory.
      else if (contains(name, "replay") || name.ends_with("buffer")) node->attrs["in_memory"] = name;
    }
    if (workers.empty() || workers == "0") node->attrs["no_workers"] = true;
    if (pin.empty() || pin == "False") node->attrs["no_pin_memory"] = true;
    if (node->attrs.count("no_pin_memory") && !node->attrs.count("no_workers")) node->attrs["pin_only"] = true;
    if (one_batch_loader(S, file, root, n)) node->attrs["one_batch"] = true;
    // A transformers data collator (DataCollatorWithPadding, default_data_collator) over a
    // tokenized Hugging Face dataset (`load_dataset`, then `.map(tokenize)`): each batch is
    // a row take from Arrow memory and a pad of token ids, about a millisecond's work.
    // Named as transformers names them (`data_collator`, `DataCollatorWithPadding(...)`),
    // not a project's own (`vqa_collator`, which also processes images).
    std::string collate = lower_ascii(keyword(S, file, args, "collate_fn"));
    bool transformers_collator = contains(collate, "data_collator") || contains(collate, "datacollator");
    if (transformers_collator && contains(file.text, "load_dataset(") && contains(file.text, "tokeniz"))
      node->attrs["tokenized"] = collate;
  });
}

// Whether the code reads gradients through `.grad` (an attribute named `grad`, not
// `.grad_fn`, and not text in comments or strings): such code may see None after
// zero_grad(set_to_none=True) where it saw zeros before.
bool reads_grad(const Syntax& S, const SourceFile& f, TSNode root) {
  for (TSNode id : identifiers_named(root, f.text, "grad", S.identifier)) {
    TSNode p = parent_of(id);
    if (!ts_node_is_null(p) && ts_node_symbol(p) == S.attribute && ts_node_eq(ts_node_child_by_field_id(p, S.f_attribute), id))
      return true;
  }
  return false;
}

// `x.zero_grad(...)` calls (an optimizer's or a module's): a `zero_grad` node each, in the
// innermost function holding it, with its `set_to_none` argument as written (keyword or
// first positional; empty when absent), the receiver's text, and whether the file reads
// `.grad` anywhere (`reads_grad`). Test files are skipped.
void annotate_zero_grads(const FileFacts& c) {
  const auto& [S, file, root, out, gpu, trains] = c;
  if (!contains(file.text, "zero_grad(")) return;
  bool grads_read = reads_grad(S, file, root);
  each_call_to(S, file, root, "zero_grad", [&](TSNode n, std::string_view callee) {
    if (!callee.ends_with(".zero_grad")) return;
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
    ir::Node* node = add_node(out, range_of(n), "zero_grad");
    if (!node) return;
    node->attrs["receiver"] = std::string(callee.substr(0, callee.size() - 10));
    node->attrs["set_to_none"] = set_to_none;
    if (grads_read) node->attrs["reads_grad"] = true;
  });
}


// Whether a function's own name says it runs a model step by step for inference:
// eval, valid, infer, predict, generate, sample.
bool inference_name(std::string_view name) {
  std::string lname = lower_ascii(name);
  for (std::string_view w : {"eval", "valid", "infer", "predict", "generate", "sample"})
    if (contains(lname, w)) return true;
  return false;
}

// Why code at `r` in `fn` runs on every step, or empty when it need not: a module's
// forward, a training loop, or a loop of a generation/evaluation (or decoding) function.
std::string hot_reason(const ir::Function& fn, const Range& r) {
  std::string_view name = last_part(fn.name);
  if (name == "forward") return "forward pass";
  bool step_fn = inference_name(name) || contains(lower_ascii(name), "decode");
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
  for (TSNode p = parent_of(n); !ts_node_is_null(p); p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.for_statement || k == S.while_statement || k == S.function_definition) return false;
    if (k != S.if_statement) continue;
    std::string_view cond = text_of(field(p, S.f_condition), f.text);
    if (cond.size() <= 8 || cond.substr(cond.size() - 8) != " is None") continue;
    std::string_view var = cond.substr(0, cond.size() - 8);
    bool assigns = false;
    for (TSNode a = parent_of(n); !ts_node_is_null(a) && !ts_node_eq(a, p); a = parent_of(a))
      assigns |= ts_node_symbol(a) == S.assignment && text_of(field(a, S.f_left), f.text) == var;
    if (!assigns) continue;
    for (TSNode up = parent_of(p); !ts_node_is_null(up); up = parent_of(up)) {
      TSSymbol u = ts_node_symbol(up);
      if (u == S.function_definition) return false;
      if (u == S.for_statement || u == S.while_statement) return true;
    }
    return false;
  }
  return false;
}

// Whether a condition tests that something is empty (`x.numel() == 0`, `len(x) == 0`,
// `not x.size(0)`) or, with `nonempty`, that it is not (`label_index.size(0) > 0`).
bool emptiness_test(std::string_view c, bool nonempty) {
  bool size = contains(c, "size(") || contains(c, "numel(") || contains(c, "len(") || contains(c, "shape[");
  if (!size) return false;
  if (nonempty) return contains(c, "> 0") || contains(c, ">0") || contains(c, ">= 1") || contains(c, "!= 0");
  return contains(c, "== 0") || contains(c, "==0") || c.starts_with("not ");
}

// Whether `n` runs only when a tensor is empty: in the `else` of `if x.size(0) > 0:` or
// the body of `if x.numel() == 0:`, a degenerate-batch fallback (every label ignored)
// and not the step's usual path.
bool empty_fallback(const Syntax& S, const SourceFile& f, TSNode n) {
  TSNode child = n;
  for (TSNode p = parent_of(n); !ts_node_is_null(p); child = p, p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.function_definition || k == S.for_statement || k == S.while_statement) return false;
    if (k != S.if_statement && k != S.elif_clause) continue;
    std::string_view cond = text_of(field(p, S.f_condition), f.text);
    if (ts_node_eq(child, field(p, S.f_consequence)) && emptiness_test(cond, false)) return true;
    if (ts_node_symbol(child) == S.else_clause && emptiness_test(cond, true)) return true;
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

// The call a method chain on `call`'s receiver starts from (`torch.zeros(n)` in
// `torch.zeros(n).float().to(dev)`; `through_index`: also through subscripts, as in
// `torch.randint(...).sort()[0].to(dev)`), or a null node when it starts from no call.
TSNode chain_start(const Syntax& S, TSNode call, bool through_index) {
  TSNode recv = field(field(call, S.f_function), S.f_object);
  for (;;) {
    if (ts_node_is_null(recv)) return recv;
    TSSymbol k = ts_node_symbol(recv);
    TSNode inner = k == S.subscript && through_index ? field(recv, S.f_value)
                   : k == S.call && ts_node_symbol(field(recv, S.f_function)) == S.attribute
                       ? field(field(recv, S.f_function), S.f_object)
                       : TSNode{};
    bool descend = !ts_node_is_null(inner) && (ts_node_symbol(inner) == S.call || (through_index && ts_node_symbol(inner) == S.subscript));
    if (!descend) return k == S.call ? recv : TSNode{};
    recv = inner;
  }
}

// Whether the statement just before the one holding `n` (same block) copies host data to
// the GPU with a blocking copy (`feats = feats_cpu[i].repeat(k, 1, 1).to(device)`): that
// copy waits for the GPU, so a copy right after it waits on nothing. The line, or 0.
// A blocking copy of another factory's tensor does not count: that is the same finding.
uint32_t after_blocking_copy(const Syntax& S, const SourceFile& f, TSNode n) {
  TSNode stmt = n;
  while (!ts_node_is_null(parent_of(stmt)) && ts_node_symbol(parent_of(stmt)) != S.block &&
         ts_node_symbol(parent_of(stmt)) != S.module)
    stmt = parent_of(stmt);
  TSNode prev = ts_node_prev_named_sibling(stmt);
  while (!ts_node_is_null(prev) && ts_node_symbol(prev) == S.comment) prev = ts_node_prev_named_sibling(prev);
  if (ts_node_is_null(prev)) return 0;
  TSSymbol pk = ts_node_symbol(prev);
  if (pk != S.expression_statement) return 0;  // not across an if, a loop or a def
  std::vector<TSNode> todo{prev};
  while (!todo.empty()) {
    TSNode c = todo.back();
    todo.pop_back();
    if (blocking_copy(S, f, c)) {
      TSNode start = chain_start(S, c, true);
      if (ts_node_is_null(start) || !shape_factory(text_of(field(start, S.f_function), f.text)))
        return ts_node_start_point(c).row + 1;
    }
    for (TSNode k : named_children(c, S.comment)) todo.push_back(k);
  }
  return 0;
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

// The device= a move's fix passes: `.cuda()` -> device="cuda", `.cuda(i)` -> device=i,
// `.to(...)` as moved_to reads it; empty when it cannot be read or is no device move.
std::string move_target(const FileFacts& c, TSNode args, bool cuda) {
  if (!cuda) return moved_to(c.S, c.file, args);
  std::vector<TSNode> a = named_children(args, c.S.comment);
  if (a.empty()) return "device=\"cuda\"";
  if (a.size() == 1 && ts_node_symbol(a[0]) != c.S.keyword_argument) return "device=" + std::string(text_of(a[0], c.file.text));
  return {};
}

// `torch.zeros(...)...cuda()` / `torch.arange(...).to(device)` in code that runs every
// step: a `host_tensor` node, in the innermost function holding it, with the factory,
// the device= the fix passes, why the code is hot, and whether the factory draws random
// numbers.
void add_host_tensor(const FileFacts& c, TSNode call, const std::string& device) {
  const auto& [S, file, root, out, gpu, trains] = c;
  if (device.empty()) return;
  TSNode recv = chain_start(S, call, false);
  if (ts_node_is_null(recv)) return;
  std::string_view factory = text_of(field(recv, S.f_function), file.text);
  if (!shape_factory(factory)) return;
  TSNode fargs = field(recv, S.f_arguments);
  if (ts_node_is_null(fargs) || !keyword(S, file, fargs, "device").empty()) return;  // device= or **kwargs
  std::vector<TSNode> fa = named_children(fargs, S.comment);
  // torch.empty(0): nothing to copy, and a copy of no elements does not wait.
  bool empty = true;
  for (TSNode a : fa) {
    TSSymbol k = ts_node_symbol(a);
    if (k == S.list_splat) return;
    if (k == S.keyword_argument) continue;
    std::string_view t = text_of(a, file.text);
    empty &= t == "0" || t == "(0,)" || t == "[0]";
  }
  if (empty && factory != "torch.tensor") return;
  if (lazy_init(S, file, call)) return;
  if (factory == "torch.tensor") {
    // Only a number: data from a list or an array lives on the host anyway.
    TSSymbol k = fa.empty() ? 0 : ts_node_symbol(fa[0]);
    if (k != S.integer && k != S.float_ && k != S.unary_operator && k != S.attribute && k != S.true_ && k != S.false_)
      return;
  }
  Range r = range_of(call);
  ir::Function* home = home_of(out, r);
  if (!home) return;
  std::string hot = hot_reason(*home, r);
  if (hot.empty()) return;
  ir::Node& node = push_node(*home, r, "host_tensor");
  node.attrs["factory"] = std::string(factory);
  node.attrs["device"] = device;
  node.attrs["hot"] = hot;
  if (factory.substr(6).starts_with("rand")) node.attrs["random"] = true;
  if (empty_fallback(S, file, call)) node.attrs["empty_fallback"] = true;
  // A fill (not random numbers, which the host draws slowly) right after a blocking copy.
  if (!node.attrs.count("random"))
    if (uint32_t line = after_blocking_copy(S, file, call)) node.attrs["after_wait"] = "line " + std::to_string(line);
  // `torch.empty(1, 1).fill_(next_word.item()).to(device)`: built from a value the same
  // expression reads back from the GPU, which has already waited.
  {
    std::string_view t = text_of(call, file.text);
    for (std::string_view read : {".item()", ".tolist()", ".cpu()"})
      if (contains(t, read)) node.attrs["reads_back"] = std::string(read);
  }
  // `.to(device, non_blocking=True)`: PyTorch does not wait for the stream after it.
  std::string nb = keyword(S, file, field(call, S.f_arguments), "non_blocking");
  if (!nb.empty() && nb != "False" && nb != "**") node.attrs["non_blocking"] = true;
}

bool disables_grad(std::string_view t) {
  return contains(t, "no_grad") || contains(t, "inference_mode") || contains(t, "set_grad_enabled");
}

// Whether a call site runs with autograd off: inside `with torch.no_grad():` (or
// inference_mode, set_grad_enabled) or in a function decorated with one.
bool grad_off_at(const Syntax& S, const SourceFile& f, TSNode n) {
  for (TSNode p = parent_of(n); !ts_node_is_null(p); p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.with_statement && disables_grad(with_head(S, f, p))) return true;
    if (k == S.decorated_definition) {
      for (TSNode d : named_children(p, S.comment))
        if (ts_node_symbol(d) == S.decorator && disables_grad(text_of(d, f.text))) return true;
    }
  }
  return false;
}

bool within(TSNode inner, TSNode outer) {
  return ts_node_start_byte(inner) >= ts_node_start_byte(outer) && ts_node_end_byte(inner) <= ts_node_end_byte(outer);
}

// The arm of the nearest enclosing `if`/`elif` (below `stop`) whose condition takes a
// modulo and holds `n` in its own arm: `if (i + 1) % accum == 0: step()`, also around an
// inner `if use_amp: scaler.step(opt) else: opt.step()`. Null when `n` sits in the else
// arm of such a condition (it then runs on the other iterations) or under none.
TSNode modulo_arm(const Syntax& S, const SourceFile& f, TSNode n, TSNode stop) {
  for (TSNode p = parent_of(n); !ts_node_is_null(p) && !ts_node_eq(p, stop); p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.function_definition) break;
    if (k == S.else_clause) {
      TSNode owner = parent_of(p);  // (the else of a `for` or `try` has no condition: text_of gives "")
      if (!ts_node_is_null(owner) && contains(text_of(field(owner, S.f_condition), f.text), "%")) return TSNode{};
      continue;
    }
    if (k != S.if_statement && k != S.elif_clause) continue;
    TSNode arm = field(p, S.f_consequence);  // of the if, or of the elif clause
    if (ts_node_is_null(arm) || !within(n, arm)) continue;
    if (contains(text_of(field(p, S.f_condition), f.text), "%")) return arm;
  }
  return TSNode{};
}

// The step-interval condition (`batches_done % sample_interval == 0`) the call `n` runs
// under inside its loop (modulo_arm), or empty: the call runs every N steps.
std::string interval_guard(const Syntax& S, const SourceFile& f, TSNode n) {
  for (TSNode p = parent_of(n); !ts_node_is_null(p); p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.function_definition || k == S.class_definition) return {};
    if (k != S.for_statement && k != S.while_statement) continue;
    TSNode arm = modulo_arm(S, f, n, p);
    return ts_node_is_null(arm) ? std::string() : std::string(text_of(field(parent_of(arm), S.f_condition), f.text));
  }
  return {};
}

// The models whose every parameter the file freezes: `model.requires_grad_(False)`, or
// `p.requires_grad = False` in a loop over `model.parameters()` (or named_parameters(),
// KAIR's `for k, v in model.named_parameters(): v.requires_grad = False`), each with the
// place it happens. A forward of such a model with inputs that need no grad records no graph.
struct Frozen {
  std::string model;
  uint32_t at;        // the byte where the file freezes it
  bool module_level;  // outside any function: for every function of the file
};

bool at_module_level(const Syntax& S, TSNode n) { return ts_node_is_null(enclosing(n, S.function_definition)); }

std::vector<Frozen> frozen_models(const Syntax& S, const SourceFile& f, TSNode root) {
  std::vector<Frozen> frozen;
  std::string_view t = f.text;
  if (!contains(t, "requires_grad")) return frozen;
  each_call_to(S, f, root, "requires_grad_", [&](TSNode call, std::string_view callee) {
    std::string_view args = text_of(field(call, S.f_arguments), t);
    constexpr std::string_view kMethod = ".requires_grad_", kEval = ".eval()";
    if (!callee.ends_with(kMethod) || (args != "(False)" && args != "(requires_grad=False)")) return;
    std::string_view model = callee.substr(0, callee.size() - kMethod.size());
    if (model.ends_with(kEval)) model.remove_suffix(kEval.size());  // model.eval().requires_grad_(False)
    frozen.push_back({std::string(model), ts_node_start_byte(call), at_module_level(S, call)});
  });
  for (TSNode id : identifiers_named(root, t, "requires_grad", S.identifier)) {
    TSNode attr = parent_of(id), assign = ts_node_is_null(attr) ? TSNode{} : parent_of(attr);
    if (ts_node_is_null(assign) || ts_node_symbol(assign) != S.assignment || !ts_node_eq(field(assign, S.f_left), attr) ||
        text_of(field(assign, S.f_right), t) != "False")
      continue;
    std::string_view param = text_of(field(attr, S.f_object), t);
    for (TSNode p = parent_of(assign); !ts_node_is_null(p) && ts_node_symbol(p) != S.function_definition; p = parent_of(p)) {
      if (ts_node_symbol(p) != S.for_statement) continue;
      std::string_view target = text_of(field(p, S.f_left), t), over = text_of(field(p, S.f_right), t);
      if (target != param && !target.ends_with(", " + std::string(param)) && !target.ends_with("," + std::string(param)))
        break;
      for (std::string_view m : {".parameters()", ".named_parameters()"})
        if (over.ends_with(m))
          frozen.push_back({std::string(over.substr(0, over.size() - m.size())), ts_node_start_byte(p), at_module_level(S, p)});
      break;
    }
  }
  return frozen;
}

// Whether a `generate` method runs without autograd: one defined in this file has a
// no_grad/inference_mode decorator or body; one defined elsewhere (transformers', a
// project's model module) is taken to, as transformers' is.
bool generate_grad_off(const Syntax& S, const SourceFile& f, TSNode root) {
  bool defined = false, off = false;
  for (TSNode id : identifiers_named(root, f.text, "generate", S.identifier)) {
    TSNode def = parent_of(id);
    if (ts_node_is_null(def) || ts_node_symbol(def) != S.function_definition || !ts_node_eq(field(def, S.f_name), id))
      continue;
    defined = true;
    off |= grad_off_at(S, f, id) || disables_grad(text_of(field(def, S.f_body), f.text));
  }
  return !defined || off;
}

// Evaluation, validation and generation loops that call a model with autograd on: an
// `eval_loop` node at the first model call of each such loop. The function is named
// like eval/valid/infer/predict/generate/sample or puts a model in eval mode, is not test
// code, never turns autograd off itself, and no call of it in this file does either;
// the loop neither calls backward() nor steps an optimizer; the model is not one the
// function (or the file's top level) froze before the loop. GPU files only.
void annotate_eval_loops(const FileFacts& c) {
  const auto& [S, file, root, out, gpu, trains] = c;
  if (!gpu) return;
  std::vector<Frozen> frozen = frozen_models(S, file, root);
  std::optional<bool> generate_off;  // generate_grad_off, read at the first generate() loop
  for (ir::Function& fn : out.functions) {
    if (!fn.range.valid()) continue;
    std::string_view name = last_part(fn.name);
    if (name == "<module>" || name.starts_with("test")) continue;
    std::string_view fn_text = file.slice(fn.range);
    bool named = inference_name(name);
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
    while (!ts_node_is_null(def) && ts_node_symbol(def) != S.function_definition) def = parent_of(def);
    if (ts_node_is_null(def) || grad_off_at(S, file, def)) continue;
    bool called_off = false;
    size_t calls = 0;
    std::string every;  // the step interval every call runs under, if all do
    bool every_call = true;
    each_call_to(S, file, root, name, [&](TSNode call, std::string_view) {
      called_off |= grad_off_at(S, file, call);
      ++calls;
      std::string g = interval_guard(S, file, call);
      if (g.empty()) every_call = false;
      else if (every.empty()) every = g;
    });
    if (called_off) continue;
    std::vector<std::string> models = model_names(fn_text, ".eval()");
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
      // The first call of a model in the loop, `model.generate(...)` included.
      TSNode first = first_model_call(S, file, root, models, reg.range.begin_byte, reg.range.end_byte, true);
      if (ts_node_is_null(first)) continue;
      std::string_view callee = text_of(field(first, S.f_function), file.text);
      constexpr std::string_view kGenerate = ".generate";
      bool generate = callee.ends_with(kGenerate);
      std::string_view receiver = generate ? callee.substr(0, callee.size() - kGenerate.size()) : callee;
      // Frozen before the loop, in this function or at the top of the file: no graph is
      // recorded, so there is nothing to turn off.
      bool frozen_here = false;
      for (const Frozen& z : frozen)
        frozen_here |= z.model == receiver && (z.module_level || (fn.range.begin_byte <= z.at && z.at < reg.range.begin_byte));
      if (frozen_here) continue;
      ir::Node& node = push_node(fn, range_of(first), "eval_loop");
      node.attrs["model"] = std::string(callee);
      // `model.generate(...)`: transformers' generate() runs under torch.no_grad(), as do
      // most projects' own; one defined in this file is read for its decorators.
      if (generate && !generate_off) generate_off = generate_grad_off(S, file, root);
      if (generate && *generate_off) node.attrs["generate"] = true;
      node.attrs["loop_line"] = static_cast<int64_t>(reg.range.begin.line);
      if (!named) node.attrs["eval_mode_only"] = true;
      if (fn.name.find('.') != std::string::npos) node.attrs["method"] = true;
      if (calls > 0 && every_call) node.attrs["every_n_steps"] = every;
    }
  }
}


// torch.optim.Adam/AdamW built in a file that trains on a GPU, with neither fused= nor
// foreach= chosen: an `optimizer` node each, with the class. Not when the file says
// `fused` anywhere (it chooses already), passes **kwargs or *args, or asks for
// capturable/differentiable (which fused does not combine with everywhere).
void annotate_optimizers(const FileFacts& c) {
  const auto& [S, file, root, out, gpu, trains] = c;
  if (!gpu || !trains) return;
  // `fused` as a name or keyword in code (not in comments or strings): the file chooses.
  if (!identifiers_named(root, file.text, "fused", S.identifier).empty()) return;
  bool imported = contains(file.text, "from torch.optim import");
  // A script that also runs without CUDA (torch.accelerator, MPS, a CPU device).
  std::string_view t = file.text;
  bool any_device = contains(t, "torch.accelerator") || contains(t, "\"mps") || contains(t, "'mps") ||
                    contains(t, "backends.mps") || contains(t, "\"cpu\"") || contains(t, "'cpu'");
  for (std::string_view cls : {"Adam", "AdamW"}) {
    each_call_to(S, file, root, cls, [&](TSNode n, std::string_view callee) {
      bool qualified = callee.ends_with("optim." + std::string(cls));
      if (!qualified && !(callee == cls && imported)) return;
      TSNode args = field(n, S.f_arguments);
      if (ts_node_is_null(args)) return;
      for (TSNode a : named_children(args, S.comment))
        if (ts_node_symbol(a) == S.list_splat || ts_node_symbol(a) == S.dictionary_splat) return;
      for (std::string_view k : {"foreach", "capturable", "differentiable"})
        if (!keyword(S, file, args, k).empty()) return;
      ir::Node* node = add_node(out, range_of(n), "optimizer");
      if (!node) return;
      node->attrs["class"] = std::string(cls);
      if (any_device) node->attrs["any_device"] = true;
    });
  }
}

// Whether `n` runs only under a condition or in a debugging helper: an enclosing `if`,
// conditional expression or `try`, or a function whose name says debug.
bool conditional(const Syntax& S, const SourceFile& f, TSNode n) {
  for (TSNode p = parent_of(n); !ts_node_is_null(p); p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.if_statement || k == S.conditional_expression || k == S.try_statement || k == S.elif_clause)
      return true;
    if (k == S.function_definition && contains(lower_ascii(text_of(field(p, S.f_name), f.text)), "debug")) return true;
  }
  return false;
}

// Debugging switches left on in a script that trains or runs as a program: a
// `debug_mode` node each, with the API. Anomaly detection (`set_detect_anomaly(True)`,
// `detect_anomaly()`), `emit_nvtx()`, `torch.cuda.set_sync_debug_mode(...)` other than
// 0/"default", and CUDA_LAUNCH_BLOCKING=1 set from code; only where they run
// unconditionally (not under an `if`, a conditional expression, a `try`, or in a function
// named like debug), outside test files.
void annotate_debug_modes(const FileFacts& c) {
  const auto& [S, file, root, out, gpu, trains] = c;
  if (!contains(file.text, "anomaly") && !contains(file.text, "emit_nvtx") && !contains(file.text, "sync_debug_mode") &&
      !contains(file.text, "CUDA_LAUNCH_BLOCKING"))
    return;
  if (!trains && !contains(file.text, "__main__")) return;
  auto add = [&](TSNode at, std::string api) {
    if (conditional(S, file, at)) return;
    ir::Node* node = add_node(out, range_of(at), "debug_mode");
    if (!node) return;
    node->attrs["api"] = std::move(api);
  };
  auto first_arg = [&](TSNode call) -> std::string {
    TSNode args = field(call, S.f_arguments);
    std::vector<TSNode> a = ts_node_is_null(args) ? std::vector<TSNode>{} : named_children(args, S.comment);
    if (a.empty()) return {};
    TSNode v = ts_node_symbol(a[0]) == S.keyword_argument ? field(a[0], S.f_value) : a[0];
    return std::string(text_of(v, file.text));
  };
  each_call_to(S, file, root, "set_detect_anomaly", [&](TSNode n, std::string_view callee) {
    if (contains(callee, "autograd") && first_arg(n) == "True") add(n, "torch.autograd.set_detect_anomaly(True)");
  });
  each_call_to(S, file, root, "detect_anomaly", [&](TSNode n, std::string_view callee) {
    if (contains(callee, "autograd")) add(n, "torch.autograd.detect_anomaly()");
  });
  each_call_to(S, file, root, "emit_nvtx", [&](TSNode n, std::string_view callee) {
    if (contains(callee, "profiler")) add(n, "torch.autograd.profiler.emit_nvtx()");
  });
  each_call_to(S, file, root, "set_sync_debug_mode", [&](TSNode n, std::string_view callee) {
    std::string mode = first_arg(n);
    if (contains(callee, "cuda") && mode != "0" && mode != "\"default\"" && mode != "'default'")
      add(n, "torch.cuda.set_sync_debug_mode(" + mode + ")");
  });
  // os.environ["CUDA_LAUNCH_BLOCKING"] = "1": every kernel launch waits for the kernel.
  for (size_t at = file.text.find("CUDA_LAUNCH_BLOCKING"); at != std::string::npos;
       at = file.text.find("CUDA_LAUNCH_BLOCKING", at + 1)) {
    TSNode str = ts_node_named_descendant_for_byte_range(root, static_cast<uint32_t>(at), static_cast<uint32_t>(at + 20));
    while (!ts_node_is_null(str) && ts_node_symbol(str) != S.string) str = parent_of(str);
    if (ts_node_is_null(str)) continue;
    TSNode sub = parent_of(str);
    if (ts_node_is_null(sub) || ts_node_symbol(sub) != S.subscript) continue;
    TSNode assign = parent_of(sub);
    if (ts_node_is_null(assign) || ts_node_symbol(assign) != S.assignment || !ts_node_eq(field(assign, S.f_left), sub))
      continue;
    std::string_view value = text_of(field(assign, S.f_right), file.text);
    if (value == "\"1\"" || value == "'1'") add(assign, "CUDA_LAUNCH_BLOCKING=1");
  }
}

// The DataLoaders of the file that pin their batches (pin_memory=True, as written):
// the names they are assigned to, and whether every DataLoader call of the file pins.
struct PinnedLoaders {
  std::vector<std::string> names;
  bool any = false, all = true;
};

PinnedLoaders pinned_loaders(const Syntax& S, const SourceFile& file, TSNode root) {
  PinnedLoaders out;
  if (!contains(file.text, "pin_memory")) return out;
  each_call_to(S, file, root, "DataLoader", [&](TSNode n, std::string_view) {
    TSNode args = field(n, S.f_arguments);
    bool pinned = !ts_node_is_null(args) && keyword(S, file, args, "pin_memory") == "True";
    out.any |= pinned;
    out.all &= pinned;
    TSNode parent = parent_of(n);
    if (pinned && !ts_node_is_null(parent) && ts_node_symbol(parent) == S.assignment &&
        ts_node_symbol(field(parent, S.f_left)) == S.identifier)
      out.names.emplace_back(text_of(field(parent, S.f_left), file.text));
  });
  return out;
}

// Whether the innermost `for` around `n` binds `name` (`for step, (x, y) in
// enumerate(loader)` binds step, x and y) while iterating over a pinned loader: one of
// `pinned.names` in its iterable, or any iterable when every DataLoader of the file pins.
// Not a loop that ends its body with an unconditional `break` (one batch, for a sample
// every N steps): it copies once.
bool bound_by_pinned_loop(const Syntax& S, const SourceFile& f, TSNode n, std::string_view name,
                          const PinnedLoaders& pinned) {
  for (TSNode p = parent_of(n); !ts_node_is_null(p); p = parent_of(p)) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.function_definition) return false;
    if (k != S.for_statement) continue;
    if (word_offsets(text_of(field(p, S.f_left), f.text), name).empty()) return false;
    TSNode body = field(p, S.f_body);
    for (TSNode c : named_children(body, S.comment))
      if (std::string_view(ts_node_type(c)) == "break_statement") return false;
    if (pinned.all) return true;
    std::string_view iterable = text_of(field(p, S.f_right), f.text);
    for (const std::string& loader : pinned.names)
      if (!word_offsets(iterable, loader).empty()) return true;
    return false;
  }
  return false;
}

// In a file whose DataLoader pins batches: `x.to(device)` / `x.cuda()` of a batch the
// step loop binds (`for x, y in loader`, or `batch["x"]` of it), without
// non_blocking=True: a `blocking_copy` node, with the receiver. The pinned batch could
// be copied asynchronously; a blocking copy waits for the GPU's queue.
void add_blocking_copy(const FileFacts& c, TSNode call, TSNode args, bool cuda, const std::string& device,
                       const PinnedLoaders& pinned) {
  const auto& [S, file, root, out, gpu, trains] = c;
  if (!keyword(S, file, args, "non_blocking").empty()) return;  // set, or **kwargs
  if (!cuda && (device.empty() || contains(device, ".dtype"))) return;  // a dtype, the CPU, another tensor
  TSNode recv = field(field(call, S.f_function), S.f_object);
  while (!ts_node_is_null(recv) && ts_node_symbol(recv) == S.subscript) recv = field(recv, S.f_value);
  if (ts_node_is_null(recv) || ts_node_symbol(recv) != S.identifier) return;
  if (!bound_by_pinned_loop(S, file, call, text_of(recv, file.text), pinned)) return;
  Range r = range_of(call);
  ir::Function* home = home_of(out, r);
  if (!home) return;
  std::string hot = hot_reason(*home, r);
  if (hot.empty() || hot == "forward pass") return;
  ir::Node& node = push_node(*home, r, "blocking_copy");
  node.attrs["receiver"] = std::string(text_of(field(field(call, S.f_function), S.f_object), file.text));
  node.attrs["hot"] = hot;
}

// Every `.cuda(...)` and `.to(...)` call of a GPU file, read once: a host-built tensor
// moved in per-step code (`host_tensor`), a pinned batch copied without non_blocking
// (`blocking_copy`).
void annotate_device_moves(const FileFacts& c) {
  if (!c.gpu) return;
  PinnedLoaders pinned = pinned_loaders(c.S, c.file, c.root);
  auto visit = [&](TSNode call, std::string_view callee) {
    bool cuda = callee.ends_with(".cuda");
    if (!cuda && !callee.ends_with(".to")) return;
    TSNode args = field(call, c.S.f_arguments);
    if (ts_node_is_null(args)) return;
    std::string device = move_target(c, args, cuda);
    add_host_tensor(c, call, device);
    if (pinned.any) add_blocking_copy(c, call, args, cuda, device, pinned);
  };
  each_call_to(c.S, c.file, c.root, "cuda", visit);
  each_call_to(c.S, c.file, c.root, "to", visit);
}

// Gradient accumulation under DistributedDataParallel without no_sync(): a file that wraps
// a model in DDP, where a loop steps the optimizer only every N iterations (`if (i + 1) %
// accum == 0: optimizer.step()`, or `scaler.step(optimizer)`) but calls backward() on
// every one. Each of those backward() calls all-reduces every gradient across the ranks;
// under `with model.no_sync():` all but the last would not. A `ddp_accumulation` node at
// the backward() call. Not when the file says no_sync, require_backward_grad_sync
// (nanoGPT's switch), no_backward_sync (Fabric) or accelerate's accumulate() in code.
// The command-line option behind a modulo's divisor (`% args.gradient_accumulation_steps`)
// when the file's argparse gives it a default of 1, as it is spelled there
// (`--gradient_accumulation_steps`); empty otherwise. A step every iteration unless asked.
std::string default_one_option(const Syntax& S, const SourceFile& f, TSNode root, std::string_view cond) {
  size_t mod = cond.find('%');
  if (mod == std::string_view::npos) return {};
  size_t b = mod + 1;
  while (b < cond.size() && cond[b] == ' ') ++b;
  size_t e = b;
  while (e < cond.size() && (word_byte(cond[e]) || cond[e] == '.')) ++e;
  std::string_view divisor = cond.substr(b, e - b);
  if (divisor.find('.') == std::string_view::npos) return {};
  std::string option;
  return option_default(S, f, root, last_part(divisor), &option) == "1" ? option : std::string();
}

void annotate_ddp_accumulation(const FileFacts& c) {
  const auto& [S, file, root, out, gpu, trains] = c;
  std::string_view t = file.text;
  if (!trains || (!contains(t, "DistributedDataParallel") && !contains(t, "DDP("))) return;
  // apex's DistributedDataParallel has no no_sync() (nor require_backward_grad_sync): the
  // fix does not exist for a file that wraps its model in it alone.
  bool apex_ddp = contains(t, "apex.parallel import DistributedDataParallel") ||
                  contains(t, "apex.parallel.DistributedDataParallel(");
  bool torch_ddp = contains(t, "nn.parallel import DistributedDataParallel") ||
                   contains(t, "nn.parallel.DistributedDataParallel(") ||
                   (contains(t, "DDP(") && !contains(t, "apex.parallel import DistributedDataParallel as DDP"));
  if (apex_ddp && !torch_ddp) return;
  // Named in code (not in comments or strings): the file chooses when to all-reduce.
  for (std::string_view chooses : {"no_sync", "require_backward_grad_sync", "no_backward_sync", "accumulate"})
    if (!identifiers_named(root, t, chooses, S.identifier).empty()) return;
  auto is_loop = [&](TSNode n) { return ts_node_symbol(n) == S.for_statement || ts_node_symbol(n) == S.while_statement; };
  // `optimizer.step()` (names.h, is_optimizer_name: as the IR's training loops read it) or
  // an AMP scaler's `scaler.step(optimizer)`.
  auto is_step = [](std::string_view callee) {
    std::string_view receiver = callee.substr(0, callee.size() - std::min<size_t>(callee.size(), 5));
    return is_optimizer_name(receiver) || contains(lower_ascii(last_part(receiver)), "scaler");
  };
  // The `if` a branch arm belongs to, when the if has a competing arm (else/elif).
  auto arm_owner = [&](TSNode p) {
    TSSymbol k = ts_node_symbol(p);
    if (k == S.else_clause || k == S.elif_clause) return parent_of(p);
    TSNode up = parent_of(p);
    if (k == S.block && !ts_node_is_null(up) && ts_node_symbol(up) == S.if_statement &&
        !ts_node_is_null(field(up, S.f_alternative)))
      return up;
    return TSNode{};
  };
  // Whether `a` and `b` sit in competing arms of one `if` inside `body`: they never run in
  // the same iteration.
  auto exclusive = [&](TSNode a, TSNode b, TSNode body) {
    for (TSNode p = parent_of(a); !ts_node_is_null(p) && !ts_node_eq(p, body); p = parent_of(p)) {
      TSNode owner = arm_owner(p);
      if (!ts_node_is_null(owner) && !within(b, p) && within(b, owner)) return true;
    }
    return false;
  };
  std::set<uint32_t> examined;  // guards already examined (several steps under one guard)
  each_call_to(S, file, root, "step", [&](TSNode step, std::string_view callee) {
    if (!is_step(callee)) return;
    // Each loop around the guarded step, innermost first: the one whose body also calls
    // backward() outside the guard (`for opt in opts: opt.step()` is not the training loop).
    for (TSNode loop = parent_of(step); !ts_node_is_null(loop); loop = parent_of(loop)) {
      if (ts_node_symbol(loop) == S.function_definition) return;
      if (!is_loop(loop)) continue;
      TSNode body = field(loop, S.f_body);
      TSNode guard = ts_node_is_null(body) ? TSNode{} : modulo_arm(S, file, step, body);
      if (ts_node_is_null(guard)) continue;
      if (!examined.insert(ts_node_start_byte(guard)).second) return;
      // Optimizers stepped on every iteration (a GAN's critic, a second model): beside such
      // a step, which gradients a backward() feeds is not known.
      std::vector<TSNode> unguarded;
      each_call_to(S, file, root, "step", [&](TSNode other, std::string_view other_callee) {
        if (is_step(other_callee) && ts_node_is_null(modulo_arm(S, file, other, body))) unguarded.push_back(other);
      }, body);
      bool found = false;
      each_call_to(S, file, root, "backward", [&](TSNode bw, std::string_view) {
        // Every iteration, not under the guard, and in an arm that reaches the guarded step
        // (`if accum > 1: ...backward(); if (i + 1) % accum == 0: step()` else `...backward();
        // step()` accumulates only in its first arm); no unguarded step beside it.
        if (within(bw, guard) || exclusive(bw, guard, body)) return;
        for (TSNode other : unguarded)
          if (!exclusive(bw, other, body)) return;
        found = true;
        ir::Node* node = add_node(out, range_of(bw), "ddp_accumulation");
        if (!node) return;
        std::string_view cond = text_of(field(parent_of(guard), S.f_condition), t);
        node->attrs["guard"] = std::string(cond);
        if (std::string option = default_one_option(S, file, root, cond); !option.empty())
          node->attrs["steps_by_default"] = option;
      }, body);
      if (found) return;
    }
  });
  // A loss scaler's step (names.h, is_scaler_step) with `update_grad=` a modulo test that
  // is true every N iterations (timm's NativeScaler as Swin, MAE and ConvNeXt call it:
  // `loss_scaler(loss, optimizer, update_grad=(i + 1) % accum == 0)`) runs backward() on
  // every call and steps only when update_grad holds.
  auto scaler_call = [&](TSNode call) {
    TSNode args = field(call, S.f_arguments);
    std::vector<std::string_view> pos;
    for (TSNode a : named_children(args, S.comment))
      if (ts_node_symbol(a) != S.keyword_argument) pos.push_back(text_of(a, t));
    std::string update = keyword(S, file, args, "update_grad");
    bool step = is_scaler_step(text_of(field(call, S.f_function), t), pos.size() > 0 ? pos[0] : "",
                               pos.size() > 1 ? pos[1] : "", keyword(S, file, args, "optimizer"));
    bool every_n = contains(update, "%") && (contains(update, "== 0") || contains(update, "==0"));
    return std::make_pair(step, every_n);
  };
  for (TSNode kw : identifiers_named(root, t, "update_grad", S.identifier)) {
    TSNode pair = parent_of(kw), args = parent_of(pair);
    TSNode call = ts_node_is_null(args) ? TSNode{} : parent_of(args);
    if (ts_node_is_null(call) || ts_node_symbol(pair) != S.keyword_argument || ts_node_symbol(call) != S.call ||
        !ts_node_eq(field(pair, S.f_name), kw))
      continue;
    auto [step, every_n] = scaler_call(call);
    if (!step || !every_n) continue;
    // On every iteration of its loop, with no optimizer stepped on every iteration beside
    // it: an unguarded `.step()`, or another call of the same scaler without a modulo
    // update_grad (a GAN's critic).
    TSNode body{};
    for (TSNode p = parent_of(call); !ts_node_is_null(p); p = parent_of(p)) {
      if (ts_node_symbol(p) == S.function_definition) break;
      if (is_loop(p)) {
        body = field(p, S.f_body);
        break;
      }
    }
    if (ts_node_is_null(body) || !ts_node_is_null(modulo_arm(S, file, call, body))) continue;
    bool unguarded_step = false;
    each_call_to(S, file, root, "step", [&](TSNode other, std::string_view other_callee) {
      if (is_step(other_callee) && ts_node_is_null(modulo_arm(S, file, other, body)) && !exclusive(call, other, body))
        unguarded_step = true;
    }, body);
    TSNode callee = field(call, S.f_function);
    if (ts_node_symbol(callee) == S.attribute) callee = field(callee, S.f_attribute);
    each_call_to(S, file, root, text_of(callee, t), [&](TSNode other, std::string_view) {
      if (ts_node_eq(other, call) || !ts_node_is_null(modulo_arm(S, file, other, body)) || exclusive(call, other, body)) return;
      auto [other_step, other_every_n] = scaler_call(other);
      if (other_step && !other_every_n) unguarded_step = true;
    }, body);
    if (unguarded_step) continue;
    ir::Node* node = add_node(out, range_of(call), "ddp_accumulation");
    if (node) node->attrs["guard"] = std::string(text_of(field(parent_of(kw), S.f_value), t));
  }
}

}  // namespace

void annotate_nodes(const SourceFile& file, TSNode root, ir::Module& out, bool gpu_file) {
  if (test_path(file.path)) return;  // none of these rules reads test code
  FileFacts c{Syntax::get(), file, root, out, gpu_file, trains(out)};
  annotate_data_loaders(c);
  annotate_zero_grads(c);
  annotate_device_moves(c);
  annotate_eval_loops(c);
  annotate_optimizers(c);
  annotate_debug_modes(c);
  annotate_ddp_accumulation(c);
  annotate_setup(file, root, out, gpu_file, c.trains);
}

}  // namespace mlsem::python::program
