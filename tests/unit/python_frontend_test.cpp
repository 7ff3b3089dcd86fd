// Python frontend: variables as edges, imports, nn.Module resolution, inlining,
// regions, host syncs, suppressions.
#include <gtest/gtest.h>

#include <algorithm>

#include "python_test_helpers.h"

namespace mlsem::pytest {
namespace {

TEST(PythonVariables, ReassignmentLinksStraightToTheProducer) {
  ir::Module m = build(R"(def f(q, k, m):
    att = q @ k.T
    att = att.masked_fill(m, 0.0)
    return att
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto masks = nodes_with_op(*f, "mask");
  ASSERT_EQ(masks.size(), 1u);
  EXPECT_EQ(input(*f, masks[0], 0)->op, "matmul");
  EXPECT_EQ(input(*f, masks[0], 1)->op, "input");
  EXPECT_EQ(attr_text(*input(*f, masks[0], 1), "name"), "\"m\"");
  EXPECT_EQ(attr_text(f->nodes[masks[0]], "value"), "0.0");
  // `.T` is a transpose of the last two dims.
  const ir::Node* t = input(*f, input_id(*f, masks[0], 0), 1);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->op, "transpose");
  EXPECT_EQ(attr_text(*t, "dim0"), "-2");
}

TEST(PythonVariables, TupleUnpackingGivesPartsAndScalars) {
  ir::Module m = build(R"(def f(x):
    B, T, C = x.size()
    q, k, v = x.split(C, dim=2)
    y = x.transpose(1, 2).contiguous().view(B, T, C)
    return k, y
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto parts = nodes_with_op(*f, "part");
  ASSERT_EQ(parts.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(attr_text(f->nodes[parts[i]], "index"), std::to_string(i));
    EXPECT_EQ(input(*f, parts[i], 0)->op, "split");
  }
  // B, T, C are scalars named by their targets.
  std::vector<std::string> scalars;
  for (ir::NodeId id : nodes_with_op(*f, "scalar")) scalars.push_back(attr_text(f->nodes[id], "text"));
  for (const char* name : {"\"B\"", "\"T\"", "\"C\""})
    EXPECT_NE(std::find(scalars.begin(), scalars.end(), name), scalars.end()) << name;
  // contiguous() is dropped: view reads the transpose directly.
  auto reshapes = nodes_with_op(*f, "reshape");
  ASSERT_EQ(reshapes.size(), 1u);
  EXPECT_EQ(input(*f, reshapes[0], 0)->op, "transpose");
  EXPECT_TRUE(nodes_with_op(*f, "contiguous").empty());
}

TEST(PythonVariables, AugmentedAssignmentAndNaryAdd) {
  ir::Module m = build(R"(def f(a, b, c, d):
    x = a + b + (c + d)
    x += a
    return x.exp()
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto adds = nodes_with_op(*f, "add");
  ASSERT_EQ(adds.size(), 2u);
  EXPECT_EQ(f->nodes[adds[0]].inputs.size(), 4u) << "a + b + (c + d) is one 4-ary add";
  EXPECT_EQ(input(*f, adds[1], 0)->op, "add");  // x += a reads the first add
  EXPECT_EQ(input(*f, nodes_with_op(*f, "exp").at(0), 0), &f->nodes[adds[1]]);
}

TEST(PythonVariables, ScaleNeedsAScalarOperand) {
  ir::Module m = build(R"(import math
def f(x, y, temperature):
    a = x * 0.5
    b = x / temperature
    c = x * y
    d = x / y
    e = 2 * math.pi
    return a, b, c, d, e
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  EXPECT_EQ(nodes_with_op(*f, "scale").size(), 2u);
  EXPECT_EQ(nodes_with_op(*f, "mul").size(), 1u);
  EXPECT_EQ(nodes_with_op(*f, "div").size(), 1u);
  // 2 * math.pi folds to a constant.
  bool folded = false;
  for (ir::NodeId id : nodes_with_op(*f, "const"))
    if (attr_text(f->nodes[id], "value").substr(0, 6) == "6.2831") folded = true;
  EXPECT_TRUE(folded);
}

TEST(PythonImports, ImportedNamesAndContextsAreCanonical) {
  ir::Module m = build(R"py(import torch
from torch import einsum
from einops import rearrange
import torch.cuda.amp as amp
def f(q, k):
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        s = einsum("b i d, b j d -> b i j", q, k)
    with amp.autocast():
        o = rearrange(s, "b i j -> b (i j)")
    return torch.dropout(o, 0.1, True)
)py");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  ASSERT_EQ(f->regions.size(), 3u);
  EXPECT_EQ(std::get<std::string>(f->regions[1].attrs.at("context")), "torch.autocast");
  EXPECT_EQ(std::get<std::string>(f->regions[2].attrs.at("context")), "torch.cuda.amp.autocast");
  auto mm = nodes_with_op(*f, "matmul");
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(f->nodes[mm[0]].region, 1u);
  EXPECT_EQ(input(*f, mm[0], 1)->op, "transpose");
  auto rs = nodes_with_op(*f, "reshape");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(attr_text(f->nodes[rs[0]], "callee"), "\"einops.rearrange\"");
  EXPECT_EQ(input_id(*f, rs[0], 0), mm[0]);
  auto drops = nodes_with_op(*f, "dropout");
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(attr_text(f->nodes[drops[0]], "p"), "0.1");
}

TEST(PythonModules, LayersFromInitResolveWhereCalled) {
  ir::Module m = build(R"(import torch.nn as nn
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.emb = nn.Embedding(10, d)
        self.ln = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * d, d, bias=False)
        self.net = nn.Sequential(nn.Linear(d, d), nn.ReLU())

    def forward(self, idx):
        x = self.emb(idx)
        x = self.ln(x)
        x = self.c_proj(self.act(self.c_fc(x)))
        return self.net(x)
)");
  const ir::Function* f = function(m, "Net.forward");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  ir::NodeId last = static_cast<ir::NodeId>(f->nodes.size() - 1);
  EXPECT_EQ(chain(*f, last, 8), (std::vector<std::string>{"relu", "linear", "linear", "gelu", "linear",
                                                          "layer_norm", "embedding", "input"}));
  auto linears = nodes_with_op(*f, "linear");
  ASSERT_EQ(linears.size(), 3u);
  EXPECT_EQ(attr_text(f->nodes[linears[0]], "module"), "\"self.c_fc\"");
  EXPECT_TRUE(flag(f->nodes[linears[0]], "bias"));
  EXPECT_EQ(attr_text(f->nodes[linears[1]], "module"), "\"self.c_proj\"");
  EXPECT_FALSE(flag(f->nodes[linears[1]], "bias"));
  EXPECT_EQ(attr_text(f->nodes[linears[2]], "module"), "\"self.net.0\"");
  EXPECT_EQ(attr_text(f->nodes[nodes_with_op(*f, "gelu").at(0)], "approximate"), "\"tanh\"");
}

TEST(PythonModules, SameFileModuleClassIsInlined) {
  ir::Module m = build(R"(import torch.nn as nn
class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
    def forward(self, x):
        return self.c_fc(x).relu()

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mlp = MLP(d)
    def forward(self, x):
        return x + self.mlp(x)
)");
  const ir::Function* f = function(m, "Block.forward");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto linears = nodes_with_op(*f, "linear");
  ASSERT_EQ(linears.size(), 1u);
  const ir::Node& lin = f->nodes[linears[0]];
  EXPECT_EQ(attr_text(lin, "module"), "\"self.mlp.c_fc\"");
  EXPECT_EQ(lin.range.begin.line, 7u) << "inlined nodes keep the callee's range";
  auto adds = nodes_with_op(*f, "add");
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(input(*f, adds[0], 1)->op, "relu");
  // The standalone MLP.forward is still its own function.
  EXPECT_NE(function(m, "MLP.forward"), nullptr);
}

TEST(PythonModules, ModuleListIteratedInForward) {
  ir::Module m = build(R"(import torch.nn as nn
class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
    def forward(self, x):
        return self.fc(x)
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(4)])
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
)");
  const ir::Function* f = function(m, "Stack.forward");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  ASSERT_EQ(nodes_with_op(*f, "linear").size(), 1u);
  EXPECT_EQ(f->nodes[nodes_with_op(*f, "linear")[0]].region, 1u) << "inside the loop region";
}

TEST(PythonInlining, HelperMethodIsInlinedWithCalleeRanges) {
  ir::Module m = build(R"(import math
import torch
from torch import nn
class A(nn.Module):
    def _attn(self, q, k, v):
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / math.sqrt(v.size(-1))
        w = nn.functional.softmax(w, dim=-1)
        return torch.matmul(w, v)

    def forward(self, x):
        q, k, v = x.chunk(3, dim=-1)
        return self._attn(q, k, v)
)");
  const ir::Function* f = function(m, "A.forward");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto sms = nodes_with_op(*f, "softmax");
  ASSERT_EQ(sms.size(), 1u);
  EXPECT_EQ(f->nodes[sms[0]].range.begin.line, 8u);
  EXPECT_EQ(chain(*f, sms[0], 4), (std::vector<std::string>{"softmax", "scale", "matmul", "part"}));
  // The call's result is the callee's return value: the last node is the output matmul.
  const ir::Node& out = f->nodes.back();
  EXPECT_EQ(out.op, "matmul");
  EXPECT_EQ(out.range.begin.line, 9u);
  EXPECT_EQ(out.inputs.at(0), sms[0]);
}

TEST(PythonInlining, EarlyReturnUnderIfDoesNotHideTheMainPath) {
  ir::Module m = build(R"(def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    return x.repeat_interleave(n_rep, dim=1)
    x.exp()

def attn(q, k):
    k = repeat_kv(k, 4)
    return q @ k
)");
  const ir::Function* f = function(m, "attn");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  auto mm = nodes_with_op(*f, "matmul");
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(input(*f, mm[0], 1)->op, "repeat_interleave");
  EXPECT_TRUE(nodes_with_op(*f, "exp").empty()) << "code after an unconditional return is skipped";
}

TEST(PythonInlining, SameFileFunctionsBoundedAndRecursionGuarded) {
  ir::Module m = build(R"(import torch
def helper(x):
    return torch.softmax(x, dim=-1)
def f(x):
    return helper(x * 2)
def rec(x):
    return rec(x.exp())
def a(x):
    return b(x).exp()
def b(x):
    return a(x).log()
def f5(x):
    return x.exp()
def f4(x):
    return f5(x).exp()
def f3(x):
    return f4(x).exp()
def f2(x):
    return f3(x).exp()
def f1(x):
    return f2(x).exp()
)");
  SCOPED_TRACE(ir::to_text(m));
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  auto sms = nodes_with_op(*f, "softmax");
  ASSERT_EQ(sms.size(), 1u);
  EXPECT_EQ(f->nodes[sms[0]].range.begin.line, 3u);
  EXPECT_EQ(input(*f, sms[0], 0)->op, "scale");

  const ir::Function* r = function(m, "rec");
  ASSERT_NE(r, nullptr);
  auto calls = nodes_with_op(*r, "call");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(attr_text(r->nodes[calls[0]], "callee"), "\"rec\"");

  const ir::Function* fa = function(m, "a");
  ASSERT_NE(fa, nullptr);
  EXPECT_EQ(nodes_with_op(*fa, "log").size(), 1u);  // b inlined once, a not again
  EXPECT_EQ(nodes_with_op(*fa, "exp").size(), 1u);

  // Depth 3: f1 inlines f2, f3, f4; f5 stays a call.
  const ir::Function* f1 = function(m, "f1");
  ASSERT_NE(f1, nullptr);
  EXPECT_EQ(nodes_with_op(*f1, "exp").size(), 4u);
  auto c1 = nodes_with_op(*f1, "call");
  ASSERT_EQ(c1.size(), 1u);
  EXPECT_EQ(attr_text(f1->nodes[c1[0]], "callee"), "\"f5\"");
}

TEST(PythonRegions, TrainingLoopsNoGradAndSyncs) {
  ir::Module m = build(R"(import torch
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
with torch.no_grad():
    for x, y in val_loader:
        out = model(x)
        acc = float((out.argmax(-1) == y).sum())
while True:
    x = x.cpu()
)");
  const ir::Function* f = function(m, "<module>");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  ASSERT_EQ(f->regions.size(), 6u);
  auto region = [&](size_t i) -> const ir::Region& { return f->regions[i]; };
  EXPECT_EQ(region(1).kind, "loop");
  EXPECT_TRUE(std::get<bool>(region(1).attrs.at("training"))) << "nested training step counts";
  EXPECT_FALSE(std::get<bool>(region(1).attrs.at("innermost_training"))) << "the epoch loop";
  EXPECT_TRUE(std::get<bool>(region(2).attrs.at("innermost_training"))) << "the step loop";
  EXPECT_EQ(region(2).kind, "loop");
  EXPECT_EQ(region(2).parent, 1u);
  EXPECT_TRUE(std::get<bool>(region(2).attrs.at("training")));
  EXPECT_EQ(region(3).kind, "with");
  EXPECT_EQ(std::get<std::string>(region(3).attrs.at("context")), "torch.no_grad");
  EXPECT_EQ(region(4).kind, "loop");
  EXPECT_FALSE(std::get<bool>(region(4).attrs.at("training")));
  EXPECT_EQ(region(5).kind, "loop");
  EXPECT_FALSE(std::get<bool>(region(5).attrs.at("training")));

  auto steps = nodes_with_op(*f, "optimizer_step");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(f->nodes[steps[0]].region, 2u);
  auto backs = nodes_with_op(*f, "backward");
  ASSERT_EQ(backs.size(), 1u);
  EXPECT_EQ(input(*f, backs[0], 0)->op, "call");  // loss_fn(...) is opaque
  std::vector<std::pair<std::string, uint32_t>> syncs;
  for (ir::NodeId id : nodes_with_op(*f, "sync"))
    syncs.emplace_back(attr_text(f->nodes[id], "method"), f->nodes[id].region);
  EXPECT_EQ(syncs, (std::vector<std::pair<std::string, uint32_t>>{
                       {"\"item\"", 2u}, {"\"float\"", 4u}, {"\"cpu\"", 5u}}));
}

TEST(PythonRegions, OptimizerStepInAFunctionAndDecoratorNoGrad) {
  ir::Module m = build(R"(import torch
def train(model, optimizer, batch):
    for x in batch:
        model(x).sum().backward()
        optimizer.step()
        scheduler.step()

@torch.no_grad()
def evaluate(model, x):
    return model(x).tolist()
)");
  SCOPED_TRACE(ir::to_text(m));
  const ir::Function* t = function(m, "train");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(nodes_with_op(*t, "optimizer_step").size(), 1u) << "scheduler.step() is not an optimizer step";
  EXPECT_TRUE(std::get<bool>(t->regions.at(1).attrs.at("training")));
  const ir::Function* e = function(m, "evaluate");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->regions.size(), 2u);
  EXPECT_EQ(e->regions[1].kind, "with");
  EXPECT_EQ(std::get<std::string>(e->regions[1].attrs.at("context")), "torch.no_grad");
  auto syncs = nodes_with_op(*e, "sync");
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(e->nodes[syncs[0]].region, 1u);
}

TEST(PythonRegions, ScalarConversionsAreNotSyncs) {
  ir::Module m = build(R"(def f(t, n_head, lr: float):
    a = float('inf')
    b = int(n_head)
    c = float(lr)
    d = float(3)
    e = t.numpy()
    g = int(t)
    h = t.cpu().numpy().tolist()
    return a, b, c, d, e, g, h
)");
  const ir::Function* f = function(m, "f");
  ASSERT_NE(f, nullptr);
  SCOPED_TRACE(ir::to_text(m));
  std::vector<std::string> methods;
  for (ir::NodeId id : nodes_with_op(*f, "sync")) methods.push_back(attr_text(f->nodes[id], "method"));
  // Only the first step off the device syncs: .numpy()/.tolist() after .cpu() are host work.
  EXPECT_EQ(methods, (std::vector<std::string>{"\"numpy\"", "\"int\"", "\"cpu\""}));
}

TEST(PythonSuppressions, CommentsFillTheTableByLine) {
  ir::Module m = build(R"(x = 1  # mlsem: ignore
y = 2  # mlsem: ignore[ATT001, FUS002]
z = 3  # noqa: ATT001
w = 4  # noqa
v = 5  # noqa:SYN001,ATT002 because reasons
u = 6  # a comment about mlsem and noqa-free code
t = "mlsem: ignore"
)");
  std::map<uint32_t, std::vector<std::string>> want = {
      {1, {}},
      {2, {"ATT001", "FUS002"}},
      {3, {"ATT001"}},
      {4, {}},
      {5, {"SYN001", "ATT002"}},
  };
  EXPECT_EQ(m.suppressions, want);
}

}  // namespace
}  // namespace mlsem::pytest
