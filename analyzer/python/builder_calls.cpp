// Builder calls: arguments, builtins, calls through imported names, tensor methods,
// nn.Module calls and module methods. Modelled ops are looked up in the op table
// (builder_ops.cpp); same-file callees are inlined (builder_functions.cpp).
#include "python/builder.h"

#include "python/names.h"

namespace mlsem::python::detail {

// ------------------------------------------------------------------ calls

Args Builder::collect_args(TSNode list) {
  Args a;
  if (ts_node_is_null(list)) return a;
  if (sym(list) == S.generator_expression) {
    a.pos.push_back(list);
    return a;
  }
  auto items = named(list);
  if (items.size() > 1) a.pos.reserve(items.size());
  for (TSNode c : items) {
    TSSymbol k = sym(c);
    if (k == S.keyword_argument) a.kw.emplace_back(text(field(c, S.f_name)), field(c, S.f_value));
    else if (k == S.list_splat || k == S.dictionary_splat) {
      a.splat = true;
      lower(c);
    }
    else a.pos.push_back(c);
  }
  return a;
}

Value Builder::arg(Args& a, size_t i) {
  if (a.cache.size() < a.count()) a.cache.resize(a.count());
  if (i >= a.count()) return {};
  if (a.receiver && i == 0) return *a.receiver;
  if (!a.cache[i]) a.cache[i] = lower(a.expr(i));
  return *a.cache[i];
}

NodeId Builder::arg_node(Args& a, size_t i, std::string_view name) {
  if (i < a.count()) {
    TSNode src = a.expr(i);
    return as_node(arg(a, i), ts_node_is_null(src) ? a.call : src);
  }
  TSNode k = name.empty() ? TSNode{} : a.keyword(name);
  return ts_node_is_null(k) ? kNoNode : as_node(lower(k), k);
}

std::vector<NodeId> Builder::all_args(Args& a) {
  std::vector<NodeId> ins;
  if (a.count() + a.kw.size() > 1) ins.reserve(a.count() + a.kw.size());
  for (size_t i = 0; i < a.count(); ++i)
    if (!is_literal(a.expr(i))) ins.push_back(arg_node(a, i));
  for (const auto& [k, v] : a.kw)
    if (!is_literal(v)) ins.push_back(as_node(lower(v), v));
  return ins;
}

bool Builder::is_literal(TSNode n) const {
  if (ts_node_is_null(n)) return false;
  TSSymbol k = sym(n);
  return k == S.integer || k == S.float_ || k == S.true_ || k == S.false_ || k == S.none ||
         (k == S.string && !is_fstring(n));
}

bool Builder::is_fstring(TSNode n) const {
  std::string_view t = text(n);
  for (char c : t.substr(0, 3)) {
    if (c == 'f' || c == 'F') return true;
    if (c == '"' || c == '\'') return false;
  }
  return false;
}

Value Builder::opaque(Args& a, TSNode e, std::string callee) {
  NodeId id = emit("call", all_args(a), e);
  set(id, "callee", std::move(callee));
  return val(id);
}

Value Builder::lower_call(TSNode e) {
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
    if (scaler_step(method, a)) count_training_mark();  // self.loss_scaler(loss, self.optimizer)
    a.receiver = recv;
    return lower_method(method, obj, a, e);
  }
  if (k == S.identifier) {
    std::string_view name = text(fn);
    auto it = sc.vars.find(name);
    if (it != sc.vars.end()) {
      if (it->second.module >= 0) return apply_module(it->second.module, std::string(name), a, e);
      if (scaler_step(name, a)) count_training_mark();
      // A dropout layer handed in as an argument (`def attention(q, k, v, mask, dropout):
      // ... dropout(scores)`): a variable named dropout, attn_drop, ..., called on one tensor.
      std::string lower = lower_ascii(name);
      if ((contains(lower, "dropout") || lower == "drop" || lower.ends_with("_drop")) && a.pos.size() == 1 && a.kw.empty() && !a.splat) {
        NodeId id = emit("dropout", {arg_node(a, 0, "input")}, e);
        set(id, "module", std::string(name));  // the fix's `name.p if self.training else 0.0`
        set(id, "p_text", std::string(name) + ".p if " + std::string(name) + ".training else 0.0");  // without self
        return val(id);
      }
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

int Builder::local_function(std::string_view name) {
  const FuncInfo* outer = st_->scope->func >= 0 ? &functions_[st_->scope->func] : nullptr;
  if (outer) {
    auto it = function_by_name_.find(outer->name + "." + std::string(name));
    if (it != function_by_name_.end()) return it->second;
  }
  auto it = function_by_name_.find(std::string(name));
  return it != function_by_name_.end() && functions_[it->second].cls < 0 ? it->second : -1;
}

Value Builder::lower_builtin(std::string_view name, Args& a, TSNode e) {
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

Value Builder::lower_named_call(const std::string& callee, Args& a, TSNode e) {
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
    shape_attrs(id, a, c.name == "rearrange" ? "einops.rearrange" : c.name == "repeat" ? "einops.repeat" : "einops.reduce");
    return val(id);
  }
  return opaque(a, e, callee);
}

// `loss_scaler(loss, optimizer, ...)` (names.h, is_scaler_step): backward() and the
// optimizer's step run inside the call.
bool Builder::scaler_step(std::string_view callee, const Args& a) {
  auto at = [&](size_t i) { return i < a.pos.size() ? text(a.pos[i]) : std::string_view(); };
  TSNode kw = a.keyword("optimizer");
  return is_scaler_step(callee, at(0), at(1), ts_node_is_null(kw) ? std::string_view() : text(kw));
}

Value Builder::lower_method(std::string_view method, TSNode obj, Args& a, TSNode e) {
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

Value Builder::module_method(int m, std::string path, std::string_view method, Args& a, TSNode e) {
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

Value Builder::apply_module(int m, std::string path, Args& a, TSNode e) {
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
      // A library layer's nodes take its constructor's range (`nn.GELU()` inside the
      // nn.Sequential(...) in __init__): that is where a fix goes, not the call site.
      const ModuleDesc& item = modules_[d.items[i]];
      TSNode at = item.local_class < 0 && !ts_node_is_null(item.ctor) ? item.ctor : e;
      x = apply_module(d.items[i], path + "." + std::to_string(i), step, at);
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
    // Linear(in, out, bias), Conv2d(in, out, k, stride, padding, dilation, groups, bias);
    // the lazy forms take no input size: LazyLinear(out, bias), LazyConv2d(out, k, ..., bias).
    bool lazy = d.cls.find(".Lazy") != std::string::npos;
    TSNode bias = ctor.get((op == "linear" ? 2 : 7) - (lazy ? 1 : 0), "bias");
    auto b = bool_of(bias);
    set(id, "bias", !b || *b);
    // Written out (bias=True, bias=use_bias) or perhaps passed in **kwargs: the author's
    // choice, as opposed to the default.
    if (!ts_node_is_null(bias)) set(id, "bias_written", clip(text(bias)));
    else if (ctor.splat) set(id, "bias_written", std::string("**"));
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

std::string Builder::unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'')) s = s.substr(1, s.size() - 2);
  return std::string(s);
}

}  // namespace mlsem::python::detail
