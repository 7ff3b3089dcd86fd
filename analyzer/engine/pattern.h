// The match language of patterns/ (docs/PATTERNS.md): parsed once at load into a
// tree of PatternTerms, then matched against IR nodes by engine/matcher.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/ir.h"

namespace mlsem {

using Literal = std::variant<bool, int64_t, double, std::string>;

// `key`, `!key`, `key == lit`, `key in [lit, ...]` on a node's (or region's) attributes.
struct Predicate {
  enum class Kind { kTruthy, kFalsy, kCompare, kIn };
  enum class Cmp { kEq, kNe, kLt, kLe, kGt, kGe, kContains };
  Kind kind = Kind::kTruthy;
  Cmp cmp = Cmp::kEq;
  std::string key;
  std::vector<Literal> values;  // one for kCompare, several for kIn
};

struct PatternTerm {
  enum class Kind { kOp, kVar, kAny, kAlt, kDeep };
  Kind kind = Kind::kAny;
  std::string label;       // "@label:" or "" — names the node for evidence and focus
  bool optional = false;   // "?": the step may be absent (its first argument matches instead)
  bool repeated = false;   // "*": zero or more such steps, then the first argument

  // kOp
  std::vector<std::string> ops;  // op names this term accepts (a %class expands to several)
  std::string spelled;           // as written, for messages ("softmax", "%pointwise")
  int min_chain = 0;             // "{n,}": a fused region of at least n such ops
  std::vector<Predicate> preds;
  bool has_args = false;         // "(...)" given
  bool rest = false;             // trailing "..." in the arguments
  std::vector<PatternTerm> args;

  std::string var;                     // kVar: "$name" without the '$'
  std::vector<PatternTerm> children;   // kAlt: alternatives; kDeep: the one sub-pattern
};

// A region clause: `loop[training]`, `with[context == 'torch.no_grad']`.
struct RegionSpec {
  std::string kind;
  std::vector<Predicate> preds;
};

// Parse errors carry the 0-based offset into the text so loaders can point at it.
struct ParseError {
  size_t offset = 0;
  std::string message;
};

using OpClasses = std::map<std::string, std::vector<std::string>>;

std::variant<PatternTerm, ParseError> parse_pattern(std::string_view text, const OpClasses& classes);
std::variant<std::vector<Predicate>, ParseError> parse_predicates(std::string_view text);
std::variant<RegionSpec, ParseError> parse_region_spec(std::string_view text);

// Predicate evaluation over an attribute map (node attrs or region attrs). `extra`
// supplies computed keys such as "users" that are not stored on the node.
bool eval_predicate(const Predicate& p, const std::map<std::string, ir::Attr>& attrs,
                    const std::map<std::string, ir::Attr>* extra = nullptr);
bool eval_predicates(const std::vector<Predicate>& ps, const std::map<std::string, ir::Attr>& attrs,
                     const std::map<std::string, ir::Attr>* extra = nullptr);
// One predicate on the value of its key (null when the key is absent).
bool eval_predicate_on(const Predicate& p, const ir::Attr* a);

// Every label and op name used in a term (for load-time validation).
void collect_labels(const PatternTerm& t, std::vector<std::string>& out);
void collect_ops(const PatternTerm& t, std::vector<std::string>& out);
void collect_vars(const PatternTerm& t, std::vector<std::string>& out);
// The ops a node must have for the term to match at it; nullopt = any op.
std::optional<std::vector<std::string>> root_ops(const PatternTerm& t);

}  // namespace mlsem
