#include "core/source.h"

#include <algorithm>

namespace mlsem {

std::string_view SourceFile::line(uint32_t n) const {
  if (n == 0) return {};
  size_t pos = 0;
  for (uint32_t i = 1; i < n; ++i) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return {};
    ++pos;
  }
  size_t end = text.find('\n', pos);
  if (end == std::string::npos) end = text.size();
  if (end > pos && text[end - 1] == '\r') --end;
  return std::string_view(text).substr(pos, end - pos);
}

std::string_view SourceFile::slice(const Range& r) const {
  size_t b = std::min<size_t>(r.begin_byte, text.size());
  size_t e = std::min<size_t>(std::max(r.end_byte, r.begin_byte), text.size());
  return std::string_view(text).substr(b, e - b);
}

}  // namespace mlsem
