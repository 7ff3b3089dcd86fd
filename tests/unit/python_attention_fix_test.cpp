// The SDPA fixes of ATT001 on samples/python/attention_sdpa_fixes.py, and the findings
// demoted because SDPA would compute something else (python/attention_fix.h): the fix
// text a user reads, checked against what computes the same numbers.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sample_findings.h"

namespace mlsem {
namespace {

class AttentionFix : public ::testing::Test {
 protected:
  // The 1-based line of the first occurrence of `needle` in a sample, as text.
  static std::string line_of(const std::string& sample, const std::string& needle) {
    uint32_t line = test_support::line_of(test_support::read_sample("samples/python/" + sample), needle);
    EXPECT_NE(line, 0u) << needle;
    return std::to_string(line);
  }

  // Every ATT001/ATT002 finding of a sample, demoted ones included.
  static std::vector<Finding> analyze(const std::string& sample) {
    DriverOptions options;
    options.show_demoted = true;
    std::vector<Finding> out;
    for (const Finding& f : test_support::analyze_sample("samples/python/" + sample, options).findings)
      if (f.rule == "ATT001" || f.rule == "ATT002") out.push_back(f);
    return out;
  }

  // The ATT001 finding reported in class `cls` (its function name starts with it).
  static const Finding* in_class(const std::vector<Finding>& fs, const std::string& cls, const std::string& rule = "ATT001") {
    for (const Finding& f : fs)
      if (f.rule == rule && f.function.rfind(cls + ".", 0) == 0) return &f;
    return nullptr;
  }
};

TEST_F(AttentionFix, FixesComputeTheSameNumbers) {
  auto fs = analyze("attention_sdpa_fixes.py");
  std::map<std::string, std::string> want = {
      {"BertSelfAttention",
       "out = F.scaled_dot_product_attention(query_layer, key_layer, value_layer, attn_mask=attention_mask, "
       "dropout_p=self.dropout.p if self.training else 0.0)"},
      {"DetrAttention",
       "out = F.scaled_dot_product_attention(query_states, key_states, value_states, attn_mask=attention_mask, "
       "scale=1.0)  # q is already scaled by self.scaling (line " +
           line_of("attention_sdpa_fixes.py", "self.q_proj(hidden_states) * self.scaling") +
           "), so scale=1.0 keeps the numbers"},
      {"RelativeBiasAttention",
       "out = F.scaled_dot_product_attention(q, k, v, attn_mask=rel_bias if mask is None else rel_bias + mask, "
       "scale=self.scale)  # a float attn_mask: SDPA runs its memory-efficient or math kernel, not flash"},
      {"OpenAIGPTAttention", "out = F.scaled_dot_product_attention(q, k.transpose(-2, -1), v, attn_mask=attention_mask)"},
      {"ReassignedMaskAttention",
       "out = F.scaled_dot_product_attention(query_layer, key_layer, value_layer, attn_mask=attention_mask)"},
      {"UnscaledT5Attention", "out = F.scaled_dot_product_attention(q, k, v, scale=1.0)"},
      {"Fp32ScoresAttention",
       "out = F.scaled_dot_product_attention(q, k, v, scale=1 / self.scale_attn)  # q and k are upcast to float32 for "
       "the scores and v is not: SDPA needs one dtype, so pass q and k in v's dtype (its kernels accumulate q\u00b7k "
       "and the softmax in fp32) or upcast v too; the numbers then differ from this code's in the last bits"},
      {"PaddingMaskAttention", "out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask != 0)"},
      {"CanineStyleAttention",
       "out = F.scaled_dot_product_attention(query_layer, key_layer, value_layer, "
       "attn_mask=attention_mask.to(query_layer.dtype))"},
      {"WrappedProductsAttention",
       "out = F.scaled_dot_product_attention(q, k, v)  # q, k, v: the operands of lines " +
           line_of("attention_sdpa_fixes.py", "self.matmul_qk(q") + " and " +
           line_of("attention_sdpa_fixes.py", "self.matmul_qkv(probs") + " laid out as (batch, heads, length, head_dim)"},
      {"CachedCausalAttention",
       "out = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask_bool)  # the causal mask of line " +
           line_of("attention_sdpa_fixes.py", "scores.masked_fill_(mask_bool") +
           " is sliced for cached keys (fewer queries than keys): pass it as attn_mask, since is_causal=True aligns "
           "the triangle top-left"},
      {"TruncatedCausalAttention", "out = F.scaled_dot_product_attention(q, k, v, is_causal=True)"},
  };
  want["t5_attention"] = "";
  for (const Finding& f : fs)
    if (f.function == "t5_attention") {
      EXPECT_EQ(f.fix, "out = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, "
                       "dropout_p=dropout, scale=scaling)");
      want.erase("t5_attention");
    }
  for (const auto& [cls, fix] : want) {
    const Finding* f = in_class(fs, cls);
    ASSERT_NE(f, nullptr) << cls;
    EXPECT_EQ(f->fix, fix) << cls;
    EXPECT_TRUE(f->context.empty()) << cls << ": " << f->context;
    EXPECT_GE(f->confidence, 0.5) << cls;
  }
}

TEST_F(AttentionFix, ADropoutLayerPassedInIsDropoutAndTheFixReadsItsP) {
  auto fs = analyze("attention_dropout_argument.py");
  const Finding* f = in_class(fs, "MultiHeadAttentionBlock");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->fix, "out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask != 0, "
                    "dropout_p=dropout.p if dropout.training else 0.0, scale=1 / (math.sqrt(d_k)))");
  EXPECT_TRUE(f->context.empty()) << f->context;
  for (const Finding& g : fs) EXPECT_NE(g.function, "mix") << g.message;  // drop_path(x, p, training)
}

TEST_F(AttentionFix, VariantsAreDemotedAndSayWhy) {
  auto fs = analyze("attention_sdpa_fixes.py");
  std::map<std::string, std::string> want = {
      {"OpenAIMultiplicativeMask", "multiplied"},  // w * b: a multiplicative mask
      {"SinkAttention", "logsumexp"},
      {"HeavyHitterAttention", "passed to `past_key_value.update_slimming`"},
      {"ShiftedWindowAttention", "another view"},
      {"CosineLogitScaleAttention", "logit scale"},
      {"RelativeValueAttention", "probabilities are also used"},
      {"TwoStreamAttention", "second score matrix"},
      {"BlockSparseAttention", "sparse"},
      {"SoftWindowMask", "-100"},
      {"EntityAwareAttention", "one branch"},
      {"RelativeShiftAttention", ""},
  };
  for (const auto& [cls, why] : want) {
    const Finding* f = in_class(fs, cls);
    ASSERT_NE(f, nullptr) << cls << " is not even matched";
    EXPECT_EQ(f->context_kind, "variant") << cls;
    EXPECT_NE(f->context.find(why), std::string::npos) << cls << ": " << f->context;
    EXPECT_LT(f->confidence, 0.5) << cls;
    EXPECT_EQ(f->severity, "info") << cls;
  }
}

TEST_F(AttentionFix, GqaCopiesSdpaCannotTakeAreNotWarnings) {
  auto fs = analyze("gqa_not_fixable.py");
  const Finding* sink = in_class(fs, "SinkAttention", "ATT002");
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(sink->context_kind, "variant");
  EXPECT_NE(sink->context.find("logsumexp"), std::string::npos) << sink->context;
  EXPECT_EQ(in_class(fs, "ViTAttention", "ATT002"), nullptr) << "the copies never run: no config groups K/V heads";
  for (const Finding& f : fs) EXPECT_EQ(f.fix.find("is_causal"), std::string::npos) << f.fix;
}

}  // namespace
}  // namespace mlsem
