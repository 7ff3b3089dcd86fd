// What an analysis produces: findings and per-file errors. One schema for every
// frontend (Python, CUDA) and every output (text, JSON, editors).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/source.h"

namespace mlsem {

// One element of a pattern, found or not. Confidence is derived from these.
struct Evidence {
  std::string text;     // "softmax over the last dim" / "no 1/sqrt(d) scale found"
  bool present = true;  // false: an optional element the pattern looked for and did not find
  double weight = 0.0;  // contribution to confidence when present (may be negative: counter-evidence)
  Range range;          // where it was seen (invalid when absent)
  // Another place of the same problem (a rule reported once per function with its other
  // places as related locations, engine.h `Rule::related`): it keeps its range wherever
  // it is, and SARIF, JSON and text list it as a location.
  bool related = false;
};

struct Finding {
  std::string rule;       // stable code, e.g. "ATT001"
  std::string rule_name;  // slug, e.g. "hand-written-attention"
  std::string concept_id; // concept hierarchy id, e.g. "scaled-dot-product-attention"
  std::string severity;   // "error" | "warning" | "info" ("info" for demoted findings)
  std::string message;
  std::string path;
  Range range;            // the primary location
  std::string function;   // enclosing function, qualified ("CausalSelfAttention.forward")
  double confidence = 0.0;
  std::vector<Evidence> evidence;
  std::string fix;
  // A machine-applicable fix: `text` replaces the source in `range` (one expression,
  // the whole matched computation) and computes the same values. Rendered from the
  // pattern's `rewrite` template (docs/PATTERNS.md) only when the pattern says its
  // rewrite is exact and every placeholder names a plain value; editors offer it as a
  // quick fix (`mlsem lsp`). Empty `text`: none.
  Range rewrite_range;
  std::string rewrite;
  std::optional<std::string> kernel;  // a kernels/ path, e.g. "kernels/attention_fwd"
  std::string level;      // the rule's optimization level ("library", "torch-compile", "triton", "cuda") or ""
  std::string measured;   // "fused: 3.1x faster than the eager form on NVIDIA H100 at ..." or ""
  // Why the finding is demoted, or "" when it is not: the code is an eager fallback, a
  // test, an op reference, ... ("eager fallback: runs only when ..."). Demoted findings
  // are `info` with a confidence below the default threshold (engine.h).
  std::string context;
  std::string context_kind;  // "fallback", "returns-weights", "test", "reference", "parity", "cold", "unused", "modular", "variant", "comparison", "compiled", "vendored", "example", "env-bound"
  // Stable identity for baselines and SARIF partialFingerprints: a hash of the rule, the
  // function and the matched source text without whitespace and comments (not its
  // line), with ":N" for the Nth identical match in the file. Set by the driver.
  std::string fingerprint;
};

// A file that could not be (fully) analyzed: unreadable, binary, syntax error, ...
struct FileError {
  std::string path;
  std::string message;
  uint32_t line = 0;  // 0 when the error has no position
  uint32_t column = 0;
};

struct Report {
  std::vector<Finding> findings;  // sorted by path, line, column, rule
  std::vector<FileError> errors;  // sorted by path, line
  size_t files_analyzed = 0;
  // Rules whose fix needs a newer torch than the files' project pins (not --torch-version):
  // the pinned version -> how many analyzed files target it, and the rule ids off there.
  struct TorchOff {
    size_t files = 0;
    std::set<std::string> rules;
  };
  std::map<std::string, TorchOff> torch_off;
};

}  // namespace mlsem
