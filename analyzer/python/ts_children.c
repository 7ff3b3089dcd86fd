// The named children of a tree-sitter node in one pass over its subtree's child array,
// and a node's field child (both declared in python/syntax.h). tree-sitter's public API lists children either by
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

// One pass over a node's child array, as node.c's ts_node_child_iterator_next makes it:
// each child as a node, its alias (if the production gives one) applied.
typedef struct {
  TSNode parent;
  const Subtree *children;
  uint32_t count, index, structural_index;
  const TSSymbol *alias_sequence;
  Length position;
} ChildIter;

static inline __attribute__((always_inline)) ChildIter mlsem_children_of(TSNode node) {
  Subtree subtree = *(const Subtree *)node.id;
  ChildIter it = {node, NULL, ts_subtree_child_count(subtree), 0, 0, NULL, {node.context[0], {node.context[1], node.context[2]}}};
  if (it.count > 0) {
    it.children = ts_subtree_children(subtree);
    it.alias_sequence = ts_language_alias_sequence(node.tree->language, subtree.ptr->production_id);
  }
  return it;
}

// The next child (`*visible`: shown as a node, by itself or by its alias); false at the end.
static inline __attribute__((always_inline)) bool mlsem_next_child(ChildIter *it, TSNode *out, bool *visible, bool *has_visible_children) {
  if (it->index >= it->count) return false;
  const Subtree *child = &it->children[it->index];
  TSSymbol alias = 0;
  if (!ts_subtree_extra(*child)) {
    if (it->alias_sequence) alias = it->alias_sequence[it->structural_index];
    it->structural_index++;
  }
  if (it->index > 0) it->position = length_add(it->position, ts_subtree_padding(*child));
  *out = ts_node_new(it->parent.tree, child, it->position, alias);
  *visible = ts_subtree_visible(*child) || alias;
  *has_visible_children = ts_subtree_visible_child_count(*child) > 0;
  it->position = length_add(it->position, ts_subtree_size(*child));
  it->index++;
  return true;
}

static void mlsem_collect(TSNode node, TSSymbol skip, TSNode *out, uint32_t capacity, uint32_t *count) {
  ChildIter it = mlsem_children_of(node);
  TSNode c;
  bool visible, nested;
  while (mlsem_next_child(&it, &c, &visible, &nested)) {
    if (visible) {
      // A visible child (ts_node__is_relevant with anonymous nodes included).
      if (ts_node_is_named(c) && ts_node_symbol(c) != skip) {
        if (*count < capacity) out[*count] = c;
        ++*count;
      }
    } else if (nested) {
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

static TSNode mlsem_null_node(void) { return ts_node_new(NULL, NULL, length_zero(), 0); }

// The first visible node among `node`'s children, hidden nodes flattened: what
// ts_node_child(node, 0) returns (node.c: ts_node__child), found in one descent.
TSNode mlsem_ts_first_child(TSNode node) {
  if (!node.id) return mlsem_null_node();
  for (;;) {
    ChildIter it = mlsem_children_of(node);
    TSNode c;
    bool visible, nested, descended = false;
    while (!descended && mlsem_next_child(&it, &c, &visible, &nested)) {
      if (visible) return c;
      if (nested) node = c, descended = true;
    }
    if (!descended) return mlsem_null_node();
  }
}

// ts_node_child_by_field_id (node.c) with its two slow steps done directly: the walk to
// the field's child (the iterator builds a node per child it passes) and, when that
// child is a hidden node (a supertype such as `expression`), the step to its first
// visible child (ts_node_child(child, 0) starts a general search). A field that a hidden
// child passes up ("inherited") is left to ts_node_child_by_field_id.
TSNode mlsem_ts_child_by_field(TSNode self, TSFieldId field_id) {
  if (!field_id || !self.id) return mlsem_null_node();
  Subtree subtree = *(const Subtree *)self.id;
  if (ts_subtree_visible_child_count(subtree) == 0) return mlsem_null_node();
  const TSFieldMapEntry *field_map, *field_map_end;
  ts_language_field_map(self.tree->language, subtree.ptr->production_id, &field_map, &field_map_end);
  if (field_map == field_map_end) return mlsem_null_node();
  while (field_map->field_id < field_id) {
    if (++field_map == field_map_end) return mlsem_null_node();
  }
  while (field_map_end[-1].field_id > field_id) {
    if (--field_map_end == field_map) return mlsem_null_node();
  }
  for (const TSFieldMapEntry *e = field_map; e != field_map_end; e++)
    if (e->inherited) return ts_node_child_by_field_id(self, field_id);

  const TSSymbol *alias_sequence = ts_language_alias_sequence(self.tree->language, subtree.ptr->production_id);
  Length position = {self.context[0], {self.context[1], self.context[2]}};
  uint32_t structural_index = 0;
  const Subtree *children = ts_subtree_children(subtree);
  for (uint32_t i = 0; i < subtree.ptr->child_count; i++) {
    const Subtree *child = &children[i];
    if (i > 0) position = length_add(position, ts_subtree_padding(*child));
    if (!ts_subtree_extra(*child) && structural_index++ >= field_map->child_index) {
      TSSymbol alias = alias_sequence ? alias_sequence[structural_index - 1] : 0;
      TSNode c = ts_node_new(self.tree, child, position, alias);
      if (ts_subtree_visible(*child) || alias) return c;
      if (ts_subtree_visible_child_count(*child) > 0) return mlsem_ts_first_child(c);
      if (++field_map == field_map_end) return mlsem_null_node();
    }
    position = length_add(position, ts_subtree_size(*child));
  }
  return mlsem_null_node();
}
