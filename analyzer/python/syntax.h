// tree-sitter-python access: node kinds and fields as ids looked up once (hot loops
// compare integers, never type strings), plus text, range and child helpers.
#pragma once

#include <tree_sitter/api.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/source.h"
#include "core/text.h"

extern "C" const TSLanguage* tree_sitter_python();
// The named children of `node` but those of symbol `skip`, in order, flattening hidden
// nodes as ts_node_child does (python/ts_children.c): writes at most `capacity` into
// `out` and returns how many there are.
extern "C" uint32_t mlsem_ts_named_children(TSNode node, TSSymbol skip, TSNode* out, uint32_t capacity);
// ts_node_child_by_field_id(node, field), the same node found with less work
// (python/ts_children.c).
extern "C" TSNode mlsem_ts_child_by_field(TSNode node, TSFieldId field);
// ts_node_child(node, 0), found in one descent through hidden nodes.
extern "C" TSNode mlsem_ts_first_child(TSNode node);

namespace mlsem::python {

// ts_node_parent(n), memoized while a ParentMemo is open for n's tree on this thread
// (python/parent_memo.cpp): the runtime descends from the root for every call, and the
// passes after lowering walk up from the same nodes many times. build_ir opens one for
// the file's passes; elsewhere the runtime answers. The frontend's passes call this, not
// ts_node_parent.
TSNode parent_of(TSNode n);

class ParentMemo {
 public:
  // `tree` must outlive the memo; one memo per thread at a time (a nested one replaces
  // the outer one's entries).
  explicit ParentMemo(const TSTree* tree);
  ~ParentMemo();
  ParentMemo(const ParentMemo&) = delete;
  ParentMemo& operator=(const ParentMemo&) = delete;

 private:
  const TSTree* previous_;
};

struct Syntax {
  // Node kinds.
  TSSymbol module, function_definition, class_definition, decorated_definition, decorator, block,
      expression_statement, assignment, augmented_assignment, return_statement, if_statement,
      elif_clause, else_clause, for_statement, while_statement, with_statement, with_clause,
      with_item, try_statement, except_clause, finally_clause, match_statement, case_clause,
      import_statement, import_from_statement, future_import_statement, aliased_import,
      dotted_name, relative_import, wildcard_import, identifier, attribute, call, argument_list,
      keyword_argument, list_splat, dictionary_splat, subscript, slice, binary_operator,
      unary_operator, boolean_operator, not_operator, comparison_operator,
      parenthesized_expression, tuple, list, set, dictionary, pair, expression_list,
      pattern_list, tuple_pattern, list_pattern, list_splat_pattern, integer, float_, string,
      concatenated_string, interpolation, true_, false_, none, ellipsis, conditional_expression,
      named_expression, lambda, list_comprehension, set_comprehension, dictionary_comprehension,
      generator_expression, parameters, default_parameter, typed_parameter,
      typed_default_parameter, as_pattern, as_pattern_target, comment, await_, type;
  // Fields.
  TSFieldId f_name, f_body, f_parameters, f_left, f_right, f_operator, f_function, f_arguments,
      f_object, f_attribute, f_value, f_subscript, f_condition, f_consequence, f_alternative,
      f_argument, f_definition, f_module_name, f_alias, f_type, f_superclasses, f_key, f_operators;

  // Looked up once, on first use (thread-safe static initialization, read-only after).
  static const Syntax& get();
  // Names of kinds/fields the grammar did not know (empty when the ids all resolved).
  std::vector<std::string_view> unresolved;
};

// The source text of `n`; empty for a null node (a field the node does not have: the
// `else` of a `for` or `try` has no condition).
inline std::string_view text_of(TSNode n, std::string_view src) {
  if (ts_node_is_null(n)) return {};
  uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
  if (b > src.size()) return {};
  return src.substr(b, std::min<size_t>(e, src.size()) - b);
}

// The identifier nodes spelled `name` whose whole-word occurrences lie in [from, to) of
// the text, in order: found by scanning the text and asking the tree what is there, so
// comments and strings don't count and the tree is not walked node by node.
// The identifier nodes of `length` bytes starting at the given offsets (whole-word
// occurrences of one name, in order).
inline std::vector<TSNode> identifiers_at(TSNode root, const std::vector<uint32_t>& offsets, size_t length,
                                          TSSymbol identifier) {
  std::vector<TSNode> out;
  for (uint32_t b : offsets) {
    uint32_t e = b + static_cast<uint32_t>(length);
    TSNode n = ts_node_named_descendant_for_byte_range(root, b, e);
    if (!ts_node_is_null(n) && ts_node_symbol(n) == identifier && ts_node_start_byte(n) == b && ts_node_end_byte(n) == e)
      out.push_back(n);
  }
  return out;
}

inline std::vector<TSNode> identifiers_named(TSNode root, std::string_view src, std::string_view name,
                                             TSSymbol identifier, size_t from = 0,
                                             size_t to = std::string_view::npos) {
  return identifiers_at(root, word_offsets(src, name, from, to), name.size(), identifier);
}

// 1-based line of a node, as text for messages.
inline std::string line_of(TSNode n) { return std::to_string(ts_node_start_point(n).row + 1); }

inline Range range_of(TSNode n) {
  if (ts_node_is_null(n)) return {};
  TSPoint b = ts_node_start_point(n), e = ts_node_end_point(n);
  Range r;
  r.begin = {b.row + 1, b.column + 1};
  r.end = {e.row + 1, e.column + 1};
  r.begin_byte = ts_node_start_byte(n);
  r.end_byte = ts_node_end_byte(n);
  return r;
}

inline TSNode field(TSNode n, TSFieldId id) { return mlsem_ts_child_by_field(n, id); }

// `n` without the parentheses around it: `((x))` -> `x`.
inline TSNode unparen(const Syntax& S, TSNode n) {
  while (!ts_node_is_null(n) && ts_node_symbol(n) == S.parenthesized_expression && ts_node_named_child_count(n) > 0)
    n = ts_node_named_child(n, 0);
  return n;
}

// The named children of `n` but comments, through a cursor (ts_node_named_child(i) walks
// from the first child: quadratic over a wide module).
// Into `out` (cleared first).
inline void named_children_into(TSNode n, std::vector<TSNode>& out, TSSymbol comment) {
  out.clear();
  if (ts_node_is_null(n)) return;
  uint32_t count = ts_node_named_child_count(n);  // comments included: an upper bound
  if (count == 0) return;
  out.resize(count);
  uint32_t found = mlsem_ts_named_children(n, comment, out.data(), count);
  if (found > count) {  // never, by the bound; then list again
    out.resize(found);
    mlsem_ts_named_children(n, comment, out.data(), found);
  }
  out.resize(found);
}

inline std::vector<TSNode> named_children(TSNode n, TSSymbol comment) {
  std::vector<TSNode> out;
  named_children_into(n, out, comment);
  return out;
}

// Lists children in one pass (mlsem_ts_named_children): ts_node_child(i) walks from the
// first child, so indexing a wide node (a module of 10,000 statements) would be quadratic.
class Children {
 public:
  // Named children of n except comments, in order, into out (cleared first).
  void named(TSNode n, std::vector<TSNode>& out, TSSymbol comment) { named_children_into(n, out, comment); }
};

}  // namespace mlsem::python
