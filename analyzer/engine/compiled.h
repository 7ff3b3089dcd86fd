// The engine's loaded form of patterns/: patterns parsed, validated and indexed by
// the op their root can match, so analysis visits each IR node once.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/fix_template.h"
#include "engine/pattern.h"

namespace mlsem {

struct EvidenceSpec {
  std::string label;                 // "" = the match's root
  std::string op;                    // or: any matched node with this op (e.g. inside a repeated step)
  std::vector<Predicate> check;      // must hold on the labelled node
  std::optional<RegionSpec> inside;  // and the node must sit in such a region
  double weight = 0;
  std::string present;
  std::string absent;
};

struct CompiledPattern {
  std::string id;
  std::string language;
  std::string file;
  uint32_t line = 0;
  PatternTerm term;
  double base = 0.5;
  // Labels whose ranges make the finding's location; empty: the matched nodes this
  // function shows (docs/PATTERNS.md).
  std::vector<std::string> focus;
  std::vector<std::string> distinct;  // variables that must bind different nodes
  std::optional<RegionSpec> inside;
  std::optional<RegionSpec> not_inside;
  std::vector<EvidenceSpec> evidence;
  // A numeric variant's own wording: replaces the rule's message / fix when set.
  std::string message;
  std::string fix;
  std::shared_ptr<const FixTemplate> fix_template;  // `fix`, parsed (fix_template.h)
  // `rewrite`: an expression computing exactly what the matched expression computes
  // (Finding::rewrite), parsed; null: no machine-applicable fix.
  std::shared_ptr<const FixTemplate> rewrite_template;
};

class CompiledPatterns {
 public:
  std::vector<CompiledPattern> patterns;
  std::set<std::string> commutative_ops;
  // Pattern indices by the op at their root; patterns whose root is any op are in any_root.
  std::unordered_map<std::string, std::vector<size_t>> by_root_op;
  std::vector<size_t> any_root;
  // For each pattern, the indices (into Engine::rules()) of the rules that use it.
  std::vector<std::vector<size_t>> rules_of_pattern;
};

}  // namespace mlsem
