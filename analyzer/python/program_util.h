// Helpers shared by the program-fact passes (program.cpp: host-device syncs;
// program_nodes.cpp: the nodes the training rules match). Internal to analyzer/python.
#pragma once

#include <tree_sitter/api.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/source.h"
#include "core/text.h"
#include "ir/ir.h"
#include "python/syntax.h"

namespace mlsem::python::program {

// The part of `s` after its last `sep`, or all of it: a qualified function's own name
// (`Trainer.evaluate` -> `evaluate`), a callee's last attribute, a path's file name.
inline std::string_view last_part(std::string_view s, char sep = '.') {
  size_t at = s.rfind(sep);
  return at == std::string_view::npos ? s : s.substr(at + 1);
}

// Whether a callee's text calls `name`: `name` itself or `x.name`.
// A string literal's text without its quotes (`"0"` -> `0`); anything else as it is.
inline std::string_view unquoted(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) return s.substr(1, s.size() - 2);
  return s;
}

inline bool calls(std::string_view callee, std::string_view name) {
  return callee == name || (callee.size() > name.size() && callee.ends_with(name) &&
                            callee[callee.size() - name.size() - 1] == '.');
}

// A test file: test/, tests/, testing/, test_*.py, *_test.py, conftest.py.
bool test_path(std::string_view path);

// Whether the text places tensors on a GPU somewhere (.cuda(, "cuda", .to(device, ...).
bool gpu_text(std::string_view t);

// Whether the int()/float() read `sync` of `fn` converts a Python number rather than a
// tensor: its operand a name or `self` attribute every assignment in the file sets from a
// config value, or one the file never assigns, or a parameter not annotated as a tensor
// (program_host.cpp).
bool host_number(const Syntax& S, const SourceFile& f, TSNode root, const ir::Function& fn, const ir::Node& sync);

// `x.to(device)` / `x.cuda()` of a tensor without non_blocking=True: PyTorch waits for the
// stream after such a copy. Not a module (`model.to(device)`), not a dtype conversion.
bool blocking_copy(const Syntax& S, const SourceFile& f, TSNode n);

// The innermost IR function whose range holds `r`, or null.
ir::Function* home_of(ir::Module& out, const Range& r);

// A node `op` at `r`, appended to `home`'s nodes (the program facts add nodes by range,
// outside the data flow): the reference is valid until the next node is added.
inline ir::Node& push_node(ir::Function& home, const Range& r, std::string op) {
  ir::Node& node = home.nodes.emplace_back();
  node.op = std::move(op);
  node.range = r;
  return node;
}

// The same in the innermost function holding `r`; null when none does.
inline ir::Node* add_node(ir::Module& out, const Range& r, std::string op) {
  ir::Function* home = home_of(out, r);
  return home ? &push_node(*home, r, std::move(op)) : nullptr;
}

// The names a function calls as a model: `model`, `net`, `self.model`, and whatever it
// puts in a mode with `mode_call` (".eval()": `student.eval()` -> `student`).
std::vector<std::string> model_names(std::string_view fn_text, std::string_view mode_call);

// The first call, within bytes [from, to), of one of `models` (`model(x)`, `self.model(x)`),
// or with `generate` also of `model.generate(...)`; null when none.
TSNode first_model_call(const Syntax& S, const SourceFile& f, TSNode root, const std::vector<std::string>& models,
                        uint32_t from, uint32_t to, bool generate);

// The head of a `with` statement, `with torch.no_grad():`, without its body.
std::string_view with_head(const Syntax& S, const SourceFile& f, TSNode with_statement);

// The nearest node of kind `kind` above `n` (function_definition, class_definition), or null.
TSNode enclosing(TSNode n, TSSymbol kind);

// Keyword argument `name=` of a call's argument list: its text, empty when absent;
// "**" when the call passes **kwargs (anything may be set).
std::string keyword(const Syntax& S, const SourceFile& f, TSNode args, std::string_view name);

// The default of the argparse option whose destination is `dest` (`--grad-accum-steps` for
// `grad_accum_steps`), as the file's `add_argument(..., default=...)` spells it; the
// option as spelled goes to `*spelled` when given. Empty when the file has no such option
// or it has no default.
std::string option_default(const Syntax& S, const SourceFile& f, TSNode root, std::string_view dest,
                           std::string* spelled = nullptr);

// Whether a region attribute is a true bool.
bool flag_of(const ir::Region& r, const char* name);

// Each call whose callee is `name` or `x.name` (`name(...)`, `x.name(...)`), with the
// callee's text: the identifiers spelled `name`, resolved up to their call; only those
// within `scope` (a loop's body, say) when it is given.
template <class F>
void each_call_to(const Syntax& S, const SourceFile& f, TSNode root, std::string_view name, F&& visit,
                  TSNode scope = TSNode{}) {
  size_t from = ts_node_is_null(scope) ? 0 : ts_node_start_byte(scope);
  size_t to = ts_node_is_null(scope) ? std::string_view::npos : ts_node_end_byte(scope);
  for (TSNode id : identifiers_named(root, f.text, name, S.identifier, from, to)) {
    TSNode callee = id, p = parent_of(id);
    if (!ts_node_is_null(p) && ts_node_symbol(p) == S.attribute) {
      if (!ts_node_eq(ts_node_child_by_field_id(p, S.f_attribute), id)) continue;
      callee = p;
      p = parent_of(p);
    }
    if (ts_node_is_null(p) || ts_node_symbol(p) != S.call || !ts_node_eq(ts_node_child_by_field_id(p, S.f_function), callee))
      continue;
    visit(p, text_of(callee, f.text));
  }
}

// The nodes the training rules match (program_nodes.cpp; docs/IR.md): `data_loader`,
// `zero_grad`, `host_tensor`, `blocking_copy`, `eval_loop`, `optimizer`, `debug_mode`,
// `ddp_accumulation`, and those of annotate_setup.
void annotate_nodes(const SourceFile& file, TSNode root, ir::Module& out, bool gpu_file);

// The nodes of the rules on how a script sets up its run (program_setup.cpp):
// `data_parallel`, `fp32_training`. `trains`: a loop of the file trains.
void annotate_setup(const SourceFile& file, TSNode root, ir::Module& out, bool gpu_file, bool trains);

}  // namespace mlsem::python::program
