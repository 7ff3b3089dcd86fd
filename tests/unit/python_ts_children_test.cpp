// mlsem_ts_named_children (python/ts_children.c) reads tree-sitter's internal headers to
// list a node's named children in one pass. These tests compare it, at every node of
// every sample and of hostile inputs, with what tree-sitter's public API says the named
// children are: a TSTreeCursor walk over the children and ts_node_named_child(i), less
// the skipped symbol (comments, the way syntax.h's named_children uses it). Its field
// lookup and first child are compared at the same nodes with ts_node_child_by_field_id
// and ts_node_child(n, 0).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "python/syntax.h"

namespace {

struct ParserDeleter {
  void operator()(TSParser* p) const { ts_parser_delete(p); }
};
struct TreeDeleter {
  void operator()(TSTree* t) const { ts_tree_delete(t); }
};
struct Cursor {
  explicit Cursor(TSNode n) : c(ts_tree_cursor_new(n)) {}
  ~Cursor() { ts_tree_cursor_delete(&c); }
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  TSTreeCursor c;
};

const TSLanguage* python() { return tree_sitter_python(); }

TSSymbol comment_symbol() {
  return ts_language_symbol_for_name(python(), "comment", static_cast<uint32_t>(std::strlen("comment")), true);
}

// The same node as tree-sitter's public API sees it: identity (ts_node_eq), the symbol an
// alias gives it, and its range.
bool same(TSNode a, TSNode b) {
  return ts_node_eq(a, b) && ts_node_symbol(a) == ts_node_symbol(b) && ts_node_start_byte(a) == ts_node_start_byte(b) &&
         ts_node_end_byte(a) == ts_node_end_byte(b) && ts_node_is_named(a) == ts_node_is_named(b);
}

std::string describe(TSNode n) {
  std::ostringstream o;
  o << (ts_node_is_null(n) ? "(null)" : ts_node_type(n)) << " [" << ts_node_start_byte(n) << ", " << ts_node_end_byte(n)
    << ")";
  return o.str();
}

std::string describe(const std::vector<TSNode>& v) {
  std::string s;
  for (TSNode n : v) s += "  " + describe(n) + "\n";
  return s;
}

// The public API's answer, through a cursor: every child the cursor visits that is named
// and not of symbol `skip`.
std::vector<TSNode> cursor_named_children(TSNode n, TSSymbol skip) {
  std::vector<TSNode> out;
  Cursor cur(n);
  if (!ts_tree_cursor_goto_first_child(&cur.c)) return out;
  do {
    TSNode c = ts_tree_cursor_current_node(&cur.c);
    if (ts_node_is_named(c) && ts_node_symbol(c) != skip) out.push_back(c);
  } while (ts_tree_cursor_goto_next_sibling(&cur.c));
  return out;
}

// The same by index (ts_node_named_child walks from the first child each time: only for
// nodes with few children).
std::vector<TSNode> indexed_named_children(TSNode n, TSSymbol skip) {
  std::vector<TSNode> out;
  uint32_t count = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < count; ++i) {
    TSNode c = ts_node_named_child(n, i);
    if (ts_node_symbol(c) != skip) out.push_back(c);
  }
  return out;
}

struct Stats {
  size_t nodes = 0;     // nodes checked
  size_t children = 0;  // named children compared
  size_t skipped = 0;   // children of the skipped symbol seen
  size_t failures = 0;
};

// mlsem_ts_named_children at node n against both public listings, and with a short
// buffer (the count is still the whole count, nothing written past capacity).
void check_node(TSNode n, TSSymbol skip, const std::string& where, Stats& st) {
  std::vector<TSNode> want = cursor_named_children(n, skip);
  ++st.nodes;
  st.children += want.size();
  const uint32_t bound = ts_node_named_child_count(n);  // skipped ones included
  st.skipped += bound - want.size();

  std::vector<TSNode> got(bound + 1);
  uint32_t found = mlsem_ts_named_children(n, skip, got.data(), static_cast<uint32_t>(got.size()));
  got.resize(found <= got.size() ? found : got.size());
  bool ok = found == want.size();
  for (size_t i = 0; ok && i < want.size(); ++i) ok = same(got[i], want[i]);
  if (!ok) {
    if (++st.failures <= 5)
      ADD_FAILURE() << where << ": at " << describe(n) << " mlsem_ts_named_children gave " << found
                    << " children:\n"
                    << describe(got) << "a TSTreeCursor walk gives " << want.size() << ":\n"
                    << describe(want);
    return;
  }

  if (bound <= 2000) {
    std::vector<TSNode> indexed = indexed_named_children(n, skip);
    bool same_list = indexed.size() == want.size();
    for (size_t i = 0; same_list && i < want.size(); ++i) same_list = same(indexed[i], want[i]);
    if (!same_list && ++st.failures <= 5)
      ADD_FAILURE() << where << ": at " << describe(n) << " ts_node_named_child gives\n"
                    << describe(indexed) << "a TSTreeCursor walk\n"
                    << describe(want);
  }

  if (!want.empty()) {  // a buffer one short: the whole count, the first capacity written, no more
    const uint32_t cap = static_cast<uint32_t>(want.size() - 1);
    std::vector<TSNode> shorter(want.size(), TSNode{});
    uint32_t again = mlsem_ts_named_children(n, skip, shorter.data(), cap);
    bool short_ok = again == want.size() && shorter[cap].id == nullptr;
    for (uint32_t i = 0; short_ok && i < cap; ++i) short_ok = same(shorter[i], want[i]);
    if (!short_ok && ++st.failures <= 5)
      ADD_FAILURE() << where << ": at " << describe(n) << " with capacity " << cap << " it returned " << again;
  }
}

// mlsem_ts_child_by_field at node n, for every field id (and one past them), and
// mlsem_ts_first_child, against ts_node_child_by_field_id and ts_node_child(n, 0).
void check_fields(TSNode n, const std::string& where, Stats& st) {
  auto same_or_null = [](TSNode a, TSNode b) {
    return ts_node_is_null(a) || ts_node_is_null(b) ? ts_node_is_null(a) == ts_node_is_null(b) : same(a, b);
  };
  const uint32_t fields = ts_language_field_count(python());
  for (uint32_t id = 0; id <= fields + 1; ++id) {
    TSNode got = mlsem_ts_child_by_field(n, static_cast<TSFieldId>(id));
    TSNode want = ts_node_child_by_field_id(n, static_cast<TSFieldId>(id));
    if (!same_or_null(got, want) && ++st.failures <= 5)
      ADD_FAILURE() << where << ": at " << describe(n) << " field " << id << ": mlsem_ts_child_by_field gave "
                    << describe(got) << ", ts_node_child_by_field_id " << describe(want);
  }
  TSNode got = mlsem_ts_first_child(n), want = ts_node_child(n, 0);
  if (!same_or_null(got, want) && ++st.failures <= 5)
    ADD_FAILURE() << where << ": at " << describe(n) << ": mlsem_ts_first_child gave " << describe(got)
                  << ", ts_node_child(n, 0) " << describe(want);
}

// The Python tree of `source` (null if the parser gives none).
std::unique_ptr<TSTree, TreeDeleter> parse(const std::string& source) {
  std::unique_ptr<TSParser, ParserDeleter> parser(ts_parser_new());
  EXPECT_TRUE(ts_parser_set_language(parser.get(), python()));
  return std::unique_ptr<TSTree, TreeDeleter>(
      ts_parser_parse_string(parser.get(), nullptr, source.data(), static_cast<uint32_t>(source.size())));
}

// Every node of the tree (named or not), depth first with a cursor (no recursion: the
// hostile inputs nest thousands deep), checked with `skip` the comment symbol and with
// a symbol no node has (every named child kept).
Stats check_tree(const std::string& source, const std::string& where) {
  Stats st;
  std::unique_ptr<TSTree, TreeDeleter> tree = parse(source);
  if (!tree) {
    ADD_FAILURE() << where << ": no tree";
    return st;
  }
  const TSSymbol comment = comment_symbol();
  const TSSymbol none = static_cast<TSSymbol>(0xFFFF);
  Cursor cur(ts_tree_root_node(tree.get()));
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&cur.c);
    check_node(n, comment, where, st);
    check_node(n, none, where + " (nothing skipped)", st);
    check_fields(n, where, st);
    if (st.failures > 5) break;
    if (ts_tree_cursor_goto_first_child(&cur.c)) continue;
    bool next = false;
    while (!(next = ts_tree_cursor_goto_next_sibling(&cur.c)))
      if (!ts_tree_cursor_goto_parent(&cur.c)) break;
    if (!next) break;
  }
  TSNode null_node{};
  TSNode out[1];
  EXPECT_EQ(mlsem_ts_named_children(null_node, comment, out, 1), 0u) << where << ": a null node";
  EXPECT_TRUE(ts_node_is_null(mlsem_ts_child_by_field(null_node, 1))) << where << ": a null node";
  EXPECT_TRUE(ts_node_is_null(mlsem_ts_first_child(null_node))) << where << ": a null node";
  return st;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream o;
  o << in.rdbuf();
  return o.str();
}

// Calls `visit(text, name)` for every Python sample; returns how many there were.
template <typename Visit>
size_t each_python_sample(Visit visit) {
  const std::filesystem::path root = std::filesystem::path(MLSEM_SOURCE_DIR) / "samples" / "python";
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().extension() != ".py") continue;
    ++files;
    visit(read_file(e.path()), e.path().lexically_relative(root).string());
  }
  return files;
}

TEST(TsChildren, MatchesTheCursorAtEveryNodeOfEverySample) {
  size_t nodes = 0, children = 0, comments = 0;
  size_t files = each_python_sample([&](const std::string& text, const std::string& name) {
    Stats st = check_tree(text, name);
    nodes += st.nodes;
    children += st.children;
    comments += st.skipped;
  });
  // Not vacuous: the samples were found and walked, comments among them.
  EXPECT_GE(files, 50u);
  EXPECT_GT(nodes, 100000u);
  EXPECT_GT(children, 50000u);
  EXPECT_GT(comments, 100u);
}

// Where the grammar renames a node (alias(...) in tree-sitter-python's grammar.js): a
// hidden rule shown as a named node (one-line blocks, match blocks, patterns), a named
// node shown as another (format_expression, as_pattern_target), a keyword as an identifier.
TEST(TsChildren, MatchesTheCursorWhereTheGrammarAliases) {
  const std::vector<std::string> sources = {
      "if x: y = 1; z = 2\nwhile y: pass\nfor i in r: continue\n",
      "def f(): return 1\nclass C: pass\n",
      "match p:\n    case [a, *rest]: pass\n    case (b, c): pass\n    case Point(x=0) as q: pass\n"
      "    case {\"k\": v, **kw}: pass\n    case _: pass\n",
      "with open(f) as fh, g() as (a, b): pass\ntry:\n  pass\nexcept E as e:\n  pass\n",
      "s = f\"{x!r:{width}.{prec}} {y:>10}\"\n",
      "ys = [v for v in lambda: z]\n",
      "print(*(a), *b)\nf(*(c))\n",
      "type X = int\ntype = 3\n",
      "t = a is not b and c not in d\n",
  };
  size_t nodes = 0;
  for (const std::string& s : sources) nodes += check_tree(s, "source " + s).nodes;
  EXPECT_GT(nodes, 200u);
}

// Files with syntax errors, odd tokens, stray bytes and a NUL: the trees error recovery
// makes, which the fast paths must read as the runtime does.
std::vector<std::string> broken_sources() {
  return {
      "def f(x:\n    return x\n\ndef g(y):\n    return y.exp()\n",
      "x = foo(1, 2\ny = [3, 4\nz = {5: \n",
      "class :\n  pass\n",
      "if x\n    y = 1\nelse\n    y = 2\n",
      "def f(\n  a,  # first\n  b,  # second\n  *,\n",
      "x = 'unterminated\ny = \"\"\"also\n",
      "@@@ )))] }}} ::: lambda lambda : :\n",
      "import\nfrom . import\nfrom x import (a, b,\n",
      "for in range(3):\n  pass\nwhile:\n  break\n",
      "x = [1, # one\n  2, # two\n  # alone\n  ] # after\n",
      "\t  \tdef f():\n  \t return 1\n   x = 2\n",
      "match x:\n  case [1, *rest] if :\n    pass\n  case {\"k\": v, **kw}:\n",
      "async def f():\n  await\n  async with a as (b, c:\n    yield from\n",
      "x = f\"{a!r:>{w}} {b=} {\"\n",
      "print >>sys.stderr, 'py2'\nexec 'code'\n",
      "x = 1\n\xff\xfe = 2\ny = 3\n",
      std::string("x = 1\n\0y = 2\n", 13),  // a NUL byte inside
  };
}

TEST(TsChildren, MatchesTheCursorOnSyntaxErrors) {
  const std::vector<std::string> sources = broken_sources();
  size_t nodes = 0;
  for (const std::string& s : sources) nodes += check_tree(s, "source " + s).nodes;
  EXPECT_GT(nodes, 300u);
}

TEST(TsChildren, MatchesTheCursorOnDeepNesting) {
  const int depth = 3000;
  std::string parens = "x = " + std::string(depth, '(') + "y" + std::string(depth, ')') + "\n";
  std::string lists = "x = " + std::string(depth, '[') + "1" + std::string(depth, ']') + "\n";
  std::string unclosed = "x = " + std::string(depth, '(') + "y\nz = 1\n";
  std::string calls;
  for (int i = 0; i < 1000; ++i) calls += "f(";
  calls += "x # inner\n";
  for (int i = 0; i < 1000; ++i) calls += ", a)";
  calls = "y = " + calls + "\n";
  std::string blocks;
  for (int i = 0; i < 100; ++i) blocks += std::string(i, ' ') + "if x:  # level\n";
  blocks += std::string(100, ' ') + "pass\n";
  std::string ops = "x = 1";
  for (int i = 0; i < 5000; ++i) ops += i % 3 ? " + a" : " * b";
  ops += "\n";
  for (const auto& [src, name] : {std::pair{parens, "nested parentheses"}, std::pair{lists, "nested lists"},
                                  std::pair{unclosed, "unclosed parentheses"}, std::pair{calls, "nested calls"},
                                  std::pair{blocks, "nested blocks"}, std::pair{ops, "a long operator chain"}}) {
    Stats st = check_tree(src, name);
    EXPECT_GT(st.nodes, 1000u) << name;
  }
}

TEST(TsChildren, MatchesTheCursorOnAOneMegabyteLine) {
  // A list of 250,000 elements on one line (1 MB): one node with that many named children,
  // the repetition's hidden binary tree under it.
  std::string list = "x = [";
  while (list.size() < (1u << 20)) list += "a1, ";
  list += "]\n";
  Stats st = check_tree(list, "a 1 MB list");
  EXPECT_GT(st.children, 200000u);
  // The same with a comment after each element (one per line, the list still one node).
  std::string commented = "x = [\n";
  for (int i = 0; i < 20000; ++i) commented += "  a, # c\n";
  commented += "]\n";
  Stats sc = check_tree(commented, "a list with a comment after each element");
  EXPECT_GE(sc.skipped, 20000u);  // each comment, skipped in the check that skips comments
  // A 1 MB string and a 1 MB call's argument list on one line.
  std::string str = "s = '" + std::string(1u << 20, 'z') + "'\n";
  check_tree(str, "a 1 MB string");
  std::string args = "f(";
  while (args.size() < (1u << 20)) args += "k=v, ";
  args += ")\n";
  check_tree(args, "a 1 MB argument list");
}

// parent_of inside a ParentMemo (python/parent_memo.cpp) against the runtime's
// ts_node_parent at every node of the tree, visited last node first (a deep node's
// descent records its ancestors' parents, looked up afterwards) and then first node
// first, each order with a fresh memo.
size_t check_parents(const std::string& source, const std::string& where) {
  std::unique_ptr<TSTree, TreeDeleter> tree = parse(source);
  if (!tree) {
    ADD_FAILURE() << where << ": no tree";
    return 0;
  }
  std::vector<TSNode> nodes;
  {
    Cursor cur(ts_tree_root_node(tree.get()));
    for (;;) {
      nodes.push_back(ts_tree_cursor_current_node(&cur.c));
      if (ts_tree_cursor_goto_first_child(&cur.c)) continue;
      bool next = false;
      while (!(next = ts_tree_cursor_goto_next_sibling(&cur.c)))
        if (!ts_tree_cursor_goto_parent(&cur.c)) break;
      if (!next) break;
    }
  }
  std::vector<TSNode> want;
  want.reserve(nodes.size());
  for (TSNode n : nodes) want.push_back(ts_node_parent(n));
  int failures = 0;
  for (bool backwards : {true, false}) {
    mlsem::python::ParentMemo memo(tree.get());
    for (size_t k = 0; k < nodes.size() && failures <= 5; ++k) {
      size_t i = backwards ? nodes.size() - 1 - k : k;
      for (int twice = 0; twice < 2; ++twice) {  // the descent, then the memo
        TSNode got = mlsem::python::parent_of(nodes[i]);
        bool ok = ts_node_is_null(want[i]) ? ts_node_is_null(got) : same(got, want[i]);
        if (!ok && ++failures <= 5)
          ADD_FAILURE() << where << (backwards ? " (last first)" : " (first first)") << ": parent of "
                        << describe(nodes[i]) << ": memo gave " << describe(got) << ", ts_node_parent "
                        << describe(want[i]);
      }
    }
  }
  // Outside a memo, and for another tree than the memo's, the runtime answers.
  std::unique_ptr<TSTree, TreeDeleter> other(ts_tree_copy(tree.get()));
  mlsem::python::ParentMemo memo(other.get());
  if (nodes.size() > 1) EXPECT_TRUE(same(mlsem::python::parent_of(nodes.back()), want.back())) << where;
  return nodes.size();
}

TEST(ParentMemo, MatchesTheRuntimeAtEveryNodeOfEverySample) {
  size_t nodes = 0;
  size_t files = each_python_sample(
      [&](const std::string& text, const std::string& name) { nodes += check_parents(text, name); });
  EXPECT_GE(files, 50u);
  EXPECT_GT(nodes, 50000u);
}

TEST(ParentMemo, MatchesTheRuntimeOnSyntaxErrorsAndNesting) {
  // The broken files of the TsChildren test, and one-line blocks, nesting and blank tails.
  std::vector<std::string> sources = broken_sources();
  for (std::string s : std::vector<std::string>{
           "if x: y = 1; z = 2\nwhile y: pass\nfor i in r: continue\n",
           "with open(f) as fh, g() as (a, b): pass\n",
           "def f():\n    pass\n\n\n",
           "x = " + std::string(300, '(') + "y" + std::string(300, ')') + "\n",
           "x = " + std::string(300, '(') + "y\nz = 1\n",
       })
    sources.push_back(std::move(s));
  size_t nodes = 0;
  for (const std::string& s : sources) nodes += check_parents(s, "source " + s.substr(0, 60));
  EXPECT_GT(nodes, 1000u);
}

}  // namespace
