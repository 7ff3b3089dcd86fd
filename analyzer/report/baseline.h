// Baselines: the findings a project has accepted, so that CI fails only on new ones.
// An entry is keyed by path, rule, function and the finding's fingerprint (a hash of
// the matched text, not its line), so it survives code moving within the file.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/finding.h"

namespace mlsem::report {

struct Baseline {
  std::map<std::string, size_t> counts;  // key -> how many findings it accepts
};

// {"version": 1, "tool": "mlsem", "findings": [{path, rule, function, fingerprint,
// line, message}]}; line and message are for the reader, matching ignores them.
std::string baseline_json(const Report& report);
// nullopt with `error` set when the text is not a baseline.
std::optional<Baseline> read_baseline(const std::string& text, std::string& error);
// Drops the findings the baseline accepts (each entry accepts one); returns how many.
size_t apply_baseline(Report& report, Baseline baseline);

}  // namespace mlsem::report
