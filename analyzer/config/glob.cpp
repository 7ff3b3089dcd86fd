// gitignore-style globs.
#include "config/config.h"

namespace mlsem::config {
namespace {

// A `[...]` class at pattern[i] (i at '['); advances i past it. False when malformed
// (then '[' is matched literally by the caller).
bool match_class(std::string_view pattern, size_t& i, char c, bool& matched) {
  size_t j = i + 1;
  bool negate = j < pattern.size() && (pattern[j] == '!' || pattern[j] == '^');
  if (negate) ++j;
  bool hit = false;
  size_t first = j;
  for (; j < pattern.size() && (pattern[j] != ']' || j == first); ++j) {
    if (j + 2 < pattern.size() && pattern[j + 1] == '-' && pattern[j + 2] != ']') {
      if (c >= pattern[j] && c <= pattern[j + 2]) hit = true;
      j += 2;
    } else if (pattern[j] == c) {
      hit = true;
    }
  }
  if (j >= pattern.size()) return false;
  i = j + 1;
  matched = hit != negate;
  return true;
}

bool match(std::string_view p, std::string_view s) {
  size_t i = 0, j = 0;
  while (i < p.size()) {
    if (p[i] == '*') {
      if (i + 1 < p.size() && p[i + 1] == '*') {
        // `**/` : zero or more directories; a trailing `**`: everything.
        size_t rest = i + 2;
        if (rest < p.size() && p[rest] == '/') ++rest;
        if (rest >= p.size()) return true;
        for (size_t k = j; k <= s.size(); ++k)
          if ((k == j || s[k - 1] == '/') && match(p.substr(rest), s.substr(k))) return true;
        return false;
      }
      for (size_t k = j; k <= s.size(); ++k) {
        if (match(p.substr(i + 1), s.substr(k))) return true;
        if (k < s.size() && s[k] == '/') break;
      }
      return false;
    }
    if (j >= s.size()) return false;
    if (p[i] == '?') {
      if (s[j] == '/') return false;
      ++i, ++j;
      continue;
    }
    if (p[i] == '[') {
      bool matched = false;
      size_t at = i;
      if (match_class(p, at, s[j], matched)) {
        if (!matched || s[j] == '/') return false;
        i = at, ++j;
        continue;
      }
    }
    if (p[i] == '\\' && i + 1 < p.size()) ++i;
    if (p[i] != s[j]) return false;
    ++i, ++j;
  }
  return j == s.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view path) { return match(pattern, path); }

}  // namespace mlsem::config
