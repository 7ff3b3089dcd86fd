// The edits code actions offer: the GELU rewrite only where it is exact, suppression
// comments that the frontends then read back, and no edit where one would change code.
#include <gtest/gtest.h>

#include "lsp/actions.h"

namespace mlsem::lsp {
namespace {

// A finding of `rule` covering the first occurrence of `code` in `text`.
Finding finding_at(const std::string& text, const std::string& code, const std::string& rule = "ACT001") {
  size_t at = text.find(code);
  EXPECT_NE(at, std::string::npos) << code;
  Finding f;
  f.rule = rule;
  auto pos = [&](size_t offset) {
    uint32_t line = 1, col = 1;
    for (size_t i = 0; i < offset; ++i) {
      if (text[i] == '\n') ++line, col = 1;
      else ++col;
    }
    return Position{line, col};
  };
  f.range.begin = pos(at);
  f.range.end = pos(at + code.size());
  f.range.begin_byte = static_cast<uint32_t>(at);
  f.range.end_byte = static_cast<uint32_t>(at + code.size());
  return f;
}

std::optional<std::string> rewrite(const std::string& text, const std::string& code) {
  Text t(text);
  auto edits = safe_rewrites({finding_at(text, code)}, t, false);
  if (!edits[0]) return std::nullopt;
  std::string out = text;
  out.replace(edits[0]->begin, edits[0]->end - edits[0]->begin, edits[0]->text);
  return out;
}

const std::string kHeader = "import math\nimport torch\nimport torch.nn.functional as F\n\n";

TEST(LspActions, GeluRewrittenWhenTheMatchIsExactlyTheFormula) {
  std::string tanh = "0.5 * h.x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h.x + 0.044715 * h.x ** 3)))";
  EXPECT_EQ(rewrite(kHeader + "y = " + tanh + "\n", tanh), kHeader + "y = F.gelu(h.x, approximate=\"tanh\")\n");
  std::string erf = "x * (1.0 + torch.erf(x / math.sqrt(2.0))) / 2";
  EXPECT_EQ(rewrite(kHeader + "y = " + erf + "\n", erf), kHeader + "y = F.gelu(x, approximate=\"none\")\n");
  // The file's own name for torch.nn.functional.
  std::string other = "import torch\nfrom torch.nn import functional as nnf\n";
  std::string erf2 = "0.5 * x * (1 + torch.erf(x * 0.7071067811865476))";
  EXPECT_EQ(rewrite(other + "y = " + erf2 + "\n", erf2), other + "y = nnf.gelu(x, approximate=\"none\")\n");
  std::string lookalike = "from torch.nn import functional_helpers\nimport torch\n";
  EXPECT_EQ(rewrite(lookalike + "y = " + erf2 + "\n", erf2), lookalike + "y = torch.nn.functional.gelu(x, approximate=\"none\")\n");
  std::string bare = "import torch as th\n";
  EXPECT_EQ(rewrite(bare + "y = " + erf2 + "\n", erf2), bare + "y = th.nn.functional.gelu(x, approximate=\"none\")\n");
}

TEST(LspActions, NoGeluRewriteWhereItWouldChangeTheCode) {
  // x is a call: evaluated three times before, once after (dropout, a module with state).
  std::string call = "0.5 * f(x) * (1 + torch.tanh(0.79788 * (f(x) + 0.044715 * f(x) ** 3)))";
  EXPECT_EQ(rewrite(kHeader + "y = " + call + "\n", call), std::nullopt);
  // A range that is not one expression of the file: `2 * 0.5 * x * ...` groups as ((2*0.5)*x)*(...).
  std::string tail = "0.5 * x * (1 + torch.tanh(0.79788 * (x + 0.044715 * x ** 3)))";
  EXPECT_EQ(rewrite(kHeader + "y = 2 * " + tail + "\n", tail), std::nullopt);
  // Not GELU's shape: a different operand inside the tanh, a missing 0.5, no torch import.
  std::string wrong = "0.5 * x * (1 + torch.tanh(0.79788 * (z + 0.044715 * z ** 3)))";
  EXPECT_EQ(rewrite(kHeader + "y = " + wrong + "\n", wrong), std::nullopt);
  std::string no_half = "x * (1 + torch.tanh(0.79788 * (x + 0.044715 * x ** 3)))";
  EXPECT_EQ(rewrite(kHeader + "y = " + no_half + "\n", no_half), std::nullopt);
  EXPECT_EQ(rewrite("import numpy as np\ny = " + tail + "\n", tail), std::nullopt);
}

std::string applied(const std::string& text, const Edit& e) {
  std::string out = text;
  out.replace(e.begin, e.end - e.begin, e.text);
  return out;
}

TEST(LspActions, SuppressionCommentsAddedOrMerged) {
  std::string text = "def f(x):\n    return x.item()\n";
  auto e = suppression_edit(finding_at(text, "x.item()", "SYN001"), Text(text), false);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(applied(text, *e), "def f(x):\n    return x.item()  # mlsem: ignore[SYN001]\n");
  // Into the directive already on the line; after an ordinary comment.
  text = "y = a @ b  # mlsem: ignore[ATT001]\n";
  e = suppression_edit(finding_at(text, "a @ b", "ATT002"), Text(text), false);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(applied(text, *e), "y = a @ b  # mlsem: ignore[ATT001, ATT002]\n");
  text = "y = a @ b  # scores, 中文\r\nz = 1\r\n";
  e = suppression_edit(finding_at(text, "a @ b", "ATT001"), Text(text), false);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(applied(text, *e), "y = a @ b  # scores, 中文  # mlsem: ignore[ATT001]\r\nz = 1\r\n");
  // CUDA.
  text = "  out[i] = in[i * 32];\n";
  e = suppression_edit(finding_at(text, "in[i * 32]", "CU001"), Text(text), true);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(applied(text, *e), "  out[i] = in[i * 32];  // mlsem: ignore[CU001]\n");
}

TEST(LspActions, NoSuppressionCommentWhereItWouldChangeTheCode) {
  // A continued line, a line ending inside a multi-line string, a noqa that hides it.
  std::string text = "y = a @ \\\n    b\n";
  EXPECT_FALSE(suppression_edit(finding_at(text, "a @", "ATT001"), Text(text), false).has_value());
  text = "y = f(a @ b, \"\"\"doc\nmore\"\"\")\n";
  EXPECT_FALSE(suppression_edit(finding_at(text, "a @ b", "ATT001"), Text(text), false).has_value());
  text = "y = a @ b  # noqa: E501\n";
  EXPECT_FALSE(suppression_edit(finding_at(text, "a @ b", "ATT001"), Text(text), false).has_value());
}

}  // namespace
}  // namespace mlsem::lsp
