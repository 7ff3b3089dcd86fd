// Every spelling of scaled dot-product attention lowers to the same IR shape:
// softmax <- mask <- scale <- matmul(q, transpose(k)), and the output matmul(probs, v).
#include <gtest/gtest.h>

#include "python_test_helpers.h"

namespace mlsem::pytest {
namespace {

// Checks the shape every spelling must produce in function `fn_name`.
void expect_attention(const std::string& source, const std::string& fn_name, bool expect_mask = true) {
  ir::Module m = build(source);
  SCOPED_TRACE(ir::to_text(m));
  ASSERT_TRUE(m.diagnostics.empty());
  const ir::Function* f = function(m, fn_name);
  ASSERT_NE(f, nullptr);
  auto softmaxes = nodes_with_op(*f, "softmax");
  ASSERT_EQ(softmaxes.size(), 1u);
  ir::NodeId sm = softmaxes[0];
  EXPECT_EQ(attr_text(f->nodes[sm], "dim"), "-1");
  std::vector<std::string> want = expect_mask ? std::vector<std::string>{"softmax", "mask", "scale", "matmul"}
                                              : std::vector<std::string>{"softmax", "scale", "matmul"};
  std::vector<std::string> got = chain(*f, sm, want.size());
  ASSERT_EQ(got, want);
  // The scores matmul reads k through a transpose.
  ir::NodeId scores = sm;
  for (size_t i = 1; i < want.size(); ++i) scores = input_id(*f, scores, 0);
  const ir::Node* kt = input(*f, scores, 1);
  ASSERT_NE(kt, nullptr);
  EXPECT_EQ(kt->op, "transpose");
  // The scale's factor is a scalar involving a square root.
  ir::NodeId scale = input_id(*f, expect_mask ? input_id(*f, sm, 0) : sm, 0);
  EXPECT_EQ(f->nodes[scale].op, "scale");
  EXPECT_TRUE(flag(f->nodes[scale], "sqrt_like")) << "scale factor not recognized as 1/sqrt(d)";
  // Somewhere the probabilities (maybe through dropout) are multiplied with v.
  bool output = false;
  for (ir::NodeId mm : nodes_with_op(*f, "matmul")) {
    ir::NodeId a = input_id(*f, mm, 0);
    if (a == sm || (a != ir::kNoNode && f->nodes[a].op == "dropout" && input_id(*f, a, 0) == sm)) output = true;
  }
  EXPECT_TRUE(output) << "no matmul(softmax, v)";
}

TEST(PythonAttention, NanoGptOperatorAtWithCausalBuffer) {
  const std::string src = R"(import math
import torch
import torch.nn as nn
from torch.nn import functional as F

class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                    .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        return y.transpose(1, 2).contiguous().view(B, T, C)
)";
  expect_attention(src, "CausalSelfAttention.forward");
  ir::Module m = build(src);
  const ir::Function* f = function(m, "CausalSelfAttention.forward");
  ASSERT_NE(f, nullptr);
  auto masks = nodes_with_op(*f, "mask");
  ASSERT_EQ(masks.size(), 1u);
  const ir::Node& mask = f->nodes[masks[0]];
  EXPECT_TRUE(flag(mask, "causal")) << "the buffer registered from torch.tril is a causal mask";
  EXPECT_EQ(attr_text(mask, "kind"), "\"fill\"");
  EXPECT_EQ(attr_text(mask, "value"), "-inf");
  EXPECT_EQ(mask.range.begin.line, 23u);
  // The scale multiplies (1/sqrt): divide=false.
  const ir::Node& scale = f->nodes[nodes_with_op(*f, "scale")[0]];
  EXPECT_FALSE(flag(scale, "divide"));
  // The dropout is the module from __init__.
  auto drops = nodes_with_op(*f, "dropout");
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(attr_text(f->nodes[drops[0]], "module"), "\"self.attn_dropout\"");
}

TEST(PythonAttention, TorchMatmulWhereAndTorchSoftmax) {
  expect_attention(R"(import math, torch
def attn(q, k, v, mask):
    d = q.size(-1)
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    s = torch.where(mask, s, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v)
)", "attn");
  ir::Module m = build(R"(import math, torch
def attn(q, k, v, mask):
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    s = torch.where(mask, s, float("-inf"))
    return torch.softmax(s, dim=-1)
)");
  const ir::Function* f = function(m, "attn");
  ASSERT_NE(f, nullptr);
  const ir::Node& mask = f->nodes[nodes_with_op(*f, "mask").at(0)];
  EXPECT_EQ(attr_text(mask, "kind"), "\"where\"");
  EXPECT_FALSE(flag(mask, "causal"));
  const ir::Node& scale = f->nodes[nodes_with_op(*f, "scale").at(0)];
  EXPECT_TRUE(flag(scale, "divide"));
  // The transposed operand is the parameter k itself.
  const ir::Node& t = f->nodes[nodes_with_op(*f, "transpose").at(0)];
  EXPECT_EQ(attr_text(f->nodes[t.inputs.at(0)], "name"), "\"k\"");
  EXPECT_EQ(attr_text(t, "dim0"), "-2");
}

TEST(PythonAttention, EinsumWithAliasedFunctionalAndAdditiveMask) {
  const std::string src = R"(import torch
import torch.nn.functional as Fn
def attn(q, k, v, causal_mask, scale):
    s = torch.einsum('bhid,bhjd->bhij', q, k) * scale ** 0.5
    s = s + causal_mask
    p = s.softmax(dim=-1)
    p = Fn.dropout(p, p=0.1)
    return torch.einsum('bhij,bhjd->bhid', p, v)
)";
  expect_attention(src, "attn");
  ir::Module m = build(src);
  const ir::Function* f = function(m, "attn");
  ASSERT_NE(f, nullptr);
  const ir::Node& mask = f->nodes[nodes_with_op(*f, "mask").at(0)];
  EXPECT_EQ(attr_text(mask, "kind"), "\"additive\"");
  EXPECT_TRUE(flag(mask, "causal")) << "a mask named causal_mask is causal";
  // einsum contracting d makes k's transpose explicit; the second einsum needs none.
  auto transposes = nodes_with_op(*f, "transpose");
  ASSERT_EQ(transposes.size(), 1u);
  EXPECT_EQ(attr_text(f->nodes[f->nodes[transposes[0]].inputs.at(0)], "name"), "\"k\"");
  const ir::Node& drop = f->nodes[nodes_with_op(*f, "dropout").at(0)];
  EXPECT_EQ(attr_text(drop, "p"), "0.1");
  EXPECT_EQ(attr_text(drop, "callee"), "\"torch.nn.functional.dropout\"");
}

TEST(PythonAttention, BaddbmmAlphaIsTheScale) {
  expect_attention(R"(import math, torch
def attn(q, k, v, mask):
    s = torch.baddbmm(torch.empty(q.size(0), q.size(1), k.size(1)), q, k.transpose(1, 2),
                      beta=0, alpha=1 / math.sqrt(q.size(-1)))
    s = s.masked_fill(mask, -1e9)
    p = torch.nn.functional.softmax(s, -1)
    return torch.bmm(p, v)
)", "attn", true);
}

TEST(PythonAttention, BmmWithScalarPowerAndTrilMask) {
  const std::string src = R"(import torch
from torch.nn import functional as F
def attn(q, k, v):
    d = q.shape[-1]
    s = torch.bmm(q, k.transpose(1, 2)) * d ** -0.5
    mask = torch.tril(torch.ones(8, 8))
    s = s.masked_fill(mask == 0, float('-inf'))
    return torch.bmm(F.softmax(s, dim=-1), v)
)";
  expect_attention(src, "attn");
  ir::Module m = build(src);
  const ir::Function* f = function(m, "attn");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(flag(f->nodes[nodes_with_op(*f, "mask").at(0)], "causal")) << "mask traced to torch.tril";
}

TEST(PythonAttention, MethodMatmulDivAndSoftmaxModule) {
  const std::string src = R"(from torch import nn, einsum
class Attn(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)
        self.drop = nn.Dropout(0.1)
        self.temperature = (dim // heads) ** 0.5

    def forward(self, q, k, v, attn_mask):
        s = q.matmul(k.transpose(-1, -2)).div(self.temperature)
        s = s.masked_fill(attn_mask, float('-inf'))
        return self.drop(self.softmax(s)).matmul(v)
)";
  expect_attention(src, "Attn.forward");
  ir::Module m = build(src);
  const ir::Function* f = function(m, "Attn.forward");
  ASSERT_NE(f, nullptr);
  const ir::Node& sm = f->nodes[nodes_with_op(*f, "softmax").at(0)];
  EXPECT_EQ(attr_text(sm, "module"), "\"self.softmax\"");
  EXPECT_EQ(attr_text(f->nodes[nodes_with_op(*f, "dropout").at(0)], "p"), "0.1");
}

TEST(PythonAttention, SelfScaleFromInitIsSqrtLike) {
  ir::Module m = build(R"(import torch.nn as nn
class A(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5
    def forward(self, q, k):
        return ((q @ k.mT) * self.scale).softmax(-1)
)");
  const ir::Function* f = function(m, "A.forward");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  ASSERT_EQ(chain(*f, nodes_with_op(*f, "softmax").at(0), 3),
            (std::vector<std::string>{"softmax", "scale", "matmul"}));
  const ir::Node& scale = f->nodes[nodes_with_op(*f, "scale").at(0)];
  EXPECT_TRUE(flag(scale, "sqrt_like"));
  EXPECT_EQ(input(*f, nodes_with_op(*f, "scale").at(0), 1)->op, "scalar");
}

TEST(PythonAttention, ImportedSoftmaxUnderAnotherName) {
  ir::Module m = build(R"(from torch.nn.functional import softmax as sm
def f(x):
    return sm(x, dim=-1)
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  auto sms = nodes_with_op(*f, "softmax");
  ASSERT_EQ(sms.size(), 1u);
  EXPECT_EQ(attr_text(f->nodes[sms[0]], "callee"), "\"torch.nn.functional.softmax\"");
}

TEST(PythonAttention, SdpaKeepsItsFlags) {
  ir::Module m = build(R"(import torch.nn.functional as F
def f(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  auto s = nodes_with_op(*f, "sdpa");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(flag(f->nodes[s[0]], "is_causal"));
  EXPECT_EQ(f->nodes[s[0]].inputs.size(), 3u);
}

}  // namespace
}  // namespace mlsem::pytest
