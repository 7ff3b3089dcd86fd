// Across a project (driver/references.h): a finding in a top-level function that nothing
// else in the project names is demoted as `unused`, whether the directory or the one file
// is analyzed; a decorated (registered) function, a name a YAML or JSON config mentions,
// a module nothing imports, a file in no marked project, and --keep-context unused keep it.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "driver/driver.h"
#include "engine/engine.h"
#include "repo_engine.h"
#include "temp_dir.h"

namespace mlsem {
namespace {

using test_support::TempDir;

std::string attention(const std::string& name, const std::string& decorator = "") {
  return decorator + "def " + name + R"((q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = F.softmax(scores, dim=-1)
    return probs @ v
)";
}

std::string module_with(const std::vector<std::string>& defs) {
  std::string text = "import math\nimport torch.nn.functional as F\n\n\n";
  for (const std::string& d : defs) text += d + "\n\n";
  return text;
}

class DriverReferences : public test_support::RepoEngine {
 protected:
  // The ATT001 finding in function `fn`, or nullptr.
  static const Finding* in(const Report& r, const std::string& fn) {
    auto it = std::find_if(r.findings.begin(), r.findings.end(),
                           [&](const Finding& f) { return f.rule == "ATT001" && f.function == fn; });
    return it == r.findings.end() ? nullptr : &*it;
  }
};

TEST_F(DriverReferences, CodeNoOtherFileNamesIsDemoted) {
  TempDir dir;
  dir.write("pyproject.toml", "[project]\nname = \"pkg\"\n");
  std::string attn = dir.write("pkg/attn.py", module_with({attention("used_attention"), attention("dead_attention")}));
  dir.write("pkg/model.py", "from pkg.attn import used_attention\n\ny = used_attention(1, 2, 3)\n");
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  Report shown = analyze_paths({dir.path().string()}, engine(), options);
  ASSERT_NE(in(shown, "used_attention"), nullptr);
  EXPECT_TRUE(in(shown, "used_attention")->context.empty());
  EXPECT_EQ(in(shown, "dead_attention"), nullptr);

  options.show_demoted = true;
  Report demoted = analyze_paths({dir.path().string()}, engine(), options);
  const Finding* dead = in(demoted, "dead_attention");
  ASSERT_NE(dead, nullptr);
  EXPECT_EQ(dead->context_kind, "unused");
  EXPECT_EQ(dead->severity, "info");
  EXPECT_NE(dead->context.find("dead_attention"), std::string::npos);

  // The file alone gets the same answer: its project is read, not just what is analyzed.
  options.show_demoted = false;
  Report alone = analyze_paths({attn}, engine(), options);
  EXPECT_NE(in(alone, "used_attention"), nullptr);
  EXPECT_EQ(in(alone, "dead_attention"), nullptr);

  options.keep_contexts = {"unused"};
  EXPECT_NE(in(analyze_paths({dir.path().string()}, engine(), options), "dead_attention"), nullptr);
}

TEST_F(DriverReferences, ConfigsNotebooksRegistriesAndLoneFilesKeepIt) {
  TempDir dir;
  dir.write(".git/HEAD", "ref: refs/heads/main\n");
  dir.write("pkg/attn.py", module_with({attention("yaml_attention"), attention("notebook_attention"),
                                        attention("registered_attention", "@register\n"),
                                        attention("registered_long", "@register(\n    \"long\",\n)\n"),
                                        attention("built_attention")}));
  // A use in a directory the analysis walk would skip (build*) still counts.
  dir.write("builders/make.py", "from pkg.attn import built_attention\n");
  dir.write("pkg/other.py", "x = 1\n");
  dir.write("configs/model.yaml", "model:\n  attention: pkg.attn.yaml_attention\n");
  dir.write("pkg/train.py", "import pkg.attn\n");
  // A module nothing imports (a script, a file not wired up yet) keeps its findings.
  dir.write("tools/script.py", module_with({attention("script_attention")}));
  dir.write("notebooks/demo.ipynb",
            R"({"cells": [{"cell_type": "code", "source": ["from pkg.attn import notebook_attention\n"]}], )"
            R"("metadata": {}, "nbformat": 4, "nbformat_minor": 5})");
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  Report r = analyze_paths({dir.path().string()}, engine(), options);
  for (const char* fn : {"yaml_attention", "notebook_attention", "registered_attention", "registered_long",
                         "built_attention", "script_attention"}) {
    ASSERT_NE(in(r, fn), nullptr) << fn;
    EXPECT_TRUE(in(r, fn)->context.empty()) << fn;
  }
  // Outside any marked project (no .git, pyproject.toml, setup.py, setup.cfg or
  // mlsem.toml above it) nothing says who calls the code.
  TempDir lone;
  lone.write("a/attn.py", module_with({attention("dead_attention")}));
  lone.write("a/other.py", "x = 1\n");
  EXPECT_NE(in(analyze_paths({lone / "a"}, engine(), options), "dead_attention"), nullptr);
}

TEST_F(DriverReferences, CodeOnlyUnusedCodeNamesIsDemotedToo) {
  TempDir dir;
  dir.write(".git/HEAD", "ref: refs/heads/main\n");
  std::string wrapper = R"(class Pool:
    def __init__(self):
        self.attention = dead_inner  # only Pool names it, and nothing builds Pool
)";
  std::string loop = R"(class Ring:
    def __init__(self):
        self.a = cycle_attention
)";
  std::string documented = R"(def documented():
    """Calls doc_attention(q, k, v) like this."""
    # doc_attention is the old path
    return 1
)";
  dir.write("pkg/attn.py",
            module_with({attention("dead_inner"), wrapper, attention("cycle_attention"), loop,
                         attention("script_used"), attention("doc_attention"), documented, attention("string_attention"),
                         attention("live_inner"), "class Live:\n    def __init__(self):\n        self.a = live_inner\n"}));
  dir.write("pkg/registry.py", "REG = {\"string\": \"string_attention\"}\n");
  // A module that looks its names up at run time (eval of a built name) may build any of
  // its definitions; model.eval() is not such a lookup.
  dir.write("pkg/dynamic.py", module_with({attention("evaluated_attention"),
                                           "def build(name):\n    return eval(\"evaluated_\" + name)\n"}));
  dir.write("pkg/evalmode.py", module_with({attention("eval_mode_attention"),
                                            "def run(model):\n    model.eval()\n"}));
  dir.write("pkg/train.py",
            "import pkg.attn\nimport pkg.registry\nimport pkg.dynamic\nimport pkg.evalmode\nmodel = pkg.attn.Live()\n");
  // A function of a script (a module nothing imports) may be run from outside.
  dir.write("tools/run.py", "import pkg.attn as a\n\n\ndef tool_main():\n    return a.script_used(1, 2, 3)\n");
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  options.show_demoted = true;
  Report r = analyze_paths({dir.path().string()}, engine(), options);
  // Named only by a definition nothing builds, by comments and docstrings, or in a cycle
  // of such definitions: demoted, with what names it.
  for (const char* fn : {"dead_inner", "doc_attention", "cycle_attention", "eval_mode_attention"}) {
    ASSERT_NE(in(r, fn), nullptr) << fn;
    EXPECT_EQ(in(r, fn)->context_kind, "unused") << fn;
  }
  EXPECT_NE(in(r, "dead_inner")->context.find("only `Pool` names `dead_inner`"), std::string::npos)
      << in(r, "dead_inner")->context;
  // Named by code that runs (a class module-level code builds), by a string, or by a
  // definition in a script nothing imports: kept.
  for (const char* fn : {"live_inner", "string_attention", "script_used", "evaluated_attention"}) {
    ASSERT_NE(in(r, fn), nullptr) << fn;
    EXPECT_TRUE(in(r, fn)->context.empty()) << fn << ": " << in(r, fn)->context;
  }
}

TEST_F(DriverReferences, CodeBuiltOnlyUnderASwitchTheProjectNeverSetsIsDemoted) {
  auto project = [](TempDir& dir, const std::string& config, const std::string& extra) {
    dir.write(".git/HEAD", "ref: refs/heads/main\n");
    dir.write("pkg/attn.py", module_with({attention("legacy_attention"), attention("fast_attention"),
                                          attention("other_attention"), R"(class Block:
    def __init__(self, kind="flash", dim=4):
        if kind == "flash":
            self.attn = fast_attention
        else:
            self.attn = legacy_attention
        if self.fast():
            self.other = None
        elif kind == "other":
            self.other = other_attention
)"}));
    dir.write("pkg/model.py", "from pkg.attn import Block\n\n\nclass Net:\n    def __init__(self):\n        self.block = Block(dim=8)\n");
    dir.write("configs/net.yaml", "model:\n  target: pkg.model.Net\n" + config);
    dir.write("pkg/train.py", "import pkg.attn\nimport pkg.model\n" + extra);
  };
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  options.show_demoted = true;
  {  // Nothing gives `kind` another value than its default: the else branch never runs.
    TempDir dir;
    project(dir, "", "");
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "legacy_attention"), nullptr);
    EXPECT_EQ(in(r, "legacy_attention")->context_kind, "unused");
    EXPECT_NE(in(r, "legacy_attention")->context.find("`kind`"), std::string::npos) << in(r, "legacy_attention")->context;
    ASSERT_NE(in(r, "other_attention"), nullptr);  // under an elif
    EXPECT_EQ(in(r, "other_attention")->context_kind, "unused");
    ASSERT_NE(in(r, "fast_attention"), nullptr);
    EXPECT_TRUE(in(r, "fast_attention")->context.empty());
  }
  // A config, a keyword argument, or a value the project does not spell as a literal (a
  // command-line flag, a name) may take the branch: kept.
  for (const auto& [config, extra] : std::vector<std::pair<std::string, std::string>>{
           {"  kind: legacy\n", ""},
           {"", "b = pkg.attn.Block(kind=\"legacy\")\n"},
           {"", "parser.add_argument(\"--kind\")\n"},
           {"", "b = pkg.attn.Block(kind=args.attention)\n"}}) {
    TempDir dir;
    project(dir, config, extra);
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "legacy_attention"), nullptr) << config << extra;
    EXPECT_TRUE(in(r, "legacy_attention")->context.empty()) << config << extra << in(r, "legacy_attention")->context;
  }
}

TEST_F(DriverReferences, CodeUnderAnAttributeTheProjectOnlySetsToOneValueIsDemoted) {
  // minRF's `self.stratified = False`: set once in __init__, read in forward, set nowhere else.
  auto project = [](TempDir& dir, const std::string& init, const std::string& extra, const std::string& flag = "manual") {
    dir.write(".git/HEAD", "ref: refs/heads/main\n");
    dir.write("pkg/attn.py", "import math\nimport torch.nn.functional as F\n\n\nclass Attention:\n"
                             "    def __init__(self, dim):\n" + init +
                             "        self.dim = dim\n\n"
                             "    def forward(self, q, k, v):\n"
                             "        if self." + flag + " and self.dim > 0:\n"
                             "            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                             "            probs = F.softmax(scores, dim=-1)\n"
                             "            return probs @ v\n"
                             "        return F.scaled_dot_product_attention(q, k, v)\n");
    dir.write("pkg/train.py", "from pkg.attn import Attention\n\nm = Attention(8)\n" + extra);
  };
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  options.show_demoted = true;
  {
    TempDir dir;
    project(dir, "        self.manual = False  # kept for reference\n", "");
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "Attention.forward"), nullptr);
    EXPECT_EQ(in(r, "Attention.forward")->context_kind, "unused");
    EXPECT_NE(in(r, "Attention.forward")->context.find("`.manual`, which the project only ever sets to False (pkg/attn.py:7)"),
              std::string::npos)
        << in(r, "Attention.forward")->context;
    options.keep_contexts = {"unused"};
    Report kept = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(kept, "Attention.forward"), nullptr);
    EXPECT_TRUE(in(kept, "Attention.forward")->context.empty());
    options.keep_contexts = {};
  }
  // Set to a value that takes the branch, or in a way that may: kept.
  for (const auto& [init, extra] : std::vector<std::pair<std::string, std::string>>{
           {"        self.manual = True\n", ""},                                // the value takes it
           {"        self.manual = False\n", "m.manual = True\n"},             // another file sets it
           {"        self.manual = False\n", "m.manual |= flags.manual\n"},   // changed otherwise
           {"        self.manual = manual\n", ""},                              // from a parameter
           {"        self.manual = False\n", "setattr(m, \"manual\", True)\n"},  // by name
           {"        self.manual = False\n", "m = Attention(8, manual=True)\n"},  // a keyword
           {"        self.manual = os.environ.get('MANUAL') == '1'\n", ""}}) {  // not a literal
    TempDir dir;
    project(dir, init, extra);
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "Attention.forward"), nullptr) << init << extra;
    EXPECT_TRUE(in(r, "Attention.forward")->context.empty()) << init << extra << in(r, "Attention.forward")->context;
  }
  // From a parameter of __init__: what every construction gives it, by position, by
  // keyword or by default (minRF's `RF(model)` and `RF(model, True)` with `ln=True`).
  auto from_parameter = [&](const std::string& calls) {
    TempDir dir;
    dir.write(".git/HEAD", "ref: refs/heads/main\n");
    dir.write("pkg/attn.py", "import math\nimport torch.nn.functional as F\n\n\nclass Attention:\n"
                             "    def __init__(self, dim, manual=False):\n"
                             "        self.manual = manual\n"
                             "        self.dim = dim\n\n"
                             "    def forward(self, q, k, v):\n"
                             "        if self.manual and self.dim > 0:\n"
                             "            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                             "            probs = F.softmax(scores, dim=-1)\n"
                             "            return probs @ v\n"
                             "        return F.scaled_dot_product_attention(q, k, v)\n");
    dir.write("pkg/train.py", "from pkg.attn import Attention\n\n" + calls);
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    const Finding* f = in(r, "Attention.forward");
    return f ? std::optional<Finding>(*f) : std::nullopt;
  };
  for (const std::string& calls : {std::string("m = Attention(8)\n"), std::string("m = Attention(8)\nn = Attention(16, False)\n"),
                                   std::string("m = Attention(dim=8, manual=False)\n")}) {
    std::optional<Finding> f = from_parameter(calls);
    ASSERT_TRUE(f) << calls;
    EXPECT_EQ(f->context_kind, "unused") << calls;
    EXPECT_NE(f->context.find("from the parameter `manual` of `Attention` as every construction gives it"), std::string::npos)
        << f->context;
  }
  // A positional argument holding a keyword of its own (`make(dim=8)`) still counts as one.
  for (const std::string& calls : {std::string("m = Attention(8, True)\n"), std::string("m = Attention(8, manual=True)\n"),
                                   std::string("m = Attention(make(dim=8), True)\n"),
                                   std::string("m = Attention(8, manual=args.manual)\n"),
                                   std::string("m = Attention(*sizes)\n"), std::string("make = functools.partial(Attention, 8)\n"),
                                   std::string("")}) {
    std::optional<Finding> f = from_parameter(calls);
    ASSERT_TRUE(f) << calls;
    EXPECT_TRUE(f->context.empty()) << calls << f->context;
  }
  {  // `training`: nn.Module.train() sets it, with no assignment in the project to see.
    TempDir dir;
    project(dir, "        self.training = False\n", "", "training");
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "Attention.forward"), nullptr);
    EXPECT_TRUE(in(r, "Attention.forward")->context.empty()) << in(r, "Attention.forward")->context;
  }
}

TEST_F(DriverReferences, CodeBuiltOnlyUnderAConfigurationValueNoShippedConfigSetsIsDemoted) {
  // A builder that picks a block by a configuration key (an enum member), the configs the
  // project ships, and a test that builds the other block itself.
  auto project = [](TempDir& dir, const std::string& configs, const std::string& extra) {
    dir.write(".git/HEAD", "ref: refs/heads/main\n");
    dir.write("pkg/config.py", R"(from enum import Enum


class BlockType(str, Enum):
    sequential = "sequential"
    llama = "llama"


class ModelConfig:
    block_type: BlockType = BlockType.sequential
)");
    dir.write("pkg/attn.py", module_with({attention("sequential_attention"), attention("llama_attention"), R"(class Block:
    @classmethod
    def build(cls, config):
        if config.block_type == BlockType.sequential:
            return sequential_attention
        elif config.block_type == BlockType.llama:
            return llama_attention
)"}));
    dir.write("pkg/model.py", "from pkg.attn import Block\n\n\nclass Net:\n    def __init__(self, config):\n        self.block = Block.build(config)\n");
    dir.write("pkg/train.py", "import pkg.attn\nimport pkg.model\n" + extra);
    dir.write("configs/small.yaml", "model:\n  target: pkg.model.Net\n" + configs);
    dir.write("tests/test_attn.py", "from pkg.attn import llama_attention\n\n\ndef test_llama():\n    llama_attention(1, 2, 3)\n");
  };
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  options.show_demoted = true;
  {  // Every config, and the dataclass default, says sequential.
    TempDir dir;
    project(dir, "  block_type: sequential\n", "");
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "llama_attention"), nullptr);
    EXPECT_EQ(in(r, "llama_attention")->context_kind, "unused");
    const std::string& why = in(r, "llama_attention")->context;
    EXPECT_NE(why.find("`block_type`"), std::string::npos) << why;
    EXPECT_NE(why.find("it gives sequential"), std::string::npos) << why;
    ASSERT_NE(in(r, "sequential_attention"), nullptr);
    EXPECT_TRUE(in(r, "sequential_attention")->context.empty());
  }
  // A config or code that selects llama, a value not spelled as a literal, an enum member the
  // project does not define, or no configuration file that sets the key at all (its values
  // then come from outside, as a library's do): kept.
  for (const auto& [configs, extra] : std::vector<std::pair<std::string, std::string>>{
           {"  block_type: llama\n", ""},
           {"  block_type: sequential\n", "c = ModelConfig(block_type=BlockType.llama)\n"},
           {"  block_type: sequential\n", "c.block_type = choose(args)\n"},
           {"  block_type: sequential\n", "c = ModelConfig(block_type=Other.llama)\n"},
           {"", ""}}) {
    TempDir dir;
    project(dir, configs, extra);
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "llama_attention"), nullptr) << configs << extra;
    EXPECT_TRUE(in(r, "llama_attention")->context.empty()) << configs << extra << in(r, "llama_attention")->context;
  }
}

TEST_F(DriverReferences, WhatOnlyTheTestsUseIsDemoted) {
  TempDir dir;
  dir.write("pyproject.toml", "[project]\nname = \"pkg\"\n");
  dir.write("pkg/attn.py", module_with({attention("used_attention"), attention("tested_attention")}));
  dir.write("pkg/model.py", "from pkg.attn import used_attention\n\ny = used_attention(1, 2, 3)\n");
  dir.write("pkg/extra.py", module_with({attention("library_attention")}));
  dir.write("tests/test_attn.py",
            "from pkg.attn import tested_attention\nfrom pkg.extra import library_attention\n\n\n"
            "def test_it():\n    tested_attention(1, 2, 3)\n    library_attention(1, 2, 3)\n");
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  options.show_demoted = true;
  Report r = analyze_paths({dir.path().string()}, engine(), options);
  ASSERT_NE(in(r, "tested_attention"), nullptr);
  EXPECT_EQ(in(r, "tested_attention")->context_kind, "unused");
  EXPECT_NE(in(r, "tested_attention")->context.find("only the tests"), std::string::npos) << in(r, "tested_attention")->context;
  ASSERT_NE(in(r, "used_attention"), nullptr);
  EXPECT_TRUE(in(r, "used_attention")->context.empty());
  // A module only the tests import may be used from outside (a library's API): kept.
  ASSERT_NE(in(r, "library_attention"), nullptr);
  EXPECT_TRUE(in(r, "library_attention")->context.empty()) << in(r, "library_attention")->context;
}

// The function name `attention(name)` defines for a directory-derived name.
std::string chapter_fn(std::string chapter) {
  for (char& c : chapter)
    if (c == '-') c = '_';
  return chapter + "_attention";
}

TEST_F(DriverReferences, DemonstrationsAreDemoted) {
  // The ATT001 finding in the file whose path ends with `tail` (each module calls its
  // function at module level, where the finding is reported), or nullptr.
  auto in = [](const Report& r, const std::string& tail) -> const Finding* {
    for (const Finding& f : r.findings)
      if (f.rule == "ATT001" && f.path.ends_with(tail)) return &f;
    return nullptr;
  };
  auto project = [](TempDir& dir, int scripts) {
    dir.write("pyproject.toml", "[project]\nname = \"pkg\"\n");
    dir.write("pkg/__init__.py", "");
    dir.write("pkg/attn.py", module_with({attention("library_attention")}) + "y = library_attention(1, 2, 3)\n");
    dir.write("pkg/demos/__init__.py", "");  // a package named demos: the project's code
    dir.write("pkg/demos/manager.py", module_with({attention("manager_attention")}) + "y = manager_attention(1, 2, 3)\n");
    dir.write("samples/generate.py", module_with({attention("sample_attention")}) + "y = sample_attention(1, 2, 3)\n");
    dir.write("examples/demo.py", module_with({attention("examples/demo.py")}) + "y = example_attention(1, 2, 3)\n");
    for (int i = 0; i < scripts; ++i)
      dir.write("train_" + std::to_string(i) + ".py",
                module_with({attention("script_attention_" + std::to_string(i))}) + "y = script_attention_" +
                    std::to_string(i) + "(1, 2, 3)\n");
  };
  DriverOptions options;
  options.min_confidence = kDefaultMinConfidence;
  options.show_demoted = true;
  {
    TempDir dir;
    project(dir, 3);
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "examples/demo.py"), nullptr);
    EXPECT_EQ(in(r, "examples/demo.py")->context_kind, "example");
    EXPECT_NE(in(r, "examples/demo.py")->context.find("examples/"), std::string::npos) << in(r, "examples/demo.py")->context;
    ASSERT_NE(in(r, "/train_0.py"), nullptr);
    EXPECT_EQ(in(r, "/train_0.py")->context_kind, "example");
    EXPECT_NE(in(r, "/train_0.py")->context.find("one of 3 train*.py scripts"), std::string::npos);
    for (const char* kept : {"pkg/attn.py", "demos/manager.py", "samples/generate.py"}) {
      ASSERT_NE(in(r, kept), nullptr) << kept;
      EXPECT_TRUE(in(r, kept)->context.empty()) << kept << ": " << in(r, kept)->context;
    }
    // --keep-context example keeps them.
    DriverOptions keep = options;
    keep.keep_contexts = {"example"};
    Report k = analyze_paths({dir.path().string()}, engine(), keep);
    ASSERT_NE(in(k, "examples/demo.py"), nullptr);
    EXPECT_TRUE(in(k, "examples/demo.py")->context.empty());
  }
  {  // Two training scripts beside a package are the project's own training.
    TempDir dir;
    project(dir, 2);
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "/train_0.py"), nullptr);
    EXPECT_TRUE(in(r, "/train_0.py")->context.empty()) << in(r, "/train_0.py")->context;
  }
  {  // A book's code: chapter directories at the root make every file a demonstration.
    TempDir dir;
    dir.write("pyproject.toml", "[project]\nname = \"book\"\n");
    for (const char* chapter : {"ch02", "ch03", "appendix-A"})
      dir.write(std::string(chapter) + "/main.py",
                module_with({attention(chapter_fn(chapter))}) + "y = " + chapter_fn(chapter) + "(1, 2, 3)\n");
    dir.write("pkg/book/ch03.py", module_with({attention("pkg_attention")}) + "y = pkg_attention(1, 2, 3)\n");
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    for (const char* file : {"ch02/main.py", "appendix-A/main.py", "pkg/book/ch03.py"}) {
      ASSERT_NE(in(r, file), nullptr) << file;
      EXPECT_EQ(in(r, file)->context_kind, "example") << file;
      EXPECT_NE(in(r, file)->context.find("chapters of a book or course (appendix-A/, ch02/, ch03/"), std::string::npos)
          << in(r, file)->context;
    }
  }
  {  // Two chapter-like directories (or `checkpoints/`, `chat/`) are not a book.
    TempDir dir;
    dir.write("pyproject.toml", "[project]\nname = \"app\"\n");
    for (const char* d : {"ch1", "chapter_2", "checkpoints", "chat"})
      dir.write(std::string(d) + "/main.py",
                module_with({attention(chapter_fn(d))}) + "y = " + chapter_fn(d) + "(1, 2, 3)\n");
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(in(r, "ch1/main.py"), nullptr);
    EXPECT_TRUE(in(r, "ch1/main.py")->context.empty()) << in(r, "ch1/main.py")->context;
  }
}

TEST_F(DriverReferences, ASettingTheProjectMakesInOnePlaceDemotesPrc002) {
  // A classifier script that never sets cudnn.benchmark (PRC002 fires), in a project whose
  // setup module may set it for every script.
  const std::string script = R"(import argparse
import torch
import torch.nn.functional as F
import torchvision
from torchvision import transforms

from setup_utils import init_run


def main():
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    init_run(args)
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])
    loader = make_loader(tf)
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(images.cuda(non_blocking=True)), labels.cuda(non_blocking=True))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
)";
  auto prc002 = [](const Report& r) -> const Finding* {
    for (const Finding& f : r.findings)
      if (f.rule == "PRC002") return &f;
    return nullptr;
  };
  // A project of the script and its setup module.
  auto project = [](TempDir& dir, const std::string& train, const std::string& setup_utils) {
    dir.write("pyproject.toml", "[project]\nname = \"cls\"\n");
    dir.write("train.py", train);
    dir.write("setup_utils.py", setup_utils);
  };
  DriverOptions options;
  options.show_demoted = true;
  {
    TempDir dir;
    // A comment that names the setting is not a setting.
    project(dir, script, "# set torch.backends.cudnn.benchmark = True to autotune\ndef init_run(args):\n    return args\n");
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(prc002(r), nullptr);
    EXPECT_TRUE(prc002(r)->context.empty()) << prc002(r)->context;
  }
  {
    TempDir dir;
    project(dir, script, "import torch\n\n\ndef init_run(args):\n    torch.backends.cudnn.benchmark = True\n");
    Report r = analyze_paths({dir.path().string()}, engine(), options);
    ASSERT_NE(prc002(r), nullptr);
    EXPECT_EQ(prc002(r)->context_kind, "configured");
    EXPECT_NE(prc002(r)->context.find("sets `cudnn.benchmark` itself (setup_utils.py:5)"), std::string::npos)
        << prc002(r)->context;
    // Not shown by default; --keep-context configured reports it again.
    DriverOptions quiet = options;
    quiet.show_demoted = false;
    quiet.min_confidence = kDefaultMinConfidence;
    EXPECT_EQ(prc002(analyze_paths({dir.path().string()}, engine(), quiet)), nullptr);
    DriverOptions keep = quiet;
    keep.keep_contexts = {"configured"};
    Report kept_report = analyze_paths({dir.path().string()}, engine(), keep);
    const Finding* kept = prc002(kept_report);
    ASSERT_NE(kept, nullptr);
    EXPECT_TRUE(kept->context.empty());
  }
  {  // The script sets it itself: no finding at all.
    TempDir dir;
    const std::string call = "    init_run(args)\n";
    std::string set = script;
    set.insert(set.find(call) + call.size(), "    torch.backends.cudnn.benchmark = True\n");
    project(dir, set, "def init_run(args):\n    return args\n");
    EXPECT_EQ(prc002(analyze_paths({dir.path().string()}, engine(), options)), nullptr);
  }
}

}  // namespace
}  // namespace mlsem
