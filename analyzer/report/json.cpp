// The JSON report: one stable schema for CI and scripts (fields listed in report.h).
#include <nlohmann/json.hpp>

#include "report/report.h"

namespace mlsem::report {
namespace {

// ordered_json: keys in the order written here, the order the docs list them.
using json = nlohmann::ordered_json;

// Evidence that was not seen has no position: null, not a fake line 0.
json position_or_null(uint32_t value, const Range& range) { return range.valid() ? json(value) : json(nullptr); }

json finding_json(const Finding& f) {
  json evidence = json::array();
  for (const Evidence& e : f.evidence)
    evidence.push_back({{"text", e.text},
                        {"present", e.present},
                        {"weight", e.weight},
                        {"line", position_or_null(e.range.begin.line, e.range)},
                        {"column", position_or_null(e.range.begin.column, e.range)}});
  return {{"rule", f.rule},
          {"name", f.rule_name},
          {"concept", f.concept_id},
          {"severity", f.severity},
          {"message", f.message},
          {"path", f.path},
          {"line", f.range.begin.line},
          {"column", f.range.begin.column},
          {"end_line", f.range.end.line},
          {"end_column", f.range.end.column},
          {"function", f.function},
          {"confidence", f.confidence},
          {"evidence", evidence},
          {"fix", f.fix},
          {"level", f.level.empty() ? json(nullptr) : json(f.level)},
          {"kernel", f.kernel ? json(*f.kernel) : json(nullptr)},
          {"measured", f.measured.empty() ? json(nullptr) : json(f.measured)}};
}

}  // namespace

std::string to_json(const Report& report) {
  json findings = json::array();
  for (const Finding& f : report.findings) findings.push_back(finding_json(f));
  json errors = json::array();
  for (const FileError& e : report.errors)
    errors.push_back({{"path", e.path},
                      {"message", e.message},
                      {"line", e.line ? json(e.line) : json(nullptr)},
                      {"column", e.line ? json(e.column) : json(nullptr)}});
  json root = {{"version", std::string(version())}, {"findings", findings}, {"errors", errors}};
  // Replace, not throw, should a frontend hand back a message with broken UTF-8.
  return root.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace mlsem::report
