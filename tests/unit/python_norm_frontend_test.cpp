// Python frontend spellings the norm and fusion rules rely on: dtype variables in
// .to(), torch.var_mean, and nn.Sequential layers located at their constructors.
#include <gtest/gtest.h>

#include "python_test_helpers.h"

namespace mlsem::pytest {
namespace {

TEST(PythonCasts, ToADtypeVariableIsACastAndToADeviceIsNot) {
  ir::Module m = build(R"(import torch
def f(x, w, device):
    input_dtype = x.dtype
    y = x.to(torch.float32)
    y = y * 2
    z = y.to(input_dtype)
    return w * z.to(device)
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto casts = nodes_with_op(*f, "cast");
  ASSERT_EQ(casts.size(), 2u);
  EXPECT_EQ(attr_text(f->nodes[casts[0]], "dtype"), "\"float32\"");
  EXPECT_EQ(attr_text(f->nodes[casts[1]], "dtype"), "\"like\"");
  // .to(device) is a move: the product reads the cast directly.
  const ir::Node& last = f->nodes.back();
  EXPECT_EQ(last.op, "mul");
  EXPECT_EQ(last.inputs.at(1), casts[1]);
}

TEST(PythonReductions, VarMeanGivesTheVarianceAndTheMeanOverTheSameDims) {
  ir::Module m = build(R"(import torch
def f(x):
    var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto vars = nodes_with_op(*f, "var");
  auto means = nodes_with_op(*f, "mean");
  ASSERT_EQ(vars.size(), 1u);
  ASSERT_EQ(means.size(), 1u);
  EXPECT_EQ(attr_text(f->nodes[vars[0]], "dim"), "-1");
  EXPECT_EQ(attr_text(f->nodes[means[0]], "dim"), "-1");
  EXPECT_TRUE(flag(f->nodes[means[0]], "keepdim"));
  EXPECT_FALSE(flag(f->nodes[vars[0]], "unbiased"));
  EXPECT_EQ(f->nodes[vars[0]].attrs.count("unbiased"), 1u);
  EXPECT_EQ(f->nodes[means[0]].attrs.count("unbiased"), 0u);
  auto subs = nodes_with_op(*f, "sub");
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(f->nodes[subs[0]].inputs.at(1), means[0]);
}

TEST(PythonModules, SequentialLayersTakeTheirConstructorsRange) {
  ir::Module m = build(R"(import torch.nn as nn
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(d, 4 * d),
            nn.GELU(),
            nn.Linear(4 * d, d),
        )

    def forward(self, x):
        return self.mlp(x)
)");
  const ir::Function* f = function(m, "Block.forward");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto linears = nodes_with_op(*f, "linear");
  auto gelus = nodes_with_op(*f, "gelu");
  ASSERT_EQ(linears.size(), 2u);
  ASSERT_EQ(gelus.size(), 1u);
  // Lines count from 1: the constructors are on lines 6, 7 and 8, the call on line 12.
  EXPECT_EQ(f->nodes[linears[0]].range.begin.line, 6u);
  EXPECT_EQ(f->nodes[gelus[0]].range.begin.line, 7u);
  EXPECT_EQ(f->nodes[linears[1]].range.begin.line, 8u);
  EXPECT_EQ(attr_text(f->nodes[linears[1]], "module"), "\"self.mlp.2\"");
}

}  // namespace
}  // namespace mlsem::pytest
