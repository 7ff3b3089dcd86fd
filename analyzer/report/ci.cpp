// CI formats: GitHub Actions workflow commands (annotations on the pull request's
// diff) and JUnit XML (test-report viewers of GitLab, Jenkins, Azure Pipelines).
#include <cstdio>
#include <map>

#include "report/report.h"

namespace mlsem::report {
namespace {

std::string annotation_level(const std::string& severity) {
  if (severity == "error") return "error";
  if (severity == "warning") return "warning";
  return "notice";
}

std::string confidence_text(double confidence) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", confidence);
  return text;
}

// XML 1.0 text or attribute: the five entities; control characters other than tab,
// newline and carriage return cannot appear at all and are dropped.
std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      case '\t': out += "&#9;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
  }
  return out;
}

}  // namespace

std::string github_escape_data(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string github_escape_property(std::string_view text) {
  std::string out;
  for (char c : github_escape_data(text)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

std::string to_github(const Report& report, const Sources* sources) {
  std::string out;
  for (const Finding& f : report.findings) {
    Shown shown = shown_lines(f.path, f.range.begin.line, f.range.end.line, sources);
    std::string title = f.rule + " " + f.rule_name;
    if (shown.cell) title += " (cell " + std::to_string(shown.cell) + ")";
    out += "::" + annotation_level(f.severity) + " file=" + github_escape_property(f.path) +
           ",line=" + std::to_string(shown.line) + ",endLine=" + std::to_string(std::max(shown.end_line, shown.line)) +
           ",col=" + std::to_string(f.range.begin.column) + ",endColumn=" + std::to_string(f.range.end.column) +
           ",title=" + github_escape_property(title) + "::";
    std::string message = f.message + " (confidence " + confidence_text(f.confidence) + ")";
    if (!f.fix.empty()) message += "\nfix: " + f.fix;
    out += github_escape_data(message) + "\n";
  }
  for (const FileError& e : report.errors) {
    out += "::error file=" + github_escape_property(e.path);
    if (e.line) out += ",line=" + std::to_string(e.line) + ",col=" + std::to_string(e.column);
    out += ",title=mlsem::" + github_escape_data(e.message) + "\n";
  }
  for (const Note& note : notes(report)) out += "::notice title=mlsem::" + github_escape_data(note.message) + "\n";
  return out;
}

std::string to_junit(const Report& report, const Context& context) {
  // One suite per file with findings or errors, one failed case per finding.
  std::map<std::string, std::string> cases;  // path -> <testcase> elements
  std::map<std::string, std::pair<size_t, size_t>> counts;  // path -> failures, errors
  for (const Finding& f : report.findings) {
    std::string at = where(f, context.sources);
    cases[f.path] += "    <testcase name=\"" + xml_escape(f.rule + " " + at) + "\" classname=\"" +
                     xml_escape(f.path) + "\">\n      <failure type=\"" + xml_escape(f.rule) + "\" message=\"" +
                     xml_escape(f.message) + "\">" +
                     xml_escape(at + ": " + f.rule + " [" + f.concept_id + "] " + f.message + " (confidence " +
                                confidence_text(f.confidence) + ")" + (f.fix.empty() ? "" : "\nfix: " + f.fix)) +
                     "</failure>\n    </testcase>\n";
    ++counts[f.path].first;
  }
  for (const FileError& e : report.errors) {
    std::string at = e.path + (e.line ? ":" + std::to_string(e.line) + ":" + std::to_string(e.column) : "");
    cases[e.path] += "    <testcase name=\"" + xml_escape("file error " + at) + "\" classname=\"" + xml_escape(e.path) +
                     "\">\n      <error message=\"" + xml_escape(e.message) + "\">" + xml_escape(at + ": " + e.message) +
                     "</error>\n    </testcase>\n";
    ++counts[e.path].second;
  }
  size_t failures = report.findings.size(), errors = report.errors.size();
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mlsem\" tests=\"" +
                    std::to_string(std::max<size_t>(1, failures + errors)) + "\" failures=\"" +
                    std::to_string(failures) + "\" errors=\"" + std::to_string(errors) + "\">\n";
  if (cases.empty()) {
    // Nothing found: one passing case, so that viewers show a green run rather than none.
    out += "  <testsuite name=\"mlsem\" tests=\"1\" failures=\"0\" errors=\"0\">\n"
           "    <testcase name=\"no findings in " + std::to_string(report.files_analyzed) +
           " files\" classname=\"mlsem\"/>\n  </testsuite>\n";
  }
  for (const auto& [path, body] : cases) {
    auto [file_failures, file_errors] = counts[path];
    out += "  <testsuite name=\"" + xml_escape(path) + "\" tests=\"" + std::to_string(file_failures + file_errors) +
           "\" failures=\"" + std::to_string(file_failures) + "\" errors=\"" + std::to_string(file_errors) + "\">\n" +
           body + "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace mlsem::report
