// Builder functions: one ir::Function per def and one for module-level code,
// parameters as `input` nodes, and inlining of same-file functions and methods into
// their caller. Relies on the statement and expression stages for bodies.
#include "python/builder.h"

#include <algorithm>

namespace mlsem::python::detail {

// ------------------------------------------------------------------ functions

void Builder::lower_function(int fi) {
  summary_[fi] = Summary::kInProgress;
  const FuncInfo& f = functions_[fi];
  FnState st;
  st.fn.name = f.name;
  st.fn.range = range_of(f.def);
  st.fn.regions.push_back(ir::Region{"function", 0, {}, st.fn.range});
  st.fn.regions[0].attrs["name"] = f.name;  // qualified: "BertPooler.forward"
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

bool Builder::worth_inlining(int fi) {
  if (summary_[fi] == Summary::kUnknown) lower_function(fi);
  return summary_[fi] == Summary::kModelled;
}

void Builder::lower_module_code() {
  FnState st;
  st.fn.name = "<module>";
  st.fn.range = range_of(root_);
  st.fn.regions.push_back(ir::Region{"function", 0, {}, st.fn.range});
  st.fn.regions[0].attrs["name"] = std::string("<module>");
  Scope scope;
  st.scope = &scope;
  st_ = &st;
  lower_block(root_);
  st_ = nullptr;
  if (!st.fn.nodes.empty()) out_.functions.push_back(std::move(st.fn));
}

std::vector<Builder::Param> Builder::parameters(TSNode params) {
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

void Builder::bind_parameters(TSNode params, bool is_method) {
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

// ------------------------------------------------------------------ calls

Value Builder::inline_call(int fi, Args& a, TSNode e, int cls, const std::string& self_path) {
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
  size_t first_inlined = st_->fn.nodes.size();
  st_->inlining.push_back(fi);
  ++st_->inline_depth;
  lower_block(field(f.def, S.f_body));
  --st_->inline_depth;
  st_->inlining.pop_back();
  st_->scope = caller;
  if (callee.ret.node == kNoNode && callee.ret.module < 0 && !callee.ret.is_tuple)
    return val(emit_const(e, std::nullopt));  // no return: None
  // Seen from the caller, what the helper computed is where the caller called it.
  Range site = range_of(e);
  for (size_t i = first_inlined; i < st_->fn.nodes.size(); ++i) st_->fn.nodes[i].site = site;
  return callee.ret;
}

}  // namespace mlsem::python::detail
