// Positions at the editor boundary. mlsem's Range counts 1-based lines and 1-based
// UTF-8 byte columns (core/source.h); LSP counts 0-based lines and characters in the
// negotiated encoding's code units (UTF-8 bytes, UTF-16 units or code points).
// Every conversion between the two lives here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/source.h"

namespace mlsem::lsp {

enum class Encoding { Utf8, Utf16, Utf32 };

// "utf-8" / "utf-16" / "utf-32".
std::string_view encoding_name(Encoding e);

// An LSP position: 0-based line, character in code units of some Encoding.
struct LspPosition {
  uint32_t line = 0;
  uint32_t character = 0;
  friend bool operator==(const LspPosition&, const LspPosition&) = default;
};

struct LspRange {
  LspPosition start, end;
};

// A document's text with its line starts, for conversions both ways.
class Text {
 public:
  Text() { index(); }
  explicit Text(std::string text) : text_(std::move(text)) { index(); }

  const std::string& str() const { return text_; }
  size_t line_count() const { return starts_.size(); }
  // Byte offset where 0-based line `n` starts (text size past the end).
  size_t line_start(size_t n) const { return n < starts_.size() ? starts_[n] : text_.size(); }
  // The 0-based line's content, without "\n" or "\r\n".
  std::string_view line(size_t n) const;

  // LSP position -> byte offset. A line past the end maps to the end of the text, a
  // character past the line's end to the line's end, a character inside a multi-unit
  // character (half a surrogate pair, the middle of a UTF-8 sequence) to its start.
  size_t offset(LspPosition p, Encoding e) const;
  // Byte offset -> LSP position (an offset inside a UTF-8 sequence counts its start).
  LspPosition position(size_t offset, Encoding e) const;
  // mlsem Position (1-based line, 1-based byte column) -> byte offset, clamped.
  size_t offset(const Position& p) const;
  // mlsem Range -> LSP range (an invalid range becomes the start of the text).
  LspRange range(const Range& r, Encoding e) const;

  // Replaces bytes [begin, end) with `replacement` and reindexes.
  void replace(size_t begin, size_t end, std::string_view replacement);

 private:
  void index();
  std::string text_;
  std::vector<size_t> starts_;
};

// Code units of one character starting at byte `lead` in encoding e, and its UTF-8 length.
uint32_t units_of(unsigned char lead, Encoding e);
size_t utf8_length(unsigned char lead);

// file:///a%20b/c.py -> /a b/c.py; "" when the URI is not a file URI.
std::string path_from_uri(std::string_view uri);
// /a b/c.py -> file:///a%20b/c.py
std::string uri_from_path(std::string_view path);

}  // namespace mlsem::lsp
