#include "engine/engine.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <regex>
#include <set>

#include "engine/compiled.h"
#include "engine/fix_template.h"
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
  size_t pattern_index = 0;
  std::vector<ByteSpan> spans;
  bool located_in_own_function = true;  // false: a match inlined from a helper
  bool standalone = true;               // every matched node is in the function's own text
  bool function_context = false;        // demoted by a fact of the reporting function itself
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

// Every span lies inside the range.
bool within(const std::vector<ByteSpan>& spans, const Range& r) {
  return std::all_of(spans.begin(), spans.end(), [&](const ByteSpan& s) { return r.begin_byte <= s.first && s.second <= r.end_byte; });
}

bool subset(const std::vector<ByteSpan>& small, const std::vector<ByteSpan>& big) {
  return small.size() < big.size() && std::includes(big.begin(), big.end(), small.begin(), small.end());
}

// Confidence from evidence: base plus the weight of each item that is present.
void score(const CompiledPattern& p, const FunctionView& view, const Match& m, Finding& f) {
  double confidence = p.base;
  auto holds = [&](const EvidenceSpec& spec, ir::NodeId n) {
    if (!spec.check.empty() && !view.holds(spec.check, n)) return false;
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

// A Python-style spelling of an attribute value, for fixes: True, 4, 0.1, text.
std::string fix_text(const ir::Attr& a) {
  if (const bool* b = std::get_if<bool>(&a)) return *b ? "True" : "False";
  if (const int64_t* i = std::get_if<int64_t>(&a)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&a)) {
    if (std::isinf(*d)) return *d < 0 ? "-float('inf')" : "float('inf')";
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *d);
    std::string s(buf, ec == std::errc() ? end : buf);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  return std::get<std::string>(a);
}

bool is_ident(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The first line of a range's text, trimmed and at most 60 characters ("x[row * C + i]").
std::optional<std::string> excerpt_of(const Range& r, std::string_view source) {
  if (source.empty() || !r.valid() || r.end_byte > source.size() || r.begin_byte >= r.end_byte) return std::nullopt;
  std::string_view text = source.substr(r.begin_byte, r.end_byte - r.begin_byte);
  text = trim(text.substr(0, text.find('\n')));
  if (text.empty()) return std::nullopt;
  if (text.size() > 60) return std::string(text.substr(0, 57)) + "...";
  return std::string(text);
}

// How the user spelled the value of node `n`: a parameter's or global's name, a
// scalar's text, the variable a whole assignment's right-hand side is stored in
// (`q = self.q_proj(x).view(...)` -> "q"), or a short one-line expression.
std::optional<std::string> spelling(const ir::Node& node, std::string_view source) {
  if (node.op == "input" || node.op == "name")
    if (const auto* a = node.attr("name")) return fix_text(*a);
  if (const auto* a = node.attr("text")) return fix_text(*a);
  if (node.op == "const")
    if (const auto* a = node.attr("value")) return fix_text(*a);
  const Range& r = node.range;
  if (source.empty() || !r.valid() || r.end_byte > source.size() || r.begin_byte >= r.end_byte) return std::nullopt;
  std::string_view expr = source.substr(r.begin_byte, r.end_byte - r.begin_byte);
  size_t line_start = source.rfind('\n', r.begin_byte == 0 ? 0 : r.begin_byte - 1);
  line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
  if (r.begin_byte == 0) line_start = 0;
  std::string_view before = trim(source.substr(line_start, r.begin_byte - line_start));
  size_t line_end = source.find('\n', r.end_byte);
  std::string_view after = trim(source.substr(r.end_byte, (line_end == std::string_view::npos ? source.size() : line_end) - r.end_byte));
  if (before.size() > 1 && before.back() == '=' && (after.empty() || after.front() == '#')) {
    std::string_view target = trim(before.substr(0, before.size() - 1));
    if (size_t colon = target.find(':'); colon != std::string_view::npos) target = trim(target.substr(0, colon));
    if (is_ident(target)) return std::string(target);
    // `q, k, v = qkv.unbind(0)`: a `part` is the target at its index.
    const auto* index = node.attr("index");
    if (node.op == "part" && index && std::holds_alternative<int64_t>(*index)) {
      int64_t i = std::get<int64_t>(*index);
      if (target.starts_with("(") && target.ends_with(")")) target = target.substr(1, target.size() - 2);
      for (int64_t k = 0; !target.empty(); ++k) {
        size_t comma = target.find(',');
        std::string_view name = trim(target.substr(0, comma));
        if (k == i) return is_ident(name) ? std::optional<std::string>(std::string(name)) : std::nullopt;
        if (comma == std::string_view::npos) break;
        target = target.substr(comma + 1);
      }
    }
  }
  if (expr.size() <= 60 && expr.find('\n') == std::string_view::npos) return std::string(expr);
  return std::nullopt;
}

// The value of a fix template reference for one match (fix_template.h).
std::optional<std::string> lookup_ref(const FixRef& ref, const FunctionView& view, const Match& m, std::string_view source) {
  const ir::Function& fn = view.fn();
  if (ref.label == "function") {
    if (ref.path.size() != 1) return std::nullopt;
    auto it = fn.attrs.find(ref.path[0]);
    if (it == fn.attrs.end()) return std::nullopt;
    return fix_text(it->second);
  }
  ir::NodeId n = ir::kNoNode;
  if (ref.label.starts_with("#")) {  // the first matched node of that op
    for (ir::NodeId id : m.nodes)
      if (view.node(id).op == std::string_view(ref.label).substr(1)) {
        n = id;
        break;
      }
  } else {
    n = m.label(ref.label);
    if (n == ir::kNoNode) n = m.var(ref.label);
  }
  if (n == ir::kNoNode) return std::nullopt;
  for (size_t i = 0; i < ref.path.size(); ++i) {
    const std::string& part = ref.path[i];
    if (std::isdigit(static_cast<unsigned char>(part[0]))) {
      size_t k = std::stoul(part);
      const auto& inputs = view.node(n).inputs;
      if (k >= inputs.size()) return std::nullopt;
      n = inputs[k];
      continue;
    }
    if (i + 1 != ref.path.size()) return std::nullopt;
    if (const auto* a = view.node(n).attr(part)) return fix_text(*a);
    if (auto computed = view.computed_attr(n, part)) return fix_text(*computed);
    return std::nullopt;
  }
  return spelling(view.node(n), source);
}

// ---- Machine-applicable rewrites (Finding::rewrite, a pattern's `rewrite` template).

// A dotted name or a number: the same value however often it is evaluated.
bool plain_value(std::string_view s) {
  static const std::regex kPlain(R"(^([A-Za-z_]\w*(\.[A-Za-z_]\w*)*|[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)$)");
  return std::regex_match(s.begin(), s.end(), kPlain);
}

// No operator outside brackets and strings: safe to splice anywhere without parentheses.
bool atomic_expr(std::string_view s) {
  int depth = 0;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    } else if (depth == 0 && !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) {
      return false;
    }
  }
  return depth == 0 && !s.empty();
}

std::string squeezed(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\\') out += c;
  return out;
}

// Occurrences of `needle` in `hay` (both squeezed); a needle that is a name counts only
// where it is not part of a longer name or a dotted path's tail.
size_t occurrences(const std::string& hay, const std::string& needle) {
  if (needle.empty()) return 0;
  bool name = std::isalpha(static_cast<unsigned char>(needle.front())) || needle.front() == '_';
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  size_t count = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
    if (name && at > 0 && (ident(hay[at - 1]) || hay[at - 1] == '.')) continue;
    size_t end = at + needle.size();
    if (ident(needle.back()) && end < hay.size() && ident(hay[end])) continue;
    ++count;
  }
  return count;
}

// The node a reference names, following input indices; kNoNode when it names none.
// `via_commutative`: the path reads an input of an op whose inputs the matcher may have
// taken in either order (which input is which is then a guess); `ambiguous`: '#op'
// names an op the match holds more than once.
ir::NodeId ref_node(const FixRef& ref, const FunctionView& view, const Match& m, const std::set<std::string>& commutative,
                    bool& via_commutative, bool& ambiguous, bool& attribute) {
  via_commutative = ambiguous = attribute = false;
  if (ref.label == "function") return ir::kNoNode;
  ir::NodeId n = ir::kNoNode;
  if (ref.label.starts_with("#")) {
    std::string_view op = std::string_view(ref.label).substr(1);
    std::set<ir::NodeId> seen;
    for (ir::NodeId id : m.nodes)
      if (view.node(id).op == op) {
        if (n == ir::kNoNode) n = id;
        seen.insert(id);
      }
    ambiguous = seen.size() > 1;
  } else {
    n = m.label(ref.label);
    if (n == ir::kNoNode) n = m.var(ref.label);
  }
  for (const std::string& part : ref.path) {
    if (n == ir::kNoNode) break;
    if (!std::isdigit(static_cast<unsigned char>(part[0]))) {
      attribute = true;
      break;
    }
    if (commutative.count(view.node(n).op)) via_commutative = true;
    size_t k = std::stoul(part);
    const auto& inputs = view.node(n).inputs;
    n = k < inputs.size() ? inputs[k] : ir::kNoNode;
  }
  return n;
}

// Renders a rewrite template strictly: only conditions drop a segment; every placeholder
// of the segments kept needs a value, and each value must be one the original expression `expr` shows: spelled in
// it, read through no ambiguous input (a commutative op's operand must be a plain name
// or number), and evaluated as often as before (a value that is not a plain name or
// number must occur once). Values that are not atoms are parenthesized. nullopt: no rewrite.
std::optional<std::string> render_rewrite(const std::vector<FixPiece>& pieces, const FunctionView& view, const Match& m,
                                          std::string_view source, const std::set<std::string>& commutative,
                                          const std::string& expr) {
  std::string out;
  for (const FixPiece& p : pieces) {
    switch (p.kind) {
      case FixPiece::Kind::kText:
        out += p.text;
        break;
      case FixPiece::Kind::kRef: {
        bool via_commutative = false, ambiguous = false, attribute = false;
        ref_node(p.ref, view, m, commutative, via_commutative, ambiguous, attribute);
        std::optional<std::string> v = lookup_ref(p.ref, view, m, source);
        // An attribute is not code, except `receiver`: the frontend records it as the
        // receiver's source text (`opt` of `opt.zero_grad(...)`), checked below like any value.
        bool code_attribute = attribute && !p.ref.path.empty() && p.ref.path.back() == "receiver";
        if (!v || v->empty() || ambiguous || (attribute && !code_attribute) || p.ref.label == "function")
          return std::nullopt;
        bool plain = plain_value(*v);
        size_t seen = occurrences(expr, squeezed(*v));
        if (seen == 0 || (via_commutative && !plain) || (!plain && seen != 1)) return std::nullopt;
        out += atomic_expr(*v) ? *v : "(" + *v + ")";
        break;
      }
      case FixPiece::Kind::kSegment: {
        bool keep = true;
        for (const auto& c : p.conditions) {
          bool via_commutative = false, ambiguous = false, attribute = false;
          ref_node(c.ref, view, m, commutative, via_commutative, ambiguous, attribute);
          if (ambiguous) return std::nullopt;  // a condition on one of several nodes decides nothing
          bool holds = false;
          if (c.equals && c.equals->starts_with("$")) {  // `ref=$name`: the very node a label or variable bound
            ir::NodeId n = ref_node(c.ref, view, m, commutative, via_commutative, ambiguous, attribute);
            std::string name = c.equals->substr(1);
            ir::NodeId want = m.label(name) != ir::kNoNode ? m.label(name) : m.var(name);
            holds = !attribute && n != ir::kNoNode && n == want;
          } else {
            std::optional<std::string> v = lookup_ref(c.ref, view, m, source);
            holds = c.equals ? v && *v == *c.equals : v && !v->empty() && *v != "False";
          }
          if (holds == c.negated) keep = false;
        }
        if (!keep) break;
        std::optional<std::string> body = render_rewrite(p.body, view, m, source, commutative, expr);
        if (!body) return std::nullopt;
        out += *body;
        break;
      }
    }
  }
  return out;
}

// The rewrite of one match: the pattern's `rewrite` rendered over the root expression,
// offered only when the root is this function's own code, the whole matched computation
// lies inside that one expression (what it reads from earlier statements are only
// parameters, names, constants and the pattern's variables), and the expression
// rebinds no name. Empty: none.
std::string rewrite_of(const CompiledPattern& p, const FunctionView& view, const Match& m, ir::NodeId root,
                       std::string_view source, const std::set<std::string>& commutative, Range& range) {
  const ir::Function& fn = view.fn();
  const Range& r = fn.nodes[root].range;
  if (!p.rewrite_template || source.empty() || !r.valid() || !fn.range.valid() || !contains(fn.range, r) ||
      r.end_byte > source.size() || r.begin_byte >= r.end_byte)
    return "";
  std::set<ir::NodeId> bound;
  for (const auto& [name, id] : m.vars) bound.insert(id);
  for (ir::NodeId id : m.nodes) {
    const ir::Node& node = fn.nodes[id];
    if (node.range.valid() && contains(r, node.range)) continue;
    if (node.op == "input" || node.op == "name" || node.op == "const" || bound.count(id)) continue;
    return "";
  }
  std::string_view text = source.substr(r.begin_byte, r.end_byte - r.begin_byte);
  for (std::string_view bad : {":=", "lambda", "yield", "await"})
    if (text.find(bad) != std::string_view::npos) return "";
  std::optional<std::string> out = render_rewrite(p.rewrite_template->pieces, view, m, source, commutative, squeezed(text));
  if (!out || out->empty()) return "";
  range = r;
  return *out;
}

const std::string* string_attr(const std::map<std::string, ir::Attr>& attrs, const std::string& key) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return nullptr;
  return std::get_if<std::string>(&it->second);
}

// The first context fact that demotes this rule's finding: the file's kind, then the
// function's facts, then the regions around the match's root (docs/PATTERNS.md).
struct ContextHit {
  std::string kind, why;
  bool function_level = false;  // a fact of the function (not of the file or a region)
};

std::optional<ContextHit> context_of(const ir::Module& module, const FunctionView& view,
                                                              const Match& m, const Rule& rule,
                                                              const AnalyzeOptions& options) {
  if (options.keep_contexts.count("all")) return std::nullopt;
  auto applies = [&](const std::string& kind) {
    bool listed = std::find(rule.demote_in.begin(), rule.demote_in.end(), kind) != rule.demote_in.end() ||
                  std::any_of(std::begin(kUniversalContextKinds), std::end(kUniversalContextKinds),
                              [&](const char* k) { return kind == k; });
    return listed && !options.keep_contexts.count(kind);
  };
  if (const std::string* kind = string_attr(module.attrs, "file_kind"); kind && applies(*kind)) {
    const std::string* why = string_attr(module.attrs, "file_kind_reason");
    return ContextHit{*kind, why ? *why : *kind};
  }
  const ir::Function& fn = view.fn();
  for (const char* kind : kContextKinds)
    if (const std::string* why = string_attr(fn.attrs, kind); why && applies(kind)) return ContextHit{kind, *why, true};
  uint32_t r = view.node(m.root).region;
  for (int guard = 0; guard < 64 && r < fn.regions.size(); ++guard) {
    for (const char* kind : kContextKinds)
      if (const std::string* why = string_attr(fn.regions[r].attrs, kind); why && applies(kind))
        return ContextHit{kind, *why};
    if (r == 0) break;
    r = fn.regions[r].parent;
  }
  // A fact of the match's root itself, last (`context_variant` on an attention product).
  for (const char* kind : kContextKinds)
    if (const std::string* why = string_attr(view.node(m.root).attrs, std::string("context_") + kind); why && applies(kind))
      return ContextHit{kind, *why};
  return std::nullopt;
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

void demote(Finding& f, std::string kind, std::string why) {
  f.context_kind = std::move(kind);
  f.context = std::move(why);
  f.severity = "info";
  f.confidence = std::min(f.confidence, kDemotedConfidence);
}

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

bool valid_version(std::string_view v) {
  if (v.empty() || v.front() == '.' || v.back() == '.') return false;
  for (size_t i = 0; i < v.size(); ++i)
    if (!(std::isdigit(static_cast<unsigned char>(v[i])) || (v[i] == '.' && v[i - 1] != '.'))) return false;
  return true;
}

bool needs_newer_torch(const Rule& rule, std::string_view target) {
  return rule.language == "python" && !rule.requires_torch.empty() && !target.empty() &&
         version_less(target, rule.requires_torch);
}

bool version_less(std::string_view a, std::string_view b) {
  if (!valid_version(a) || !valid_version(b)) return false;
  while (!a.empty() || !b.empty()) {
    auto take = [](std::string_view& s) {
      size_t dot = s.find('.');
      std::string_view part = s.substr(0, dot);
      s = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
      unsigned long v = 0;
      std::from_chars(part.data(), part.data() + part.size(), v);
      return v;
    };
    unsigned long x = take(a), y = take(b);
    if (x != y) return x < y;
  }
  return false;
}

std::vector<Finding> Engine::analyze(const ir::Module& module, const std::set<std::string>* only_rules) const {
  AnalyzeOptions options;
  options.only_rules = only_rules;
  return analyze(module, options);
}

std::vector<Finding> Engine::analyze(const ir::Module& module, const AnalyzeOptions& options) const {
  std::vector<Candidate> candidates;
  const CompiledPatterns& cp = *patterns_;
  // Rules off by selection, or whose fix needs a newer torch than the target, are not run.
  std::vector<char> on(rules_.size());
  for (size_t ri = 0; ri < rules_.size(); ++ri) {
    const Rule& rule = rules_[ri];
    on[ri] = (!options.only_rules || options.only_rules->count(rule.id)) && !needs_newer_torch(rule, options.torch_version);
  }
  auto enabled = [&](size_t ri) { return on[ri] != 0; };
  for (const ir::Function& fn : module.functions) {
    FunctionView view(fn, &module);
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
        c.pattern_index = pi;
        // The location is what this function's own text shows; a match made entirely
        // of nodes inlined from helpers is located at its root (in a helper).
        Range own;
        for (ir::NodeId id : m->nodes) {
          const Range& r = fn.nodes[id].range;
          c.spans.emplace_back(r.begin_byte, r.end_byte);
          if (!fn.range.valid() || contains(fn.range, r)) own = merge(own, r);
          else c.standalone = false;
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
        c.finding.rewrite = rewrite_of(p, view, *m, n, options.source, cp.commutative_ops, c.finding.rewrite_range);
        for (size_t ri : users) {
          if (!enabled(ri)) continue;
          Candidate rc = c;
          const Rule& rule = rules_[ri];
          rc.rule_index = ri;
          rc.finding.rule = rule.id;
          rc.finding.rule_name = rule.name;
          rc.finding.concept_id = rule.concept_id;
          rc.finding.level = rule.level;
          rc.finding.severity = rule.severity;
          rc.finding.message = p.message.empty() ? rule.message : p.message;
          {
            const FixTemplate* tmpl = p.fix_template ? p.fix_template.get() : rule.fix_template.get();
            rc.finding.fix = tmpl ? render_fix(*tmpl, [&](const FixRef& ref) { return lookup_ref(ref, view, *m, options.source); })
                                  : (p.fix.empty() ? rule.fix : p.fix);
          }
          rc.finding.kernel = rule.kernel;
          if (auto ctx = context_of(module, view, *m, rule, options)) {
            demote(rc.finding, ctx->kind, ctx->why);
            rc.function_context = ctx->function_level;
          }
          candidates.push_back(std::move(rc));
        }
      };
      if (auto it = cp.by_root_op.find(node.op); it != cp.by_root_op.end())
        for (size_t pi : it->second) try_pattern(pi);
      for (size_t pi : cp.any_root) try_pattern(pi);
    }
  }

  // The same match seen from a helper and through its callers (inlining) gets one
  // context. A caller's instance made mostly of a helper's code takes the helper's own
  // function facts (a helper that returns its weights, a registered eager fallback).
  for (Candidate& c : candidates) {
    if (c.standalone || !c.finding.context.empty()) continue;
    for (const Candidate& h : candidates) {
      if (&h == &c || h.rule_index != c.rule_index || !h.function_context || !h.standalone) continue;
      if (h.spans.size() * 2 < c.spans.size()) continue;
      if (!std::includes(c.spans.begin(), c.spans.end(), h.spans.begin(), h.spans.end())) continue;
      demote(c.finding, h.finding.context_kind, h.finding.context + " (in " + h.finding.function + ")");
      break;
    }
  }
  // A helper's own finding whose every instance inlined into a caller is demoted (the
  // helper is reached only from fallbacks) is demoted as well.
  for (Candidate& c : candidates) {
    if (!c.standalone || !c.finding.context.empty()) continue;
    const Candidate* via = nullptr;
    bool all_demoted = true;
    for (const Candidate& d : candidates) {
      if (&d == &c || d.rule_index != c.rule_index || d.finding.function == c.finding.function) continue;
      if (!std::includes(d.spans.begin(), d.spans.end(), c.spans.begin(), c.spans.end())) continue;
      if (d.finding.context.empty()) all_demoted = false;
      else if (!via) via = &d;
    }
    if (via && all_demoted)
      demote(c.finding, via->finding.context_kind,
             via->finding.context + " (reached only from " + via->finding.function + ")");
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
        if ((same_place && (rank(b) > rank(a) || (rank(b) == rank(a) && j < i))) || subset(a.spans, b.spans)) {
          dropped[i] = true;
          // The kept finding takes the dropped one's rewrite when it has none and the
          // dropped match's rewrite replaces all of its matched code (the scale-and-shift
          // match of a norm whose scale-only match is reported).
          Candidate& kept = candidates[j];
          if (kept.finding.rewrite.empty() && !a.finding.rewrite.empty() && within(kept.spans, a.finding.rewrite_range)) {
            kept.finding.rewrite = a.finding.rewrite;
            kept.finding.rewrite_range = a.finding.rewrite_range;
          }
        }
      } else {
        const auto& sup = rules_[b.rule_index].supersedes;
        if (std::find(sup.begin(), sup.end(), a.finding.rule) != sup.end() && overlaps(a.spans, b.spans))
          dropped[i] = true;
      }
    }
  }
  // One finding per problem per function: matches of one rule in one function that
  // share matched code (RoPE applied to q and to k through the same rotate_half) are one
  // finding covering both places.
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (dropped[i]) continue;
    for (size_t j = i + 1; j < candidates.size(); ++j) {
      if (dropped[j]) continue;
      Candidate& a = candidates[i];
      const Candidate& b = candidates[j];
      if (a.rule_index != b.rule_index || a.finding.function != b.finding.function || !overlaps(a.spans, b.spans))
        continue;
      if (!rules_[a.rule_index].related.empty()) continue;  // merged below, place by place
      a.finding.range = merge(a.finding.range, b.finding.range);
      if (a.finding.rewrite.empty() && !b.finding.rewrite.empty() && within(a.spans, b.finding.rewrite_range)) {
        a.finding.rewrite = b.finding.rewrite;
        a.finding.rewrite_range = b.finding.rewrite_range;
      }
      for (const Evidence& e : b.finding.evidence) {
        bool seen = std::any_of(a.finding.evidence.begin(), a.finding.evidence.end(), [&](const Evidence& x) {
          return x.text == e.text && x.present == e.present && x.range == e.range;
        });
        if (!seen) a.finding.evidence.push_back(e);
      }
      a.finding.confidence = std::max(a.finding.confidence, b.finding.confidence);
      std::vector<ByteSpan> spans;
      std::set_union(a.spans.begin(), a.spans.end(), b.spans.begin(), b.spans.end(), std::back_inserter(spans));
      a.spans = std::move(spans);
      dropped[j] = true;
    }
  }
  // Rules with `related` places: one finding per function and pattern, at its most
  // confident place (the first of those); every other place becomes a related location
  // (it keeps its range). A place doubted for a reason of its own (a read printed on
  // purpose, a tensor built only for an empty batch), which the finding's place does not
  // share, is another problem: it stays a finding of its own, with its lower confidence.
  std::vector<std::vector<std::string_view>> doubts(candidates.size());
  for (size_t k = 0; k < candidates.size(); ++k)
    if (!rules_[candidates[k].rule_index].related.empty())
      for (const Evidence& e : candidates[k].finding.evidence)
        if (e.present && e.weight < 0 && !e.related) doubts[k].push_back(e.text);
  auto rank = [&](size_t k) {
    const Candidate& c = candidates[k];
    return std::make_tuple(-c.finding.confidence, c.finding.range.begin_byte, k);
  };
  // In Python, the innermost branch (an `if`'s body or its `else`) holding each place:
  // the cross-file steps may later find one branch dead (a flag the project never sets)
  // or a fallback, so places on different branches stay different findings.
  std::vector<const ir::Region*> branch(candidates.size(), nullptr);
  for (size_t k = 0; k < candidates.size(); ++k) {
    const Candidate& c = candidates[k];
    if (rules_[c.rule_index].related.empty() || rules_[c.rule_index].language != "python") continue;
    for (const ir::Function& fn : module.functions) {
      if (fn.name != c.finding.function || !contains(fn.range, c.finding.range)) continue;
      for (const ir::Region& reg : fn.regions)
        if (reg.kind == "branch" && reg.range.valid() && contains(reg.range, c.finding.range) &&
            (!branch[k] || contains(branch[k]->range, reg.range)))
          branch[k] = &reg;
      break;
    }
  }
  // Whether place `b` joins the finding at place `a`.
  auto joins = [&](size_t a, size_t b) {
    const Candidate& x = candidates[a];
    const Candidate& y = candidates[b];
    if (x.rule_index != y.rule_index || x.pattern_index != y.pattern_index || x.finding.function != y.finding.function ||
        branch[a] != branch[b] || !(rank(a) < rank(b)))
      return false;
    return std::all_of(doubts[b].begin(), doubts[b].end(), [&](std::string_view d) {
      return std::find(doubts[a].begin(), doubts[a].end(), d) != doubts[a].end();
    });
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (dropped[i] || rules_[candidates[i].rule_index].related.empty()) continue;
    bool joins_other = false;
    for (size_t j = 0; j < candidates.size() && !joins_other; ++j) joins_other = j != i && !dropped[j] && joins(j, i);
    if (joins_other) continue;
    Candidate& keep = candidates[i];
    const std::string& what = rules_[keep.rule_index].related;
    for (size_t j = 0; j < candidates.size(); ++j) {
      if (j == i || dropped[j] || !joins(i, j)) continue;
      const Candidate& b = candidates[j];
      std::string text = what;
      if (auto snippet = excerpt_of(b.finding.range, options.source)) text += ": " + *snippet;
      bool seen = std::any_of(keep.finding.evidence.begin(), keep.finding.evidence.end(), [&](const Evidence& e) {
        return e.related && e.range == b.finding.range;
      });
      if (!seen && !(b.finding.range == keep.finding.range)) {
        Evidence e;
        e.text = std::move(text);
        e.range = b.finding.range;
        e.related = true;
        keep.finding.evidence.push_back(std::move(e));
      }
      dropped[j] = true;
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
  // Evidence seen away from the reported range (in a helper, or further down the
  // function) says where in its text; only evidence next to the range keeps a location.
  for (Finding& f : out) {
    for (Evidence& e : f.evidence) {
      if (!e.present || !e.range.valid() || e.related) continue;
      if (e.range.begin.line + 1 >= f.range.begin.line && e.range.begin.line <= f.range.end.line + 1) continue;
      const ir::Function* home = nullptr;
      for (const ir::Function& fn : module.functions)
        if (fn.name != "<module>" && fn.range.valid() && contains(fn.range, e.range) &&
            (!home || contains(home->range, fn.range)))
          home = &fn;
      std::string where = "line " + std::to_string(e.range.begin.line);
      if (home && home->name != f.function) where = "in " + home->name + ", " + where;
      e.text += " (" + where + ")";
      e.range = Range{};
    }
  }
  std::sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.range.begin.line, a.range.begin.column, a.rule) <
           std::tie(b.range.begin.line, b.range.begin.column, b.rule);
  });
  return out;
}

}  // namespace mlsem
