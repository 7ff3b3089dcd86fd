// Source text and positions, shared by every frontend, the engine and the reports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlsem {

// 1-based line and column; columns count UTF-8 bytes (editors convert at the edge).
struct Position {
  uint32_t line = 0;
  uint32_t column = 0;
  friend bool operator==(const Position&, const Position&) = default;
  friend auto operator<=>(const Position&, const Position&) = default;
};

struct Range {
  Position begin;
  Position end;  // exclusive end
  uint32_t begin_byte = 0;
  uint32_t end_byte = 0;
  bool valid() const { return begin.line != 0; }
  friend bool operator==(const Range&, const Range&) = default;
};

// A file's text, read once by the driver and shared read-only by the frontends.
struct SourceFile {
  std::string path;  // as the user named it (relative paths stay relative)
  std::string text;

  // The text of line n (1-based), without its newline; empty past the end.
  std::string_view line(uint32_t n) const;
  // Slice of text for a range (clamped to the text).
  std::string_view slice(const Range& r) const;
};

// Something a frontend or loader could not handle: a syntax error, a bad include,
// a malformed rule file. Never fatal to the run; reported beside the findings.
struct Diagnostic {
  std::string path;
  Range range;  // may be invalid (line 0) when there is no position
  std::string message;
};

}  // namespace mlsem
