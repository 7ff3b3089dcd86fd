#include "python/suppressions.h"

#include <algorithm>
#include <cctype>

namespace mlsem::python {
namespace {

void skip_spaces(std::string_view s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

// A rule code: upper-case letters then digits (ATT001, E501).
size_t code_length(std::string_view s, size_t i) {
  size_t b = i;
  while (i < s.size() && std::isupper(static_cast<unsigned char>(s[i]))) ++i;
  if (i == b) return 0;
  size_t letters = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return i == letters ? 0 : i - b;
}

// Codes separated by commas/spaces, up to `stop` or the first word that is not a code.
std::vector<std::string> read_codes(std::string_view s, size_t i, char stop) {
  std::vector<std::string> codes;
  while (i < s.size() && s[i] != stop) {
    if (size_t n = code_length(s, i)) {
      codes.emplace_back(s.substr(i, n));
      i += n;
    } else if (s[i] == ',' || s[i] == ' ' || s[i] == '\t') {
      ++i;
    } else {
      break;  // the rest of the comment is prose
    }
  }
  return codes;
}

// Parses the comment part of a line (from its first `#`): each `#` may start a
// directive, `# mlsem: ignore[...]` or `# noqa[: codes]`. False when there is none.
bool parse(std::string_view comment, std::vector<std::string>& codes) {
  for (size_t hash = comment.find('#'); hash != std::string_view::npos; hash = comment.find('#', hash + 1)) {
    size_t i = hash + 1;
    skip_spaces(comment, i);
    if (comment.substr(i, 6) == "mlsem:") {
      i += 6;
      skip_spaces(comment, i);
      if (comment.substr(i, 6) != "ignore") continue;
      i += 6;
      if (i < comment.size() && comment[i] == '[') codes = read_codes(comment, i + 1, ']');
      else codes.clear();
      return true;
    }
    if (comment.substr(i, 4) == "noqa") {
      i += 4;
      if (i < comment.size() && comment[i] != ':' && comment[i] != ' ' && comment[i] != '\t' &&
          comment[i] != '#' && comment[i] != '\r')
        continue;  // `noqa-free` is prose
      skip_spaces(comment, i);
      codes.clear();
      if (i < comment.size() && comment[i] == ':') {
        ++i;
        skip_spaces(comment, i);
        codes = read_codes(comment, i, '#');
      }
      return true;
    }
  }
  return false;
}

}  // namespace

std::map<uint32_t, std::vector<std::string>> find_suppressions(std::string_view text) {
  std::map<uint32_t, std::vector<std::string>> out;
  uint32_t line = 1;
  size_t counted_to = 0;  // newlines before this offset are counted in `line`
  size_t from = 0;
  while (from < text.size()) {
    size_t a = text.find("mlsem:", from), b = text.find("noqa", from);
    size_t hit = std::min(a, b);
    if (hit == std::string_view::npos) break;
    size_t line_begin = text.rfind('\n', hit);
    line_begin = line_begin == std::string_view::npos ? 0 : line_begin + 1;
    size_t line_end = text.find('\n', hit);
    if (line_end == std::string_view::npos) line_end = text.size();
    line += static_cast<uint32_t>(std::count(text.begin() + counted_to, text.begin() + line_begin, '\n'));
    counted_to = line_begin;
    std::vector<std::string> codes;
    // A `#` inside a string literal is rare enough on lines that also say "noqa".
    if (parse(text.substr(line_begin, line_end - line_begin), codes)) out[line] = std::move(codes);
    from = line_end + 1;
  }
  return out;
}

}  // namespace mlsem::python
