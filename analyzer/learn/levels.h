// Optimization levels: where the fix for a finding lives, from a library call to a
// custom CUDA kernel (a rule's `level`, docs/learning.md), and the measured ladder's rungs.
#pragma once

#include <array>
#include <string_view>

namespace mlsem::learn {

struct Level {
  std::string_view id;     // as written in rules/*.toml: level = "library"
  std::string_view title;  // as printed
};

// In the order a learner climbs them.
inline constexpr std::array<Level, 4> kLevels{{
    {"library", "library call"},
    {"torch-compile", "torch.compile"},
    {"triton", "Triton"},
    {"cuda", "custom CUDA"},
}};

// "library call" for "library"; the id itself when unknown, "" for "".
inline std::string_view level_title(std::string_view id) {
  for (const Level& level : kLevels)
    if (level.id == id) return level.title;
  return id;
}

}  // namespace mlsem::learn
