// Helpers shared by the program-fact passes (program_util.h).
#include "python/program_util.h"

#include <algorithm>

namespace mlsem::python::program {

bool test_path(std::string_view path) {
  std::string_view base = last_part(path, '/');
  return contains(path, "/test/") || contains(path, "/tests/") || contains(path, "/testing/") ||
         base.rfind("test_", 0) == 0 || contains(base, "_test.py") || base == "conftest.py";
}

bool gpu_text(std::string_view t) {
  return contains(t, ".cuda(") || contains(t, "\"cuda") || contains(t, "'cuda") || contains(t, ".to(device") ||
         contains(t, "device=device") || contains(t, ".to(self.device") || contains(t, "accelerator") ||
         contains(t, "setup_dataloaders") || contains(t, "dist_util.dev()") || contains(t, ".to(local_rank") ||
         contains(t, ".to(rank");
}

// The innermost IR function whose range holds `r`, or null.
ir::Function* home_of(ir::Module& out, const Range& r) {
  ir::Function* home = nullptr;
  for (ir::Function& fn : out.functions)
    if (fn.range.begin_byte <= r.begin_byte && r.end_byte <= fn.range.end_byte &&
        (!home || fn.range.end_byte - fn.range.begin_byte < home->range.end_byte - home->range.begin_byte))
      home = &fn;
  return home;
}

// Keyword argument `name=` of a call's argument list: its text, empty when absent;
// "**" when the call passes **kwargs (anything may be set).
std::string keyword(const Syntax& S, const SourceFile& f, TSNode args, std::string_view name) {
  uint32_t n = ts_node_named_child_count(args);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode a = ts_node_named_child(args, i);
    if (ts_node_symbol(a) == S.dictionary_splat) return "**";
    if (ts_node_symbol(a) != S.keyword_argument) continue;
    if (text_of(ts_node_child_by_field_id(a, S.f_name), f.text) == name)
      return std::string(text_of(ts_node_child_by_field_id(a, S.f_value), f.text));
  }
  return {};
}

// Whether a region attribute is a true bool.
bool flag_of(const ir::Region& r, const char* name) {
  auto it = r.attrs.find(name);
  return it != r.attrs.end() && std::get_if<bool>(&it->second) && std::get<bool>(it->second);
}

std::vector<std::string> model_names(std::string_view fn_text, std::string_view mode_call) {
  std::vector<std::string> names = {"model", "net", "self.model"};
  for (size_t at = fn_text.find(mode_call); at != std::string_view::npos; at = fn_text.find(mode_call, at + 1)) {
    size_t b = at;
    while (b > 0 && (word_byte(fn_text[b - 1]) || fn_text[b - 1] == '.')) --b;
    if (b < at) names.emplace_back(fn_text.substr(b, at - b));
  }
  return names;
}

TSNode first_model_call(const Syntax& S, const SourceFile& f, TSNode root, const std::vector<std::string>& models,
                        uint32_t from, uint32_t to, bool generate) {
  TSNode first{};
  for (const std::string& m : models) {
    for (TSNode id : identifiers_named(root, f.text, last_part(m), S.identifier, from, to)) {
      TSNode callee = id, p = parent_of(id);
      if (!ts_node_is_null(p) && ts_node_symbol(p) == S.attribute && ts_node_eq(field(p, S.f_attribute), id)) {
        callee = p;
        p = parent_of(p);
      }
      if (generate && !ts_node_is_null(p) && ts_node_symbol(p) == S.attribute && ts_node_eq(field(p, S.f_object), callee) &&
          text_of(field(p, S.f_attribute), f.text) == "generate") {
        callee = p;  // model.generate(...)
        p = parent_of(p);
      }
      if (ts_node_is_null(p) || ts_node_symbol(p) != S.call || !ts_node_eq(field(p, S.f_function), callee)) continue;
      std::string_view ct = text_of(callee, f.text);
      if (ct != m && !(generate && ct == m + ".generate")) continue;
      if (ts_node_is_null(first) || ts_node_start_byte(p) < ts_node_start_byte(first)) first = p;
      break;  // the first of this name; identifiers come in source order
    }
  }
  return first;
}

TSNode enclosing(TSNode n, TSSymbol kind) {
  for (TSNode p = parent_of(n); !ts_node_is_null(p); p = parent_of(p))
    if (ts_node_symbol(p) == kind) return p;
  return TSNode{};
}

std::string option_default(const Syntax& S, const SourceFile& f, TSNode root, std::string_view dest,
                           std::string* spelled) {
  std::string found;
  each_call_to(S, f, root, "add_argument", [&](TSNode call, std::string_view) {
    TSNode args = field(call, S.f_arguments);
    if (ts_node_is_null(args) || !found.empty()) return;
    std::string dflt = keyword(S, f, args, "default");
    if (dflt.empty() || dflt == "**") return;
    std::string dest_kw = keyword(S, f, args, "dest");
    for (TSNode a : named_children(args, S.comment)) {
      if (ts_node_symbol(a) != S.string) continue;
      std::string_view option = unquoted(text_of(a, f.text));
      std::string bare(option.substr(std::min(option.find_first_not_of('-'), option.size())));
      for (char& ch : bare)
        if (ch == '-') ch = '_';
      bool by_dest = !dest_kw.empty() && dest_kw != "**";  // dest= names it; else the flag does
      if ((by_dest ? unquoted(dest_kw) : std::string_view(bare)) != dest) continue;
      found = dflt;
      if (spelled) *spelled = std::string(option);
      return;
    }
  });
  return found;
}

std::string_view with_head(const Syntax& S, const SourceFile& f, TSNode with_statement) {
  TSNode body = ts_node_child_by_field_id(with_statement, S.f_body);
  uint32_t b = ts_node_start_byte(with_statement);
  uint32_t e = ts_node_is_null(body) ? ts_node_end_byte(with_statement) : ts_node_start_byte(body);
  return std::string_view(f.text).substr(b, e - b);
}

// `x.to(device)` / `x.cuda()` of a tensor without non_blocking=True: PyTorch waits for the
// stream after such a copy, so the step waits for the GPU there. Not a module
// (`model.to(device)`), not a dtype conversion.
bool blocking_copy(const Syntax& S, const SourceFile& f, TSNode n) {
  if (ts_node_symbol(n) != S.call) return false;
  TSNode fn = field(n, S.f_function);
  if (ts_node_symbol(fn) != S.attribute) return false;
  std::string_view method = text_of(field(fn, S.f_attribute), f.text);
  if (method != "to" && method != "cuda") return false;
  std::string_view args = text_of(field(n, S.f_arguments), f.text);
  if (contains(args, "non_blocking")) return false;
  std::string recv = lower_ascii(text_of(field(fn, S.f_object), f.text));
  for (std::string_view m : {"model", "net", "module", "self"})
    if (contains(recv, m)) return false;
  if (method == "cuda") return true;
  std::string a = lower_ascii(args);
  if (contains(a, "dtype") || contains(a, "cpu") || contains(a, "torch.float") || contains(a, "torch.bfloat") ||
      contains(a, "torch.half") || contains(a, "torch.int") || contains(a, "torch.long"))
    return false;
  return contains(a, "device") || contains(a, "cuda") || contains(a, "rank") || contains(a, "gpu");
}

}  // namespace mlsem::python::program
