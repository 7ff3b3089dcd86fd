// SARIF 2.1.0 (OASIS), the format GitHub code scanning and IDE viewers read.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>

#include "report/report.h"

namespace mlsem::report {
namespace {

// ordered_json: keys in the order written here, the order the docs list them.
using json = nlohmann::ordered_json;

constexpr const char* kSourceRoot = "%SRCROOT%";

std::string level_of(const std::string& severity) {
  if (severity == "error") return "error";
  if (severity == "warning") return "warning";
  return "note";
}

// RFC 3986 path characters stay, everything else is percent-encoded.
std::string uri_path(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::string_view("-._~/!$&'()*+,;=:@").find(c) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Relative paths stay relative to %SRCROOT%, as code-scanning services expect.
json artifact_location(const std::string& path) {
  std::string generic = std::filesystem::path(path).generic_string();
  if (!generic.empty() && generic[0] == '/') return {{"uri", "file://" + uri_path(generic)}};
  return {{"uri", uri_path(generic)}, {"uriBaseId", kSourceRoot}};
}

json region(const Range& range) {
  json r = {{"startLine", range.begin.line}, {"startColumn", std::max(1u, range.begin.column)}};
  if (range.end.line >= range.begin.line && range.end.line != 0) {
    r["endLine"] = range.end.line;
    r["endColumn"] = std::max(1u, range.end.column);
  }
  return r;
}

json physical_location(const std::string& path, const Range& range) {
  json location = {{"artifactLocation", artifact_location(path)}};
  if (range.valid()) location["region"] = region(range);
  return location;
}

json rule_json(const Rule& rule) {
  const std::string& summary = rule.docs.summary.empty() ? rule.message : rule.docs.summary;
  json descriptor = {{"id", rule.id},
                     {"name", rule.name},
                     {"shortDescription", {{"text", summary}}},
                     {"fullDescription", {{"text", rule.docs.why.empty() ? summary : rule.docs.why}}},
                     {"defaultConfiguration", {{"level", level_of(rule.severity)}}},
                     {"properties", {{"concept", rule.concept_id}, {"status", rule.status}}}};
  if (!rule.fix.empty()) descriptor["help"] = {{"text", "Fix: " + rule.fix}};
  return descriptor;
}

json result_json(const Finding& f, const std::map<std::string, size_t>& rule_index) {
  json result = {{"ruleId", f.rule},
                 {"level", level_of(f.severity)},
                 {"message", {{"text", f.message}}},
                 {"locations", json::array({{{"physicalLocation", physical_location(f.path, f.range)}}})},
                 {"properties", {{"confidence", f.confidence}, {"concept", f.concept_id}}}};
  if (!f.context.empty()) result["properties"]["context"] = f.context;
  if (auto it = rule_index.find(f.rule); it != rule_index.end()) result["ruleIndex"] = it->second;
  json related = json::array();
  for (const Evidence& e : f.evidence) {
    if (!e.present || !e.range.valid()) continue;
    related.push_back({{"id", related.size() + 1},
                       {"physicalLocation", physical_location(f.path, e.range)},
                       {"message", {{"text", e.text}}}});
  }
  if (!related.empty()) result["relatedLocations"] = related;
  return result;
}

json notification_json(const FileError& error) {
  json location = {{"artifactLocation", artifact_location(error.path)}};
  if (error.line) location["region"] = {{"startLine", error.line}, {"startColumn", std::max(1u, error.column)}};
  return {{"level", "error"},
          {"message", {{"text", error.path + ": " + error.message}}},
          {"locations", json::array({{{"physicalLocation", location}}})}};
}

std::string source_root_uri() {
  std::error_code ec;
  std::string cwd = std::filesystem::current_path(ec).generic_string();
  if (ec || cwd.empty()) return "file:///";
  if (cwd.back() != '/') cwd += '/';  // a base URI must end with a slash
  return "file://" + uri_path(cwd);
}

}  // namespace

std::string to_sarif(const Report& report, const std::vector<Rule>& rules) {
  json rule_list = json::array();
  std::map<std::string, size_t> rule_index;
  for (const Rule& rule : rules) {
    rule_index[rule.id] = rule_list.size();
    rule_list.push_back(rule_json(rule));
  }
  json results = json::array();
  for (const Finding& f : report.findings) results.push_back(result_json(f, rule_index));
  json notifications = json::array();
  for (const FileError& e : report.errors) notifications.push_back(notification_json(e));

  json invocation = {{"executionSuccessful", true}};
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;
  json run = {{"tool",
               {{"driver",
                 {{"name", "mlsem"},
                  {"version", std::string(version())},
                  {"semanticVersion", std::string(version())},
                  {"rules", rule_list}}}}},
              {"originalUriBaseIds", {{kSourceRoot, {{"uri", source_root_uri()}}}}},
              {"invocations", json::array({invocation})},
              {"results", results}};
  json log = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
              {"version", "2.1.0"},
              {"runs", json::array({run})}};
  return log.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace mlsem::report
