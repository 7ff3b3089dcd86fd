// The compile step of the cross-file pass: the lines of a project that hand its model,
// or a part of it, to torch.compile (driver/project.h).
#include <cctype>

#include "driver/project.h"

namespace mlsem::driver::project {
namespace {

bool has(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

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
  std::string out(expr.substr(b));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool names_a_model(std::string_view expr) {
  std::string n = last_name(expr);
  if (n.empty()) return false;
  // What else projects compile: losses, optimizer steps, attention kernels, decoding steps.
  for (std::string_view other : {"loss", "fn", "func", "step", "mask", "attention", "attn", "forward", "token",
                                 "optim", "scaler", "sample", "generate", "criterion"})
    if (has(n, other)) return false;
  if (n == "m" || n == "mod" || n == "net") return true;
  for (std::string_view part : {"model", "module", "net", "block", "layer", "encoder", "decoder", "transformer",
                                "backbone", "trunk", "unet", "vae", "dit", "tower"})
    if (has(n, part)) return true;
  return false;
}

std::vector<std::pair<size_t, std::string>> compile_sites(std::string_view text) {
  std::vector<std::pair<size_t, std::string>> out;
  if (!has(text, "compile(")) return out;
  // nn.Module.compile is torch's; Keras models have a compile(optimizer, loss) of their own.
  bool keras = has(text, "keras");
  size_t line = 0;
  bool in_docstring = false;
  for (size_t begin = 0; begin < text.size(); ++line) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(begin, end - begin);
    size_t start = begin;
    begin = end + 1;
    size_t quotes = 0;
    for (std::string_view q : {"\"\"\"", "'''"})
      for (size_t at = l.find(q); at != std::string_view::npos; at = l.find(q, at + 3)) ++quotes;
    bool was_docstring = in_docstring;
    if (quotes % 2 == 1) in_docstring = !in_docstring;
    if (was_docstring || quotes > 0) continue;  // docstrings and lines that open or close one
    size_t first = l.find_first_not_of(" \t");
    if (first == std::string_view::npos || l[first] == '#' || l[first] == '@') continue;
    for (size_t at = l.find("compile("); at != std::string_view::npos; at = l.find("compile(", at + 8)) {
      if (at == 0 || l[at - 1] != '.') continue;
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
      out.emplace_back(line, std::string(code.substr(0, 120)));
      break;
    }
  }
  return out;
}

}  // namespace mlsem::driver::project
