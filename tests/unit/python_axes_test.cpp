// The axis-roles pass (python/axes.h): roles from size spellings, axes through
// reshape/permute/unbind/slice/einsum, and attention recognized by its axes.
#include <gtest/gtest.h>

#include "python/axes.h"
#include "python_test_helpers.h"

namespace mlsem::pytest {
namespace {

using python::AxisRole;
using python::role_of_size;

TEST(PythonAxes, RolesFromSizeSpellings) {
  EXPECT_EQ(role_of_size("bsz"), AxisRole::kBatch);
  EXPECT_EQ(role_of_size("batch_size * self.num_heads"), AxisRole::kBatch);
  EXPECT_EQ(role_of_size("self.num_heads"), AxisRole::kHeads);
  EXPECT_EQ(role_of_size("config.num_attention_heads"), AxisRole::kHeads);
  EXPECT_EQ(role_of_size("C // self.num_heads"), AxisRole::kFeatures);
  EXPECT_EQ(role_of_size("self.head_dim"), AxisRole::kFeatures);
  EXPECT_EQ(role_of_size("self.num_heads * self.head_dim"), AxisRole::kFeatures);
  EXPECT_EQ(role_of_size("seq_len"), AxisRole::kPositions);
  EXPECT_EQ(role_of_size("h * w"), AxisRole::kPositions);
  EXPECT_EQ(role_of_size("N"), AxisRole::kPositions);
  EXPECT_EQ(role_of_size("-1"), AxisRole::kUnknown);
  EXPECT_EQ(role_of_size("x.size(1)"), AxisRole::kUnknown);
}

const ir::Node* only(const ir::Function& f, std::string_view op) {
  auto ids = nodes_with_op(f, op);
  return ids.size() == 1 ? &f.nodes[ids[0]] : nullptr;
}

// The product with the probabilities: the matmul that carries an `attention` verdict.
const ir::Node* output(const ir::Function& f) {
  const ir::Node* found = nullptr;
  for (ir::NodeId id : nodes_with_op(f, "matmul"))
    if (f.nodes[id].attr("attention")) found = &f.nodes[id];
  return found;
}

TEST(PythonAxes, FusedQkvThroughPermuteAndUnbind) {
  ir::Module m = build(R"(import torch.nn as nn
class A(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return attn @ v
)");
  SCOPED_TRACE(ir::to_text(m));
  const ir::Function* f = function(m, "A.forward");
  ASSERT_NE(f, nullptr);
  const ir::Node* sm = only(*f, "softmax");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(attr_text(*sm, "axes"), "\"b h t t\"");
  const ir::Node* out = output(*f);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(flag(*out, "attention"));
  EXPECT_EQ(attr_text(*out, "axes"), "\"b h t d\"");
  EXPECT_FALSE(flag(*out, "single_query"));
}

TEST(PythonAxes, ChannelAttentionSumsOverTokensAndIsNotAttention) {
  ir::Module m = build(R"(import torch.nn as nn
class A(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (k.transpose(-1, -2) @ v).softmax(dim=-1)
        return attn @ q.transpose(-1, -2)
)");
  SCOPED_TRACE(ir::to_text(m));
  const ir::Function* f = function(m, "A.forward");
  ASSERT_NE(f, nullptr);
  const ir::Node* out = output(*f);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(attr_text(*out, "attention"), "false");
  EXPECT_NE(attr_text(*out, "attention_why").find("positions"), std::string::npos);
}

TEST(PythonAxes, SoftmaxOverQueriesIsNotAttention) {
  ir::Module m = build(R"(def f(q, k, v):
    return (q @ k.transpose(-2, -1)).softmax(dim=-2) @ v
)");
  SCOPED_TRACE(ir::to_text(m));
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  const ir::Node* out = output(*f);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(attr_text(*out, "attention"), "false");
}

TEST(PythonAxes, ChannelFirstValueTimesTransposedProbabilities) {
  ir::Module m = build(R"(import torch
def f(q, k, v, b, c, h, w):
    q = q.reshape(b, c, h * w).permute(0, 2, 1)
    k = k.reshape(b, c, h * w)
    p = torch.softmax(torch.bmm(q, k), dim=2)
    return torch.bmm(v.reshape(b, c, h * w), p.permute(0, 2, 1))
)");
  SCOPED_TRACE(ir::to_text(m));
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  const ir::Node* out = output(*f);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(flag(*out, "attention"));
}

TEST(PythonAxes, EinsumWithAnySubscriptsIsOneContraction) {
  ir::Module m = build(R"(import torch
def f(q, k, v):
    p = torch.einsum("bqhd,bkhd->bhqk", q, k).softmax(dim=-1)
    return torch.einsum("bhqk,bkhd->bqhd", p, v)
)");
  SCOPED_TRACE(ir::to_text(m));
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  auto mms = nodes_with_op(*f, "matmul");
  ASSERT_EQ(mms.size(), 2u);
  EXPECT_EQ(attr_text(f->nodes[mms[1]], "subscripts"), "\"bhqk,bkhd->bqhd\"");
  EXPECT_TRUE(nodes_with_op(*f, "transpose").empty()) << "no transpose is invented for a non-matmul layout";
  EXPECT_TRUE(flag(f->nodes[mms[1]], "attention"));
}

TEST(PythonAxes, OneQueryPerSequenceIsMarked) {
  ir::Module m = build(R"(import torch.nn as nn
class A(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.q = nn.Linear(dim, dim)
    def forward(self, x, k, v):
        B, N, C = x.shape
        q = self.q(x[:, 0]).unsqueeze(1).reshape(B, 1, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return attn @ v
)");
  SCOPED_TRACE(ir::to_text(m));
  const ir::Function* f = function(m, "A.forward");
  ASSERT_NE(f, nullptr);
  const ir::Node* out = output(*f);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(flag(*out, "single_query"));
}

TEST(PythonAxes, RepeatCountKnownToBeOne) {
  const std::string helper = R"(import torch.nn as nn
def repeat_kv(x, n_rep):
    b, h, t, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, t, d).reshape(b, h * n_rep, t, d)
class A(nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.num_key_value_groups = GROUPS
    def forward(self, k):
        return repeat_kv(k, self.num_key_value_groups)
)";
  for (const char* groups : {"1", "groups"}) {
    std::string src = helper;
    src.replace(src.find("GROUPS"), 6, groups);
    ir::Module m = build(src);
    SCOPED_TRACE(ir::to_text(m));
    const ir::Function* f = function(m, "A.forward");
    ASSERT_NE(f, nullptr);
    const ir::Node* expand = only(*f, "expand");
    ASSERT_NE(expand, nullptr);
    EXPECT_EQ(flag(*expand, "repeat_one"), std::string(groups) == "1");
    EXPECT_EQ(attr_text(*expand, "shape"), "\"b, h, n_rep, t, d\"");
  }
}

}  // namespace
}  // namespace mlsem::pytest
