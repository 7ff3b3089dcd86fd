// The named children of a tree-sitter node in one pass over its subtree's child array
// (declared in python/syntax.h). tree-sitter's public API lists children either by
// index (ts_node_child(i) walks from the first child: quadratic) or with a cursor,
// whose step to the next sibling climbs and descends the hidden binary trees that
// repetitions build (about 650 instructions a step on the benchmark corpus). This
// does what ts_node_child's iterator does (node.c: ts_node_iterate_children,
// ts_node_child_iterator_next, ts_node__child), keeping every child instead of one.
// Built with the tree-sitter runtime (CMakeLists.txt), whose internal headers it reads:
// it follows the runtime pinned in package-lock.json.
#include <tree_sitter/api.h>

#include "./language.h"
#include "./length.h"
#include "./subtree.h"
#include "./tree.h"

static void mlsem_collect(TSNode node, TSSymbol skip, TSNode *out, uint32_t capacity, uint32_t *count) {
  Subtree subtree = *(const Subtree *)node.id;
  if (ts_subtree_child_count(subtree) == 0) return;
  const TSSymbol *alias_sequence = ts_language_alias_sequence(node.tree->language, subtree.ptr->production_id);
  Length position = {node.context[0], {node.context[1], node.context[2]}};
  uint32_t structural_index = 0;
  const Subtree *children = ts_subtree_children(subtree);
  for (uint32_t i = 0; i < subtree.ptr->child_count; i++) {
    const Subtree *child = &children[i];
    TSSymbol alias = 0;
    if (!ts_subtree_extra(*child)) {
      if (alias_sequence) alias = alias_sequence[structural_index];
      structural_index++;
    }
    if (i > 0) position = length_add(position, ts_subtree_padding(*child));
    TSNode c = ts_node_new(node.tree, child, position, alias);
    position = length_add(position, ts_subtree_size(*child));
    if (ts_subtree_visible(*child) || alias) {
      // A visible child (ts_node__is_relevant with anonymous nodes included).
      if (ts_node_is_named(c) && ts_node_symbol(c) != skip) {
        if (*count < capacity) out[*count] = c;
        ++*count;
      }
    } else if (ts_subtree_visible_child_count(*child) > 0) {
      // A hidden node stands for its visible children, as ts_node_child counts them.
      mlsem_collect(c, skip, out, capacity, count);
    }
  }
}

uint32_t mlsem_ts_named_children(TSNode node, TSSymbol skip, TSNode *out, uint32_t capacity) {
  uint32_t count = 0;
  if (node.id) mlsem_collect(node, skip, out, capacity, &count);
  return count;
}
