// Program facts (python/program.cpp): tensors built on the host and copied to the GPU
// in code that runs every step (`host_tensor` nodes).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "python_test_helpers.h"
#include "repo_engine.h"

namespace mlsem {
namespace {

using pytest::build;
using pytest::flag;
using pytest::function;
using pytest::nodes_with_op;

// The nodes `op` of function `fn`, in source order (the program facts add them by kind).
std::vector<const ir::Node*> nodes_of(const ir::Module& m, std::string_view fn, std::string_view op) {
  std::vector<const ir::Node*> out;
  const ir::Function* f = function(m, fn);
  if (!f) return out;
  for (ir::NodeId id : nodes_with_op(*f, op)) out.push_back(&f->nodes[id]);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->range.begin_byte < b->range.begin_byte; });
  return out;
}

std::vector<const ir::Node*> host_tensors(const ir::Module& m, std::string_view fn) {
  return nodes_of(m, fn, "host_tensor");
}

std::string str(const ir::Node& n, const std::string& key) {
  const ir::Attr* a = n.attr(key);
  return a && std::holds_alternative<std::string>(*a) ? std::get<std::string>(*a) : "<absent>";
}

TEST(PythonProgram, HostTensorRecordsTheDeviceTheFixPasses) {
  ir::Module m = build(R"(
import torch
import torch.nn as nn
class M(nn.Module):
    def forward(self, x):
        a = torch.arange(x.shape[1]).cuda()
        b = torch.zeros(4).to(x)
        c = torch.ones(4).float().to(device=x.device, dtype=torch.float16)
        d = torch.randn(4).to(x.device)
        e = torch.zeros(4).cuda(1)
        return a, b, c, d, e
)");
  auto hs = host_tensors(m, "M.forward");
  ASSERT_EQ(hs.size(), 5u) << ir::to_text(m);
  EXPECT_EQ(str(*hs[0], "factory"), "torch.arange");
  EXPECT_EQ(str(*hs[0], "device"), "device=\"cuda\"");
  EXPECT_EQ(str(*hs[0], "hot"), "forward pass");
  EXPECT_EQ(str(*hs[1], "device"), "device=x.device, dtype=x.dtype");
  EXPECT_EQ(str(*hs[2], "device"), "device=x.device");
  EXPECT_EQ(str(*hs[3], "device"), "device=x.device");
  EXPECT_TRUE(flag(*hs[3], "random"));
  EXPECT_FALSE(flag(*hs[0], "random"));
  EXPECT_EQ(str(*hs[4], "device"), "device=1");
}

TEST(PythonProgram, HostTensorNeedsAHostFactoryAMoveToADeviceAndHotCode) {
  ir::Module m = build(R"(
import torch
import torch.nn as nn
class M(nn.Module):
    def __init__(self):
        self.t = torch.arange(8).cuda()
    def forward(self, x):
        a = torch.zeros(4, device=x.device).to(x)
        b = torch.arange(4).to(torch.float16)
        c = torch.arange(4).to(dtype)
        d = torch.zeros(4).to("cpu")
        e = torch.tensor([1, 2]).to(x.device)
        f = torch.tensor(values).cuda()
        g = x.new_zeros(4).to(x.device)
        h = torch.zeros(*shape).cuda()
        i = torch.zeros(4, **kw).cuda()
        return a, b, c, d, e, f, g, h, i
def helper(n, device):
    return [torch.arange(i).to(device) for i in range(n)]
def make(n, device):
    out = []
    for i in range(n):
        out.append(torch.arange(i).to(device))
    return out
)");
  EXPECT_TRUE(host_tensors(m, "M.__init__").empty());
  EXPECT_TRUE(host_tensors(m, "M.forward").empty()) << ir::to_text(m);
  EXPECT_TRUE(host_tensors(m, "helper").empty());
  EXPECT_TRUE(host_tensors(m, "make").empty());
}

TEST(PythonProgram, HostTensorInStepLoops) {
  ir::Module m = build(R"(
import math
import torch
def train(model, loader, opt, device):
    torch.zeros(1).to(device)
    for x, y in loader:
        noise = torch.randn(x.shape).to(device)
        model(x + noise).sum().backward()
        opt.step()
def generate(model, tokens, n):
    for _ in range(n):
        logits = model(tokens)
        logits[logits != logits] = torch.tensor(-math.inf).to(logits)
    return tokens
)");
  auto t = host_tensors(m, "train");
  ASSERT_EQ(t.size(), 1u) << ir::to_text(m);  // not the one before the loop
  EXPECT_EQ(str(*t[0], "hot"), "training step");
  auto g = host_tensors(m, "generate");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(str(*g[0], "hot"), "iteration of generate");
  EXPECT_EQ(str(*g[0], "factory"), "torch.tensor");
}

TEST(PythonProgram, HostTensorSkipsTestFilesAndCpuOnlyFiles) {
  // The same forward in three files: only the path, or only the GPU placement, differs.
  const char* gpu = R"(
import torch
import torch.nn as nn
class M(nn.Module):
    def forward(self, x):
        return torch.arange(4).to(x)
model = M().cuda()
)";
  EXPECT_EQ(host_tensors(python::build_ir(SourceFile{"train.py", gpu}), "M.forward").size(), 1u);
  EXPECT_TRUE(host_tensors(python::build_ir(SourceFile{"tests/test_m.py", gpu}), "M.forward").empty());
  std::string cpu = gpu;
  cpu.replace(cpu.find("model = M().cuda()"), 18, "model = M()");
  EXPECT_TRUE(host_tensors(python::build_ir(SourceFile{"train.py", cpu}), "M.forward").empty());
}

std::vector<const ir::Node*> eval_loops(const ir::Module& m, std::string_view fn) { return nodes_of(m, fn, "eval_loop"); }

TEST(PythonProgram, EvalLoopIsTheFirstModelCallOfAnInferenceLoop) {
  ir::Module m = build(R"(
import torch
def validate(model, loader):
    model.eval()
    for x, y in loader:
        x = x.cuda()
        for i in range(2):
            model(x)
        out = model(x)
def report(student, loader):
    student.eval()
    for x in loader:
        student.encoder(x)
        student(x)
class Runner:
    def generate(self, ids):
        while True:
            ids = self.model.generate(ids)
)");
  auto v = eval_loops(m, "validate");
  ASSERT_EQ(v.size(), 1u) << ir::to_text(m);  // the outer loop only
  EXPECT_EQ(v[0]->range.begin.line, 8u);
  EXPECT_EQ(str(*v[0], "model"), "model");
  EXPECT_FALSE(flag(*v[0], "eval_mode_only"));
  auto r = eval_loops(m, "report");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(str(*r[0], "model"), "student");  // not student.encoder
  EXPECT_TRUE(flag(*r[0], "eval_mode_only"));
  auto g = eval_loops(m, "Runner.generate");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(str(*g[0], "model"), "self.model.generate");
  EXPECT_TRUE(flag(*g[0], "method"));
}

TEST(PythonProgram, EvalLoopNotWhereAutogradIsOffOrTheLoopTrains) {
  ir::Module m = build(R"(
import torch
@torch.no_grad()
def evaluate(model, loader):
    for x in loader:
        model(x.cuda())
def predict(model, loader):
    with torch.inference_mode():
        for x in loader:
            model(x)
def sample(model, x):
    for t in range(10):
        x = model(x)
    return x
def run(model, x):
    with torch.no_grad():
        return sample(model, x)
def validate(model, loader, opt):
    model.eval()
    for x in loader:
        model(x).sum().backward()
        opt.step()
def infer_all(model, loader):
    torch.set_grad_enabled(False)
    for x in loader:
        model(x)
def test_eval(model, loader):
    model.eval()
    for x in loader:
        model(x)
)");
  for (const char* fn : {"evaluate", "predict", "sample", "run", "validate", "infer_all", "test_eval"})
    EXPECT_TRUE(eval_loops(m, fn).empty()) << fn;
}

std::vector<const ir::Node*> optimizers(const ir::Module& m, std::string_view fn) { return nodes_of(m, fn, "optimizer"); }

TEST(PythonProgram, OptimizerNodesForAdamWithoutAChoiceInGpuTrainingFiles) {
  const char* src = R"(
import torch
from torch import optim
def train(model, loader, kw):
    model.cuda()
    a = torch.optim.AdamW(model.parameters(), lr=1e-3)
    b = optim.Adam(model.parameters())
    c = torch.optim.AdamW(model.parameters(), foreach=True)
    d = torch.optim.Adam(model.parameters(), **kw)
    e = torch.optim.SGD(model.parameters(), lr=0.1)
    f = my.AdamW(model.parameters())
    for x in loader:
        model(x).sum().backward()
        a.step()
)";
  ir::Module m = build(src);
  auto o = optimizers(m, "train");
  ASSERT_EQ(o.size(), 2u) << ir::to_text(m);
  std::vector<std::string> classes = {str(*o[0], "class"), str(*o[1], "class")};
  std::sort(classes.begin(), classes.end());
  EXPECT_EQ(classes, (std::vector<std::string>{"Adam", "AdamW"}));

  // The file chooses fused somewhere (nanoGPT's `dict(fused=True)`): nothing; a comment
  // that says fused does not count.
  std::string chooses = std::string(src) + "extra = dict(fused=True)\n";
  EXPECT_TRUE(optimizers(build(chooses), "train").empty());
  std::string comment = std::string(src) + "# fused=True would be faster\n";
  EXPECT_EQ(optimizers(build(comment), "train").size(), 2u);
  // No training loop in the file, or no GPU: nothing.
  ir::Module no_loop = build("import torch\ndef make(model):\n    model.cuda()\n    return torch.optim.AdamW(model.parameters())\n");
  EXPECT_TRUE(optimizers(no_loop, "make").empty());
}

std::vector<std::string> debug_apis(const ir::Module& m) {
  std::vector<std::string> out;
  for (const ir::Function& f : m.functions)
    for (ir::NodeId id : nodes_with_op(f, "debug_mode")) out.push_back(str(f.nodes[id], "api"));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PythonProgram, DebugModesOnlyInProgramsAndOnlyUnconditional) {
  const char* script = R"(
import os
import torch
os.environ['CUDA_LAUNCH_BLOCKING'] = '1'
os.environ["CUDA_LAUNCH_BLOCKING"] = "0"
torch.cuda.set_sync_debug_mode(2)
x = torch.autograd.set_detect_anomaly(flag)
y = torch.autograd.detect_anomaly() if flag else None
if __name__ == "__main__":
    torch.autograd.profiler.emit_nvtx()
)";
  EXPECT_EQ(debug_apis(build(script)),
            (std::vector<std::string>{"CUDA_LAUNCH_BLOCKING=1", "torch.cuda.set_sync_debug_mode(2)"}));
  // A library module (no training loop, no __main__): its debug helpers are not left on.
  ir::Module library = build("import torch\ndef check(f):\n    with torch.autograd.detect_anomaly():\n        f()\n");
  EXPECT_TRUE(debug_apis(library).empty());
  ir::Module test = python::build_ir(SourceFile{"tests/test_x.py", script});
  EXPECT_TRUE(debug_apis(test).empty());
}

// LAY001's layer facts hold in test files too: the training rules skip test code, but a
// layer rule reported there (--keep-context test) must still see a shared layer.
TEST(PythonProgram, LayerFactsAlsoInTestFiles) {
  const char* src = R"(
import torch.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
    def forward(self, x):
        return self.bn(self.shared(x)) + self.shared(x)
)";
  for (const char* path : {"model.py", "tests/test_model.py"}) {
    ir::Module m = python::build_ir(SourceFile{path, src});
    auto convs = nodes_of(m, "M.forward", "conv");
    ASSERT_EQ(convs.size(), 2u) << path;
    for (const ir::Node* c : convs) EXPECT_TRUE(flag(*c, "shared_module")) << path;
  }
}

// The other direction: where LAY001's layer facts must not be set. `shared_module` only on
// a biased layer module applied more than once in one function; `checkpoint_names` only on
// biased layers, and only in a file that loads published weights. The rule reports `once`
// alone; `shared` is the one layer whose `shared_module` must be set (a test that passes
// whether the facts are set everywhere or nowhere checks nothing).
const char* kLayers = R"(
import torch
import torch.nn as nn
import torch.nn.functional as F
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.once = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.plain = nn.Conv2d(8, 8, 1, bias=False)
        self.bn_plain = nn.BatchNorm2d(8)
        self.nobias = nn.Conv2d(8, 8, 1, bias=False)
        self.bn_nobias = nn.BatchNorm2d(8)
        self.act_after = nn.Linear(8, 8)
        self.gap = nn.Conv2d(8, 8, 1)
        self.bn_gap = nn.BatchNorm2d(8)
        self.ln_after = nn.Linear(8, 8)
        self.ln = nn.LayerNorm(8)
        self.split = nn.Conv2d(8, 8, 1)
        self.shared = nn.Conv2d(8, 8, 1)
        self.bn_shared = nn.BatchNorm2d(8)
    def forward(self, x, w, b):
        x = self.bn(self.once(x))
        x = self.bn_plain(self.plain(x))
        x = self.bn_nobias(self.nobias(x)) + self.nobias(x)
        y = F.relu(self.act_after(x.mean((2, 3))))
        z = self.ln(self.ln_after(y))
        x = self.bn_gap(F.relu(self.gap(x)))
        x = self.split(x)
        x = F.conv2d(x, w, b) + F.conv2d(x, w, b)
        return self.bn_shared(self.shared(x)) + self.shared(x), z
    def other(self, x):
        return self.split(x)
)";

// The nodes of `fn` whose `module` attribute names the layer `name` (self.name), or, with
// name empty, those with no module (the functional F.conv2d), in source order.
std::vector<const ir::Node*> layer_nodes(const ir::Module& m, std::string_view fn, std::string_view name) {
  std::vector<const ir::Node*> out;
  for (const char* op : {"conv", "linear"})
    for (const ir::Node* n : nodes_of(m, fn, op)) {
      std::string path = str(*n, "module");
      bool match = name.empty() ? path == "<absent>"
                                : path == name || (path.size() > name.size() && path.ends_with(name) &&
                                                   path[path.size() - name.size() - 1] == '.');
      if (match) out.push_back(n);
    }
  return out;
}

TEST(PythonProgram, LayerFactsOnlyWhereTheyHold) {
  struct Case {
    const char* fn;
    const char* layer;
    size_t calls;
    bool shared;  // shared_module expected
    bool biased;  // checkpoint_names expected where the file loads weights
  };
  const Case cases[] = {
      {"M.forward", "once", 1, false, true},       // biased, applied once, then BatchNorm
      {"M.forward", "plain", 1, false, false},     // bias=False, then BatchNorm
      {"M.forward", "nobias", 2, false, false},    // applied twice, but no bias
      {"M.forward", "act_after", 1, false, true},  // biased, followed by a ReLU, not a norm
      {"M.forward", "gap", 1, false, true},        // a ReLU between it and the BatchNorm
      {"M.forward", "ln_after", 1, false, true},   // followed by a LayerNorm
      {"M.forward", "split", 1, false, true},      // once here and once in other(): per function
      {"M.other", "split", 1, false, true},
      {"M.forward", "", 2, false, true},           // F.conv2d(x, w, b) twice: no module
      {"M.forward", "shared", 2, true, true},      // the one layer applied twice here
  };
  const std::string loads = std::string(kLayers) + "def load(m, p):\n    m.load_state_dict(torch.load(p))\n";
  for (const auto& [src, loading] : {std::pair<std::string, bool>{kLayers, false}, {loads, true}}) {
    for (const char* path : {"model.py", "tests/test_model.py"}) {
      ir::Module m = python::build_ir(SourceFile{path, src});
      for (const Case& c : cases) {
        auto nodes = layer_nodes(m, c.fn, c.layer);
        ASSERT_EQ(nodes.size(), c.calls) << path << " " << c.fn << " " << c.layer;
        for (const ir::Node* n : nodes) {
          EXPECT_EQ(flag(*n, "shared_module"), c.shared) << path << " " << c.fn << " " << c.layer;
          EXPECT_EQ(flag(*n, "checkpoint_names"), loading && c.biased)
              << path << " " << c.fn << " " << c.layer << (loading ? " (loads weights)" : "");
        }
      }
    }
  }
}

// LAY001 itself on the same layers: only the biased layer whose sole user is the BatchNorm
// right after it (`once`) is reported; not bias=False, not a layer followed by a ReLU or a
// LayerNorm, not one with a ReLU between it and the BatchNorm, not a shared one.
using LayerRule = test_support::RepoEngine;

TEST_F(LayerRule, Lay001OnlyOnABiasedLayerDirectlyBeforeBatchNorm) {
  ir::Module m = python::build_ir(SourceFile{"model.py", kLayers});
  const std::set<std::string> only{"LAY001"};
  std::vector<uint32_t> lines;
  for (const Finding& f : engine().analyze(m, &only)) {
    EXPECT_EQ(f.rule, "LAY001");
    lines.push_back(f.range.begin.line);
  }
  // The line of `x = self.bn(self.once(x))` (ranges count lines from 1).
  const std::string text = kLayers;
  const uint32_t once_line =
      1 + static_cast<uint32_t>(std::count(text.begin(), text.begin() + text.find("self.bn(self.once(x))"), '\n'));
  EXPECT_EQ(lines, std::vector<uint32_t>{once_line});
}

}  // namespace
}  // namespace mlsem
