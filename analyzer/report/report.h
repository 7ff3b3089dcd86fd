// Renderings of a Report: compiler-style text, JSON and SARIF 2.1.0; and of the
// loaded data: the rules table, a rule's docs, the concept list.
#pragma once

#include <string>
#include <vector>

#include "core/finding.h"
#include "driver/driver.h"
#include "engine/engine.h"

namespace mlsem::report {

struct TextOptions {
  bool color = false;  // ANSI colours (the CLI decides: --color, a terminal, NO_COLOR)
};

// `path:line:col: RULE [concept] message (confidence 0.94)`, the source excerpt with
// the range marked (when `sources` holds the file), the evidence, fix and kernel;
// then file errors and a summary line.
std::string to_text(const Report& report, const SourceTexts& sources, const TextOptions& options);

// {"version", "findings": [...], "errors": [...]}. A finding: rule, name, concept,
// severity, message, path, line, column, end_line, end_column (1-based, end
// exclusive), function, confidence, evidence [{text, present, weight, line, column}],
// fix, kernel (path or null), measured (text or null). An error: path, message,
// line, column (null when the error has no position).
std::string to_json(const Report& report);

// One SARIF 2.1.0 run: `rules` as tool.driver.rules, findings as results, file
// errors as invocations[0].toolExecutionNotifications. Relative paths are URIs
// against %SRCROOT%, the current directory.
std::string to_sarif(const Report& report, const std::vector<Rule>& rules);

// `mlsem rules`: one row per rule (id, name, concept, severity, status, summary).
std::string rules_table(const std::vector<Rule>& rules);
std::string rules_json(const std::vector<Rule>& rules);
// `mlsem explain RULE`: summary, why, example, fixed example, fix, concept and its
// ancestors, kernel.
std::string explain(const Rule& rule, const Engine& engine);
// `mlsem concepts`: id, name and parents of each concept.
std::string concepts_list(const std::vector<Concept>& concepts);

}  // namespace mlsem::report
