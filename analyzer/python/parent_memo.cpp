// ts_node_parent with a memo (declared in python/syntax.h). The runtime finds a node's
// parent by descending from the root (node.c: ts_node_parent, about 1,000 instructions a
// call on the benchmark corpus), and the passes after lowering walk up from the same
// nodes again and again (program.cpp's walks from a host sync: its display call, its
// collector, its loop). While a ParentMemo is open for a tree on this thread, each
// descent records the parent of every visible node it passes through, so the rest of a
// walk up is a lookup. Outside a ParentMemo (the editor server's actions, tests) the
// runtime answers.
#include <tree_sitter/api.h>

#include <cstdint>
#include <vector>

#include "python/syntax.h"

namespace mlsem::python {
namespace {

struct Slot {
  const void* id = nullptr;
  TSNode parent{};
};

// Open addressing on the node's id (its subtree's place in its parent's child array:
// unique within a tree). Kept per thread and reused from file to file.
struct Memo {
  const TSTree* tree = nullptr;
  std::vector<Slot> slots;
  size_t mask = 0, used = 0;

  size_t home(const void* id) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(id) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  }
  const Slot* find(const void* id) const {
    if (slots.empty()) return nullptr;
    for (size_t i = home(id);; i = (i + 1) & mask) {
      if (slots[i].id == id) return &slots[i];
      if (!slots[i].id) return nullptr;
    }
  }
  // Records id's parent unless it is already known.
  void put(const void* id, TSNode parent) {
    if (2 * (used + 1) > slots.size()) grow();
    size_t i = home(id);
    for (; slots[i].id; i = (i + 1) & mask)
      if (slots[i].id == id) return;
    slots[i] = {id, parent};
    ++used;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots);
    slots.assign(old.empty() ? 1024 : 2 * old.size(), Slot{});
    mask = slots.size() - 1;
    used = 0;
    for (const Slot& s : old)
      if (s.id) put(s.id, s.parent);
  }
  void clear() {
    if (used) std::fill(slots.begin(), slots.end(), Slot{});
    used = 0;
  }
};

thread_local Memo memo;

}  // namespace

ParentMemo::ParentMemo(const TSTree* tree) : previous_(memo.tree) {
  memo.clear();
  memo.tree = tree;
}

ParentMemo::~ParentMemo() {
  memo.clear();
  memo.tree = previous_;  // (a nested memo's entries are gone: the outer one starts afresh)
}

TSNode parent_of(TSNode n) {
  Memo& m = memo;
  if (!m.tree || n.tree != m.tree || !n.id) return ts_node_parent(n);
  if (const Slot* s = m.find(n.id)) return s->parent;
  // node.c's ts_node_parent: from the root, the visible child containing `n`, until the
  // next step would be `n` itself. Each node passed on the way is the parent of the next
  // one (the search for that next node would take the same steps: the children it skips
  // end before `n` does), recorded when `n` is not empty (an empty node's search tests
  // positions differently).
  TSNode node = ts_tree_root_node(n.tree);
  if (node.id == n.id) {
    m.put(n.id, TSNode{});
    return TSNode{};
  }
  bool chain = ts_node_start_byte(n) != ts_node_end_byte(n);
  for (;;) {
    TSNode next = ts_node_child_with_descendant(node, n);
    if (next.id == n.id || ts_node_is_null(next)) break;
    if (chain) m.put(next.id, node);
    node = next;
  }
  m.put(n.id, node);
  return node;
}

}  // namespace mlsem::python
