// Across a project (driver/references.h): a finding in a top-level function that nothing
// else in the project names is demoted as `unused`, whether the directory or the one file
// is analyzed; a decorated (registered) function, a name a YAML or JSON config mentions,
// a module nothing imports, a file in no marked project, and --keep-context unused keep it.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
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

}  // namespace
}  // namespace mlsem
