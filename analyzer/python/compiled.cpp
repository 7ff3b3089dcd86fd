#include "python/compiled.h"

#include <string>
#include <string_view>

#include "python/graph_breaks.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {

// `torch.compile` spelled as a call's callee or a decorator: torch.compile(model, ...),
// @torch.compile, @torch.compile(mode="max-autotune").
bool compile_callee(std::string_view t) { return t == "torch.compile" || t.starts_with("torch.compile("); }
// `@torch.jit.script`: TorchScript's profiling executor fuses the function's pointwise ops
// on the GPU (Megatron's and GPT-NeoX's `bias_gelu` are written so for that reason).
bool script_decorator(std::string_view t) { return t == "torch.jit.script" || t.starts_with("torch.jit.script("); }

// The qualified name of a function definition, as the IR names functions: the names of
// the classes and functions around it, outermost first (Class.method, make.inner).
std::string qualified_name(const Syntax& S, const SourceFile& f, TSNode def) {
  std::string name(text_of(field(def, S.f_name), f.text));
  for (TSNode p = parent_of(def); !ts_node_is_null(p); p = parent_of(p))
    if (ts_node_symbol(p) == S.class_definition || ts_node_symbol(p) == S.function_definition)
      name = std::string(text_of(field(p, S.f_name), f.text)) + "." + name;
  return name;
}

struct Scan {
  const Syntax& S;
  const SourceFile& f;
  ir::Module& out;
  uint32_t call_line = 0;  // first torch.compile(...) call, 1-based; 0 when none

  void visit(TSNode n) {
    TSSymbol k = ts_node_symbol(n);
    if (k == S.decorator) return;  // @torch.compile(...) compiles its function only (below)
    if (k == S.call && call_line == 0 && compile_callee(text_of(field(n, S.f_function), f.text)))
      call_line = ts_node_start_point(n).row + 1;
    if (k == S.decorated_definition) {
      TSNode def = field(n, S.f_definition);
      for (TSNode c : named_children(n, S.comment)) {
        if (ts_node_symbol(c) != S.decorator || ts_node_is_null(def) || ts_node_symbol(def) != S.function_definition)
          continue;
        std::string_view t = text_of(c, f.text);
        t.remove_prefix(t.starts_with("@") ? 1 : 0);
        bool script = script_decorator(t);
        if (!script && !compile_callee(t)) continue;
        std::string name = qualified_name(S, f, def);
        std::string why = script ? "compiled: `" + name + "` is decorated with @torch.jit.script (line " + line_of(c) +
                                       "): TorchScript's GPU fuser fuses these pointwise ops already"
                                 : "compiled: `" + name + "` is decorated with @torch.compile (line " + line_of(c) +
                                       "), which fuses these ops already";
        for (ir::Function& fn : out.functions)
          if (fn.name == name) fn.attrs["compiled"] = why;
        break;
      }
    }
    for (TSNode c : named_children(n, S.comment)) visit(c);
  }
};

}  // namespace

void add_compile_facts(const SourceFile& file, TSNode root, ir::Module& out) {
  bool compiles = contains(file.text, "torch.compile");
  if (!compiles && !contains(file.text, "torch.jit.script")) return;
  Scan scan{Syntax::get(), file, out};
  scan.visit(root);
  if (!compiles) return;
  if (scan.call_line != 0 && !out.attrs.count("file_kind")) {
    out.attrs["file_kind"] = std::string("compiled");
    out.attrs["file_kind_reason"] = "compiled: the file passes its model to torch.compile (line " +
                                    std::to_string(scan.call_line) + "), which fuses these ops already";
  }
  add_graph_breaks(file, root, out);  // what torch.compile traces, and what breaks its graph there
}

}  // namespace mlsem::python
