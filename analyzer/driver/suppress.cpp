#include "driver/suppress.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "driver/driver.h"

namespace mlsem::driver {
namespace {

std::vector<std::string> read_codes(std::string_view s) {
  std::vector<std::string> codes;
  std::string current;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') {
      current += c;
    } else if (!current.empty()) {
      codes.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) codes.push_back(current);
  return codes;
}

bool names(const std::string& code, const Finding& f) { return code == f.rule || code == f.rule_name; }

Finding unused(const SourceFile& file, uint32_t line, const std::string& what) {
  Finding f;
  f.rule = kUnusedSuppression;
  f.rule_name = "unused-suppression";
  f.concept_id = "suppression";
  f.severity = "warning";
  f.message = what;
  f.path = file.path;
  std::string_view text = file.line(line);
  size_t hash = text.find("mlsem:");
  if (hash == std::string_view::npos) hash = text.find("noqa");
  size_t comment = text.rfind(file.path.ends_with(".cu") || file.path.ends_with(".cuh") ? '/' : '#', hash);
  if (comment != std::string_view::npos && comment > 0 && text[comment - 1] == '/') --comment;
  uint32_t column = static_cast<uint32_t>((comment == std::string_view::npos ? 0 : comment) + 1);
  f.range = {{line, column}, {line, static_cast<uint32_t>(text.size() + 1)}, 0, 0};
  f.confidence = 1.0;
  f.fix = "remove the directive, or the codes that suppress nothing";
  return f;
}

}  // namespace

std::map<uint32_t, std::vector<std::string>> find_file_suppressions(std::string_view text) {
  std::map<uint32_t, std::vector<std::string>> out;
  for (size_t at = text.find("mlsem:"); at != std::string_view::npos; at = text.find("mlsem:", at + 1)) {
    size_t line_begin = text.rfind('\n', at);
    line_begin = line_begin == std::string_view::npos ? 0 : line_begin + 1;
    std::string_view before = text.substr(line_begin, at - line_begin);
    // Only inside a comment: `#` or `//` before it on its line.
    if (before.find('#') == std::string_view::npos && before.find("//") == std::string_view::npos) continue;
    size_t i = at + 6;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (text.substr(i, 11) != "ignore-file") continue;
    i += 11;
    auto line = static_cast<uint32_t>(std::count(text.begin(), text.begin() + line_begin, '\n') + 1);
    std::vector<std::string> codes;
    if (i < text.size() && text[i] == '[') {
      size_t close = text.find_first_of("]\n", i);
      codes = read_codes(text.substr(i + 1, (close == std::string_view::npos ? text.size() : close) - i - 1));
    }
    out[line] = codes;
  }
  return out;
}

void apply_suppressions(std::vector<Finding>& findings, const SourceFile& file,
                        const std::map<uint32_t, std::vector<std::string>>& frontend_directives,
                        const Engine& engine, bool report_unused) {
  std::map<uint32_t, std::vector<std::string>> file_directives = find_file_suppressions(file.text);
  // The frontends' scanners read `ignore-file` as a line directive: it is not one.
  std::map<uint32_t, std::vector<std::string>> line_directives;
  for (const auto& [line, codes] : frontend_directives)
    if (!file_directives.contains(line)) line_directives.emplace(line, codes);
  if (line_directives.empty() && file_directives.empty()) return;
  std::set<std::pair<uint32_t, std::string>> used;  // (line, code); code "" for a bare directive
  std::vector<Finding> kept;
  for (Finding& f : findings) {
    bool suppressed = false;
    auto check = [&](uint32_t line, const std::vector<std::string>& codes) {
      if (codes.empty()) {
        suppressed = true;
        used.insert({line, ""});
      }
      for (const std::string& code : codes)
        if (names(code, f)) suppressed = true, used.insert({line, code});
    };
    for (const auto& [line, codes] : file_directives) check(line, codes);
    for (uint32_t line = f.range.begin.line; line <= f.range.end.line && line != 0; ++line)
      if (auto it = line_directives.find(line); it != line_directives.end()) check(line, it->second);
    if (!suppressed) kept.push_back(std::move(f));
  }
  findings = std::move(kept);
  if (!report_unused) return;

  auto report = [&](const std::map<uint32_t, std::vector<std::string>>& directives, bool file_level) {
    for (const auto& [line, codes] : directives) {
      std::string_view text = file.line(line);
      bool ours = text.find("mlsem:") != std::string_view::npos;
      if (codes.empty()) {
        // A bare `# noqa` may be for another tool; a bare mlsem directive is ours.
        if (ours && !used.contains({line, ""}))
          findings.push_back(unused(file, line, std::string("unused suppression: `mlsem: ignore") +
                                                    (file_level ? "-file" : "") + "` suppresses nothing"));
        continue;
      }
      std::vector<std::string> idle;
      for (const std::string& code : codes) {
        bool is_rule = engine.rule(code) != nullptr || code == kUnusedSuppression;
        if ((is_rule || ours) && !used.contains({line, code})) idle.push_back(code);
      }
      if (idle.empty()) continue;
      std::string list;
      for (const std::string& code : idle) list += (list.empty() ? "" : ", ") + code;
      findings.push_back(unused(file, line, "unused suppression: " + list + " " +
                                                (idle.size() == 1 ? "suppresses" : "suppress") + " nothing here"));
    }
  };
  report(line_directives, false);
  report(file_directives, true);
}

}  // namespace mlsem::driver
