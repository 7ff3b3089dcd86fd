// The Python context stage (python/context.cpp): file kinds from paths, function facts
// (dispatch registrations, returned weights, references, parity variants, self) and
// fallback branches; and the torch version a project pins (driver/torch_version.h).
#include <gtest/gtest.h>

#include "driver/torch_version.h"
#include "python/context.h"
#include "python_test_helpers.h"
#include "temp_dir.h"

namespace mlsem {
namespace {

using pytest::build;
using pytest::fact;
using pytest::function;


TEST(PythonContext, FileKindsFromPaths) {
  for (const char* p : {"tests/models/test_llama.py", "pkg/test/util.py", "torch/testing/_internal/common.py",
                        "test_attention.py", "model_test.py", "conftest.py", "C:\\proj\\tests\\a.py"})
    EXPECT_EQ(python::file_kind(p).value_or(std::make_pair(std::string("none"), std::string())).first, "test") << p;
  for (const char* p : {"/usr/lib/python3/dist-packages/torch/_refs/nn/functional/__init__.py",
                        "torch/_decomp/decompositions.py"})
    EXPECT_EQ(python::file_kind(p).value_or(std::make_pair(std::string("none"), std::string())).first, "reference") << p;
  for (const char* p : {"third_party/apex/normalization/fused_layer_norm.py",
                        "inference/compression/dependencies/AutoGPTQ/examples/peft/train.py", "pkg/_vendor/six.py",
                        "vendor/megatron/model.py"})
    EXPECT_EQ(python::file_kind(p).value_or(std::make_pair(std::string("none"), std::string())).first, "vendored") << p;
  for (const char* p : {"models/llama.py", "contest.py", "latest/model.py", "attest_model.py", "testing_utils.py",
                        "vendors/model.py", "party/third.py"})
    EXPECT_FALSE(python::file_kind(p)) << p;
  ir::Module m = python::build_ir(SourceFile{"tests/test_x.py", "def f(x):\n    return x\n"});
  EXPECT_EQ(std::get<std::string>(m.attrs.at("file_kind")), "test");
}

TEST(PythonContext, FilesThatStepAnEnvironmentAreEnvironmentBound) {
  const std::string agent = R"(import gymnasium as gym
import torch

envs = gym.vector.SyncVectorEnv([make_env(i) for i in range(4)])
for step in range(1000):
    action = agent(obs)
    obs, reward, done, trunc, info = envs.step(action.cpu().numpy())
)";
  std::optional<std::string> why = python::environment_bound(agent);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("`envs.step(` at line 7"), std::string::npos) << *why;
  ir::Module m = python::build_ir(SourceFile{"cleanrl/ppo.py", agent});
  EXPECT_EQ(std::get<std::string>(m.attrs.at("file_kind")), "env-bound");
  // A gym import without stepping an environment, or an optimizer's step without gym: no.
  EXPECT_FALSE(python::environment_bound("import gym\nspace = gym.spaces.Box(0, 1)\n"));
  EXPECT_FALSE(python::environment_bound("import torch\noptimizer.step()\nenv_scheduler.step()\n"));
  // A path kind comes first.
  ir::Module t = python::build_ir(SourceFile{"tests/test_ppo.py", agent});
  EXPECT_EQ(std::get<std::string>(t.attrs.at("file_kind")), "test");
}

TEST(PythonContext, EagerEntriesOfAttentionDispatch) {
  ir::Module m = build(R"(
import torch
def eager_attention_forward(module, q, k, v):
    return torch.matmul(torch.softmax(q @ k, -1), v)
def eager_by_assignment(module, q, k, v):
    return torch.matmul(torch.softmax(q @ k, -1), v)
def unrelated(q, k, v):
    return torch.matmul(torch.softmax(q @ k, -1), v)
class EagerAttention:
    def forward(self, q, k, v):
        return torch.matmul(torch.softmax(q @ k, -1), v)
CLASSES = {"eager": EagerAttention, "sdpa": SdpaAttention}
class Layer:
    def forward(self, q, k, v):
        fn = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager_attention_forward)
        other = eager_by_assignment
        if self.config._attn_implementation != "eager":
            other = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        keep = unrelated
        return fn(self, q, k, v) + other(self, q, k, v) + keep(q, k, v)
)");
  EXPECT_NE(fact(function(m, "eager_attention_forward"), "fallback").find("get_interface"), std::string::npos);
  EXPECT_NE(fact(function(m, "eager_by_assignment"), "fallback").find("registry"), std::string::npos);
  EXPECT_NE(fact(function(m, "EagerAttention.forward"), "fallback").find("\"eager\""), std::string::npos);
  EXPECT_EQ(fact(function(m, "unrelated"), "fallback"), "");
  EXPECT_EQ(fact(function(m, "Layer.forward"), "fallback"), "");
  EXPECT_EQ(fact(function(m, "Layer.forward"), "self"), "self");
  EXPECT_EQ(fact(function(m, "unrelated"), "self"), "");

  // A model that does not support SDPA runs its eager entry by default: no fallback.
  // Nor is the eager entry of a table whose only alternative is flash-attention.
  ir::Module eager_default = build(R"(
import torch
def eager_attention_forward(module, q, k, v):
    return torch.matmul(torch.softmax(q @ k, -1), v)
class EagerAttention:
    def forward(self, q, k, v):
        return torch.matmul(torch.softmax(q @ k, -1), v)
CLASSES = {"eager": EagerAttention, "flash_attention_2": FlashAttention}
class Model(PreTrainedModel):
    _supports_sdpa = False
class Layer:
    def forward(self, q, k, v):
        fn = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager_attention_forward)
        return fn(self, q, k, v)
)");
  EXPECT_EQ(fact(function(eager_default, "eager_attention_forward"), "fallback"), "");
  EXPECT_EQ(fact(function(eager_default, "EagerAttention.forward"), "fallback"), "");
}

TEST(PythonContext, BranchesBesideAFusedCall) {
  ir::Module m = build(R"(
import torch
import torch.nn.functional as F
class A:
    def forward(self, q, k, v):
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v)
        elif self.use_flash:
            x = flash_attn_func(q, k, v)
        else:
            x = torch.softmax(q @ k.transpose(-2, -1), -1) @ v
        if self.other:
            y = torch.softmax(q @ k.transpose(-2, -1), -1) @ v
        else:
            y = q
        return x + y
)");
  const ir::Function* f = function(m, "A.forward");
  ASSERT_TRUE(f);
  int fallbacks = 0;
  for (const ir::Region& r : f->regions) {
    if (r.kind != "branch") continue;
    auto it = r.attrs.find("fallback");
    if (it == r.attrs.end()) continue;
    ++fallbacks;
    EXPECT_EQ(std::get<std::string>(r.attrs.at("branch")), "else");
    EXPECT_NE(std::get<std::string>(it->second).find("`self.fused_attn` is false"), std::string::npos);
  }
  EXPECT_EQ(fallbacks, 1);  // the elif calls flash-attention; the second if has no fused call
}

TEST(PythonContext, ReturnedWeightsWhereAnotherPathExists) {
  const char* code = R"(
import torch
import torch.nn as nn
class SelfAttention(nn.Module):
    def forward(self, q, k, v, output_attentions=False):
        scores = q @ k.transpose(-1, -2)
        probs = nn.Softmax(dim=-1)(scores)
        probs = self.dropout(probs)
        context = torch.matmul(probs, v)
        outputs = (context, probs) if output_attentions else (context,)
        return outputs
    def no_weights(self, q, k, v):
        probs = torch.softmax(q @ k.transpose(-1, -2), -1)
        context = torch.matmul(probs, v)
        return context, q
)";
  ir::Module m = build(code);
  EXPECT_NE(fact(function(m, "SelfAttention.forward"), "returns-weights").find("`probs`"), std::string::npos);
  EXPECT_EQ(fact(function(m, "SelfAttention.no_weights"), "returns-weights"), "");
  // With no other path in the file (no fused call, dispatch or output_attentions), the
  // eager attention is what users run: no fact.
  std::string plain = code;
  for (size_t at; (at = plain.find("output_attentions")) != std::string::npos;) plain.replace(at, 17, "want");
  EXPECT_EQ(fact(function(build(plain), "SelfAttention.forward"), "returns-weights"), "");
}

TEST(PythonContext, ReferencesAndParityVariants) {
  ir::Module m = build(R"(
import math, torch
class GELUActivation:
    def _gelu_python(self, x):
        return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
    def forward(self, x):
        return self.act(x)
def gelu_reference(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
def gelu_exact(x):
    """Kept for numerical parity with the original checkpoint."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
def gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
def esm_gelu(x):
    """The gelu of the original repo. Using F.gelu yields subtly wrong results."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
)");
  EXPECT_NE(fact(function(m, "GELUActivation._gelu_python"), "parity"), "");
  EXPECT_NE(fact(function(m, "esm_gelu"), "parity").find("subtly wrong"), std::string::npos);
  EXPECT_EQ(fact(function(m, "GELUActivation.forward"), "parity"), "");
  EXPECT_NE(fact(function(m, "gelu_reference"), "reference"), "");
  EXPECT_NE(fact(function(m, "gelu_exact"), "parity").find("numerical parity"), std::string::npos);
  EXPECT_EQ(fact(function(m, "gelu"), "parity"), "");
  EXPECT_EQ(fact(function(m, "gelu"), "reference"), "");
}

TEST(TorchVersion, TheFilesItReadsForAPin) {
  for (const char* p : {"proj/pyproject.toml", "setup.py", "proj/setup.cfg", "proj/requirements-dev.txt",
                        "proj/environment.yml", "proj/conda-gpu.yaml", "proj/.github/workflows/ci.yaml",
                        "proj/.circleci/config.yml", "proj/.travis.yml", "proj/.gitlab-ci.yml", "azure-pipelines.yml",
                        "proj/README.md", "proj/readme.rst", "proj/INSTALL.md", "README"})
    EXPECT_TRUE(driver::reads_torch_pin(p)) << p;
  for (const char* p : {"proj/model.py", "proj/requirements.in", "proj/config.yaml", "proj/.circleci/other.yml",
                        "proj/workflows/ci.yml", "proj/envs/train.yaml", "proj/mlsem.toml", "proj/docs/guide.md",
                        "proj/README.py", "proj/CHANGELOG.md"})
    EXPECT_FALSE(driver::reads_torch_pin(p)) << p;
}

TEST(TorchVersion, PinsInRequirementFormats) {
  using driver::torch_pin_in;
  EXPECT_EQ(torch_pin_in("numpy\ntorch==2.1.0+cu118\n").value_or("-"), "2.1");
  EXPECT_EQ(torch_pin_in("torch>=2.4,<3").value_or("-"), "2.4");
  EXPECT_EQ(torch_pin_in("torch ~= 2.3.1").value_or("-"), "2.3");
  EXPECT_EQ(torch_pin_in("dependencies = [\"torch[opt-einsum]>=2.0\"]").value_or("-"), "2.0");
  EXPECT_EQ(torch_pin_in("[tool.poetry.dependencies]\ntorch = \"^2.2\"\n").value_or("-"), "2.2");
  EXPECT_EQ(torch_pin_in("torch = {version = \">=1.13\", source = \"pytorch\"}").value_or("-"), "1.13");
  EXPECT_EQ(torch_pin_in("install_requires=['torch>=2']").value_or("-"), "2.0");
  // One requirement per platform or Python version: the oldest is what the project supports.
  EXPECT_EQ(torch_pin_in("dependencies = [\n  'torch>=2.6; python_version >= \"3.13\"',\n"
                         "  \"torch>=2.2.2; sys_platform == 'linux' and python_version <= '3.12'\",\n]\n")
                .value_or("-"),
            "2.2");
  EXPECT_FALSE(torch_pin_in("torchvision>=0.15\npytorch-lightning==2.0\n"));
  EXPECT_FALSE(torch_pin_in("torch<2.0\n"));
  EXPECT_FALSE(torch_pin_in("torch\n"));
}

TEST(TorchVersion, NearestPinFromTheFileUpwards) {
  test_support::TempDir dir;
  dir.write("proj/pyproject.toml", "[project]\ndependencies = [\"torch>=2.1\"]\n");
  dir.write("proj/pkg/model.py", "x = 1\n");
  dir.write("proj/sub/requirements-dev.txt", "torch==2.5.1\n");
  dir.write("proj/sub/deep/model.py", "x = 1\n");
  dir.write("other/model.py", "x = 1\n");
  driver::TorchVersionFinder finder;
  EXPECT_EQ(finder.for_file((dir.path() / "proj/pkg/model.py").string()), "2.1");
  EXPECT_EQ(finder.for_file((dir.path() / "proj/sub/deep/model.py").string()), "2.5");
  EXPECT_EQ(finder.for_file((dir.path() / "proj/pkg/model.py").string()), "2.1");  // cached
}

TEST(TorchVersion, CondaEnvironmentPins) {
  using driver::conda_torch_pin_in;
  EXPECT_EQ(conda_torch_pin_in("channels:\n  - pytorch\ndependencies:\n  - pytorch=1.12.1\n").value_or("-"), "1.12");
  EXPECT_EQ(conda_torch_pin_in("  - pytorch::pytorch=2.0.0\n  - pytorch::pytorch-cuda=11.7.0\n").value_or("-"), "2.0");
  EXPECT_EQ(conda_torch_pin_in("  - pytorch>=1.13\n").value_or("-"), "1.13");
  EXPECT_EQ(conda_torch_pin_in("  - pytorch 2.1.*\n").value_or("-"), "2.1");
  EXPECT_FALSE(conda_torch_pin_in("channels:\n  - pytorch\n  - pytorch-cuda=12.1\n  - pytorch-lightning=2.0\n"));

  // The conda file is read after the pip-style files, in the same directory.
  test_support::TempDir dir;
  dir.write("sd/environment.yaml", "dependencies:\n  - pytorch=1.12.1\n  - pip:\n    - transformers==4.19.2\n");
  dir.write("sd/setup.py", "setup(name='ldm', install_requires=['tqdm'])\n");
  dir.write("sd/ldm/model.py", "x = 1\n");
  dir.write("pipped/environment.yml", "dependencies:\n  - pip:\n    - torch==2.3.1\n");
  dir.write("pipped/train.py", "x = 1\n");
  dir.write("both/requirements.txt", "torch>=2.4\n");
  dir.write("both/environment.yml", "dependencies:\n  - pytorch=1.12\n");
  dir.write("both/train.py", "x = 1\n");
  driver::TorchVersionFinder finder;
  EXPECT_EQ(finder.for_file((dir.path() / "sd/ldm/model.py").string()), "1.12");
  EXPECT_EQ(finder.for_file((dir.path() / "pipped/train.py").string()), "2.3");
  EXPECT_EQ(finder.for_file((dir.path() / "both/train.py").string()), "2.4");
}

TEST(TorchVersion, CiInstallsAndMatrices) {
  using driver::ci_torch_pin_in;
  // facebookresearch/vissl, .circleci/config.yml: no pin in its requirements, CI on 1.8.
  EXPECT_EQ(ci_torch_pin_in("      command: |\n        pip install --progress-bar off torch==1.8.1+cu111 "
                            "torchvision==0.9.1+cu111 -f https://download.pytorch.org/whl/torch_stable.html\n")
                .value_or("-"),
            "1.8");
  EXPECT_EQ(ci_torch_pin_in("run: pip install \"torch<2.2,>=2.0\" numpy\n").value_or("-"), "2.0");
  EXPECT_EQ(ci_torch_pin_in("run: pip install torch==2.0.* && pip install 'torch>=1.13'\n").value_or("-"), "1.13");
  EXPECT_EQ(ci_torch_pin_in("  - conda install -y -c pytorch pytorch=1.12 cudatoolkit=11.3\n").value_or("-"), "1.12");
  EXPECT_EQ(ci_torch_pin_in("  - conda install pytorch==1.8.1 torchvision -c pytorch\n").value_or("-"), "1.8");
  // A GitHub Actions matrix: its oldest entry, in any of the list forms.
  EXPECT_EQ(ci_torch_pin_in("    strategy:\n      matrix:\n        python-version: [3.8, 3.9]\n"
                            "        torch-version: [2.0.0, 1.13.1]\n"
                            "    steps:\n      - run: pip install torch==${{ matrix.torch-version }}\n")
                .value_or("-"),
            "1.13");
  EXPECT_EQ(ci_torch_pin_in("      matrix:\n        pytorch-version: ['1.8', '2.0']\n").value_or("-"), "1.8");
  EXPECT_EQ(ci_torch_pin_in("      matrix:\n        torch: [\"2.3.0\", \"2.1.0\", nightly]\n").value_or("-"), "2.1");
  EXPECT_EQ(ci_torch_pin_in("      matrix:\n        torch:\n          - '2.2'\n          - '1.12'\n        os: [ubuntu]\n")
                .value_or("-"),
            "1.12");
  EXPECT_EQ(ci_torch_pin_in("        include:\n          - torch: 2.4.0\n            python: '3.10'\n").value_or("-"), "2.4");
  EXPECT_EQ(ci_torch_pin_in("env:\n  - TORCH_VERSION=1.10.0\n").value_or("-"), "1.10");
  // torchvision and friends, nightlies without a version, references, comments, docker images.
  EXPECT_FALSE(ci_torch_pin_in("run: pip install torchvision==0.15.2 torchaudio==2.0.2 torchtext==0.15\n"));
  EXPECT_FALSE(ci_torch_pin_in("run: pip install --pre torch --index-url https://download.pytorch.org/whl/nightly/cpu\n"));
  EXPECT_FALSE(ci_torch_pin_in("run: python -c 'import torch; print(torch.__version__)'\n"));
  EXPECT_FALSE(ci_torch_pin_in("run: pip install torch==${{ matrix.torch }}  # torch==1.4 once\n# pip install torch==1.2\n"));
  EXPECT_FALSE(ci_torch_pin_in("    container: pytorch/pytorch:1.8.1-cuda11.1-cudnn8-runtime\n"));
  EXPECT_FALSE(ci_torch_pin_in("run: pip install \"torch<2.0\"\n"));
}

TEST(TorchVersion, WhatAReadmeStatesTheCodeNeeds) {
  using driver::readme_torch_pin_in;
  // A statement, a `+`, an operator (also the sign >=), a setup section's list item, a
  // shell command in a code block; the oldest of them.
  EXPECT_EQ(readme_torch_pin_in("# Model\nThis code was tested on PyTorch 1.10 and CUDA 11.3.\n").value_or("-"), "1.10");
  EXPECT_EQ(readme_torch_pin_in("Then install PyTorch 1.5+ and torchvision 0.6+.\n").value_or("-"), "1.5");
  EXPECT_EQ(readme_torch_pin_in("- Linux, Python \u2265 3.10, PyTorch \u2265 2.5.1\n").value_or("-"), "2.5");
  EXPECT_EQ(readme_torch_pin_in("## Requirements\n- Python 3.6\n- [PyTorch](http://pytorch.org) install = 1.4.0\n")
                .value_or("-"),
            "1.4");
  EXPECT_EQ(readme_torch_pin_in("## Requirements\n\n- PyTorch 1.3.1\n- CUDA 10.1\n").value_or("-"), "1.3");
  EXPECT_EQ(readme_torch_pin_in("Developed with python version 3.6, PyTorch version 1.7.1.\n"
                                "We could not reproduce the results with pytorch 1.8.1 yet, please use 1.7.1.\n")
                .value_or("-"),
            "1.7");
  EXPECT_EQ(readme_torch_pin_in("## Setup\n```bash\npip install torch==1.8.1+cu111 torchvision\n```\n").value_or("-"), "1.8");
  EXPECT_EQ(readme_torch_pin_in("* 64-bit Python 3.8 and PyTorch 1.12.0 (or later).\n").value_or("-"), "1.12");
  // Not a statement about this code's own requirement: prose without a requirement's words,
  // moves between versions, container images, tables, news and dated sections, other
  // packages, attribute access.
  EXPECT_FALSE(readme_torch_pin_in("Our kernel is 2x faster than PyTorch 2.1 eager.\n"));
  EXPECT_FALSE(readme_torch_pin_in("If the build fails, try downgrading to PyTorch 2.1.0.\n"
                                   "Please upgrade to PyTorch 2.5.1 or higher first.\n"
                                   "docker run nvcr.io/nvidia/pytorch:24.01-py3 (PyTorch 2.2 inside)\n"
                                   "| 7 | 12.0 minutes | Upgraded PyTorch 2.5.0 | 10/18/24 |\n"));
  EXPECT_FALSE(readme_torch_pin_in("## What's New\n### March 23, 2026\n* Tests now require PyTorch 1.13 at the low end\n"
                                   "## Feb 2, 2026\n* Unit tests need PyTorch 2.9.1\n"));
  EXPECT_FALSE(readme_torch_pin_in("Requires torchvision 0.15 and pytorch-lightning 2.0; `torch.compile` 2.0 style.\n"));
  EXPECT_EQ(readme_torch_pin_in("# DINOv2\n## Installation\nThe code requires PyTorch 2.0 and xFormers.\n").value_or("-"), "2.0");
  // A news section ends at the next heading of its own level.
  EXPECT_EQ(readme_torch_pin_in("## News\n- Now requires PyTorch 2.4\n## Installation\n- PyTorch 1.12+\n").value_or("-"), "1.12");
  EXPECT_FALSE(readme_torch_pin_in(""));
}

TEST(TorchVersion, AReadmeComesAfterEveryPinFile) {
  test_support::TempDir dir;
  const std::string readme = "# Old\n## Requirements\n- PyTorch 1.3.1\n";
  // Nothing else pins torch: the README does.
  dir.write("old/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("old/README.md", readme);
  dir.write("old/model.py", "x = 1\n");
  dir.write("old/op/fused.py", "x = 1\n");
  // A requirements pin, or the CI, beats it.
  dir.write("pinned/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("pinned/README.md", readme);
  dir.write("pinned/requirements.txt", "torch>=2.1\n");
  dir.write("pinned/model.py", "x = 1\n");
  dir.write("ci/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("ci/README.md", readme);
  dir.write("ci/.travis.yml", "  - pip install torch==1.8.1\n");
  dir.write("ci/model.py", "x = 1\n");
  // The nearest README that states a version: a subproject's own.
  dir.write("mono/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("mono/README.md", readme);
  dir.write("mono/requirements.txt", "numpy\n");  // a Python project's top, pinning no torch
  dir.write("mono/new/INSTALL.md", "Install PyTorch 2.4 or later.\n");
  dir.write("mono/new/model.py", "x = 1\n");
  dir.write("mono/plain/README.md", "Trains the plain model.\n");
  dir.write("mono/plain/model.py", "x = 1\n");
  // Not the README of a directory without Python (a C++ tool's, documentation's).
  dir.write("tool/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("tool/README.md", readme);
  dir.write("tool/CMakeLists.txt", "project(tool)\n");
  dir.write("tool/samples/model.py", "x = 1\n");
  driver::TorchVersionFinder finder;
  EXPECT_EQ(finder.for_file((dir.path() / "old/model.py").string()), "1.3");
  EXPECT_EQ(finder.for_file((dir.path() / "old/op/fused.py").string()), "1.3");
  EXPECT_EQ(finder.for_file((dir.path() / "pinned/model.py").string()), "2.1");
  EXPECT_EQ(finder.for_file((dir.path() / "ci/model.py").string()), "1.8");
  EXPECT_EQ(finder.for_file((dir.path() / "mono/new/model.py").string()), "2.4");
  EXPECT_EQ(finder.for_file((dir.path() / "mono/plain/model.py").string()), "1.3");
  EXPECT_EQ(finder.for_file((dir.path() / "tool/samples/model.py").string()), "");
}

TEST(TorchVersion, CiFilesAtTheRootComeLast) {
  test_support::TempDir dir;
  const std::string circle = "jobs:\n  - run: pip install torch==1.8.1+cu111 torchvision==0.9.1+cu111\n";
  // No pin in the tree: the root's CI decides, for every directory below it.
  dir.write("vissl/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("vissl/.circleci/config.yml", circle);
  dir.write("vissl/requirements.txt", "numpy\nfvcore\n");
  dir.write("vissl/vissl/models/trunk.py", "x = 1\n");
  // A requirements pin beats the CI; so does a conda file.
  dir.write("pinned/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("pinned/.circleci/config.yml", circle);
  dir.write("pinned/requirements.txt", "torch>=2.1\n");
  dir.write("pinned/pkg/model.py", "x = 1\n");
  dir.write("conda/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("conda/.travis.yml", circle);
  dir.write("conda/environment.yml", "dependencies:\n  - pytorch=2.2\n");
  dir.write("conda/model.py", "x = 1\n");
  // Workflows: the oldest of all files; a subdirectory's own .github is not the project's CI.
  dir.write("actions/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("actions/.github/workflows/test.yml", "      matrix:\n        torch-version: [2.1.0, 2.3.0]\n");
  dir.write("actions/.github/workflows/min.yaml", "      - run: pip install torch==2.0.1\n");
  dir.write("actions/.github/workflows/notes.txt", circle);
  dir.write("actions/plugin/.github/workflows/test.yml", circle);
  dir.write("actions/plugin/.circleci/config.yml", circle);
  dir.write("actions/plugin/model.py", "x = 1\n");
  dir.write("bare/.git/HEAD", "ref: refs/heads/main\n");
  dir.write("bare/sub/.github/workflows/test.yml", circle);
  dir.write("bare/sub/model.py", "x = 1\n");
  driver::TorchVersionFinder finder;
  EXPECT_EQ(finder.for_file((dir.path() / "vissl/vissl/models/trunk.py").string()), "1.8");
  EXPECT_EQ(finder.for_file((dir.path() / "vissl/vissl/models/trunk.py").string()), "1.8");  // cached
  EXPECT_EQ(finder.for_file((dir.path() / "pinned/pkg/model.py").string()), "2.1");
  EXPECT_EQ(finder.for_file((dir.path() / "conda/model.py").string()), "2.2");
  EXPECT_EQ(finder.for_file((dir.path() / "actions/plugin/model.py").string()), "2.0");
  EXPECT_EQ(finder.for_file((dir.path() / "bare/sub/model.py").string()), "");
}

}  // namespace
}  // namespace mlsem
