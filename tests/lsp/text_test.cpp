// Positions at the LSP boundary: every encoding on non-ASCII lines, positions that fall
// inside a character or past a line, CRLF, URIs.
#include <gtest/gtest.h>

#include "lsp/text.h"

namespace mlsem::lsp {
namespace {

// "a😀é中b": a (1 byte, 1 unit), 😀 (4 bytes, 2 UTF-16 units), é (2 bytes), 中 (3 bytes), b.
const std::string kLine = "a\xF0\x9F\x98\x80\xC3\xA9\xE4\xB8\xAD" "b";

TEST(LspText, ByteOffsetsOfEachCharacterInEachEncoding) {
  Text text("x = 1\n" + kLine + "\nlast");
  size_t start = text.line_start(1);
  ASSERT_EQ(start, 6u);
  // The byte offsets of a, 😀, é, 中, b and the line end, and their characters per encoding.
  const size_t bytes[] = {0, 1, 5, 7, 10, 11};
  const uint32_t utf8[] = {0, 1, 5, 7, 10, 11}, utf16[] = {0, 1, 3, 4, 5, 6}, utf32[] = {0, 1, 2, 3, 4, 5};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(text.offset({1, utf8[i]}, Encoding::Utf8), start + bytes[i]);
    EXPECT_EQ(text.offset({1, utf16[i]}, Encoding::Utf16), start + bytes[i]);
    EXPECT_EQ(text.offset({1, utf32[i]}, Encoding::Utf32), start + bytes[i]);
    EXPECT_EQ(text.position(start + bytes[i], Encoding::Utf8), (LspPosition{1, utf8[i]}));
    EXPECT_EQ(text.position(start + bytes[i], Encoding::Utf16), (LspPosition{1, utf16[i]}));
    EXPECT_EQ(text.position(start + bytes[i], Encoding::Utf32), (LspPosition{1, utf32[i]}));
  }
}

TEST(LspText, PositionsInsideACharacterOrPastTheLineAreClamped) {
  Text text(kLine + "\r\nnext\n");
  // Half of the emoji's surrogate pair, and the middle of its UTF-8 bytes: its start.
  EXPECT_EQ(text.offset({0, 2}, Encoding::Utf16), 1u);
  EXPECT_EQ(text.offset({0, 3}, Encoding::Utf8), 1u);
  // Past the end of a CRLF line: before the "\r".
  EXPECT_EQ(text.offset({0, 999}, Encoding::Utf16), kLine.size());
  EXPECT_EQ(text.line(0), kLine);
  // Past the last line: the end of the text.
  EXPECT_EQ(text.offset({7, 0}, Encoding::Utf16), text.str().size());
  // A byte offset inside a character counts from its start.
  EXPECT_EQ(text.position(3, Encoding::Utf16), (LspPosition{0, 1}));
  EXPECT_EQ(text.position(999, Encoding::Utf16), (LspPosition{2, 0}));
}

TEST(LspText, MlsemRangesBecomeLspRanges) {
  Text text("# \xE4\xB8\xAD\n" + kLine + "\n");
  // mlsem: line 2, byte columns 6..11 (é中) -> UTF-16 characters 3..5 on line 1.
  Range r;
  r.begin = {2, 6};
  r.end = {2, 11};
  LspRange utf16 = text.range(r, Encoding::Utf16);
  EXPECT_EQ(utf16.start, (LspPosition{1, 3}));
  EXPECT_EQ(utf16.end, (LspPosition{1, 5}));
  LspRange utf8 = text.range(r, Encoding::Utf8);
  EXPECT_EQ(utf8.start, (LspPosition{1, 5}));
  EXPECT_EQ(utf8.end, (LspPosition{1, 10}));
  // A column past the line stays on the line.
  r.end = {2, 200};
  EXPECT_EQ(text.range(r, Encoding::Utf32).end, (LspPosition{1, 5}));
}

TEST(LspText, ReplaceReindexesLines) {
  Text text("a\nb\nc");
  text.replace(text.offset({1, 0}, Encoding::Utf16), text.offset({1, 1}, Encoding::Utf16), "x\ny");
  EXPECT_EQ(text.str(), "a\nx\ny\nc");
  EXPECT_EQ(text.line_count(), 4u);
  EXPECT_EQ(text.line(3), "c");
  text.replace(100, 50, "!");  // out of range: clamped to an append
  EXPECT_EQ(text.str(), "a\nx\ny\nc!");
}

TEST(LspText, FileUris) {
  EXPECT_EQ(path_from_uri("file:///home/a%20b/%E4%B8%AD.py"), "/home/a b/\xE4\xB8\xAD.py");
  EXPECT_EQ(path_from_uri("FILE:///x.py"), "/x.py");
  EXPECT_EQ(path_from_uri("untitled:Untitled-1"), "");
  EXPECT_EQ(path_from_uri("file://"), "");
  EXPECT_EQ(uri_from_path("/home/a b/\xE4\xB8\xAD.py"), "file:///home/a%20b/%E4%B8%AD.py");
  EXPECT_EQ(path_from_uri(uri_from_path("/t/x#y%.py")), "/t/x#y%.py");
}

}  // namespace
}  // namespace mlsem::lsp
