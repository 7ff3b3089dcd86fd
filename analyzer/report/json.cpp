// The JSON report: one stable schema for CI and scripts (fields listed in report.h,
// the schema in docs/schema/report.schema.json), and its one-object-per-line form.
#include <nlohmann/json.hpp>

#include "report/report.h"

namespace mlsem::report {
namespace {

// ordered_json: keys in the order written here, the order the docs list them.
using json = nlohmann::ordered_json;

// Evidence that was not seen has no position: null, not a fake line 0.
json position_or_null(uint32_t value, const Range& range) { return range.valid() ? json(value) : json(nullptr); }

json finding_json(const Finding& f, const Sources* sources) {
  Shown shown = shown_lines(f.path, f.range.begin.line, f.range.end.line, sources);
  json evidence = json::array();
  for (const Evidence& e : f.evidence) {
    Shown at = shown_lines(f.path, e.range.begin.line, e.range.begin.line, sources);
    evidence.push_back({{"text", e.text},
                        {"present", e.present},
                        {"weight", e.weight},
                        {"line", position_or_null(at.line, e.range)},
                        {"column", position_or_null(e.range.begin.column, e.range)},
                        {"related", e.related}});
  }
  return {{"rule", f.rule},
          {"name", f.rule_name},
          {"concept", f.concept_id},
          {"severity", f.severity},
          {"message", f.message},
          {"path", f.path},
          {"cell", shown.cell ? json(shown.cell) : json(nullptr)},
          {"line", shown.line},
          {"column", f.range.begin.column},
          {"end_line", shown.end_line},
          {"end_column", f.range.end.column},
          {"function", f.function},
          {"confidence", f.confidence},
          {"evidence", evidence},
          {"fix", f.fix},
          {"level", f.level.empty() ? json(nullptr) : json(f.level)},
          {"kernel", f.kernel ? json(*f.kernel) : json(nullptr)},
          {"measured", f.measured.empty() ? json(nullptr) : json(f.measured)},
          {"context", f.context.empty() ? json(nullptr) : json(f.context)},
          {"context_kind", f.context_kind.empty() ? json(nullptr) : json(f.context_kind)},
          {"fingerprint", f.fingerprint}};
}

json notes_json(const Report& report) {
  json out = json::array();
  for (const Note& n : notes(report))
    out.push_back({{"kind", n.kind}, {"torch", n.torch}, {"files", n.files}, {"rules", n.rules}, {"message", n.message}});
  return out;
}

json error_json(const FileError& e) {
  return {{"path", e.path},
          {"message", e.message},
          {"line", e.line ? json(e.line) : json(nullptr)},
          {"column", e.line ? json(e.column) : json(nullptr)}};
}

// Replace, not throw, should a frontend hand back a message with broken UTF-8.
std::string dump(const json& value, int indent) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace

Shown shown_lines(const std::string& path, uint32_t line, uint32_t end_line, const Sources* sources) {
  Shown shown{0, line, end_line};
  if (!sources || line == 0) return shown;
  auto it = sources->notebooks.find(path);
  if (it == sources->notebooks.end()) return shown;
  const NotebookIndex& index = it->second;
  if (line - 1 < index.cell.size()) shown.cell = index.cell[line - 1], shown.line = index.line[line - 1];
  // A range that runs into a later cell (it cannot, cells are statements) ends with its first.
  if (end_line >= line && end_line - 1 < index.cell.size() && index.cell[end_line - 1] == shown.cell)
    shown.end_line = index.line[end_line - 1];
  else
    shown.end_line = shown.line;
  return shown;
}

std::string where(const Finding& finding, const Sources* sources) {
  Shown shown = shown_lines(finding.path, finding.range.begin.line, finding.range.end.line, sources);
  std::string out = finding.path + ":";
  if (shown.cell) out += "cell " + std::to_string(shown.cell) + ":";
  return out + std::to_string(shown.line) + ":" + std::to_string(finding.range.begin.column);
}

std::string to_json(const Report& report, const Sources* sources) {
  json findings = json::array();
  for (const Finding& f : report.findings) findings.push_back(finding_json(f, sources));
  json errors = json::array();
  for (const FileError& e : report.errors) errors.push_back(error_json(e));
  json root = {{"version", std::string(version())}, {"findings", findings}, {"errors", errors}, {"notes", notes_json(report)}};
  return dump(root, 2) + "\n";
}

std::string to_json_lines(const Report& report, const Sources* sources) {
  std::string out;
  for (const Finding& f : report.findings) {
    json line = {{"type", "finding"}};
    line.update(finding_json(f, sources));
    out += dump(line, -1) + "\n";
  }
  for (const FileError& e : report.errors) {
    json line = {{"type", "error"}};
    line.update(error_json(e));
    out += dump(line, -1) + "\n";
  }
  for (json note : notes_json(report)) {
    json line = {{"type", "note"}};
    line.update(note);
    out += dump(line, -1) + "\n";
  }
  return out;
}

}  // namespace mlsem::report
