#include "marks.h"

#include <cctype>
#include <cstdio>

namespace mlsem::golden {
namespace {

struct Keyword {
  std::string_view text;
  MarkKind kind;
};
constexpr Keyword kKeywords[] = {
    {"todo-expect", MarkKind::TodoExpect},
    {"todo-ok", MarkKind::TodoOk},
    {"expect", MarkKind::Expect},
    {"ok", MarkKind::Ok},
    {"hint", MarkKind::Hint},
};

bool is_rule_id(std::string_view id) {
  size_t i = 0;
  while (i < id.size() && std::isupper(static_cast<unsigned char>(id[i]))) ++i;
  if (i == 0 || i == id.size()) return false;
  for (size_t j = i; j < id.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(id[j]))) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Parses the marks of one line into `out`.
void parse_line(std::string_view line, uint32_t line_no, std::string_view prefix, ParsedMarks& out) {
  size_t pos = 0;
  while ((pos = line.find(prefix, pos)) != std::string_view::npos) {
    std::string_view rest = line.substr(pos + prefix.size());
    pos += prefix.size();
    rest = trim(rest);
    const Keyword* keyword = nullptr;
    for (const Keyword& k : kKeywords) {
      if (rest.starts_with(k.text) && rest.substr(k.text.size()).starts_with(':')) {
        keyword = &k;
        break;
      }
    }
    if (!keyword) continue;  // an ordinary comment
    // The rule list runs to the next comment prefix (another mark) or the line end.
    std::string_view list = rest.substr(keyword->text.size() + 1);
    list = trim(list.substr(0, list.find(prefix)));
    if (list.empty()) {
      out.errors.push_back({line_no, "'" + std::string(keyword->text) + ":' mark names no rule"});
      continue;
    }
    while (true) {
      size_t comma = list.find(',');
      std::string_view id = trim(list.substr(0, comma));
      if (!is_rule_id(id)) {
        out.errors.push_back({line_no, "bad rule id '" + std::string(id) + "' in '" +
                                           std::string(keyword->text) + ":' mark"});
      } else {
        out.marks.push_back({keyword->kind, std::string(id), line_no});
      }
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
}

// The finding's range, or one of its related locations (the other places of a problem
// reported once per function), is on the marked line.
bool covers(const Finding& f, const Mark& m) {
  if (f.rule != m.rule) return false;
  if (f.range.begin.line <= m.line && m.line <= f.range.end.line) return true;
  for (const Evidence& e : f.evidence)
    if (e.related && e.range.valid() && e.range.begin.line <= m.line && m.line <= e.range.end.line) return true;
  return false;
}

std::string describe(const Finding& f) {
  char confidence[16];
  std::snprintf(confidence, sizeof confidence, "%.2f", f.confidence);
  return f.rule + " (" + confidence + ", lines " + std::to_string(f.range.begin.line) + "-" +
         std::to_string(f.range.end.line) + ", " + f.function + "): " + f.message;
}

}  // namespace

Comparison compare(const std::string& path, const std::vector<Mark>& marks,
                   const std::vector<Finding>& findings, const std::vector<Finding>& quiet) {
  Comparison out;
  std::vector<bool> mark_hit(marks.size(), false);
  for (const Finding& f : findings) {
    bool expected = false, marked = false;
    for (size_t i = 0; i < marks.size(); ++i) {
      const Mark& m = marks[i];
      if (!covers(f, m)) continue;
      mark_hit[i] = true;
      marked = true;
      std::string where = path + ":" + std::to_string(m.line) + ": ";
      switch (m.kind) {
        case MarkKind::Expect: expected = true; break;
        case MarkKind::TodoOk: break;
        case MarkKind::Ok:
          out.problems.push_back(where + "reported on a line marked 'ok: " + m.rule + "': " + describe(f));
          break;
        case MarkKind::TodoExpect:
          expected = true;  // the finding is right; the mark is stale
          out.problems.push_back(where + "a known miss is now reported (make the mark 'expect: " +
                                 m.rule + "' if right): " + describe(f));
          break;
        case MarkKind::Hint:
          out.problems.push_back(where + "shown by default on a line marked 'hint: " + m.rule +
                                 "' (expected below the default threshold): " + describe(f));
          break;
      }
    }
    out.right.push_back(expected);
    if (!marked)  // a finding on a marked line already has its problem (or none) above
      out.problems.push_back(path + ":" + std::to_string(f.range.begin.line) +
                             ": unexpected finding " + describe(f));
  }
  for (size_t i = 0; i < marks.size(); ++i) {
    const Mark& m = marks[i];
    std::string where = path + ":" + std::to_string(m.line) + ": ";
    if (m.kind == MarkKind::Expect) {
      ++out.expect_marks;
      if (mark_hit[i]) ++out.expect_found;
      else out.problems.push_back(where + "missed: no " + m.rule + " finding covers this line");
    } else if (m.kind == MarkKind::TodoExpect) {
      ++out.todo_expect_marks;
    } else if (m.kind == MarkKind::Hint) {
      ++out.hint_marks;
      bool hinted = false;
      for (const Finding& f : quiet) hinted |= covers(f, m);
      if (hinted) ++out.hint_found;
      else if (!mark_hit[i]) out.problems.push_back(where + "missed: no " + m.rule + " finding below the default threshold covers this line");
    } else if (m.kind == MarkKind::TodoOk && !mark_hit[i]) {
      out.problems.push_back(where + "a known false positive is no longer reported (make the mark 'ok: " +
                             m.rule + "')");
    }
  }
  return out;
}

ParsedMarks parse_marks(std::string_view text, std::string_view comment_prefix) {
  ParsedMarks out;
  uint32_t line_no = 1;
  while (true) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    if (line.ends_with('\r')) line.remove_suffix(1);
    parse_line(line, line_no, comment_prefix, out);
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
    ++line_no;
  }
  return out;
}

std::string_view comment_prefix_for(std::string_view path) {
  if (path.ends_with(".py")) return "#";
  if (path.ends_with(".cu") || path.ends_with(".cuh")) return "//";
  return {};
}

const char* to_string(MarkKind kind) {
  switch (kind) {
    case MarkKind::Expect: return "expect";
    case MarkKind::Ok: return "ok";
    case MarkKind::TodoExpect: return "todo-expect";
    case MarkKind::TodoOk: return "todo-ok";
    case MarkKind::Hint: return "hint";
  }
  return "?";
}

}  // namespace mlsem::golden
