// The text report, shaped like rustc/clang diagnostics so that terminals, editors'
// "jump to file:line:col" and grep all work on it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>

#include "learn/levels.h"
#include "report/report.h"

namespace mlsem::report {
namespace {

constexpr int kTabWidth = 4;
// Lines longer than this are shown as a window of this many bytes around the finding.
constexpr size_t kMaxExcerptBytes = 160;

struct Style {
  bool color;
  std::string paint(std::string_view text, const char* code) const {
    if (!color) return std::string(text);
    return std::string("\x1b[") + code + "m" + std::string(text) + "\x1b[0m";
  }
  std::string bold(std::string_view t) const { return paint(t, "1"); }
  std::string gutter(std::string_view t) const { return paint(t, "1;34"); }
  std::string severity(std::string_view t, std::string_view level) const {
    return paint(t, level == "error" ? "1;31" : level == "warning" ? "1;33" : "1;36");
  }
};

std::string plural(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// Tabs become spaces so that the caret line below lines up with what is printed.
std::string expand_tabs(std::string_view line) {
  std::string out;
  for (char c : line) {
    if (c == '\t')
      out.append(kTabWidth, ' ');
    else
      out += c;
  }
  return out;
}

// Screen width of the first `bytes` bytes of a line, as expand_tabs prints it
// (UTF-8 continuation bytes take no column).
size_t display_width(std::string_view line, size_t bytes) {
  size_t width = 0;
  for (size_t i = 0; i < bytes && i < line.size(); ++i) {
    unsigned char c = line[i];
    if (c == '\t')
      width += kTabWidth;
    else if ((c & 0xC0) != 0x80)
      ++width;
  }
  return width;
}

// The first line of the range, with carets under its part of the range:
//    |
// 12 |     att = q @ k.transpose(-2, -1)
//    |           ^^^^^^^^^^^^^^^^^^^^^^^
void excerpt(const Finding& finding, const SourceFile& file, uint32_t shown_line, const Style& style,
             std::string& out) {
  const Range& range = finding.range;
  std::string_view line = file.line(range.begin.line);
  std::string number = std::to_string(shown_line);
  std::string pad(number.size(), ' ');
  size_t start = range.begin.column ? range.begin.column - 1 : 0;
  size_t stop = range.end.line == range.begin.line ? range.end.column - 1 : line.size();
  if (range.end.line != range.begin.line)  // up to the line's last non-blank character
    while (stop > start && (line[stop - 1] == ' ' || line[stop - 1] == '\t')) --stop;
  // A long line (minified code, generated tables) is shown as a window around the
  // finding's start, cut at character boundaries and marked "...".
  std::string before, after;
  if (line.size() > kMaxExcerptBytes) {
    auto continuation = [&](size_t i) { return i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80; };
    start = std::min(start, line.size());
    size_t from = start > kMaxExcerptBytes / 4 ? start - kMaxExcerptBytes / 4 : 0;
    while (from > 0 && continuation(from)) --from;
    size_t to = std::min(line.size(), from + kMaxExcerptBytes);
    while (continuation(to)) ++to;
    if (from > 0) before = "...";
    if (to < line.size()) after = "...";
    line = line.substr(from, to - from);
    start -= from;
    stop = stop < from ? 0 : std::min(stop - from, line.size());
  }
  size_t lead = before.size() + display_width(line, start);
  size_t carets = std::max<size_t>(1, before.size() + display_width(line, stop) - std::min(lead, before.size() + display_width(line, stop)));
  out += pad + " " + style.gutter("|") + "\n";
  out += style.gutter(number + " |") + " " + before + expand_tabs(line) + after + "\n";
  out += pad + " " + style.gutter("|") + " " + std::string(lead, ' ') +
         style.severity(std::string(carets, '^'), finding.severity) + "\n";
}

void finding_text(const Finding& finding, const SourceTexts& sources, const Sources* notebooks,
                  const Style& style, std::string& out) {
  char confidence[32];
  std::snprintf(confidence, sizeof confidence, "%.2f", finding.confidence);
  out += style.bold(where(finding, notebooks) + ":") + " " + style.severity(finding.rule, finding.severity) +
         " [" + finding.concept_id + "] " + finding.message + " (confidence " + confidence + ")\n";
  Shown shown = shown_lines(finding.path, finding.range.begin.line, finding.range.end.line, notebooks);
  std::string indent(std::to_string(shown.line).size() + 1, ' ');
  auto source = sources.find(finding.path);
  if (source != sources.end() && finding.range.valid()) excerpt(finding, source->second, shown.line, style, out);
  for (const Evidence& item : finding.evidence) {
    out += indent + (item.present ? style.paint("+", "32") : style.paint("-", "2")) + " " + item.text;
    if (item.present && item.range.valid()) {
      Shown at = shown_lines(finding.path, item.range.begin.line, item.range.begin.line, notebooks);
      out += " (" + (at.cell && at.cell != shown.cell ? "cell " + std::to_string(at.cell) + ", " : std::string()) +
             "line " + std::to_string(at.line) + ")";
    }
    out += "\n";
  }
  if (!finding.context.empty()) out += indent + style.bold("context:") + " " + finding.context + "\n";
  if (!finding.fix.empty()) {
    std::string label = "fix";  // with the optimization level the fix belongs to, when the rule names one
    if (!finding.level.empty()) label += " (" + std::string(learn::level_title(finding.level)) + ")";
    out += indent + style.bold(label + ":") + " " + finding.fix + "\n";
  }
  if (finding.kernel) {
    out += indent + style.bold("kernel:") + " " + *finding.kernel;
    if (!finding.measured.empty()) out += " (" + finding.measured + ")";
    out += "\n";
  }
  out += "\n";
}

void error_text(const FileError& error, const Style& style, std::string& out) {
  std::string where = error.path + ":";
  if (error.line) where += std::to_string(error.line) + ":" + std::to_string(error.column) + ":";
  out += style.bold(where) + " " + style.severity("error:", "error") + " " + error.message + "\n";
}

// "3 findings (2 warnings, 1 info) in 12 files; 1 file error"
std::string summary(const Report& report) {
  size_t by_severity[3] = {0, 0, 0};
  for (const Finding& f : report.findings)
    ++by_severity[f.severity == "error" ? 0 : f.severity == "warning" ? 1 : 2];
  std::string line;
  if (report.findings.empty()) {
    line = "no findings";
  } else {
    line = plural(report.findings.size(), "finding", "findings") + " (";
    std::string parts;
    const std::string_view names[3][2] = {{"error", "errors"}, {"warning", "warnings"}, {"info", "info"}};
    for (int s = 0; s < 3; ++s) {
      if (!by_severity[s]) continue;
      if (!parts.empty()) parts += ", ";
      parts += plural(by_severity[s], names[s][0], names[s][1]);
    }
    line += parts + ")";
  }
  line += " in " + plural(report.files_analyzed, "file", "files");
  // "file errors", not "errors": error-severity findings are counted in the parentheses.
  if (!report.errors.empty()) line += "; " + plural(report.errors.size(), "file error", "file errors");
  return line;
}

}  // namespace

std::string to_text(const Report& report, const Sources& sources, const TextOptions& options) {
  Style style{options.color};
  std::string out;
  for (const Finding& finding : report.findings) finding_text(finding, sources.texts, &sources, style, out);
  for (const FileError& error : report.errors) error_text(error, style, out);
  if (!report.errors.empty()) out += "\n";
  out += style.bold(summary(report)) + "\n";
  // Rules the project's own torch pin turned off: say so, or a user wonders why they are silent.
  for (const Note& note : notes(report)) out += "note: " + note.message + "\n";
  return out;
}

std::string to_text(const Report& report, const SourceTexts& texts, const TextOptions& options) {
  Sources sources;
  sources.texts = texts;
  return to_text(report, sources, options);
}

std::vector<Note> notes(const Report& report) {
  std::vector<Note> out;
  for (const auto& [version, off] : report.torch_off) {
    Note note{"torch-pin", version, off.files, {off.rules.begin(), off.rules.end()}, {}};
    std::string ids;
    for (const std::string& id : off.rules) ids += (ids.empty() ? "" : ", ") + id;
    note.message = plural(off.files, "file targets", "files target") + " torch " + version +
                   " (the project's requirements, CI or README): " + ids +
                   " need a newer torch and did not run there; --torch-version X.Y runs them";
    out.push_back(std::move(note));
  }
  return out;
}

std::string statistics(const Report& report) {
  std::map<std::string, std::pair<size_t, std::string>> counts;
  for (const Finding& f : report.findings) {
    auto& entry = counts[f.rule];
    ++entry.first;
    entry.second = f.rule_name;
  }
  std::vector<std::pair<std::string, std::pair<size_t, std::string>>> rows(counts.begin(), counts.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  size_t width = 1;
  for (const auto& row : rows) width = std::max(width, std::to_string(row.second.first).size());
  std::string out;
  for (const auto& [rule, entry] : rows) {
    std::string count = std::to_string(entry.first);
    out += std::string(width - count.size(), ' ') + count + "  " + rule + "  " + entry.second + "\n";
  }
  return out;
}

}  // namespace mlsem::report
