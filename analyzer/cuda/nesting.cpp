#include "cuda/nesting.h"

#include <cctype>
#include <vector>

namespace mlsem::cuda {

std::optional<Position> too_deep(std::string_view text, size_t limit) {
  // For each open bracket, the angle depth when it opened (restored when it closes).
  std::vector<size_t> saved;
  size_t angles = 0;
  uint32_t line = 1;
  size_t line_start = 0;
  char last = 0;  // the last significant character (not space, not in a comment)
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {  // line comment
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {  // block comment
      for (i += 2; i < text.size() && !(text[i] == '*' && i + 1 < text.size() && text[i + 1] == '/'); ++i)
        if (text[i] == '\n') ++line, line_start = i + 1;
      ++i;
      continue;
    }
    if (c == '"' || c == '\'') {  // a literal, to its closing quote or the line's end
      for (++i; i < text.size() && text[i] != c && text[i] != '\n'; ++i)
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ++i;
      if (i < text.size() && text[i] == '\n') --i;  // the newline is counted above
      last = c;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    bool deeper = false;
    switch (c) {
      case '(':
      case '[':
      case '{':
        saved.push_back(angles);
        deeper = true;
        break;
      case ')':
      case ']':
      case '}':
        if (!saved.empty()) angles = saved.back(), saved.pop_back();
        break;
      case ';':
        angles = saved.empty() ? 0 : saved.back();
        break;
      case '<':
        if (ident(last) || last == '<' || last == ',') ++angles, deeper = true;
        break;
      case '>':
        if (angles > (saved.empty() ? 0 : saved.back())) --angles;
        break;
      default:
        break;
    }
    last = c;
    if (deeper && saved.size() + angles > limit)
      return Position{line, static_cast<uint32_t>(i - line_start + 1)};
  }
  return std::nullopt;
}

}  // namespace mlsem::cuda
