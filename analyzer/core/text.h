// Searching source text: one helper for the frontends' passes.
#pragma once

#include <string_view>

namespace mlsem {

inline bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

}  // namespace mlsem
