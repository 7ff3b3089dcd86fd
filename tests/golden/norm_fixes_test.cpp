// The fixes of the norm rules on samples/python/norm_fix_variants.py: each numeric
// variant's fix names the sample's own variables, keeps what changes the numbers (the
// gate, the cast to the weight's dtype, the fp32 weight) and says when it differs.
// The golden test checks where findings are; this checks what they advise.
#include <gtest/gtest.h>

#include <string>

#include "sample_findings.h"

namespace mlsem {
namespace {

const test_support::SampleFindings& analyzed() {
  static const test_support::SampleFindings result =
      test_support::analyze_sample("samples/python/norm_fix_variants.py", test_support::everything());
  return result;
}

// The 1-based line of the first line of the sample containing `marker` (0: none does).
uint32_t line_of(const std::string& marker) { return test_support::line_of(analyzed().text, marker); }

// The finding of `rule` whose range covers the line holding `marker`.
const Finding* finding_at(const std::string& rule, const std::string& marker) {
  return test_support::finding_at(analyzed(), rule, marker);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(NormFixes, GemmaOffsetWeightPassesTheFp32InputWithTheFp32OnePlusWeight) {
  const Finding* f = finding_at("NRM002", "output * (1.0 + self.weight.float())");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->fix.substr(0, f->fix.find("  #")),
            "y = F.rms_norm(x.float(), (x.size(-1),), 1.0 + self.weight.float(), eps=self.eps).to(x.dtype)");
  EXPECT_TRUE(has(f->fix, "mixed-dtype")) << f->fix;
}

TEST(NormFixes, AWeightCastToFp32StaysInFp32WithTheInput) {
  const Finding* f = finding_at("NRM002", "self._norm(x.float()) * self.weight.float()");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->fix, "F.rms_norm(x.float(), (x.size(-1),), self.weight.float(), eps=self.eps).to(x.dtype)")) << f->fix;
}

TEST(NormFixes, AWeightlessFp32NormTakesTheOriginalInput) {
  const Finding* f = finding_at("NRM002", "return self._norm(x.float()).type_as(x)");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->fix, "y = F.rms_norm(x, (x.size(-1),), None, eps=self.eps)")) << f->fix;
  EXPECT_TRUE(has(f->message, "the same numbers")) << f->message;
}

TEST(NormFixes, AGatedNormKeepsItsGate) {
  const Finding* f = finding_at("NRM002", "hidden_states * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM002\n        return self.weight");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->message, "gated")) << f->message;
  EXPECT_TRUE(has(f->fix, "keep the gate")) << f->fix;
  EXPECT_TRUE(has(f->fix, "self.weight * F.rms_norm(hidden_states, (hidden_states.size(-1),), None, "
                          "eps=self.variance_epsilon).to(input_dtype)"))
      << f->fix;
}

TEST(NormFixes, T5KeepsTheCastToTheWeightsDtype) {
  const Finding* f = finding_at("NRM002", "hidden_states * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM002\n        if self.weight.dtype");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->fix, ".to(self.weight.dtype)")) << f->fix;
  EXPECT_TRUE(has(f->fix, "F.rms_norm(hidden_states.float(), (hidden_states.size(-1),), None, eps=self.variance_epsilon)")) << f->fix;
}

TEST(NormFixes, ALayerNormAlsoBuiltWithATupleShapeBroadcastsItsWeight) {
  uint32_t cohere = line_of("class CohereLayerNorm");
  uint32_t one_dim = line_of("class OneDimLayerNorm");
  const Finding* per_head = nullptr;
  const Finding* plain = nullptr;
  for (const Finding& g : analyzed().findings) {
    if (g.rule != "NRM001") continue;
    if (g.range.begin.line > cohere && g.range.begin.line < one_dim) per_head = &g;
    if (g.range.begin.line > one_dim && g.range.begin.line < line_of("class DebertaLayerNorm")) plain = &g;
  }
  ASSERT_TRUE(per_head);
  EXPECT_TRUE(has(per_head->fix, "(F.layer_norm(hidden_states.float(), (hidden_states.size(-1),), None, None, "
                                 "eps=self.variance_epsilon) * self.weight.to(torch.float32)).to(input_dtype)"))
      << per_head->fix;
  EXPECT_TRUE(has(per_head->fix, "hidden_size=(num_heads, head_dim)")) << per_head->fix;
  ASSERT_TRUE(plain);
  EXPECT_TRUE(has(plain->fix, "F.layer_norm(hidden_states.float(), (hidden_states.size(-1),), "
                              "self.weight.to(torch.float32), None, eps=self.variance_epsilon).to(input_dtype)"))
      << plain->fix;
}

TEST(NormFixes, DebertaCastBeforeTheAffineIsFlaggedAsANumericVariant) {
  const Finding* f = finding_at("NRM001", "y = self.weight * hidden_states + self.bias");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->message, "last bits")) << f->message;
  EXPECT_FALSE(has(f->message, "the same numbers")) << f->message;
  EXPECT_TRUE(has(f->fix, ".to(input_type) + self.bias")) << f->fix;
}

TEST(NormFixes, AWeightInTheSameProductIsPassedAsTheWeight) {
  const Finding* f = finding_at("NRM001", "return centered * torch.rsqrt(variance + eps) * gain");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->fix, "y = F.layer_norm(x, (x.size(-1),), gain, None, eps=eps)")) << f->fix;
  EXPECT_FALSE(has(f->message, "without affine")) << f->message;
}

TEST(NormFixes, NormWeightsKeptInFp32GoInWithTheFp32Input) {
  const Finding* f = finding_at("NRM002", "return (self.weight * hidden_states).to(input_dtype)");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->fix, "y = F.rms_norm(hidden_states.float(), (hidden_states.size(-1),), self.weight, "
                          "eps=self.variance_epsilon).to(input_dtype)"))
      << f->fix;
  EXPECT_TRUE(has(f->fix, "_keep_in_fp32_modules")) << f->fix;
}

TEST(NormFixes, AnInputFeatureCmvnIsHiddenAsCold) {
  const Finding* f = finding_at("NRM001", "return centered / rms");
  ASSERT_TRUE(f);
  EXPECT_LT(f->confidence, 0.5);
  bool cold = false;
  for (const auto& e : f->evidence) cold = cold || (e.present && has(e.text, "cold"));
  EXPECT_TRUE(cold);
}

}  // namespace
}  // namespace mlsem
