// POS001's advice on samples/python/rope_variants.py follows the layout the code rotates:
// half-split forms get the default fused kernel, interleaved (GPT-J) forms the
// interleaved mode, and interleaved pairs written back as halves a layout warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "driver/driver.h"
#include "engine/engine.h"

namespace mlsem {
namespace {

struct Rope {
  std::string text;
  std::vector<Finding> findings;
};

const Rope& rope() {
  static const Rope r = [] {
    Rope out;
    std::string path = std::string(MLSEM_SOURCE_DIR) + "/samples/python/rope_variants.py";
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    out.text = ss.str();
    std::vector<FileError> errors;
    std::optional<Engine> engine = Engine::load(MLSEM_SOURCE_DIR, errors);
    if (!engine) return out;
    for (const Finding& f : analyze_source(SourceFile{path, out.text}, *engine, DriverOptions{}).findings)
      if (f.rule == "POS001") out.findings.push_back(f);
    return out;
  }();
  return r;
}

// The POS001 finding whose range covers the first line containing `marker`.
const Finding* at(const std::string& marker) {
  size_t pos = rope().text.find(marker);
  if (pos == std::string::npos) return nullptr;
  uint32_t line = static_cast<uint32_t>(std::count(rope().text.begin(), rope().text.begin() + static_cast<long>(pos), '\n') + 1);
  for (const Finding& f : rope().findings)
    if (f.range.begin.line <= line && line <= f.range.end.line) return &f;
  return nullptr;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(RopeFixes, HalfSplitFormsGetTheDefaultKernel) {
  const Finding* f = at("return q * cos + rotate_half_flipped(q) * sin");
  ASSERT_TRUE(f);
  EXPECT_FALSE(has(f->fix, "interleaved")) << f->fix;
}

TEST(RopeFixes, InterleavedFormsSayInterleavedMode) {
  for (const char* marker : {"(rotate_half_interleaved(q).float() * sin)",
                             "torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)"}) {
    const Finding* f = at(marker);
    ASSERT_TRUE(f) << marker;
    EXPECT_TRUE(has(f->fix, "interleaved=True")) << marker << ": " << f->fix;
    EXPECT_TRUE(has(f->message, "interleaved")) << f->message;
    EXPECT_FALSE(has(f->fix, "two halves")) << f->fix;
  }
}

TEST(RopeFixes, InterleavedPairsWrittenAsHalvesWarnOfTheLayout) {
  const Finding* f = at("torch.cat([q1 * cos - q2 * sin, q2 * cos + q1 * sin], dim=-1)");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->fix, "interleaved=True")) << f->fix;
  EXPECT_TRUE(has(f->fix, "two halves (a layout change)")) << f->fix;
}

}  // namespace
}  // namespace mlsem
