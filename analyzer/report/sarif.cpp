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

// Paths under the current directory become URIs relative to %SRCROOT% (the checkout
// root when mlsem runs there, as code-scanning services expect); others stay absolute.
json artifact_location(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  fs::path cwd = fs::current_path(ec);
  if (!ec) {
    fs::path absolute = (p.is_absolute() ? p : cwd / p).lexically_normal();
    fs::path relative = absolute.lexically_relative(cwd);
    if (!relative.empty() && *relative.begin() != "..")
      return {{"uri", uri_path(relative.generic_string())}, {"uriBaseId", kSourceRoot}};
    return {{"uri", "file://" + uri_path(absolute.generic_string())}};
  }
  return {{"uri", uri_path(p.generic_string())}, {"uriBaseId", kSourceRoot}};
}

json region(const Range& range, const Shown& shown) {
  json r = {{"startLine", shown.line}, {"startColumn", std::max(1u, range.begin.column)}};
  if (range.end.line >= range.begin.line && range.end.line != 0) {
    r["endLine"] = std::max(shown.end_line, shown.line);
    r["endColumn"] = std::max(1u, range.end.column);
  }
  return r;
}

json physical_location(const std::string& path, const Range& range, const Sources* sources) {
  json location = {{"artifactLocation", artifact_location(path)}};
  if (range.valid()) location["region"] = region(range, shown_lines(path, range.begin.line, range.end.line, sources));
  return location;
}

// GitHub's precision buckets, from the mean confidence of the rule's results in this run.
std::string precision_of(double mean_confidence) {
  if (mean_confidence >= 0.9) return "very-high";
  if (mean_confidence >= 0.75) return "high";
  if (mean_confidence >= 0.5) return "medium";
  return "low";
}

std::string language_fence(const Rule& rule) { return rule.language == "cuda" ? "cuda" : "python"; }

std::string help_markdown(const Rule& rule) {
  std::string md;
  if (!rule.docs.summary.empty()) md += "**" + rule.docs.summary + "**\n\n";
  if (!rule.docs.why.empty()) md += rule.docs.why + "\n\n";
  if (!rule.docs.example.empty())
    md += "Example:\n\n```" + language_fence(rule) + "\n" + rule.docs.example + "\n```\n\n";
  if (!rule.docs.fixed_example.empty())
    md += "Fixed:\n\n```" + language_fence(rule) + "\n" + rule.docs.fixed_example + "\n```\n\n";
  if (!rule.fix.empty()) md += "Fix: `" + rule.fix + "`\n\n";
  if (rule.kernel) md += "Reference kernel: `" + *rule.kernel + "`\n\n";
  md += "Run `mlsem explain " + rule.id + "` for the full documentation.\n";
  return md;
}

std::string help_text(const Rule& rule) {
  std::string text = rule.docs.summary;
  if (!rule.docs.why.empty()) text += (text.empty() ? "" : "\n\n") + rule.docs.why;
  if (!rule.fix.empty()) text += (text.empty() ? "" : "\n\n") + std::string("Fix: ") + rule.fix;
  return text.empty() ? rule.message : text;
}

// The rule's documentation in the repository (rules/<language>/<ID>-<name>.toml).
std::string help_uri(const Rule& rule, const std::string& homepage) {
  std::string file = std::filesystem::path(rule.file).generic_string();
  size_t at = file.rfind("/rules/");
  std::string relative = at == std::string::npos ? "rules" : file.substr(at + 1);
  return homepage + "/blob/v" + std::string(version()) + "/" + uri_path(relative);
}

json rule_json(const Rule& rule, const Context& context, const std::map<std::string, std::pair<double, size_t>>& confidence) {
  const std::string& summary = rule.docs.summary.empty() ? rule.message : rule.docs.summary;
  json tags = json::array({"performance"});
  if (auto it = context.tags.find(rule.id); it != context.tags.end())
    for (const std::string& tag : it->second) tags.push_back(tag);
  else if (!rule.concept_id.empty())
    tags.push_back(rule.concept_id);
  auto seen = confidence.find(rule.id);
  std::string precision = seen == confidence.end() ? "medium" : precision_of(seen->second.first / seen->second.second);
  json descriptor = {{"id", rule.id},
                     {"name", rule.name},
                     {"shortDescription", {{"text", summary}}},
                     {"fullDescription", {{"text", rule.docs.why.empty() ? summary : rule.docs.why}}},
                     {"help", {{"text", help_text(rule)}, {"markdown", help_markdown(rule)}}},
                     {"defaultConfiguration", {{"level", level_of(rule.severity)}}},
                     {"properties",
                      {{"tags", tags}, {"precision", precision}, {"concept", rule.concept_id}, {"status", rule.status}}}};
  if (!context.homepage.empty() && !rule.file.empty()) descriptor["helpUri"] = help_uri(rule, context.homepage);
  return descriptor;
}

json result_json(const Finding& f, const std::map<std::string, size_t>& rule_index, const Sources* sources) {
  json properties = {{"confidence", f.confidence}, {"concept", f.concept_id}};
  if (!f.function.empty()) properties["function"] = f.function;
  if (!f.context.empty()) properties["context"] = f.context;
  Shown shown = shown_lines(f.path, f.range.begin.line, f.range.end.line, sources);
  if (shown.cell) properties["cell"] = shown.cell;
  const std::string& message = f.message;
  json result = {{"ruleId", f.rule}};
  if (auto it = rule_index.find(f.rule); it != rule_index.end()) result["ruleIndex"] = it->second;
  result["level"] = level_of(f.severity);
  result["message"] = {{"text", message}};
  result["locations"] = json::array({{{"physicalLocation", physical_location(f.path, f.range, sources)}}});
  json related = json::array();
  for (const Evidence& e : f.evidence) {
    if (!e.present || !e.range.valid()) continue;
    related.push_back({{"id", related.size() + 1},
                       {"physicalLocation", physical_location(f.path, e.range, sources)},
                       {"message", {{"text", e.text}}}});
  }
  if (!related.empty()) result["relatedLocations"] = related;
  if (!f.fingerprint.empty()) result["partialFingerprints"] = {{"mlsem/v1", f.fingerprint}};
  result["properties"] = properties;
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
  Context context;
  context.rules = rules;
  return to_sarif(report, context);
}

std::string to_sarif(const Report& report, const Context& context) {
  std::map<std::string, std::pair<double, size_t>> confidence;  // rule -> sum, count
  for (const Finding& f : report.findings) {
    auto& entry = confidence[f.rule];
    entry.first += f.confidence;
    ++entry.second;
  }
  json rule_list = json::array();
  std::map<std::string, size_t> rule_index;
  for (const Rule& rule : context.rules) {
    rule_index[rule.id] = rule_list.size();
    rule_list.push_back(rule_json(rule, context, confidence));
  }
  json results = json::array();
  for (const Finding& f : report.findings) results.push_back(result_json(f, rule_index, context.sources));
  json notifications = json::array();
  for (const FileError& e : report.errors) notifications.push_back(notification_json(e));

  json configuration = json::array();
  for (const Note& n : notes(report))
    configuration.push_back({{"level", "note"},
                             {"message", {{"text", n.message}}},
                             {"descriptor", {{"id", n.kind}}},
                             {"properties", {{"torch", n.torch}, {"files", n.files}, {"rules", n.rules}}}});

  json invocation = {{"executionSuccessful", true}};
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;
  if (!configuration.empty()) invocation["toolConfigurationNotifications"] = configuration;
  json driver = {{"name", "mlsem"},
                 {"version", std::string(version())},
                 {"semanticVersion", std::string(version())}};
  if (!context.homepage.empty()) driver["informationUri"] = context.homepage;
  driver["rules"] = rule_list;
  json run = {{"tool", {{"driver", driver}}},
              {"originalUriBaseIds", {{kSourceRoot, {{"uri", source_root_uri()}}}}},
              {"invocations", json::array({invocation})},
              {"results", results}};
  json log = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
              {"version", "2.1.0"},
              {"runs", json::array({run})}};
  return log.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace mlsem::report
