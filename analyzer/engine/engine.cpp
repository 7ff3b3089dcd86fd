#include "engine/engine.h"

#include <algorithm>
#include <cmath>

#include "engine/compiled.h"
#include "engine/matcher.h"

namespace fs = std::filesystem;

namespace mlsem {

bool load_engine_data(const fs::path& data_dir, std::vector<Rule>& rules, std::vector<Concept>& concepts,
                      CompiledPatterns& patterns, std::vector<FileError>& errors);

namespace {

using ByteSpan = std::pair<uint32_t, uint32_t>;

// A finding before deduplication, with the source spans of every node it matched
// (spans rather than node ids: inlined helpers put one node in several functions).
struct Candidate {
  Finding finding;
  size_t rule_index = 0;
  std::vector<ByteSpan> spans;
  bool located_in_own_function = true;  // false: a match inlined from a helper
};

bool contains(const Range& outer, const Range& inner) {
  return outer.begin_byte <= inner.begin_byte && inner.end_byte <= outer.end_byte;
}

Range merge(Range a, const Range& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  if (b.begin_byte < a.begin_byte) {
    a.begin = b.begin;
    a.begin_byte = b.begin_byte;
  }
  if (b.end_byte > a.end_byte) {
    a.end = b.end;
    a.end_byte = b.end_byte;
  }
  return a;
}

bool overlaps(const std::vector<ByteSpan>& a, const std::vector<ByteSpan>& b) {
  for (const auto& x : a)
    if (std::binary_search(b.begin(), b.end(), x)) return true;
  return false;
}

bool subset(const std::vector<ByteSpan>& small, const std::vector<ByteSpan>& big) {
  return small.size() < big.size() && std::includes(big.begin(), big.end(), small.begin(), small.end());
}

// Confidence from evidence: base plus the weight of each item that is present.
void score(const CompiledPattern& p, const FunctionView& view, const Match& m, Finding& f) {
  double confidence = p.base;
  auto holds = [&](const EvidenceSpec& spec, ir::NodeId n) {
    if (!spec.check.empty()) {
      auto computed = view.computed_attrs(n);
      if (!eval_predicates(spec.check, view.node(n).attrs, &computed)) return false;
    }
    return !spec.inside || view.inside(view.node(n).region, *spec.inside);
  };
  for (const EvidenceSpec& spec : p.evidence) {
    ir::NodeId n = ir::kNoNode;
    if (!spec.op.empty()) {
      for (ir::NodeId id : m.nodes)
        if (view.node(id).op == spec.op && holds(spec, id)) {
          n = id;
          break;
        }
    } else {
      n = spec.label.empty() ? m.root : m.label(spec.label);
      if (n != ir::kNoNode && !holds(spec, n)) n = ir::kNoNode;
    }
    bool present = n != ir::kNoNode;
    if (present) confidence += spec.weight;
    // An absent item is listed only where the pattern says what its absence means.
    if (!present && spec.absent.empty()) continue;
    Evidence e;
    e.text = present ? spec.present : spec.absent;
    e.present = present;
    e.weight = spec.weight;
    if (present) e.range = view.node(n).range;
    f.evidence.push_back(std::move(e));
  }
  f.confidence = std::clamp(std::round(confidence * 100) / 100, 0.0, 1.0);
}

bool suppressed(const ir::Module& module, const Finding& f) {
  if (module.suppressions.empty()) return false;
  for (uint32_t line = f.range.begin.line; line <= f.range.end.line; ++line) {
    auto it = module.suppressions.find(line);
    if (it == module.suppressions.end()) continue;
    const auto& ids = it->second;
    if (ids.empty() || std::find(ids.begin(), ids.end(), f.rule) != ids.end() ||
        std::find(ids.begin(), ids.end(), f.rule_name) != ids.end())
      return true;
  }
  return false;
}

}  // namespace

Engine::Engine() : patterns_(std::make_unique<CompiledPatterns>()) {}
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;
Engine::~Engine() = default;

std::optional<Engine> Engine::load(const fs::path& data_dir, std::vector<FileError>& errors) {
  Engine engine;
  if (!load_engine_data(data_dir, engine.rules_, engine.concepts_, *engine.patterns_, errors)) return std::nullopt;
  return engine;
}

const Rule* Engine::rule(std::string_view id_or_name) const {
  for (const auto& r : rules_)
    if (r.id == id_or_name || r.name == id_or_name) return &r;
  return nullptr;
}

const Concept* Engine::concept_by_id(std::string_view id) const {
  for (const auto& c : concepts_)
    if (c.id == id) return &c;
  return nullptr;
}

std::vector<Finding> Engine::analyze(const ir::Module& module, const std::set<std::string>* only_rules) const {
  std::vector<Candidate> candidates;
  const CompiledPatterns& cp = *patterns_;
  auto enabled = [&](size_t ri) { return !only_rules || only_rules->count(rules_[ri].id); };
  for (const ir::Function& fn : module.functions) {
    FunctionView view(fn);
    for (ir::NodeId n = 0; n < fn.nodes.size(); ++n) {
      const ir::Node& node = fn.nodes[n];
      auto try_pattern = [&](size_t pi) {
        const CompiledPattern& p = cp.patterns[pi];
        if (p.language != module.language) return;
        const auto& users = cp.rules_of_pattern[pi];
        if (std::none_of(users.begin(), users.end(), enabled)) return;
        if (p.inside && !view.inside(node.region, *p.inside)) return;
        if (p.not_inside && view.inside(node.region, *p.not_inside)) return;
        std::optional<Match> m = match_at(p.term, view, n, cp.commutative_ops, p.distinct);
        if (!m) return;
        Candidate c;
        // The location is what this function's own text shows; a match made entirely
        // of nodes inlined from helpers is located at its root (in a helper).
        Range own;
        for (ir::NodeId id : m->nodes) {
          const Range& r = fn.nodes[id].range;
          c.spans.emplace_back(r.begin_byte, r.end_byte);
          if (!fn.range.valid() || contains(fn.range, r)) own = merge(own, r);
        }
        Range focus;
        for (const auto& label : p.focus)
          if (ir::NodeId id = m->label(label); id != ir::kNoNode) {
            // A helper's result inlined here is shown where this function calls the helper,
            // when the match also has steps in this function's own text; a match made
            // only of inlined steps stays in the helper, where its fix goes.
            const ir::Node& fnode = fn.nodes[id];
            bool via_call = own.valid() && fn.range.valid() && !contains(fn.range, fnode.range) &&
                            fnode.site.valid() && contains(fn.range, fnode.site);
            focus = merge(focus, via_call ? fnode.site : fnode.range);
          }
        c.finding.range = focus.valid() ? focus : own.valid() ? own : node.range;
        if (!c.finding.range.valid()) c.finding.range = node.range;
        c.located_in_own_function = own.valid();
        std::sort(c.spans.begin(), c.spans.end());
        c.spans.erase(std::unique(c.spans.begin(), c.spans.end()), c.spans.end());
        c.finding.path = module.path;
        c.finding.function = fn.name;
        score(p, view, *m, c.finding);
        for (size_t ri : users) {
          if (!enabled(ri)) continue;
          Candidate rc = c;
          const Rule& rule = rules_[ri];
          rc.rule_index = ri;
          rc.finding.rule = rule.id;
          rc.finding.rule_name = rule.name;
          rc.finding.concept_id = rule.concept_id;
          rc.finding.severity = rule.severity;
          rc.finding.message = p.message.empty() ? rule.message : p.message;
          rc.finding.fix = p.fix.empty() ? rule.fix : p.fix;
          rc.finding.kernel = rule.kernel;
          candidates.push_back(std::move(rc));
        }
      };
      if (auto it = cp.by_root_op.find(node.op); it != cp.by_root_op.end())
        for (size_t pi : it->second) try_pattern(pi);
      for (size_t pi : cp.any_root) try_pattern(pi);
    }
  }

  // Deduplicate: one finding per rule and location (the most confident), none whose
  // matched nodes are a strict subset of another's of the same rule, and none
  // overlapping a finding of a rule that supersedes its rule.
  std::vector<bool> dropped(candidates.size(), false);
  for (size_t i = 0; i < candidates.size(); ++i) {
    for (size_t j = 0; j < candidates.size() && !dropped[i]; ++j) {
      if (i == j || dropped[j]) continue;
      const Candidate& a = candidates[i];
      const Candidate& b = candidates[j];
      if (a.rule_index == b.rule_index) {
        // At one place keep the most confident; at equal confidence the one reported
        // from the function that contains the code, then the first.
        auto rank = [](const Candidate& c) { return std::make_pair(c.finding.confidence, c.located_in_own_function); };
        bool same_place = a.finding.range == b.finding.range || a.spans == b.spans;
        if ((same_place && (rank(b) > rank(a) || (rank(b) == rank(a) && j < i))) || subset(a.spans, b.spans))
          dropped[i] = true;
      } else {
        const auto& sup = rules_[b.rule_index].supersedes;
        if (std::find(sup.begin(), sup.end(), a.finding.rule) != sup.end() && overlaps(a.spans, b.spans))
          dropped[i] = true;
      }
    }
  }
  std::vector<Finding> out;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (dropped[i] || suppressed(module, candidates[i].finding)) continue;
    Finding& f = candidates[i].finding;
    // Rules reported once per function (RoPE applied to q and to k): later findings
    // of the rule in the same function join the first, its range covering both.
    if (rules_[candidates[i].rule_index].per_function) {
      auto same = std::find_if(out.begin(), out.end(), [&](const Finding& o) {
        return o.rule == f.rule && o.function == f.function && o.path == f.path;
      });
      if (same != out.end()) {
        same->range = merge(same->range, f.range);
        same->confidence = std::max(same->confidence, f.confidence);
        for (Evidence& e : f.evidence) {
          bool seen = std::any_of(same->evidence.begin(), same->evidence.end(), [&](const Evidence& o) {
            return o.text == e.text && o.present == e.present && o.range.begin.line == e.range.begin.line;
          });
          if (!seen) same->evidence.push_back(std::move(e));
        }
        continue;
      }
    }
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.range.begin.line, a.range.begin.column, a.rule) <
           std::tie(b.range.begin.line, b.range.begin.column, b.rule);
  });
  return out;
}

}  // namespace mlsem
