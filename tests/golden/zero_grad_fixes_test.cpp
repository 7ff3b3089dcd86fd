// TRN001 on the zero_grad samples: the exact rewrite to the default zero_grad() is
// offered where the file reads no .grad, and withheld (with the reason in the evidence)
// where it does. The golden test checks where findings are; this checks their rewrites.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sample_findings.h"

namespace mlsem {
namespace {

using test_support::everything;
using test_support::SampleFindings;


std::vector<Finding> trn001(const SampleFindings& a) { return test_support::of_rule(a.findings, "TRN001"); }

// The source text a finding's rewrite replaces.
std::string replaced(const SampleFindings& a, const Finding& f) {
  return a.text.substr(f.rewrite_range.begin_byte, f.rewrite_range.end_byte - f.rewrite_range.begin_byte);
}

TEST(ZeroGradFixes, RewritesToTheDefaultWhereNothingReadsGrad) {
  SampleFindings a = test_support::analyze_sample("samples/python/zero_grad_variants.py", everything());
  std::vector<Finding> found = trn001(a);
  ASSERT_EQ(found.size(), 2u);
  std::vector<std::pair<std::string, std::string>> edits;
  for (const Finding& f : found) edits.emplace_back(replaced(a, f), f.rewrite);
  EXPECT_NE(std::find(edits.begin(), edits.end(),
                      std::make_pair(std::string("optimizer.zero_grad(set_to_none=False)"),
                                     std::string("optimizer.zero_grad()"))),
            edits.end());
  EXPECT_NE(std::find(edits.begin(), edits.end(),
                      std::make_pair(std::string("disc.zero_grad(False)"), std::string("disc.zero_grad()"))),
            edits.end());
  for (const Finding& f : found) EXPECT_EQ(f.fix.rfind(f.rewrite, 0), 0u) << f.fix;
}

TEST(ZeroGradFixes, NoRewriteWhereTheFileReadsGrad) {
  SampleFindings a = test_support::analyze_sample("samples/python/zero_grad_reads_grad.py", everything());
  std::vector<Finding> found = trn001(a);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].rewrite.empty()) << found[0].rewrite;
  SampleFindings clean = test_support::analyze_sample("samples/python/zero_grad_variants.py", everything());
  std::vector<Finding> other = trn001(clean);
  ASSERT_FALSE(other.empty());
  EXPECT_LT(found[0].confidence, other[0].confidence);
}

}  // namespace
}  // namespace mlsem
