// POS001's advice on samples/python/rope_variants.py follows the layout the code rotates:
// half-split forms get the default fused kernel, interleaved (GPT-J) forms the
// interleaved mode, and interleaved pairs written back as halves a layout warning.
#include <gtest/gtest.h>

#include <string>

#include "sample_findings.h"

namespace mlsem {
namespace {

const test_support::SampleFindings& rope() {
  static const test_support::SampleFindings r = test_support::analyze_sample("samples/python/rope_variants.py");
  return r;
}

// The POS001 finding whose range covers the first line containing `marker`.
const Finding* at(const std::string& marker) { return test_support::finding_at(rope(), "POS001", marker); }

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
