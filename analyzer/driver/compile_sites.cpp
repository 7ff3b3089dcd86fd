// The compile step of the cross-file pass: the lines of a project that hand its model,
// or a part of it, to torch.compile (driver/project.h).
#include <algorithm>

#include "driver/project.h"

namespace mlsem::driver::project {
namespace {

// The last attribute `expr` names, without subscripts or a call's arguments:
// `self.model` -> model, `model.blocks[i]` -> blocks, `model_ae.encoder` -> encoder.
std::string last_name(std::string_view expr) {
  while (!expr.empty() && (expr.back() == ' ' || expr.back() == '\r' || expr.back() == '\t')) expr.remove_suffix(1);
  while (!expr.empty() && expr.back() == ']') {
    size_t open = expr.rfind('[');
    if (open == std::string_view::npos) return "";
    expr = expr.substr(0, open);
  }
  size_t b = expr.size();
  while (b > 0 && word_char(expr[b - 1])) --b;
  return lower_ascii(expr.substr(b));
}

}  // namespace

bool names_a_model(std::string_view expr) {
  std::string n = last_name(expr);
  if (n.empty()) return false;
  // What else projects compile: losses, optimizer steps, attention kernels, decoding steps.
  for (std::string_view other : {"loss", "fn", "func", "step", "mask", "attention", "attn", "forward", "token",
                                 "optim", "scaler", "sample", "generate", "criterion"})
    if (contains(n, other)) return false;
  if (n == "m" || n == "mod" || n == "net") return true;
  for (std::string_view part : {"model", "module", "net", "block", "layer", "encoder", "decoder", "transformer",
                                "backbone", "trunk", "unet", "vae", "dit", "tower"})
    if (contains(n, part)) return true;
  return false;
}

namespace {

// Whether the file sets `name` to True at its top level (`compile = True`, `compile: bool =
// True`): a switch that is on by default.
bool on_at_top(const std::vector<std::string_view>& lines, std::string_view name) {
  for (std::string_view l : lines) {
    if (!l.starts_with(name) || l.size() == name.size() || word_char(l[name.size()])) continue;
    std::string_view rest = l.substr(name.size());
    size_t eq = rest.find('=');
    if (eq == std::string_view::npos || (eq + 1 < rest.size() && rest[eq + 1] == '=')) continue;
    std::string_view value = stripped(rest.substr(eq + 1));
    if (value.starts_with("True") && (value.size() == 4 || !word_char(value[4]))) return true;
  }
  return false;
}

// Whether offset `at` of the line `l` is inside a one-line string literal.
bool in_string(std::string_view l, size_t at) {
  char quote = 0;
  for (size_t i = 0; i < at && i < l.size(); ++i) {
    char c = l[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '#') {
      return true;  // a comment: no code after it either
    } else if (c == '"' || c == '\'') {
      quote = c;
    }
  }
  return quote != 0;
}

}  // namespace

std::string switch_over(const std::vector<std::string_view>& lines, size_t at, std::string* function) {
  size_t level = indent(lines[at]);
  for (size_t j = at; j-- > 0 && level != kBlank && level > 0;) {
    size_t i = indent(lines[j]);
    if (i == kBlank || i >= level || closes_bracket(lines[j])) continue;
    level = i;
    std::string_view s = stripped(lines[j]);
    if (keyword(s, "def") || keyword(s, "async") || keyword(s, "class")) {
      if (function && !keyword(s, "class")) {
        std::string_view name = s.substr(s.find("def ") + 4);
        *function = std::string(name.substr(0, name.find('(')));
      }
      // An early exit at the top of the function: `if fast == 0: return m`.
      for (size_t k = j + 1; k < at; ++k) {
        std::string_view g = stripped(lines[k]);
        if (indent(lines[k]) == kBlank || indent(lines[k]) <= i || !keyword(g, "if")) continue;
        for (size_t n = k + 1; n < at && n < k + 4; ++n)
          if (indent(lines[n]) != kBlank && indent(lines[n]) > indent(lines[k])) {
            if (keyword(stripped(lines[n]), "return")) return std::string(g);
            break;
          }
      }
      return "";
    }
    if (keyword(s, "if") || keyword(s, "elif")) {
      std::string_view cond = s.substr(keyword(s, "if") ? 2 : 4);
      cond = stripped(cond);
      if (cond.ends_with(":")) cond.remove_suffix(1);
      // The main guard, and a type filter over modules (`if isinstance(m, Block):`), are no switches.
      if (cond.starts_with("__name__") || cond.starts_with("isinstance(") || cond.starts_with("hasattr(")) continue;
      bool name = !cond.empty() && std::all_of(cond.begin(), cond.end(), word_char);
      if (name && on_at_top(lines, cond)) continue;
      return std::string(s);
    }
    if (keyword(s, "else") || keyword(s, "try") || keyword(s, "except") || keyword(s, "while")) return std::string(s);
  }
  return "";
}

std::vector<CompileSite> compile_sites(std::string_view text) {
  std::vector<CompileSite> out;
  if (!contains(text, "compile(")) return out;
  // nn.Module.compile is torch's; Keras models have a compile(optimizer, loss) of their own.
  bool keras = contains(text, "keras");
  std::vector<std::string_view> lines = lines_of(text);
  bool in_docstring = false;
  for (size_t line = 0; line < lines.size(); ++line) {
    std::string_view l = lines[line];
    size_t start = static_cast<size_t>(l.data() - text.data());
    size_t quotes = 0;
    for (std::string_view q : {"\"\"\"", "'''"})
      for (size_t at = l.find(q); at != std::string_view::npos; at = l.find(q, at + 3)) ++quotes;
    bool was_docstring = in_docstring;
    if (quotes % 2 == 1) in_docstring = !in_docstring;
    if (was_docstring || quotes > 0) continue;  // docstrings and lines that open or close one
    size_t first = l.find_first_not_of(" \t");
    if (first == std::string_view::npos || l[first] == '#' || l[first] == '@') continue;
    for (size_t at = l.find("compile("); at != std::string_view::npos; at = l.find("compile(", at + 8)) {
      if (at == 0 || l[at - 1] != '.' || in_string(l, at)) continue;
      size_t r = at - 1;  // the receiver: the word chain before `.compile(`
      while (r > 0 && (word_char(l[r - 1]) || l[r - 1] == '.' || l[r - 1] == '[' || l[r - 1] == ']')) --r;
      std::string_view receiver = l.substr(r, at - 1 - r);
      std::string_view target;
      if (receiver == "torch") {
        // The first argument, which may start on the next line.
        size_t a = start + at + 8;
        while (a < text.size() && (text[a] == ' ' || text[a] == '\t' || text[a] == '\n' || text[a] == '\r')) ++a;
        size_t e = a;
        int depth = 0;
        for (; e < text.size() && e < a + 200; ++e) {
          char c = text[e];
          if (c == '(' || c == '[') ++depth;
          else if (c == ')' || c == ']') {
            if (depth-- == 0) break;
          } else if ((c == ',' || c == '\n' || c == '=') && depth == 0) break;
        }
        if (e < text.size() && text[e] == '=') continue;  // torch.compile(mode=...): a decorator's
        target = text.substr(a, e - a);
      } else if (!keras) {
        target = receiver;
      }
      if (target.empty() || !names_a_model(target)) continue;
      std::string_view code = l.substr(first);
      while (!code.empty() && (code.back() == ' ' || code.back() == '\r')) code.remove_suffix(1);
      CompileSite site{"", line, std::string(code.substr(0, 120)), "", "", ""};
      site.under = switch_over(lines, line, &site.function);
      out.push_back(std::move(site));
      break;
    }
  }
  return out;
}

}  // namespace mlsem::driver::project
