// Renderings of a Report: compiler-style text, JSON, JSON lines, SARIF 2.1.0, GitHub
// Actions annotations and JUnit XML; and of the
// loaded data: the rules table, a rule's docs, the concept list.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "driver/driver.h"
#include "engine/engine.h"

namespace mlsem::report {

struct TextOptions {
  bool color = false;  // ANSI colours (the CLI decides: --color, a terminal, NO_COLOR)
};

// What the machine formats need besides the report: the rules that ran, each rule's
// tags (its concept and the concept's ancestors), the texts and notebook cell maps.
struct Context {
  std::vector<Rule> rules;                                 // SARIF tool.driver.rules, JUnit cases
  std::map<std::string, std::vector<std::string>> tags;    // rule id -> concept and ancestors
  const Sources* sources = nullptr;                        // notebooks: cell and line in cell
  std::string homepage = std::string(mlsem::homepage());   // SARIF informationUri, rules' helpUri
};

// Where a finding is shown: a notebook's cell and line within the cell, or the file line.
struct Shown {
  uint32_t cell = 0;  // 0: not a notebook
  uint32_t line = 0, end_line = 0;
};
Shown shown_lines(const std::string& path, uint32_t line, uint32_t end_line, const Sources* sources);
// "path:line:col" or, in a notebook, "path:cell N:line:col".
std::string where(const Finding& finding, const Sources* sources);

// `path:line:col: RULE [concept] message (confidence 0.94)`, the source excerpt with
// the range marked (when `sources` holds the file), the evidence, fix and kernel;
// then file errors and a summary line.
std::string to_text(const Report& report, const SourceTexts& sources, const TextOptions& options);
std::string to_text(const Report& report, const Sources& sources, const TextOptions& options);

// {"version", "findings": [...], "errors": [...], "notes": [...]}. A finding: rule, name, concept,
// severity, message, path, line, column, end_line, end_column (1-based, end
// exclusive), function, confidence, evidence [{text, present, weight, line, column}],
// fix, kernel (path or null), measured (text or null). An error: path, message,
// line, column (null when the error has no position). Schema:
// docs/schema/report.schema.json. With notebooks, `cell` is the cell and the lines are
// lines within it (null elsewhere).
std::string to_json(const Report& report, const Sources* sources = nullptr);
// One JSON object per line: {"type": "finding", ...} for each finding (the same fields
// as in to_json), {"type": "error", ...} for each file error, {"type": "note", ...} for each note.
std::string to_json_lines(const Report& report, const Sources* sources = nullptr);

// One SARIF 2.1.0 run: `rules` as tool.driver.rules, findings as results, file
// errors as invocations[0].toolExecutionNotifications. Relative paths are URIs
// against %SRCROOT%, the current directory.
std::string to_sarif(const Report& report, const std::vector<Rule>& rules);
std::string to_sarif(const Report& report, const Context& context);

// GitHub Actions workflow commands: one `::warning file=...,line=...::message` (or
// ::error / ::notice by severity) per finding and one ::error per file error.
std::string to_github(const Report& report, const Sources* sources = nullptr);
// The escaping GitHub documents for workflow commands: % CR LF in data, and also : ,
// in property values.
std::string github_escape_data(std::string_view text);
std::string github_escape_property(std::string_view text);

// JUnit XML: one test suite per rule that ran (a test case per file analyzed, failed by
// that rule's findings in it) and a suite of file errors.
std::string to_junit(const Report& report, const Context& context);

// The notes every format carries besides findings and errors: one per torch version
// that the analyzed files' project pins and that turns selected rules off ("3 files
// target torch 1.10 (...): OPT001, FUS002 need a newer torch and did not run there;
// --torch-version X.Y runs them"). Text ends with them; JSON lists them under "notes",
// JSON lines as {"type": "note"} objects, SARIF as the invocation's
// toolConfigurationNotifications, GitHub as a ::notice, the editor server in its log.
struct Note {
  std::string kind;   // "torch-pin"
  std::string torch;  // the pinned version
  size_t files = 0;
  std::vector<std::string> rules;
  std::string message;
};
std::vector<Note> notes(const Report& report);
// `--statistics`: findings per rule, most frequent first: "  473  ATT001  hand-written-attention".
std::string statistics(const Report& report);

// The concept's ancestors, nearest first, each once.
std::vector<std::string> concept_ancestors(const std::string& concept_id, const Engine& engine);
// For SARIF: every rule's tags (concept + ancestors).
std::map<std::string, std::vector<std::string>> rule_tags(const std::vector<Rule>& rules, const Engine& engine);

// `mlsem rules`: one row per rule (id, name, concept, severity, status, summary).
std::string rules_table(const std::vector<Rule>& rules);
std::string rules_json(const std::vector<Rule>& rules);
// `mlsem explain RULE`: summary, why, example, fixed example, fix, concept and its
// ancestors, kernel.
std::string explain(const Rule& rule, const Engine& engine);
// The same as a Markdown page: docs/rules/<ID>.md, where editors link a finding's code
// (`measured`: the reference kernel's speedup summary, or "").
std::string explain_markdown(const Rule& rule, const Engine& engine, const std::string& measured);
// `mlsem concepts`: id, name and parents of each concept.
std::string concepts_list(const std::vector<Concept>& concepts);

}  // namespace mlsem::report
