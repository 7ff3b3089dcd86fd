// Bad and unusual input: syntax errors, empty files, non-ASCII text, pathological
// nesting. The frontend never throws or crashes, and says what it skipped.
#include <gtest/gtest.h>

#include <thread>

#include "python_test_helpers.h"

namespace mlsem::pytest {
namespace {

TEST(PythonRobustness, SyntaxErrorKeepsIntactFunctions) {
  ir::Module m = build(R"(import torch
def good(x):
    return torch.softmax(x, dim=-1)

def bad(x:
    return x

def also_good(y):
    return y.exp()
)");
  SCOPED_TRACE(ir::to_text(m));
  ASSERT_FALSE(m.diagnostics.empty());
  EXPECT_EQ(m.diagnostics[0].range.begin.line, 5u);
  EXPECT_EQ(m.diagnostics[0].path, "snippet.py");
  EXPECT_EQ(m.diagnostics[0].message.rfind("syntax error", 0), 0u);
  const ir::Function* g = function(m, "good");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(nodes_with_op(*g, "softmax").size(), 1u);
  const ir::Function* a = function(m, "also_good");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(nodes_with_op(*a, "exp").size(), 1u);
}

TEST(PythonRobustness, UnclosedParenthesisIsNamed) {
  ir::Module m = build("import torch\nx = torch.ones(3)\ny = foo(x, 2\n");
  ASSERT_EQ(m.diagnostics.size(), 1u);
  EXPECT_EQ(m.diagnostics[0].message, "syntax error: missing ')'");
  EXPECT_EQ(m.diagnostics[0].range.begin.line, 3u);
  EXPECT_EQ(m.diagnostics[0].range.begin.column, 1u);
}

TEST(PythonRobustness, EmptyAndCommentOnlyFiles) {
  for (const char* src : {"", "\n\n", "# just a comment\n", "\"\"\"docstring\"\"\"\n"}) {
    ir::Module m = build(src);
    EXPECT_TRUE(m.functions.empty()) << src;
    EXPECT_TRUE(m.diagnostics.empty()) << src;
    EXPECT_EQ(m.language, "python");
  }
}

TEST(PythonRobustness, NonAsciiColumnsCountBytes) {
  ir::Module m = build("def f(x):\n    # комментарий\n    σ = x.softmax(-1)  # ü\n    s = \"日本語\"\n    return σ\n");
  SCOPED_TRACE(ir::to_text(m));
  EXPECT_TRUE(m.diagnostics.empty());
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  auto sms = nodes_with_op(*f, "softmax");
  ASSERT_EQ(sms.size(), 1u);
  const Range& r = f->nodes[sms[0]].range;
  // "    σ = " is 4 + 2 + 3 bytes, so `x` starts at byte column 10.
  EXPECT_EQ(r.begin.line, 3u);
  EXPECT_EQ(r.begin.column, 10u);
  SourceFile file{"snippet.py", "def f(x):\n    # комментарий\n    σ = x.softmax(-1)  # ü\n    s = \"日本語\"\n    return σ\n"};
  EXPECT_EQ(file.slice(r), "x.softmax(-1)");
}

TEST(PythonRobustness, DeepParenthesesDoNotRecurse) {
  std::string src = "def f(x):\n    return " + std::string(5000, '(') + "x.exp()" + std::string(5000, ')') + "\n";
  ir::Module m = build(src);
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(nodes_with_op(*f, "exp").size(), 1u);
}

TEST(PythonRobustness, DeeplyNestedCallsAreCutAndReported) {
  std::string expr = "x";
  for (int i = 0; i < 5000; ++i) expr = "g(" + expr + ")";
  ir::Module m = build("def f(x):\n    y = x.exp()\n    return " + expr + "\n");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(nodes_with_op(*f, "exp").size(), 1u) << "the rest of the function is still analyzed";
  bool reported = false;
  for (const Diagnostic& d : m.diagnostics)
    if (d.message.find("nested more than") != std::string::npos && d.range.begin.line == 3) reported = true;
  EXPECT_TRUE(reported);
}

TEST(PythonRobustness, LongSumIsOneNaryAdd) {
  std::string sum = "a";
  for (int i = 0; i < 20000; ++i) sum += " + a";
  ir::Module m = build("def f(a):\n    return " + sum + "\n");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  auto adds = nodes_with_op(*f, "add");
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(f->nodes[adds[0]].inputs.size(), 20001u);
  EXPECT_TRUE(m.diagnostics.empty());
}

TEST(PythonRobustness, LongSubtractionChainIsCutAndReported) {
  std::string chain = "a";
  for (int i = 0; i < 20000; ++i) chain += " - a";
  ir::Module m = build("def f(a):\n    return " + chain + "\n");
  ASSERT_NE(function(m, "f"), nullptr);
  ASSERT_EQ(m.diagnostics.size(), 1u);
  EXPECT_NE(m.diagnostics[0].message.find("nested more than"), std::string::npos);
}

TEST(PythonRobustness, BinaryGarbageGivesDiagnosticsNotCrashes) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>((i * 7919) % 256));
  ir::Module m = build(junk);
  EXPECT_FALSE(m.diagnostics.empty());
  EXPECT_LE(m.diagnostics.size(), 51u) << "syntax errors are capped";
}

// Found by fuzz_python (tests/fuzz/python/ddp-step-in-for-else-crash.py): under DDP, an
// optimizer step in the `else` of a `for` or `try` inside the training loop read the
// condition of the else's owner, which a `for` or `try` does not have (a null node, whose
// text_of now is empty).
TEST(PythonRobustness, AStepInTheElseOfAForOrTryUnderDdpIsNoCrash) {
  ir::Module m = build(R"(import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train_accumulating(model, loader, optimizer, accum):
    model = DDP(model)
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if (i + 1) % accum == 0:
            optimizer.step()


def train_for_else(model, loader, optimizer, accum):
    model = DDP(model)
    for i, x in enumerate(loader):
        model(x).sum().backward()
        for group in optimizer.param_groups:
            pass
        else:
            optimizer.step()


def train_try_else(model, loader, optimizer):
    model = DDP(model)
    for x in loader:
        model(x).sum().backward()
        try:
            pass
        except RuntimeError:
            pass
        else:
            optimizer.step()
)");
  SCOPED_TRACE(ir::to_text(m));
  for (const char* fn : {"train_accumulating", "train_for_else", "train_try_else"}) ASSERT_NE(function(m, fn), nullptr) << fn;
  EXPECT_EQ(nodes_with_op(*function(m, "train_accumulating"), "ddp_accumulation").size(), 1u);
  EXPECT_TRUE(nodes_with_op(*function(m, "train_for_else"), "ddp_accumulation").empty());
  EXPECT_TRUE(nodes_with_op(*function(m, "train_try_else"), "ddp_accumulation").empty());
}

TEST(PythonRobustness, ConcurrentBuildsAgree) {
  const std::string src = "import torch\ndef f(q, k):\n    return torch.softmax(q @ k.T, dim=-1)\n";
  std::string expected = ir::to_text(build(src));
  std::vector<std::string> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < 50; ++r) got[i] = ir::to_text(build(src));
    });
  for (auto& t : threads) t.join();
  for (const std::string& g : got) EXPECT_EQ(g, expected);
}

}  // namespace
}  // namespace mlsem::pytest
