// Builder functions: one ir::Function per def and one for module-level code,
// parameters as `input` nodes, and inlining of same-file functions and methods into
// their caller. Relies on the statement and expression stages for bodies.
#include "python/builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

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

bool Builder::inline_refused(int fi, bool internal, int depth, size_t budget, bool validating,
                             bool* unknown) {
  const FuncInfo& f = functions_[fi];
  bool refused = internal || fi == st_->root ||
                 std::find(st_->inlining.begin(), st_->inlining.end(), fi) != st_->inlining.end() ||
                 depth >= kMaxInlineDepth || budget > kInlineBudget ||
                 ts_node_end_byte(f.def) - ts_node_start_byte(f.def) > kMaxInlineBytes;
  if (!refused) {
    if (validating && summary_[fi] == Summary::kUnknown) {
      *unknown = true;  // lowering it now is not what the recorded body saw
      return true;
    }
    refused = !worth_inlining(fi);
  }
  for (auto& r : recs_) {
    bool in = internal || std::find(st_->inlining.begin() + static_cast<std::ptrdiff_t>(r->stack_base),
                                    st_->inlining.end(), fi) != st_->inlining.end();
    r->body.checks.push_back({fi, in, depth - r->depth0,
                              static_cast<int64_t>(budget) - static_cast<int64_t>(r->budget0), refused});
  }
  return refused;
}

Value Builder::inline_call(int fi, Args& a, TSNode e, int cls, const std::string& self_path) {
  const FuncInfo& f = functions_[fi];
  bool unknown = false;
  if (inline_refused(fi, false, st_->inline_depth, st_->inlined_nodes, false, &unknown)) {
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
  std::vector<Value> bound;
  for (size_t i = first; i < ps.size(); ++i) {
    const Param& p = ps[i];
    if (p.variadic) {
      positional_open = false;
      continue;
    }
    Value v;
    bool found = false;
    if (positional_open && next_pos < pos.size()) {
      v = pos[next_pos++];
      found = true;
    }
    for (const auto& [name, kv] : kws)
      if (!found && name == p.name) {
        v = kv;
        found = true;
      }
    if (!found) {
      if (!ts_node_is_null(p.default_value)) v = lower(p.default_value);
      else v = val(emit_name(p.node, std::string(p.name)));
    }
    callee.vars[p.name] = v;
    bound.push_back(v);
  }
  size_t first_inlined = st_->fn.nodes.size();
  st_->inlining.push_back(fi);
  ++st_->inline_depth;

  // The body as lowered at an earlier call, when what it read there reads the same here.
  std::vector<NodeId> slots;
  std::vector<Value> params;
  slot_values(bound, slots, params);
  bool in_module = st_->fn.name == "<module>";
  const InlineBody* hit = nullptr;
  InlineBody checked;  // MLSEM_INLINE_VERIFY: the body a copy would have come from
  auto& kept = inline_bodies_[fi];
  for (const InlineBody& b : kept) {
    if (b.cls != callee.cls || b.self_path != callee.self_path || b.params.size() != params.size() ||
        b.in_module != in_module)
      continue;
    bool same = true;
    for (size_t i = 0; same && i < params.size(); ++i)
      same = b.params[i].node == params[i].node && b.params[i].module == params[i].module &&
             b.params[i].is_tuple == params[i].is_tuple && b.params[i].items == params[i].items;
    if (same && usable(b, slots)) {
      hit = &b;
      break;
    }
  }
  if (hit && !verify_inline_) {
    replay(*hit, slots, callee.ret);
  } else {
    if (hit) checked = *hit;
    // Lowered here; kept for later calls when nothing outside the slots was touched.
    bool record = !hit && kept.size() < 8;
    if (record) {
      auto r = std::make_unique<Recording>();
      r->slots = slots;
      r->read.assign(slots.size(), 0);
      r->body.cls = callee.cls;
      r->body.self_path = callee.self_path;
      r->body.in_module = in_module;
      r->body.params = params;
      r->base = static_cast<NodeId>(st_->fn.nodes.size());
      r->region0 = st_->region;
      r->region_base = static_cast<uint32_t>(st_->fn.regions.size());
      r->stack_base = st_->inlining.size();
      r->budget0 = st_->inlined_nodes;
      r->direct0 = st_->direct_marks.size();
      r->depth0 = st_->inline_depth;
      r->nesting0 = st_->nesting;
      r->env0 = st_->env_writes;
      r->marks0 = st_->training_marks;
      recs_.push_back(std::move(r));
      set_read_floor();
    }
    size_t base = st_->fn.nodes.size(), region_base = st_->fn.regions.size();
    uint32_t region0 = st_->region;
    uint32_t env0 = st_->env_writes, marks0 = st_->training_marks;
    size_t inlined0 = st_->inlined_nodes;
    lower_block(field(f.def, S.f_body));
    if (record) {
      std::unique_ptr<Recording> r = std::move(recs_.back());
      recs_.pop_back();
      set_read_floor();
      if (finish_recording(*r, callee.ret)) kept.push_back(std::move(r->body));
    }
    if (hit) {
      // MLSEM_INLINE_VERIFY: the kept body must be what was just lowered.
      FnState probe;
      probe.fn.nodes.resize(base);
      probe.fn.regions.resize(region_base);
      probe.region = region0;
      probe.env_writes = env0;
      probe.training_marks = marks0;
      probe.inlined_nodes = inlined0;
      FnState* real = st_;
      st_ = &probe;
      std::vector<std::unique_ptr<Recording>> outer = std::move(recs_);
      recs_.clear();
      Value ret;
      replay(checked, slots, ret);
      recs_ = std::move(outer);
      st_ = real;
      bool same = probe.fn.nodes.size() == real->fn.nodes.size() &&
                  probe.fn.regions.size() == real->fn.regions.size() &&
                  probe.env_writes == real->env_writes && probe.training_marks == real->training_marks &&
                  probe.inlined_nodes == real->inlined_nodes && ret.node == callee.ret.node &&
                  (ret.module == callee.ret.module ||
                   (ret.module >= 0 && callee.ret.module >= 0 &&
                    modules_[ret.module].cls == modules_[callee.ret.module].cls &&
                    ts_node_eq(modules_[ret.module].ctor, modules_[callee.ret.module].ctor))) &&
                  ret.items == callee.ret.items && ret.is_tuple == callee.ret.is_tuple;
      for (size_t i = base; same && i < probe.fn.nodes.size(); ++i) {
        const ir::Node &x = probe.fn.nodes[i], &y = real->fn.nodes[i];
        same = x.op == y.op && x.inputs == y.inputs && attrs_equal(x.attrs, y.attrs) && x.region == y.region &&
               x.range.begin_byte == y.range.begin_byte && x.range.end_byte == y.range.end_byte &&
               x.site.begin_byte == y.site.begin_byte && x.site.end_byte == y.site.end_byte;
      }
      for (size_t i = region_base; same && i < probe.fn.regions.size(); ++i) {
        const ir::Region &x = probe.fn.regions[i], &y = real->fn.regions[i];
        same = x.kind == y.kind && x.parent == y.parent && attrs_equal(x.attrs, y.attrs) &&
               x.range.begin_byte == y.range.begin_byte;
      }
      if (!same)
        std::fprintf(stderr, "mlsem: inline verify: %s: %s inlined into %s differs from its kept body\n",
                     file_.path.c_str(), f.name.c_str(), st_->fn.name.c_str());
    }
  }
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

// ------------------------------------------------------------------ kept bodies

void Builder::slot_values(const std::vector<Value>& bound, std::vector<NodeId>& slots,
                          std::vector<Value>& encoded) {
  auto slot = [&](NodeId id) {
    if (id == kNoNode) return kNoNode;
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i] == id) return kSlot | static_cast<NodeId>(i);
    slots.push_back(id);
    return kSlot | static_cast<NodeId>(slots.size() - 1);
  };
  encoded.reserve(bound.size());
  for (const Value& v : bound) {
    Value x;
    x.node = slot(v.node);
    x.module = v.module;
    x.is_tuple = v.is_tuple;
    x.items.reserve(v.items.size());
    for (NodeId id : v.items) x.items.push_back(slot(id));
    encoded.push_back(std::move(x));
  }
}

bool Builder::encode_id(NodeId& id, NodeId base, const std::vector<NodeId>& slots) {
  if (id == kNoNode) return true;
  if (id >= base) {
    id -= base;
    return id < kForeign;
  }
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i] == id) {
      id = kSlot | static_cast<NodeId>(i);
      return true;
    }
  return false;
}

void Builder::note_read(NodeId id, SlotRead::Kind kind, const char* key) const {
  for (auto it = recs_.rbegin(); it != recs_.rend() && id < (*it)->base; ++it) {
    Recording& r = **it;
    if (!r.ok) continue;
    size_t s = 0;
    while (s < r.slots.size() && r.slots[s] != id) ++s;
    if (s == r.slots.size()) {
      r.ok = false;  // a caller node the parameters do not name
      continue;
    }
    if (r.read[s] & 1) continue;  // all of it is already kept
    SlotRead rd;
    rd.kind = kind;
    rd.slot = static_cast<uint32_t>(s);
    const ir::Node& n = st_->fn.nodes[id];
    if (kind == SlotRead::kWhole) {
      r.read[s] |= 1;
      rd.whole = fingerprint(id, r.slots);
    } else if (kind == SlotRead::kOp) {
      if (r.read[s] & 2) continue;
      r.read[s] |= 2;
      rd.whole.op = n.op;
    } else if (kind == SlotRead::kInputs) {
      if (r.read[s] & 4) continue;
      r.read[s] |= 4;
      rd.whole.inputs = fingerprint(id, r.slots).inputs;
    } else {
      bool seen = false;
      for (const auto& [ks, k] : r.read_keys) seen = seen || (ks == s && std::strcmp(k, key) == 0);
      if (seen) continue;
      r.read_keys.emplace_back(static_cast<uint32_t>(s), key);
      rd.key = key;
      if (const ir::Attr* a = n.attr(key)) rd.attr = *a;
    }
    r.body.reads.push_back(std::move(rd));
  }
}

bool Builder::attr_equal(const ir::Attr& a, const ir::Attr& b) {
  if (std::holds_alternative<double>(a) && std::holds_alternative<double>(b) &&
      std::isnan(std::get<double>(a)) && std::isnan(std::get<double>(b)))
    return true;  // float('nan') reads the same
  return a == b;
}

bool Builder::attrs_equal(const std::map<std::string, ir::Attr>& a, const std::map<std::string, ir::Attr>& b) {
  if (a.size() != b.size()) return false;
  for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y)
    if (x->first != y->first || !attr_equal(x->second, y->second)) return false;
  return true;
}

const std::vector<NodeId>& Builder::inputs_of(NodeId id) const {
  if (id < read_floor_) note_read(id, SlotRead::kInputs);
  return st_->fn.nodes[id].inputs;
}

std::optional<ir::Attr> Builder::attr_of(NodeId id, const char* key) const {
  if (id < read_floor_) note_read(id, SlotRead::kAttr, key);
  const ir::Attr* a = st_->fn.nodes[id].attr(key);
  return a ? std::optional<ir::Attr>(*a) : std::nullopt;
}

// What the lowering can read of a slot node: op, attributes, inputs (other slots by slot,
// any other node by its first place in the list).
ir::Node Builder::fingerprint(NodeId id, const std::vector<NodeId>& slots) const {
  const ir::Node& n = st_->fn.nodes[id];
  ir::Node fp;
  fp.op = n.op;
  fp.attrs = n.attrs;
  fp.inputs.reserve(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    NodeId in = n.inputs[i], code = kNoNode;
    for (size_t s = 0; s < slots.size() && code == kNoNode; ++s)
      if (slots[s] == in) code = kSlot | static_cast<NodeId>(s);
    for (size_t j = 0; j < i && code == kNoNode; ++j)
      if (n.inputs[j] == in) code = kForeign | static_cast<NodeId>(j);
    if (code == kNoNode) code = kForeign | static_cast<NodeId>(i);
    fp.inputs.push_back(code);
  }
  return fp;
}

bool Builder::fingerprint_equal(const ir::Node& fp, NodeId id, const std::vector<NodeId>& slots) const {
  const ir::Node* n = node_if(id);  // a read, for the recordings around this call
  if (!n || n->op != fp.op || n->inputs.size() != fp.inputs.size() || !attrs_equal(n->attrs, fp.attrs))
    return false;
  ir::Node now = fingerprint(id, slots);
  return now.inputs == fp.inputs;
}

void Builder::note_nesting(int nesting) {
  for (auto& r : recs_) r->body.nesting_rel = std::max(r->body.nesting_rel, nesting - r->nesting0);
}

bool Builder::usable(const InlineBody& b, const std::vector<NodeId>& slots) {
  if (st_->nesting + b.nesting_rel > kMaxNesting) return false;
  for (const SlotRead& rd : b.reads) {
    NodeId id = slots[rd.slot];
    bool same = rd.kind == SlotRead::kWhole ? fingerprint_equal(rd.whole, id, slots)
                : rd.kind == SlotRead::kOp  ? op_of(id) == rd.whole.op
                : rd.kind == SlotRead::kInputs
                    ? (inputs_of(id), fingerprint(id, slots).inputs == rd.whole.inputs)
                    : [&] {
                                               std::optional<ir::Attr> a = attr_of(id, rd.key);
                                               return a.has_value() == rd.attr.has_value() &&
                                                      (!a || attr_equal(*a, *rd.attr));
                                             }();
    if (!same) return false;
  }
  for (const InlineCheck& c : b.checks) {
    bool unknown = false;
    int64_t budget = static_cast<int64_t>(st_->inlined_nodes) + c.budget_rel;
    bool refused = inline_refused(c.fi, c.internal, st_->inline_depth + c.depth_rel,
                                  static_cast<size_t>(std::max<int64_t>(budget, 0)), true, &unknown);
    if (unknown || refused != c.refused || budget < 0) return false;
  }
  if (!recs_.empty()) note_nesting(st_->nesting + b.nesting_rel);
  return true;
}

void Builder::replay(const InlineBody& b, const std::vector<NodeId>& slots, Value& ret) {
  NodeId base = static_cast<NodeId>(st_->fn.nodes.size());
  uint32_t region_base = static_cast<uint32_t>(st_->fn.regions.size());
  auto decode = [&](NodeId id) {
    if (id == kNoNode) return kNoNode;
    return (id & kSlot) ? slots[id & ~kSlot] : base + id;
  };
  st_->fn.regions.reserve(st_->fn.regions.size() + b.regions.size());
  for (const ir::Region& r : b.regions) {
    st_->fn.regions.push_back(r);
    uint32_t& p = st_->fn.regions.back().parent;
    p = p == kStartRegion ? st_->region : region_base + p;
  }
  st_->fn.nodes.reserve(st_->fn.nodes.size() + b.nodes.size());
  for (const ir::Node& n : b.nodes) {
    st_->fn.nodes.push_back(n);
    ir::Node& c = st_->fn.nodes.back();
    for (NodeId& in : c.inputs) in = decode(in);
    c.region = c.region == kStartRegion ? st_->region : region_base + c.region;
  }
  st_->inlined_nodes += b.nodes.size();
  st_->env_writes += b.env_writes;
  add_training_marks(b.marks, b.direct_marks);
  ret.node = decode(b.ret.node);
  ret.module = b.ret.module;
  ret.is_tuple = b.ret.is_tuple;
  ret.items.clear();
  for (NodeId id : b.ret.items) ret.items.push_back(decode(id));
}

bool Builder::finish_recording(Recording& r, const Value& ret) {
  if (!r.ok || st_->region != r.region0) return false;
  // A slot the body changed would not be changed by a copy.
  for (const SlotRead& rd : r.body.reads) {
    if (rd.kind != SlotRead::kWhole) continue;  // a write reads all of the node first
    ir::Node now = fingerprint(r.slots[rd.slot], r.slots);
    if (now.op != rd.whole.op || !attrs_equal(now.attrs, rd.whole.attrs) || now.inputs != rd.whole.inputs)
      return false;
  }
  InlineBody& b = r.body;
  b.nodes.assign(st_->fn.nodes.begin() + r.base, st_->fn.nodes.end());
  for (ir::Node& n : b.nodes) {
    for (NodeId& in : n.inputs)
      if (!encode_id(in, r.base, r.slots)) return false;
    if (n.region == r.region0) n.region = kStartRegion;
    else if (n.region >= r.region_base) n.region -= r.region_base;
    else return false;
  }
  b.regions.assign(st_->fn.regions.begin() + r.region_base, st_->fn.regions.end());
  for (ir::Region& g : b.regions) {
    if (g.parent == r.region0) g.parent = kStartRegion;
    else if (g.parent >= r.region_base) g.parent -= r.region_base;
    else return false;
  }
  b.ret = ret;
  if (!encode_id(b.ret.node, r.base, r.slots)) return false;
  for (NodeId& id : b.ret.items)
    if (!encode_id(id, r.base, r.slots)) return false;
  if (st_->inlined_nodes - r.budget0 != b.nodes.size()) return false;
  b.env_writes = st_->env_writes - r.env0;
  b.marks = st_->training_marks - r.marks0;
  return true;
}

}  // namespace mlsem::python::detail
