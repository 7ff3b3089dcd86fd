// Fix templates: a rule's `fix` string with placeholders the engine fills from the
// match, so the suggested code names the user's own variables (docs/PATTERNS.md,
// "Fix templates"). Parsed once at load; rendered per finding.
//
//   {ref}            the user's spelling of a matched node (or of an attribute of it)
//   {ref|default}    the same, or `default` when there is no value
//   [?cond, ...: body]  an optional segment: kept only when every condition holds
//                    and every placeholder in `body` has a value (one space after
//                    ':' is a separator, not part of the body)
//   {{ and }}        literal braces; other braces that do not enclose a reference
//                    (`if (i < n) { ... }`) and a '[' not followed by '?' are text
//
//   ref  := name ('.' (input-index | attribute))*     e.g. q, eps, mask.1, drop.p
//   name := a label or $variable of the rule's patterns (without @/$), '#op' (the
//           first matched node of that op: #scale, #dropout), or 'function' (the
//           reporting function's attributes: function.self)
//   cond := ['!'] ref ['=' text]                       true when the ref has a value
//                                                      other than "" and "False" (or
//                                                      equal to `text`: #mask.kind=fill)
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/pattern.h"

namespace mlsem {

struct FixRef {
  std::string label;               // the first part: a pattern label, or "function"
  std::vector<std::string> path;   // then input indices ("1") or attribute names ("p")
  std::string text;                // as written, for messages
};

struct FixPiece {
  enum class Kind { kText, kRef, kSegment };
  Kind kind = Kind::kText;
  std::string text;                       // kText
  FixRef ref;                             // kRef
  std::optional<std::string> fallback;    // kRef: "{ref|default}"
  struct Condition {
    bool negated = false;
    FixRef ref;
    std::optional<std::string> equals;  // "ref=value": the ref's value is this text
  };
  std::vector<Condition> conditions;      // kSegment
  std::vector<FixPiece> body;             // kSegment
};

struct FixTemplate {
  std::vector<FixPiece> pieces;
  bool plain = true;  // no placeholders or segments
  std::string text;   // as written
};

std::variant<FixTemplate, ParseError> parse_fix_template(std::string_view text);

// Every ref a template uses (placeholders and conditions), for load-time validation.
void collect_fix_refs(const FixTemplate& t, std::vector<FixRef>& out);

// What a ref evaluates to for one match: a spelling, or nullopt when the label did
// not match or the attribute is absent. A boolean attribute that is false yields "".
using FixLookup = std::function<std::optional<std::string>(const FixRef&)>;

// The fix for one finding. A placeholder outside any segment with no value and no
// default is written as its last ref part (`{q}` -> "q").
std::string render_fix(const FixTemplate& t, const FixLookup& lookup);

}  // namespace mlsem
