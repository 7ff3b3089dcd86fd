#include "engine/matcher.h"

#include <algorithm>
#include <type_traits>

namespace mlsem {
namespace {

// A non-owning reference to a `bool()` callable: continuations are built on the
// stack at every step, so std::function's allocations would dominate.
class Continuation {
 public:
  template <class F>
  Continuation(const F& f) : obj_(&f), call_([](const void* o) { return (*static_cast<const F*>(o))(); }) {}
  bool operator()() const { return call_(obj_); }

 private:
  const void* obj_;
  bool (*call_)(const void*);
};

// Deep patterns look this far down the operand graph.
constexpr int kDeepLimit = 12;
// A pathological pattern/graph pair gives up rather than take exponential time.
constexpr long kStepBudget = 200000;

class Matcher {
 public:
  Matcher(const FunctionView& view, const std::set<std::string>& commutative)
      : view_(view), commutative_(commutative) {}

  std::optional<Match> run(const PatternTerm& t, ir::NodeId root, const std::vector<std::string>& distinct) {
    Match found;
    bool ok = match(t, root, [&] {
      if (!all_distinct(distinct)) return false;
      found.labels.assign(labels_.begin(), labels_.end());
      found.vars.assign(vars_.begin(), vars_.end());
      found.nodes = matched_;
      return true;
    });
    if (!ok) return std::nullopt;
    found.root = root;
    return found;
  }

 private:
  const FunctionView& view_;
  const std::set<std::string>& commutative_;
  std::vector<std::pair<std::string, ir::NodeId>> labels_;
  std::vector<std::pair<std::string, ir::NodeId>> vars_;
  std::vector<ir::NodeId> matched_;
  long steps_ = 0;

  // Variables and labels named in `names` are bound to pairwise different nodes.
  bool all_distinct(const std::vector<std::string>& names) const {
    std::vector<ir::NodeId> bound;
    for (const auto* bindings : {&vars_, &labels_})
      for (const auto& [name, node] : *bindings)
        if (std::find(names.begin(), names.end(), name) != names.end()) {
          if (std::find(bound.begin(), bound.end(), node) != bound.end()) return false;
          bound.push_back(node);
        }
    return true;
  }

  bool valid(ir::NodeId n) const { return n < view_.fn().nodes.size(); }

  // Binds `label` to n for the duration of k().
  bool with_label(const std::string& label, ir::NodeId n, Continuation k) {
    if (label.empty()) return k();
    labels_.emplace_back(label, n);
    if (k()) return true;
    labels_.pop_back();
    return false;
  }

  bool match(const PatternTerm& t, ir::NodeId n, Continuation k) {
    if (!valid(n) || ++steps_ > kStepBudget) return false;
    switch (t.kind) {
      case PatternTerm::Kind::kAny:
        if (!t.preds.empty() && !view_.holds(t.preds, n)) return false;
        return with_label(t.label, n, k);
      case PatternTerm::Kind::kVar: {
        for (const auto& [name, bound] : vars_)
          if (name == t.var) return bound == n && with_label(t.label, n, k);
        vars_.emplace_back(t.var, n);
        if (with_label(t.label, n, k)) return true;
        vars_.pop_back();
        return false;
      }
      case PatternTerm::Kind::kAlt:
        for (const auto& c : t.children) {
          auto bound_then_k = [&] { return with_label(t.label, n, k); };
          if (match(c, n, bound_then_k)) return true;
        }
        return false;
      case PatternTerm::Kind::kDeep: return match_deep(t, n, k);
      case PatternTerm::Kind::kOp:
        if (t.repeated) return match_repeated(t, n, k);
        if (match_op(t, n, k)) return true;
        // An absent optional step: its first argument stands in its place.
        return t.optional && match(t.args.front(), n, k);
    }
    return false;
  }

  // Zero or more steps of t's ops, greedily (through any operand of a commutative op,
  // else the first), then t's first argument.
  bool match_repeated(const PatternTerm& t, ir::NodeId n, Continuation k) {
    if (op_matches(t, n)) {
      const ir::Node& node = view_.node(n);
      size_t mark = matched_.size();
      matched_.push_back(n);
      size_t operands = commutative_.count(node.op) ? node.inputs.size() : std::min<size_t>(1, node.inputs.size());
      for (size_t i = 0; i < operands; ++i)
        if (match_repeated(t, node.inputs[i], k)) return true;
      matched_.resize(mark);
    }
    return match(t.args.front(), n, k);
  }

  bool match_deep(const PatternTerm& t, ir::NodeId start, Continuation k) {
    // Breadth-first over operands, so the nearest match is tried first.
    std::vector<ir::NodeId> frontier{start}, seen{start};
    for (int depth = 0; depth <= kDeepLimit && !frontier.empty(); ++depth) {
      std::vector<ir::NodeId> next;
      for (ir::NodeId n : frontier) {
        auto bound_then_k = [&] { return with_label(t.label, n, k); };
        if (match(t.children.front(), n, bound_then_k)) return true;
        for (ir::NodeId in : view_.node(n).inputs) {
          if (valid(in) && std::find(seen.begin(), seen.end(), in) == seen.end()) {
            seen.push_back(in);
            next.push_back(in);
          }
        }
      }
      frontier = std::move(next);
    }
    return false;
  }

  bool op_matches(const PatternTerm& t, ir::NodeId n) const {
    const ir::Node& node = view_.node(n);
    if (std::find(t.ops.begin(), t.ops.end(), node.op) == t.ops.end()) return false;
    return t.preds.empty() || view_.holds(t.preds, n);
  }

  bool match_op(const PatternTerm& t, ir::NodeId n, Continuation k) {
    if (!op_matches(t, n)) return false;
    size_t mark = matched_.size();
    if (t.min_chain > 0) {
      collect_chain(t, n);
      bool ok = matched_.size() - mark >= static_cast<size_t>(t.min_chain) &&
                (t.args.empty() ? with_label(t.label, n, k) : match_chain_operand(t, mark, n, k));
      if (!ok) matched_.resize(mark);
      return ok;
    }
    matched_.push_back(n);
    auto rest = [&] { return with_label(t.label, n, k); };
    bool ok = !t.has_args ? rest() : match_args(t, view_.node(n), rest);
    if (!ok) matched_.resize(mark);
    return ok;
  }

  // The fused region below n: n and, recursively, operands of the same op set
  // whose only user is inside the region (so fusing them materializes nothing).
  void collect_chain(const PatternTerm& t, ir::NodeId n) {
    matched_.push_back(n);
    for (ir::NodeId in : view_.node(n).inputs) {
      if (valid(in) && in < n && view_.users(in) == 1 && op_matches(t, in) &&
          std::find(matched_.begin(), matched_.end(), in) == matched_.end())
        collect_chain(t, in);
    }
  }

  // Some operand from outside the chain (nodes matched_[first..]) matches t's argument.
  bool match_chain_operand(const PatternTerm& t, size_t first, ir::NodeId root, Continuation k) {
    std::vector<ir::NodeId> chain(matched_.begin() + static_cast<std::ptrdiff_t>(first), matched_.end());
    auto then_label = [&] { return with_label(t.label, root, k); };
    for (ir::NodeId member : chain)
      for (ir::NodeId in : view_.node(member).inputs)
        if (std::find(chain.begin(), chain.end(), in) == chain.end() && match(t.args.front(), in, then_label))
          return true;
    return false;
  }

  bool match_args(const PatternTerm& t, const ir::Node& node, Continuation k) {
    const auto& in = node.inputs;
    if (t.rest ? in.size() < t.args.size() : in.size() != t.args.size()) return false;
    if (commutative_.count(node.op)) {
      std::vector<bool> used(in.size(), false);
      return match_unordered(t.args, in, used, 0, k);
    }
    return match_ordered(t.args, in, 0, k);
  }

  bool match_ordered(const std::vector<PatternTerm>& args, const std::vector<ir::NodeId>& in, size_t i,
                     Continuation k) {
    if (i == args.size()) return k();
    auto next = [&] { return match_ordered(args, in, i + 1, k); };
    return match(args[i], in[i], next);
  }

  bool match_unordered(const std::vector<PatternTerm>& args, const std::vector<ir::NodeId>& in,
                       std::vector<bool>& used, size_t i, Continuation k) {
    if (i == args.size()) return k();
    for (size_t j = 0; j < in.size(); ++j) {
      if (used[j]) continue;
      used[j] = true;
      auto next = [&] { return match_unordered(args, in, used, i + 1, k); };
      if (match(args[i], in[j], next)) return true;
      used[j] = false;
    }
    return false;
  }
};

}  // namespace

namespace {

// Whether a node holds data-sized tensor values rather than Python scalars, config
// values or tables built from arange/ones: weights and tensor arguments are data, and
// so is anything computed from data. Nodes come in topological order.
std::vector<bool> data_flow(const ir::Function& fn) {
  static const std::set<std::string> kSources = {"linear", "conv", "embedding", "randn"};
  static const std::set<std::string> kNever = {"const", "scalar", "arange", "ones", "zeros", "full", "empty",
                                               "tril", "triu"};
  std::vector<bool> data(fn.nodes.size(), false);
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const ir::Node& n = fn.nodes[i];
    if (kNever.count(n.op)) continue;
    if (kSources.count(n.op) || n.attr("module_class")) {
      data[i] = true;
    } else if (n.op == "input") {
      const ir::Attr* type = n.attr("type");
      data[i] = type && std::get_if<std::string>(type) && std::get<std::string>(*type).find("Tensor") != std::string::npos;
    } else if (n.op == "name") {
      const ir::Attr* name = n.attr("name");
      data[i] = name && std::get_if<std::string>(name) && std::get<std::string>(*name).rfind("self.", 0) == 0;
    } else {
      for (ir::NodeId in : n.inputs)
        if (in < i && data[in]) data[i] = true;
    }
  }
  return data;
}

// Whether a node holds per-row statistics rather than full-size data: a reduction,
// or pointwise work whose data operands are all such statistics (std + eps).
std::vector<bool> reduced_flow(const ir::Function& fn, const std::vector<bool>& data) {
  static const std::set<std::string> kReductions = {"mean", "sum", "var", "std", "max", "min", "amax", "norm",
                                                    "logsumexp"};
  std::vector<bool> reduced(fn.nodes.size(), false);
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const ir::Node& n = fn.nodes[i];
    if (kReductions.count(n.op)) {
      reduced[i] = true;
      continue;
    }
    bool any_reduced = false, any_full = false;
    for (ir::NodeId in : n.inputs) {
      if (in >= i || !data[in]) continue;
      (reduced[in] ? any_reduced : any_full) = true;
    }
    reduced[i] = any_reduced && !any_full;
  }
  return reduced;
}

}  // namespace

FunctionView::FunctionView(const ir::Function& fn, const ir::Module* module)
    : fn_(fn), module_(module), users_(fn.nodes.size(), 0) {
  for (const auto& node : fn.nodes)
    for (ir::NodeId in : node.inputs)
      if (in < users_.size()) ++users_[in];
}

void FunctionView::compute_flows() const {
  // The data-flow facts are computed on first use: most functions never need them.
  if (data_.empty() && !fn_.nodes.empty()) {
    data_ = data_flow(fn_);
    reduced_ = reduced_flow(fn_, data_);
  }
}

std::optional<ir::Attr> FunctionView::computed_attr(ir::NodeId id, std::string_view key) const {
  const ir::Node& n = fn_.nodes[id];
  if (key == "op") return n.op;
  if (key == "users") return static_cast<int64_t>(users_[id]);
  if (key == "inputs") return static_cast<int64_t>(n.inputs.size());
  if (key == "data" || key == "reduced") {
    compute_flows();
    return static_cast<bool>(key == "data" ? data_[id] : reduced_[id]);
  }
  if (key == "home") {
    const ir::Function* home = nullptr;
    if (module_ && n.range.valid())
      for (const ir::Function& f : module_->functions) {
        bool holds = f.range.valid() && f.range.begin_byte <= n.range.begin_byte && n.range.end_byte <= f.range.end_byte;
        if (holds && (!home || f.range.end_byte - f.range.begin_byte < home->range.end_byte - home->range.begin_byte))
          home = &f;
      }
    return (home ? home : &fn_)->name;
  }
  return std::nullopt;
}

bool FunctionView::holds(const std::vector<Predicate>& preds, ir::NodeId id) const {
  const auto& attrs = fn_.nodes[id].attrs;
  for (const Predicate& p : preds) {
    if (auto it = attrs.find(p.key); it != attrs.end()) {
      if (!eval_predicate_on(p, &it->second)) return false;
      continue;
    }
    std::optional<ir::Attr> computed = computed_attr(id, p.key);
    if (!eval_predicate_on(p, computed ? &*computed : nullptr)) return false;
  }
  return true;
}

bool FunctionView::inside(uint32_t region, const RegionSpec& spec) const {
  // Regions form a tree rooted at 0; walk up, bounded by the region count.
  for (size_t hops = 0; region < fn_.regions.size() && hops <= fn_.regions.size(); ++hops) {
    const ir::Region& r = fn_.regions[region];
    if (r.kind == spec.kind && eval_predicates(spec.preds, r.attrs)) return true;
    if (region == 0 || r.parent == region) break;
    region = r.parent;
  }
  return false;
}

std::optional<Match> match_at(const PatternTerm& term, const FunctionView& view, ir::NodeId root,
                              const std::set<std::string>& commutative_ops, const std::vector<std::string>& distinct) {
  return Matcher(view, commutative_ops).run(term, root, distinct);
}

}  // namespace mlsem
