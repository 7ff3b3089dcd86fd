#include "lsp/text.h"

#include <algorithm>
#include <cctype>

namespace mlsem::lsp {

std::string_view encoding_name(Encoding e) {
  switch (e) {
    case Encoding::Utf8: return "utf-8";
    case Encoding::Utf32: return "utf-32";
    case Encoding::Utf16: break;
  }
  return "utf-16";
}

size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;  // a stray continuation byte or invalid lead counts as one
}

uint32_t units_of(unsigned char lead, Encoding e) {
  size_t n = utf8_length(lead);
  switch (e) {
    case Encoding::Utf8: return static_cast<uint32_t>(n);
    case Encoding::Utf16: return n == 4 ? 2 : 1;
    case Encoding::Utf32: return 1;
  }
  return 1;
}

void Text::index() {
  starts_.assign(1, 0);
  for (size_t i = text_.find('\n'); i != std::string::npos; i = text_.find('\n', i + 1)) starts_.push_back(i + 1);
}

std::string_view Text::line(size_t n) const {
  if (n >= starts_.size()) return {};
  size_t b = starts_[n];
  size_t e = n + 1 < starts_.size() ? starts_[n + 1] - 1 : text_.size();
  if (e > b && text_[e - 1] == '\r') --e;
  return std::string_view(text_).substr(b, e - b);
}

size_t Text::offset(LspPosition p, Encoding e) const {
  if (p.line >= starts_.size()) return text_.size();
  std::string_view l = line(p.line);
  size_t byte = 0;
  uint32_t units = 0;
  while (byte < l.size()) {
    unsigned char lead = static_cast<unsigned char>(l[byte]);
    uint32_t u = units_of(lead, e);
    if (units + u > p.character) break;  // p.character is at or inside this character
    units += u;
    byte = std::min(byte + utf8_length(lead), l.size());
  }
  return starts_[p.line] + byte;
}

LspPosition Text::position(size_t offset, Encoding e) const {
  offset = std::min(offset, text_.size());
  size_t n = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
  std::string_view l = line(n);
  size_t limit = std::min(offset - starts_[n], l.size());
  uint32_t units = 0;
  for (size_t byte = 0; byte < limit;) {
    unsigned char lead = static_cast<unsigned char>(l[byte]);
    size_t len = utf8_length(lead);
    if (byte + len > limit) break;  // the offset points inside this character
    units += units_of(lead, e);
    byte += len;
  }
  return {static_cast<uint32_t>(n), units};
}

size_t Text::offset(const Position& p) const {
  if (p.line == 0) return 0;
  if (p.line > starts_.size()) return text_.size();
  size_t n = p.line - 1;
  size_t col = p.column == 0 ? 0 : p.column - 1;
  size_t line_end = n + 1 < starts_.size() ? starts_[n + 1] - 1 : text_.size();
  return std::min(starts_[n] + col, line_end);
}

LspRange Text::range(const Range& r, Encoding e) const {
  if (!r.valid()) return {};
  size_t b = offset(r.begin);
  size_t end = r.end.line == 0 ? b : std::max(b, offset(r.end));
  return {position(b, e), position(end, e)};
}

void Text::replace(size_t begin, size_t end, std::string_view replacement) {
  begin = std::min(begin, text_.size());
  end = std::clamp(end, begin, text_.size());
  text_.replace(begin, end - begin, replacement);
  index();
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string path_from_uri(std::string_view uri) {
  constexpr std::string_view kScheme = "file://";
  if (uri.size() < kScheme.size() || !std::equal(kScheme.begin(), kScheme.end(), uri.begin(), [](char a, char b) {
        return a == static_cast<char>(std::tolower(static_cast<unsigned char>(b)));
      }))
    return "";
  std::string_view rest = uri.substr(kScheme.size());
  size_t slash = rest.find('/');  // skip the authority (file://host/path)
  if (slash == std::string_view::npos) return "";
  rest = rest.substr(slash);
  rest = rest.substr(0, std::min(rest.find('?'), rest.find('#')));
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    int hi = 0, lo = 0;
    if (rest[i] == '%' && i + 2 < rest.size() && (hi = hex_value(rest[i + 1])) >= 0 && (lo = hex_value(rest[i + 2])) >= 0) {
      path.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      path.push_back(rest[i]);
    }
  }
  return path;
}

std::string uri_from_path(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file://";
  for (char c : path) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri.push_back(c);
    } else {
      uri.push_back('%');
      uri.push_back(kHex[u >> 4]);
      uri.push_back(kHex[u & 15]);
    }
  }
  return uri;
}

}  // namespace mlsem::lsp
