// Graph breaks in code torch.compile traces (analyzer/python/graph_breaks.cpp): which
// functions are traced, which constructs become `graph_break` nodes, and which do not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "python_test_helpers.h"

namespace mlsem {
namespace {

using pytest::build;

// A text attribute's value, unquoted; "<absent>" when the node has none.
std::string attr_text(const ir::Node& n, const std::string& key) {
  const ir::Attr* a = n.attr(key);
  return a && std::holds_alternative<std::string>(*a) ? std::get<std::string>(*a) : "<absent>";
}

struct Break {
  std::string function, kind, callee;
  uint32_t line;
};

std::vector<Break> breaks(const ir::Module& m) {
  std::vector<Break> out;
  for (const ir::Function& f : m.functions)
    for (const ir::Node& n : f.nodes)
      if (n.op == "graph_break")
        out.push_back({f.name, attr_text(n, "kind"), attr_text(n, "callee"), n.range.begin.line});
  return out;
}

std::string dump(const std::vector<Break>& bs) {
  std::string s;
  for (const Break& b : bs) s += b.function + ":" + std::to_string(b.line) + " " + b.kind + " " + b.callee + "\n";
  return s;
}

bool has(const std::vector<Break>& bs, const std::string& fn, const std::string& kind, uint32_t line) {
  for (const Break& b : bs)
    if (b.function == fn && b.kind == kind && b.line == line) return true;
  return false;
}

const ir::Node* break_at(const ir::Module& m, uint32_t line) {
  for (const ir::Function& f : m.functions)
    for (const ir::Node& n : f.nodes)
      if (n.op == "graph_break" && n.range.begin.line == line) return &n;
  return nullptr;
}

TEST(PythonGraphBreaks, DecoratedFunctionReadsAndBranches) {
  ir::Module m = build(
      "import torch\n"                                  // 1
      "@torch.compile\n"                                // 2
      "def f(x):\n"                                     // 3
      "    if x.shape[1] > 4 and x.dim() == 2:\n"       // 4: shapes, not a break
      "        x = x + 1\n"                             // 5
      "    if x.sum() > 0:\n"                           // 6: data-dependent
      "        x = x * 2\n"                             // 7
      "    print(x.shape)\n"                            // 8
      "    s = x.mean().item()\n"                       // 9
      "    v = x.tolist()\n"                            // 10
      "    n = int(x.abs().max())\n"                    // 11
      "    while (x > 1).any():\n"                      // 12
      "        x = x / 2\n"                             // 13
      "    idx = x.nonzero()\n"                         // 14
      "    y = x[x > 0]\n"                              // 15
      "    x[x < 0] = 0\n"                              // 16: masked fill, traced
      "    h = x.cpu()\n"                               // 17: traced
      "    return x if x.max() < 3 else -x\n"           // 18
      "def g(x):\n"                                     // 19: not compiled
      "    return x.sum().item()\n");                   // 20
  std::vector<Break> bs = breaks(m);
  EXPECT_TRUE(has(bs, "f", "branch", 6)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "print", 8)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "item", 9)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "tolist", 10)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "scalar", 11)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "branch", 12)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "dynamic_shape", 14)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "dynamic_shape", 15)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "branch", 18)) << dump(bs);
  for (const Break& b : bs) {
    EXPECT_NE(b.line, 4u) << dump(bs);
    EXPECT_NE(b.line, 16u) << dump(bs);
    EXPECT_NE(b.line, 17u) << dump(bs);
    EXPECT_NE(b.function, "g") << dump(bs);
  }
  const ir::Node* item = break_at(m, 9);
  ASSERT_TRUE(item);
  EXPECT_EQ(attr_text(*item, "via"), "decorator");
  EXPECT_NE(attr_text(*item, "traced").find("decorated @torch.compile (line 2)"), std::string::npos)
      << attr_text(*item, "traced");
}

TEST(PythonGraphBreaks, ModulePassedToCompileTracesForwardHelpersAndSubmodules) {
  ir::Module m = build(
      "import torch\n"                                  // 1
      "import torch.nn as nn\n"                         // 2
      "class Sub(nn.Module):\n"                         // 3
      "    def forward(self, x):\n"                     // 4
      "        print('sub')\n"                          // 5
      "        return x\n"                              // 6
      "class Other(nn.Module):\n"                       // 7: never built by Net
      "    def forward(self, x):\n"                     // 8
      "        print('other')\n"                        // 9
      "        return x\n"                              // 10
      "def helper(x):\n"                                // 11
      "    return x.max().item()\n"                     // 12
      "class Net(nn.Module):\n"                         // 13
      "    def __init__(self):\n"                       // 14
      "        super().__init__()\n"                    // 15
      "        self.sub = Sub()\n"                      // 16
      "    def stats(self, x):\n"                       // 17
      "        return x.tolist()\n"                     // 18
      "    def forward(self, x):\n"                     // 19
      "        x = self.sub(x)\n"                       // 20
      "        self.stats(x)\n"                         // 21
      "        return helper(x)\n"                      // 22
      "model = Net().cuda()\n"                          // 23
      "model = torch.compile(model, mode='max-autotune')\n");  // 24
  std::vector<Break> bs = breaks(m);
  EXPECT_TRUE(has(bs, "Sub.forward", "print", 5)) << dump(bs);
  EXPECT_TRUE(has(bs, "helper", "item", 12)) << dump(bs);
  EXPECT_TRUE(has(bs, "Net.stats", "tolist", 18)) << dump(bs);
  for (const Break& b : bs) EXPECT_NE(b.function, "Other.forward") << dump(bs);
  const ir::Node* sub = break_at(m, 5);
  ASSERT_TRUE(sub);
  EXPECT_EQ(attr_text(*sub, "via"), "submodule");
  const ir::Node* h = break_at(m, 12);
  ASSERT_TRUE(h);
  EXPECT_EQ(attr_text(*h, "via"), "callee");
  EXPECT_NE(attr_text(*h, "traced").find("passed to torch.compile (line 24)"), std::string::npos)
      << attr_text(*h, "traced");
}

TEST(PythonGraphBreaks, CompileGuardsDisabledFunctionsAndErrorPaths) {
  ir::Module m = build(
      "import torch\n"                                          // 1
      "@torch.compiler.disable\n"                               // 2
      "def log(x):\n"                                           // 3
      "    print(x.sum().item())\n"                             // 4
      "@torch.compile(fullgraph=False)\n"                       // 5
      "def f(x, debug=False):\n"                                // 6
      "    log(x)\n"                                            // 7
      "    if not torch.compiler.is_compiling():\n"             // 8
      "        print(x.sum().item())\n"                         // 9
      "    if torch._dynamo.is_compiling():\n"                  // 10
      "        x = x + 1\n"                                     // 11
      "    else:\n"                                             // 12
      "        print('eager')\n"                                // 13
      "    if x.ndim != 2:\n"                                   // 14
      "        raise ValueError(f'bad {x.sum().item()}')\n"     // 15
      "    try:\n"                                              // 16
      "        x = x.exp()\n"                                   // 17
      "    except RuntimeError:\n"                              // 18
      "        print('overflow')\n"                             // 19
      "    assert (x > 0).all(), f'{x.min().item()}'\n"         // 20
      "    if debug:\n"                                         // 21
      "        print(x.shape)\n"                                // 22
      "    if torch.compiler.is_compiling():\n"                 // 23
      "        return x\n"                                      // 24
      "    print('eager only')\n"                               // 25
      "    return x\n");                                        // 26
  std::vector<Break> bs = breaks(m);
  ASSERT_EQ(bs.size(), 1u) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "print", 22)) << dump(bs);
  const ir::Node* dbg = break_at(m, 22);
  ASSERT_TRUE(dbg);
  EXPECT_EQ(attr_text(*dbg, "debug_guard"), "debug");
  EXPECT_TRUE(pytest::flag(*dbg, "conditional"));
}

TEST(PythonGraphBreaks, CalleesThroughImportsAndBoundConditions) {
  ir::Module m = build(
      "import logging, time\n"                      // 1
      "import numpy as np\n"                        // 2
      "import torch\n"                              // 3
      "from time import perf_counter\n"             // 4
      "logger = logging.getLogger(__name__)\n"      // 5
      "@torch.compile\n"                            // 6
      "def f(x):\n"                                 // 7
      "    t = perf_counter()\n"                    // 8
      "    logger.info('step')\n"                   // 9
      "    r = np.random.rand()\n"                  // 10
      "    flag = x.sum() > 0\n"                    // 11
      "    if flag:\n"                              // 12
      "        x = x + r\n"                         // 13
      "    if torch.equal(x, x):\n"                 // 14
      "        x = x * 2\n"                         // 15
      "    return x\n");                            // 16
  std::vector<Break> bs = breaks(m);
  auto callee_at = [&](uint32_t line) {
    const ir::Node* n = break_at(m, line);
    return n ? attr_text(*n, "callee") : std::string("<none>");
  };
  EXPECT_EQ(callee_at(8), "time.perf_counter") << dump(bs);
  EXPECT_EQ(callee_at(9), "logging.Logger.info") << dump(bs);
  EXPECT_EQ(callee_at(10), "numpy.random.rand") << dump(bs);
  EXPECT_TRUE(has(bs, "f", "branch", 12)) << dump(bs);
  EXPECT_TRUE(has(bs, "f", "branch", 14)) << dump(bs);
}

TEST(PythonGraphBreaks, CaptureSettingsAndFilesWithoutCompile) {
  ir::Module captured = build(
      "import torch\n"
      "torch._dynamo.config.capture_scalar_outputs = True\n"
      "@torch.compile\n"
      "def f(x):\n"
      "    return x * x.sum().item()\n");
  const ir::Node* n = break_at(captured, 5);
  ASSERT_TRUE(n);
  EXPECT_TRUE(pytest::flag(*n, "scalar_capture"));

  ir::Module plain = build(
      "import torch\n"
      "def f(x):\n"
      "    print(x.sum().item())\n"
      "    return x\n");
  EXPECT_TRUE(breaks(plain).empty());

  ir::Module test = python::build_ir(SourceFile{"tests/test_compile.py",
                                                "import torch\n"
                                                "@torch.compile\n"
                                                "def f(x):\n"
                                                "    print(x)\n"
                                                "    return x\n"});
  EXPECT_TRUE(breaks(test).empty()) << "tests compile code that breaks on purpose";
}

}  // namespace
}  // namespace mlsem
