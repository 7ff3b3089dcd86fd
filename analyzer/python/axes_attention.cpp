// Attention by what it computes (axes.h): from each softmax, down to the product that made
// its scores and up to the product that sums its probabilities, checking on the axes that
// the scores contract features, the softmax runs over a key axis of the scores, and the
// second product sums over that same axis. Results are attributes the patterns test.
#include <algorithm>
#include <optional>
#include <string_view>

#include "python/attention_trace.h"
#include "python/axes.h"

namespace mlsem::python {
namespace {

constexpr size_t kTraceSteps = 12;

bool is_one_of(std::string_view op, std::initializer_list<std::string_view> ops) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

std::optional<int64_t> int_attr(const ir::Node& n, const char* key) {
  const ir::Attr* a = n.attr(key);
  if (!a || !std::holds_alternative<int64_t>(*a)) return std::nullopt;
  return std::get<int64_t>(*a);
}

std::optional<size_t> axis_index(const AxisShape& s, int64_t d) {
  if (!s.known) return std::nullopt;
  int64_t n = static_cast<int64_t>(s.axes.size());
  if (d < 0) return d + n >= 0 ? std::optional<size_t>(d + n) : std::nullopt;
  if (!s.full || d >= n) return std::nullopt;
  return static_cast<size_t>(d);
}

bool has(const std::vector<uint32_t>& ids, uint32_t id) {
  return id != 0 && std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Is `id` computed from a softmax without a projection in between (the "values" of a
// Nystrom approximation are a pseudo-inverse of a softmax)? A few steps back, at most.
bool from_probabilities(const ir::Function& fn, ir::NodeId id) {
  std::vector<ir::NodeId> todo{id};
  for (size_t seen = 0; !todo.empty() && seen < 24; ++seen) {
    ir::NodeId n = todo.back();
    todo.pop_back();
    if (n >= fn.nodes.size()) continue;
    const ir::Node& x = fn.nodes[n];
    if (x.op == "softmax") return true;
    // Projections and parameters make values; an opaque helper call (`self.iterative_inv(k)`,
    // not inlined this deep) is followed, a module call is not.
    if (is_one_of(x.op, {"linear", "conv", "embedding", "input", "name", "sdpa"}) || x.attr("module_class")) continue;
    for (ir::NodeId in : x.inputs)
      if (in < n) todo.push_back(in);
  }
  return false;
}

// Is `id` a table built from constants (linspace bin centers, an arange), not data: a
// softmax times such a table is an expected value, not attention. Unsure: no.
bool constant_table(const ir::Function& fn, ir::NodeId id) {
  std::vector<ir::NodeId> todo{id};
  size_t seen = 0;
  bool table = false;
  while (!todo.empty()) {
    if (++seen > 24) return false;
    ir::NodeId n = todo.back();
    todo.pop_back();
    if (n >= fn.nodes.size()) return false;
    const ir::Node& x = fn.nodes[n];
    if (x.op == "name") {  // `x.device`, `x.dtype`: placement, not data
      const ir::Attr* nm = x.attr("name");
      const std::string* t = nm ? std::get_if<std::string>(nm) : nullptr;
      auto ends = [&](std::string_view suf) { return t && t->size() > suf.size() && t->compare(t->size() - suf.size(), suf.size(), suf) == 0; };
      if (ends(".device") || ends(".dtype") || (t && t->rfind("torch.", 0) == 0)) continue;  // torch.float32
    }
    if (x.op == "input") {  // a parameter annotated as a Python number
      const ir::Attr* ty = x.attr("type");
      const std::string* t = ty ? std::get_if<std::string>(ty) : nullptr;
      if (t && (*t == "float" || *t == "int")) continue;
    }
    if (is_one_of(x.op, {"input", "name", "linear", "conv", "embedding", "randn", "softmax", "sdpa", "matmul"}) ||
        x.attr("module_class"))
      return false;
    if (x.inputs.empty()) {  // a leaf must be a constant or a table built from constants
      const ir::Attr* c = x.attr("callee");
      const std::string* callee = c ? std::get_if<std::string>(c) : nullptr;
      bool creation = is_one_of(x.op, {"arange", "ones", "zeros", "full", "tril", "triu"}) ||
                      (callee && (callee->find("linspace") != std::string::npos || callee->find("arange") != std::string::npos));
      if (creation) table = true;
      else if (!is_one_of(x.op, {"const", "scalar"})) return false;
    } else if (x.op == "call") {
      const ir::Attr* c = x.attr("callee");
      const std::string* callee = c ? std::get_if<std::string>(c) : nullptr;
      if (callee && (callee->find("linspace") != std::string::npos || callee->find("arange") != std::string::npos)) table = true;
      else return false;  // an opaque call: unsure
    }
    for (ir::NodeId in : x.inputs)
      if (in < n) todo.push_back(in);
  }
  return table;
}

struct Verdict {
  bool refuted = false;
  std::string why;
  bool single_query = false;
};

}  // namespace

void annotate_axes(ir::Function& fn) {
  bool any = std::any_of(fn.nodes.begin(), fn.nodes.end(), [](const ir::Node& n) { return n.op == "softmax"; });
  if (!any) return;
  AxisFacts facts = infer_axes(fn);
  std::vector<std::vector<ir::NodeId>> users = users_of(fn);

  auto mark_axes = [&](ir::NodeId id) {
    std::string t = axes_text(facts.shapes[id]);
    if (!t.empty()) fn.nodes[id].attrs["axes"] = t;
  };

  for (ir::NodeId p = 0; p < fn.nodes.size(); ++p) {
    if (fn.nodes[p].op != "softmax" || fn.nodes[p].inputs.empty()) continue;
    // Down to the scores: the nearest product through scaling, masks, biases, reshapes.
    std::vector<ir::NodeId> path;
    ir::NodeId s = scores_of_softmax(fn, p, kTraceSteps, path);
    bool reshaped = std::any_of(path.begin(), path.end(), [&](ir::NodeId id) {
      const std::string& op = fn.nodes[id].op;
      return op == "reshape" || op == "permute" || op == "transpose";
    });
    if (s == ir::kNoNode) continue;
    const Contraction& sc = facts.contractions[s];
    const AxisShape& ps = facts.shapes[p];
    auto dim = int_attr(fn.nodes[p], "dim");
    auto ai = dim ? axis_index(ps, *dim) : std::nullopt;
    Axis soft = ai ? ps.axes[*ai] : Axis{};

    Verdict v;
    // The scores must contract the feature axis of q and k, not positions.
    AxisRole ca = sc.a.role, cb = sc.b.role;
    bool feat = ca == AxisRole::kFeatures || cb == AxisRole::kFeatures;
    if (sc.clean && !feat && (ca == AxisRole::kPositions || cb == AxisRole::kPositions)) {
      v.refuted = true;
      v.why = "the scores sum over positions, not features (channel or linear attention)";
    }
    if (!v.refuted && (soft.role == AxisRole::kBatch || soft.role == AxisRole::kHeads)) {
      v.refuted = true;
      v.why = "the softmax runs over the batch or heads axis, not over keys";
    }
    // Which operand of the scores holds the keys: the one the softmax axis comes from.
    int keys = -1;
    if (has(sc.free_b, soft.id)) keys = 1;
    else if (has(sc.free_a, soft.id)) keys = 0;
    else if (!reshaped && dim && *dim == -1) keys = 1;
    if (keys >= 0 && facts.shapes[s].known && facts.shapes[s].axes.size() >= 2) {
      // The other free axis is the queries'; one query per sequence is a pooling head.
      const AxisShape& ss = facts.shapes[s];
      for (const Axis& x : ss.axes)
        if (has(keys == 1 ? sc.free_a : sc.free_b, x.id) && x.one) v.single_query = true;
    }

    // Up to the products that consume the probabilities.
    std::vector<std::pair<ir::NodeId, bool>> up{{p, false}};
    for (size_t steps = 0; !up.empty() && steps < kTraceSteps; ++steps) {
      auto [id, moved] = up.front();
      up.erase(up.begin());
      for (ir::NodeId u : users[id]) {
        const ir::Node& n = fn.nodes[u];
        if (n.op == "matmul") {
          size_t side = n.inputs.size() == 2 && n.inputs[1] == id ? 1 : 0;
          if (n.inputs.size() == 2 && n.inputs[0] == id && n.inputs[1] == id) continue;
          const Contraction& oc = facts.contractions[u];
          const Axis& summed = side == 0 ? oc.a : oc.b;
          Verdict w = v;
          if (!w.refuted && !moved && oc.clean && soft.id != 0 && summed.id != 0 && summed.id != soft.id) {
            w.refuted = true;
            w.why = "the product with the probabilities does not sum over the softmax axis";
          }
          if (!w.refuted && n.inputs.size() == 2 && constant_table(fn, n.inputs[1 - side])) {
            w.refuted = true;
            w.why = "the other operand is a table of constants (an expected value over bins), not values";
          }
          if (!w.refuted && n.inputs.size() == 2 && from_probabilities(fn, n.inputs[1 - side])) {
            w.refuted = true;
            w.why = "the other operand is computed from attention probabilities, not values (an approximation such as Nystrom)";
          }
          ir::Node& o = fn.nodes[u];
          if (w.refuted) {
            if (!o.attr("attention")) {
              o.attrs["attention"] = false;
              o.attrs["attention_why"] = w.why;
            }
          } else {
            o.attrs["attention"] = true;
            o.attrs.erase("attention_why");
            fn.nodes[s].attrs["attention_scores"] = true;
          }
          if (w.single_query) o.attrs["single_query"] = true;
          mark_axes(u);
        } else if (is_one_of(n.op, {"dropout", "cast", "reshape", "mask", "transpose", "permute"})) {
          // Transposes keep axis identities; reshapes do not.
          up.emplace_back(u, moved || n.op == "reshape");
        }
      }
    }
    mark_axes(p);
    mark_axes(s);
  }
}

}  // namespace mlsem::python
