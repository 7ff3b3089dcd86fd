// Searching source text: the helpers the frontends' passes share.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlsem {

inline bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// ASCII lower case (names, keywords); other bytes unchanged. What std::tolower does in
// the "C" locale mlsem runs in, without a library call per byte.
inline char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
inline std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower_ascii(c);
  return out;
}

// A byte that can be part of a Python identifier (letters, digits, `_`, any byte of a
// UTF-8 sequence). What std::isalnum says in the "C" locale, without a library call.
inline bool word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

// Byte offsets in [from, to) where `name` stands as a whole word, in order.
inline std::vector<uint32_t> word_offsets(std::string_view text, std::string_view name, size_t from = 0,
                                          size_t to = std::string_view::npos) {
  std::vector<uint32_t> out;
  if (name.empty()) return out;
  to = std::min(to, text.size());
  for (size_t p = text.find(name, from); p != std::string_view::npos && p + name.size() <= to;
       p = text.find(name, p + 1)) {
    if (p > 0 && word_byte(static_cast<unsigned char>(text[p - 1]))) continue;
    size_t e = p + name.size();
    if (e < text.size() && word_byte(static_cast<unsigned char>(text[e]))) continue;
    out.push_back(static_cast<uint32_t>(p));
  }
  return out;
}

// The items with `separator` between them ("a, b, c"); any container of strings.
template <typename Items>
std::string join(const Items& items, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += item;
    first = false;
  }
  return out;
}

// "a,b,c" -> {"a", "b", "c"}; "" -> {}. The inverse of join for items without `separator`.
inline std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find(separator, start), text.size());
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace mlsem
