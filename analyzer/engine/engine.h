// The concept-mapping engine: loads concepts/, patterns/ and rules/ (TOML data),
// matches patterns over the IR, scores the evidence and produces findings.
// It does no file IO after loading and is safe to share between threads.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <string>
#include <vector>

#include "core/finding.h"
#include "ir/ir.h"

namespace mlsem {

struct FixTemplate;  // engine/fix_template.h

struct Concept {
  std::string id;                       // "scaled-dot-product-attention"
  std::string name;                     // "Scaled dot-product attention"
  std::vector<std::string> parents;     // is-a edges (a DAG)
  std::vector<std::string> requires_;   // prerequisite edges (learning paths)
  std::string summary;
  std::vector<std::string> kernels;     // kernels/ names that teach it
  std::vector<std::string> reading;     // titles or URLs
  // Curriculum (`mlsem learn`, docs/learning.md); all optional in the data.
  std::string explanation;              // the lesson text; the summary when empty
  std::string checkpoint;               // what a learner can do afterwards
  int minutes = 0;                      // estimated study time (0: not given)
  std::string stage;                    // "beginner" | "intermediate" | "advanced" | "" (derived)
  std::vector<std::string> lessons;     // "kernels/<name>" or "samples/<path>" to study
  std::string file;                     // where it was defined
  uint32_t line = 0;
};

struct RuleDocs {
  std::string summary, why, example, fixed_example;
};

struct Rule {
  std::string id;         // "ATT001"
  std::string name;       // "hand-written-attention"
  std::string status;     // "stable" | "preview"
  std::string language;   // "python" | "cuda"
  std::string concept_id;
  std::string severity;   // "error" | "warning" | "info"
  std::vector<std::string> patterns;  // pattern ids
  std::string message;
  std::string fix;                    // a template (docs/PATTERNS.md, "Fix templates")
  std::shared_ptr<const FixTemplate> fix_template;  // `fix`, parsed
  std::optional<std::string> kernel;  // "kernels/attention_fwd"
  std::vector<std::string> supersedes;  // rule ids whose overlapping findings this one replaces
  bool per_function = false;  // one finding per function: RoPE on q and on k is one problem
  // One finding per function and pattern, at its first place; every further place of the
  // same problem (five strided accesses of one kernel) becomes a related location whose
  // evidence text is this ("another strided access"). Empty: each place is a finding.
  std::string related;
  // Context kinds in which a finding of this rule is demoted (docs/PATTERNS.md, "Context").
  // `modular`, `unused`, `vendored` and `example` (kUniversalContextKinds) demote every rule's findings.
  std::vector<std::string> demote_in = {"test", "reference", "parity", "fallback", "cold", "comparison", "env-bound"};
  // The oldest torch whose API the fix uses ("2.4"); empty: any.
  std::string requires_torch;
  // Settings a project makes in one place for every script (`cudnn.benchmark`): a finding
  // that a file leaves one unset is demoted as `configured` when any Python file of its
  // project mentions it (the cross-file pass, driver/references.h).
  std::vector<std::string> configured_by;
  std::string level;      // optimization level of the fix: "library" | "torch-compile" | "triton" | "cuda" | ""
  RuleDocs docs;
  std::string file;
  uint32_t line = 0;
};

class CompiledPatterns;  // engine/pattern.h

// Demoted findings (code that is a fallback, a test, a reference, ...) are reported as
// `info` with their confidence capped here, below the default display threshold.
inline constexpr double kDemotedConfidence = 0.3;

// Marks `f` demoted: its context kind and why, severity info, confidence capped at
// kDemotedConfidence (the engine's context policy, and the driver's cross-file pass).
void demote(Finding& f, std::string kind, std::string why);
// Context kinds the engine knows (docs/PATTERNS.md, "Context").
inline constexpr const char* kContextKinds[] = {"test",   "reference", "parity",  "fallback", "returns-weights",
                                                "cold",   "unused",    "modular", "variant",
                                                "comparison", "compiled", "vendored", "example", "env-bound",
                                                "configured"};
// Kinds that demote a finding of any rule, whatever its `demote_in`: a modular source's
// code is reported in the file generated from it, dead code runs for no one, vendored
// code is maintained upstream, and a demonstration's speed is not its point.
inline constexpr const char* kUniversalContextKinds[] = {"modular", "unused", "vendored", "example"};

struct AnalyzeOptions {
  // Rule ids to run; null = every rule. Patterns of other rules are not even tried, and
  // a rule that is off supersedes nothing.
  const std::set<std::string>* only_rules = nullptr;
  // The module's source text: fixes quote the user's spelling of matched values from it.
  std::string_view source;
  // The torch the analyzed code targets, "X.Y"; empty: unknown (every rule runs).
  // Rules whose `requires_torch` is newer are off.
  std::string torch_version;
  // Context kinds not to demote (findings there are reported like any other);
  // "all" turns demotion off.
  std::set<std::string> keep_contexts;
};

// "2.4" < "2.10": compares dotted version numbers numerically; false when either is
// not of the form N(.N)*.
bool version_less(std::string_view a, std::string_view b);
bool valid_version(std::string_view v);
struct Rule;
// Whether `rule`'s fix needs a newer torch than `target` ("" = unknown: no): such a rule is
// off for the file (Engine::analyze), and the text report names it (driver).
bool needs_newer_torch(const Rule& rule, std::string_view target);

class Engine {
 public:
  // Loads and validates every *.toml under data_dir/{concepts,patterns,rules}.
  // Each problem is appended to `errors` naming the file and line; returns nullopt
  // if any file failed (a partial rule set would silently drop findings).
  static std::optional<Engine> load(const std::filesystem::path& data_dir,
                                    std::vector<FileError>& errors);

  // All findings for one module, deduplicated, sorted, suppressions applied. With
  // `only_rules`, patterns of other rules are not even tried, and a rule that is off
  // supersedes nothing.
  std::vector<Finding> analyze(const ir::Module& module, const std::set<std::string>* only_rules = nullptr) const;
  std::vector<Finding> analyze(const ir::Module& module, const AnalyzeOptions& options) const;

  const std::vector<Rule>& rules() const { return rules_; }
  const Rule* rule(std::string_view id_or_name) const;
  const std::vector<Concept>& concepts() const { return concepts_; }
  const Concept* concept_by_id(std::string_view id) const;

  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;
  ~Engine();

 private:
  Engine();
  std::vector<Rule> rules_;
  std::vector<Concept> concepts_;
  std::unique_ptr<CompiledPatterns> patterns_;
};

// Where the data directories are: $MLSEM_DATA, then beside the executable
// (../share/mlsem, then the source tree it was built from).
std::filesystem::path find_data_dir(const char* argv0);

}  // namespace mlsem
