// Reading how attention code is written, for its SDPA fix (attention_fix.h): the
// operands at a product as the user spelled them there, the term a step adds to the
// scores, a scale's factor, einsum layouts. Internal to the attention passes.
#pragma once

#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/source.h"
#include "ir/ir.h"
#include "python/syntax.h"

namespace mlsem::python::attention {

constexpr size_t kMaxOperand = 60;  // longer operands are written as placeholders
constexpr size_t kMaxTerm = 90;     // the longest mask or bias written into attn_mask

inline bool is_one_of(std::string_view op, std::initializer_list<std::string_view> ops) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

inline const std::string* str_attr(const ir::Node& n, const char* key) {
  const ir::Attr* a = n.attr(key);
  return a ? std::get_if<std::string>(a) : nullptr;
}

inline bool flag(const ir::Node& n, const char* key) {
  const ir::Attr* a = n.attr(key);
  const bool* b = a ? std::get_if<bool>(a) : nullptr;
  return b && *b;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

inline bool is_ident(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// An operand that can be written in a one-line fix as it is.
inline bool writable(std::string_view s, size_t limit = kMaxOperand) {
  return !s.empty() && s.size() <= limit && s.find('\n') == std::string_view::npos && s.front() != '*';
}

// `a + b` needs parentheses inside a larger sum only when it is not a plain name or call.
inline std::string paren(std::string_view s) {
  bool plain = std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; });
  return plain ? std::string(s) : "(" + std::string(s) + ")";
}

class AttentionSyntax {
 public:
  AttentionSyntax(const SourceFile& file, TSNode root) : src_(file.text), root_(root), S(Syntax::get()) {}

  std::string_view text(TSNode n) const { return text_of(n, src_); }
  std::string line(const Range& r) const { return std::to_string(r.begin.line); }
  // Where the user sees a node: the call a helper's node was inlined through.
  std::string line(const ir::Node& n) const { return line(n.site.valid() ? n.site : n.range); }

  TSNode unparen(TSNode n) const;
  // The syntax node spanning exactly `r` (the outermost one), or null.
  TSNode exact(const Range& r) const;
  std::vector<TSNode> args(TSNode call, std::vector<std::pair<std::string_view, TSNode>>* keywords = nullptr) const;
  // The method or function a call names (`matmul` for torch.matmul and x.matmul), and
  // whether it is called on a tensor (`x.matmul(y)`) rather than as a function.
  std::string_view callee(TSNode call, TSNode* object = nullptr) const;
  struct Operands {
    TSNode a{}, b{};
    bool batched = false;  // bmm / baddbmm: 3-D operands
    TSNode bias{};         // baddbmm's input
    std::string subscripts;  // einsum's, without spaces or quotes
    bool ok = false;
  };

  Operands product_operands(TSNode n) const;
  // `x.transpose(-2, -1)`, `torch.transpose(x, 2, 3)`, `x.mT`, `x.permute(0, 1, 3, 2)`:
  // the x whose last two axes were swapped, or null.
  TSNode untransposed(TSNode n, bool batched) const;
  // The variable a node's value is assigned to when it is a whole right-hand side.
  std::string assigned_name(const ir::Node& n) const;
  static bool inside(const Range& r, TSNode n);
  // The operand of a binary step (`scores + bias`, `scores += bias`) that is not the
  // scores: null when the two cannot be told apart.
  TSNode other_operand(TSNode l, TSNode r, const ir::Node& chain, const ir::Node& term) const;
  // The syntax of the term a step adds to the scores (`chain_in` is the scores' side).
  TSNode added_term(const ir::Function& fn, ir::NodeId step, ir::NodeId chain_in) const;
  std::string factor_text(const ir::Function& fn, const ir::Node& scale) const;
  // "P i j, P j k -> P i k": a batched matmul spelled as an einsum.
  static bool matmul_form(const std::string& sub);
  // Scores "P i d, P j d -> P i j" and output "Q i j, Q j e -> Q i e": q, k, v as
  // (..., length, head_dim). 0: not so; 1: so; 2: so, but the output's axes are in
  // another order (`...hqk,...hkc->...qhc`).
  static int standard_einsums(const std::string& scores, const std::string& out);

 protected:
  std::string_view src_;
  TSNode root_;
  const Syntax& S;
};

}  // namespace mlsem::python::attention
