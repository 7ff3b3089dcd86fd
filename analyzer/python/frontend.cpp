#include "python/frontend.h"

#include <memory>
#include <string>
#include <vector>

#include "python/axes.h"
#include "python/builder.h"
#include "python/attention_fix.h"
#include "python/compiled.h"
#include "python/context.h"
#include "python/norm_facts.h"
#include "python/program.h"
#include "python/suppressions.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {

constexpr size_t kMaxSyntaxDiagnostics = 50;

// tree-sitter-python rarely marks a lone missing ')' as MISSING; it wraps the
// statement in an ERROR instead. Name the first bracket left open inside it.
std::string describe_error(std::string_view text) {
  std::string open;  // stack of expected closers
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote || c == '\n') quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '(' || c == '[' || c == '{') {
      open.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if ((c == ')' || c == ']' || c == '}') && !open.empty() && open.back() == c) {
      open.pop_back();
    }
  }
  if (open.empty()) return "syntax error";
  return std::string("syntax error: missing '") + open.front() + "'";
}

// One diagnostic per outermost ERROR node and per MISSING token ("missing ')'"), which
// says more than the ERROR around it. Descends only into subtrees holding an error,
// so a clean file costs one root check.
void report_syntax_errors(const SourceFile& file, TSNode root, ir::Module& out) {
  if (!ts_node_has_error(root)) return;
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  size_t reported = 0;
  int error_depth = 0;  // ERROR nodes enclosing the cursor
  std::vector<bool> is_error_stack;
  auto report = [&](TSNode n, std::string message) {
    if (reported == kMaxSyntaxDiagnostics) return false;
    out.diagnostics.push_back({file.path, range_of(n), std::move(message)});
    if (++reported == kMaxSyntaxDiagnostics)
      out.diagnostics.push_back({file.path, range_of(n), "more syntax errors not reported"});
    return true;
  };
  while (true) {
    TSNode n = ts_tree_cursor_current_node(&cursor);
    bool error = ts_node_is_error(n);
    if (ts_node_is_missing(n)) {
      report(n, "missing '" + std::string(ts_node_type(n)) + "'");
    } else if (error && error_depth == 0) {
      report(n, describe_error(file.slice(range_of(n))));
    }
    if (reported < kMaxSyntaxDiagnostics && ts_node_has_error(n) && ts_tree_cursor_goto_first_child(&cursor)) {
      is_error_stack.push_back(error);
      error_depth += error;
      continue;
    }
    bool moved = false;
    while (!(moved = ts_tree_cursor_goto_next_sibling(&cursor))) {
      if (!ts_tree_cursor_goto_parent(&cursor)) break;
      error_depth -= is_error_stack.back();
      is_error_stack.pop_back();
    }
    if (!moved) break;
  }
  ts_tree_cursor_delete(&cursor);
}

struct ParserDeleter {
  void operator()(TSParser* p) const { ts_parser_delete(p); }
};
struct TreeDeleter {
  void operator()(TSTree* t) const { ts_tree_delete(t); }
};

}  // namespace

ir::Module build_ir(const SourceFile& file) {
  ir::Module out;
  out.path = file.path;
  out.language = "python";
  if (file.text.size() > UINT32_MAX) {
    out.diagnostics.push_back({file.path, {}, "file too large to parse"});
    return out;
  }
  std::unique_ptr<TSParser, ParserDeleter> parser(ts_parser_new());
  if (!ts_parser_set_language(parser.get(), tree_sitter_python())) {
    out.diagnostics.push_back({file.path, {}, "tree-sitter-python grammar version mismatch"});
    return out;
  }
  std::unique_ptr<TSTree, TreeDeleter> tree(
      ts_parser_parse_string(parser.get(), nullptr, file.text.data(), static_cast<uint32_t>(file.text.size())));
  if (!tree) {
    out.diagnostics.push_back({file.path, {}, "parse failed"});
    return out;
  }
  return build_ir(file, tree.get());
}

ir::Module build_ir(const SourceFile& file, const TSTree* tree) {
  ir::Module out;
  out.path = file.path;
  out.language = "python";
  TSNode root = ts_tree_root_node(tree);
  ParentMemo parents(tree);  // parent_of in every pass below
  report_syntax_errors(file, root, out);
  lower_file(file, root, out);
  for (ir::Function& f : out.functions) annotate_axes(f);  // axis roles, attention facts
  annotate_attention_fixes(file, root, out);                // SDPA arguments, or why none
  add_context_facts(file, root, out);
  add_compile_facts(file, root, out);  // code torch.compile already fuses
  annotate_program(file, root, out);  // host-sync facts
  add_norm_facts(file, root, out);    // norm classes also built with a multi-dim shape
  add_layer_facts(file, out);         // biased layers: checkpoints, shared modules
  out.suppressions = find_suppressions(file.text);
  return out;
}

}  // namespace mlsem::python
