// A map from a syntax node (its tree-sitter id), optionally with a small tag such as a
// field id, to a 32-bit value: open addressing in one array, so that a lookup is a
// multiply and a probe or two and an insertion allocates nothing (std::unordered_map
// allocates a node per entry). The Builder memoizes per-node syntax facts in these.
#pragma once

#include <tree_sitter/api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlsem::python {

class NodeTable {
 public:
  static constexpr uint32_t kMissing = UINT32_MAX;

  // Key of node `n` with `tag` (< 32); 0 for a null node, which is never stored.
  static uint64_t key(TSNode n, uint32_t tag = 0) {
    return n.id ? (reinterpret_cast<uintptr_t>(n.id) << 5 | tag) + 1 : 0;
  }

  uint32_t find(uint64_t k) const {
    if (slots_.empty()) return kMissing;
    for (size_t i = home(k);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == k) return s.value;
      if (s.key == 0) return kMissing;
    }
  }

  // Inserts k (not present) with value v.
  void insert(uint64_t k, uint32_t v) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    place(k, v);
    ++used_;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t value = 0;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t used_ = 0;

  size_t home(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & mask_; }

  void place(uint64_t k, uint32_t v) {
    size_t i = home(k);
    while (slots_[i].key != 0) i = (i + 1) & mask_;
    slots_[i] = {k, v};
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : 2 * old.size(), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old)
      if (s.key != 0) place(s.key, s.value);
  }
};

}  // namespace mlsem::python
