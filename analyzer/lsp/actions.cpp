#include "lsp/actions.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <regex>
#include <string_view>

#include "python/suppressions.h"

extern "C" const TSLanguage* tree_sitter_python();

namespace mlsem::lsp {
namespace {

struct TreeDeleter {
  void operator()(TSTree* t) const { ts_tree_delete(t); }
};

// The document's parse tree, built on first use.
class PyTree {
 public:
  explicit PyTree(const std::string& text) : text_(text) {}
  TSNode root() {
    if (!tree_) {
      TSParser* parser = ts_parser_new();
      if (ts_parser_set_language(parser, tree_sitter_python()))
        tree_.reset(ts_parser_parse_string(parser, nullptr, text_.data(), static_cast<uint32_t>(text_.size())));
      ts_parser_delete(parser);
    }
    return tree_ ? ts_tree_root_node(tree_.get()) : TSNode{};
  }
  std::string_view text(TSNode n) const {
    uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
    return std::string_view(text_).substr(b, std::min<size_t>(e, text_.size()) - b);
  }

 private:
  const std::string& text_;
  std::unique_ptr<TSTree, TreeDeleter> tree_;
};

bool is(TSNode n, std::string_view type) { return !ts_node_is_null(n) && type == ts_node_type(n); }

TSNode unparen(TSNode n) {
  while (is(n, "parenthesized_expression") && ts_node_named_child_count(n) == 1) n = ts_node_named_child(n, 0);
  return n;
}

std::string_view operator_of(TSNode binary, const PyTree& tree) {
  TSNode op = ts_node_child_by_field_name(binary, "operator", 8);
  return ts_node_is_null(op) ? std::string_view() : tree.text(op);
}

bool is_number(TSNode n, const PyTree& tree, double value) {
  n = unparen(n);
  if (!is(n, "float") && !is(n, "integer")) return false;
  std::string text(tree.text(n));
  try {
    return std::stod(text) == value;
  } catch (...) {
    return false;
  }
}

void product_factors(TSNode n, const PyTree& tree, std::vector<TSNode>& out) {
  n = unparen(n);
  if (is(n, "binary_operator") && operator_of(n, tree) == "*") {
    product_factors(ts_node_child_by_field_name(n, "left", 4), tree, out);
    product_factors(ts_node_child_by_field_name(n, "right", 5), tree, out);
  } else {
    out.push_back(n);
  }
}

bool has_call(TSNode n) {
  if (is(n, "call") || is(n, "await") || is(n, "named_expression")) return true;
  for (uint32_t i = 0, c = ts_node_named_child_count(n); i < c; ++i)
    if (has_call(ts_node_named_child(n, i))) return true;
  return false;
}

std::string squeeze(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\\') out.push_back(c);
  return out;
}

// "(1 + tanh(ARG))" -> the call's function name's last part ("tanh"/"erf") and ARG.
std::optional<std::pair<std::string, TSNode>> one_plus_call(TSNode n, const PyTree& tree) {
  n = unparen(n);
  if (!is(n, "binary_operator") || operator_of(n, tree) != "+") return std::nullopt;
  TSNode l = unparen(ts_node_child_by_field_name(n, "left", 4)), r = unparen(ts_node_child_by_field_name(n, "right", 5));
  TSNode call = is_number(l, tree, 1.0) ? r : is_number(r, tree, 1.0) ? l : TSNode{};
  if (!is(call, "call")) return std::nullopt;
  TSNode fn = ts_node_child_by_field_name(call, "function", 8);
  TSNode args = ts_node_child_by_field_name(call, "arguments", 9);
  if (ts_node_is_null(fn) || !is(args, "argument_list") || ts_node_named_child_count(args) != 1) return std::nullopt;
  std::string name(tree.text(fn));
  name = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
  if (name != "tanh" && name != "erf") return std::nullopt;
  return std::pair{name, ts_node_named_child(args, 0)};
}

// The name the file gives torch.nn.functional ("F", "torch.nn.functional"), "" when
// the file does not import torch.
std::string functional_name(const std::string& text) {
  static const std::regex kAlias(R"(^[ \t]*import[ \t]+torch\.nn\.functional[ \t]+as[ \t]+(\w+))");
  static const std::regex kFrom(R"(^[ \t]*from[ \t]+torch\.nn[ \t]+import[ \t]+.*\bfunctional\b(?:[ \t]+as[ \t]+(\w+))?)");
  static const std::regex kTorch(R"(^[ \t]*import[ \t]+torch(?:[ \t]+as[ \t]+(\w+))?[ \t]*(?:#.*)?$)");
  std::string fallback;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    if (line.find("import") != std::string_view::npos && line.find("torch") != std::string_view::npos) {
      std::string l(line);
      if (!l.empty() && l.back() == '\r') l.pop_back();
      std::smatch m;
      if (std::regex_search(l, m, kAlias)) return m[1];
      if (std::regex_search(l, m, kFrom)) return m[1].matched ? std::string(m[1]) : "functional";
      if (fallback.empty() && std::regex_search(l, m, kTorch))
        fallback = (m[1].matched ? std::string(m[1]) : "torch") + ".nn.functional";
    }
    start = end + 1;
  }
  return fallback;
}

std::optional<Edit> gelu_rewrite(const Finding& f, const Text& text, PyTree& tree, const std::string& functional) {
  size_t b = text.offset(f.range.begin), e = text.offset(f.range.end);
  TSNode root = tree.root();
  if (ts_node_is_null(root) || b >= e) return std::nullopt;
  // The matched code must be exactly one expression of the file.
  TSNode node = ts_node_descendant_for_byte_range(root, static_cast<uint32_t>(b), static_cast<uint32_t>(e));
  if (ts_node_start_byte(node) != b || ts_node_end_byte(node) != e || ts_node_has_error(node)) return std::nullopt;
  TSNode top = unparen(node);
  bool half = false;
  std::vector<TSNode> factors;
  if (is(top, "binary_operator") && operator_of(top, tree) == "/" &&
      is_number(ts_node_child_by_field_name(top, "right", 5), tree, 2.0)) {
    half = true;
    product_factors(ts_node_child_by_field_name(top, "left", 4), tree, factors);
  } else {
    product_factors(top, tree, factors);
  }
  std::optional<std::pair<std::string, TSNode>> gate;
  std::vector<TSNode> rest;
  for (TSNode factor : factors) {
    if (!half && is_number(factor, tree, 0.5)) {
      half = true;
    } else if (auto g = gate ? std::nullopt : one_plus_call(factor, tree)) {
      gate = g;
    } else {
      rest.push_back(factor);
    }
  }
  if (!half || !gate || rest.size() != 1) return std::nullopt;
  TSNode x = rest[0];
  if (!(is(x, "identifier") || is(x, "attribute") || is(x, "subscript")) || has_call(x)) return std::nullopt;
  std::string x_text = squeeze(tree.text(x));
  std::string arg = squeeze(tree.text(gate->second));
  if (arg.find(x_text) == std::string::npos) return std::nullopt;
  bool tanh = gate->first == "tanh";
  if (tanh && arg.find("0.044715") == std::string::npos) return std::nullopt;
  if (!tanh && arg.find("sqrt(2") == std::string::npos && arg.find("0.7071") == std::string::npos &&
      arg.find("1.4142") == std::string::npos && arg.find("SQRT") == std::string::npos &&
      arg.find("sqrt2") == std::string::npos)
    return std::nullopt;
  std::string call = functional + ".gelu(" + std::string(tree.text(x)) + ", approximate=\"" + (tanh ? "tanh" : "none") + "\")";
  // Keep the parentheses of a parenthesized match: `(0.5 * x * ...)` -> `(F.gelu(...))` is
  // needless; the replacement is an atom (a call), so it drops them.
  return Edit{b, e, call, "Replace with " + call};
}

// The name the file gives `torch` ("torch", "th"), "" when it does not import it.
std::string torch_name(const std::string& text) {
  static const std::regex kTorch(R"(^[ \t]*import[ \t]+torch(?:[ \t]+as[ \t]+(\w+))?[ \t]*(?:#.*)?\r?$)");
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    std::smatch m;
    if (line.find("torch") != std::string::npos && std::regex_search(line, m, kTorch)) return m[1].matched ? std::string(m[1]) : "torch";
    start = end + 1;
  }
  return "";
}

// `prefix.` at the start of a name (not after another name's character or a dot) replaced
// by `name.`; false when the prefix occurs and `name` is empty (the file lacks the import).
bool rename_module(std::string& code, std::string_view prefix, const std::string& name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  std::string out;
  for (size_t i = 0; i < code.size();) {
    if (code.compare(i, prefix.size(), prefix) == 0 && code.compare(i + prefix.size(), 1, ".") == 0 && (i == 0 || !ident(code[i - 1]))) {
      if (name.empty()) return false;
      out += name;
      i += prefix.size();
    } else {
      out += code[i++];
    }
  }
  code = std::move(out);
  return true;
}

// The engine's exact rewrite of a finding (Finding::rewrite), when its range is exactly
// one expression of the parse, written with the file's own names for torch and
// torch.nn.functional (the template writes `torch.` and `F.`).
std::optional<Edit> engine_rewrite(const Finding& f, const Text& text, PyTree& tree, const std::string& functional,
                                   const std::string& torch) {
  if (f.rewrite.empty() || !f.rewrite_range.valid()) return std::nullopt;
  size_t b = text.offset(f.rewrite_range.begin), e = text.offset(f.rewrite_range.end);
  TSNode root = tree.root();
  if (ts_node_is_null(root) || b >= e) return std::nullopt;
  TSNode node = ts_node_descendant_for_byte_range(root, static_cast<uint32_t>(b), static_cast<uint32_t>(e));
  while (!ts_node_is_null(node) && ts_node_start_byte(node) == b && ts_node_end_byte(node) == e && !ts_node_is_named(node))
    node = ts_node_parent(node);
  if (ts_node_is_null(node) || ts_node_start_byte(node) != b || ts_node_end_byte(node) != e || ts_node_has_error(node))
    return std::nullopt;
  std::string code = f.rewrite;
  if (!rename_module(code, "F", functional) || !rename_module(code, "torch", torch)) return std::nullopt;
  // A long call is named by its function: "Replace with F.scaled_dot_product_attention(...)".
  std::string shown = code.size() <= 80 || code.find('(') == std::string::npos ? code : code.substr(0, code.find('(')) + "(...)";
  return Edit{b, e, code, "Replace with " + shown};
}

}  // namespace

std::vector<std::optional<Edit>> safe_rewrites(const std::vector<Finding>& findings, const Text& text, bool cuda) {
  std::vector<std::optional<Edit>> out(findings.size());
  if (cuda) return out;
  PyTree tree(text.str());
  std::optional<std::string> functional;
  std::optional<std::string> torch;
  for (size_t i = 0; i < findings.size(); ++i) {
    if (findings[i].rule != "ACT001" && findings[i].rewrite.empty()) continue;
    if (!functional) functional = functional_name(text.str()), torch = torch_name(text.str());
    if (!findings[i].rewrite.empty()) out[i] = engine_rewrite(findings[i], text, tree, *functional, *torch);
    if (!out[i] && findings[i].rule == "ACT001" && !functional->empty()) out[i] = gelu_rewrite(findings[i], text, tree, *functional);
  }
  return out;
}

std::optional<Edit> suppression_edit(const Finding& f, const Text& text, bool cuda) {
  if (!f.range.valid()) return std::nullopt;
  const std::string& id = f.rule;
  size_t n = f.range.begin.line - 1;
  if (n >= text.line_count()) return std::nullopt;
  std::string_view line = text.line(n);
  size_t line_begin = text.line_start(n), line_end = line_begin + line.size();
  std::string_view trimmed = line.substr(0, line.find_last_not_of(" \t") + 1);
  if (!trimmed.empty() && trimmed.back() == '\\') return std::nullopt;  // continued line

  Edit edit;
  edit.title = "Ignore " + id + " on this line (" + (cuda ? "// " : "# ") + "mlsem: ignore[" + id + "])";
  std::string_view marker = "mlsem: ignore[";
  size_t comment = line.find(cuda ? "//" : "#");
  size_t existing = comment == std::string_view::npos ? comment : line.find(marker, comment);
  if (existing != std::string_view::npos && line.find(']', existing) != std::string_view::npos) {
    size_t close = line.find(']', existing);
    edit.begin = edit.end = line_begin + close;
    edit.text = ", " + id;
  } else {
    edit.begin = edit.end = line_end;
    // Two spaces before the comment, counting any the line already ends with.
    std::string gap = trimmed.size() + 1 < line.size() ? "" : trimmed.size() < line.size() ? " " : "  ";
    edit.text = gap + (cuda ? "// " : "# ") + std::string(marker) + id + "]";
  }
  std::string changed(line);
  changed.replace(edit.begin - line_begin, 0, edit.text);

  if (cuda) {
    // Same reading as the CUDA frontend: the first "//", then "mlsem: ignore[...]".
    size_t c = changed.find("//");
    size_t m = c == std::string::npos ? c : changed.find(marker, c);
    if (m == std::string::npos || m != (existing == std::string_view::npos ? changed.rfind(marker) : existing))
      return std::nullopt;
    return edit;
  }
  // The line as the Python frontend will read it must suppress the rule...
  auto directives = python::find_suppressions(changed);
  auto it = directives.find(1);
  if (it == directives.end() || std::find(it->second.begin(), it->second.end(), id) == it->second.end())
    return std::nullopt;
  // ...and the comment must not land inside a string that runs past the line.
  PyTree tree(text.str());
  TSNode root = tree.root();
  if (!ts_node_is_null(root) && line_end > line_begin) {
    TSNode at = ts_node_descendant_for_byte_range(root, static_cast<uint32_t>(line_end - 1), static_cast<uint32_t>(line_end));
    for (TSNode n = at; !ts_node_is_null(n); n = ts_node_parent(n))
      if ((is(n, "string") || is(n, "string_content")) && ts_node_end_byte(n) > line_end) return std::nullopt;
  }
  return edit;
}

}  // namespace mlsem::lsp
