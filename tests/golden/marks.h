// Expectation marks in sample sources (samples/README.md): a trailing comment such
// as `# expect: ATT001, FUS002` or `// ok: CU001` states which findings must (or must
// not) cover that line. Shared by the golden test and its own unit test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"

namespace mlsem::golden {

enum class MarkKind {
  Expect,      // a finding of the rule must cover the line
  Ok,          // no finding of the rule may cover the line
  TodoExpect,  // known miss: must not be reported yet (counted in recall)
  TodoOk,      // known false positive: is reported, counted as wrong
  Hint,        // a finding of the rule must cover the line, below the default threshold
};

struct Mark {
  MarkKind kind;
  std::string rule;  // "ATT001"
  uint32_t line;     // 1-based
  friend bool operator==(const Mark&, const Mark&) = default;
};

// A malformed mark (`# expect:` with no rule, `# expect: att001`): reported rather
// than ignored, so a typo cannot silently drop an expectation.
struct MarkError {
  uint32_t line;
  std::string message;
};

struct ParsedMarks {
  std::vector<Mark> marks;
  std::vector<MarkError> errors;
};

// Finds every mark in `text`: `comment_prefix` ("#" or "//"), optional spaces, a
// keyword (expect, ok, todo-expect, todo-ok, hint), ':' and a comma-separated list of
// rule ids (capital letters then digits). Several marks may share a line.
ParsedMarks parse_marks(std::string_view text, std::string_view comment_prefix);

// "#" for Python sources, "//" for .cu/.cuh; empty for anything else.
std::string_view comment_prefix_for(std::string_view path);

const char* to_string(MarkKind kind);

// How one file's findings compare with its marks. A finding matches a mark of the
// same rule when its range (begin.line..end.line) covers the mark's line. `findings` are
// those shown by default; `quiet` those reported below the default threshold, which only
// `hint` marks speak about.
struct Comparison {
  // One line per failure, "path:line: ..." naming the rule and the finding's message.
  std::vector<std::string> problems;
  // Per finding, in the order given: right when it covers an expect (or a stale
  // todo-expect) mark, wrong otherwise (a todo-ok mark, an ok mark, no mark).
  std::vector<bool> right;
  size_t expect_marks = 0;
  size_t expect_found = 0;
  size_t todo_expect_marks = 0;
  size_t hint_marks = 0;
  size_t hint_found = 0;
};

Comparison compare(const std::string& path, const std::vector<Mark>& marks,
                   const std::vector<Finding>& findings, const std::vector<Finding>& quiet = {});

}  // namespace mlsem::golden
