// TRN001 on the zero_grad samples: the exact rewrite to the default zero_grad() is
// offered where the file reads no .grad, and withheld (with the reason in the evidence)
// where it does. The golden test checks where findings are; this checks their rewrites.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "engine/engine.h"

namespace mlsem {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = MLSEM_SOURCE_DIR;

struct Analyzed {
  std::string text;
  std::vector<Finding> findings;
};

Analyzed analyze(const char* sample) {
  Analyzed a;
  std::ifstream in(kRoot / sample, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  a.text = s.str();
  std::vector<FileError> errors;
  std::optional<Engine> engine = Engine::load(kRoot, errors);
  if (!engine) return a;
  DriverOptions options;
  options.min_confidence = 0.0;
  a.findings = analyze_source(SourceFile{(kRoot / sample).string(), a.text}, *engine, options).findings;
  return a;
}

std::vector<Finding> of_rule(const Analyzed& a, const std::string& rule) {
  std::vector<Finding> out;
  for (const Finding& f : a.findings)
    if (f.rule == rule) out.push_back(f);
  return out;
}

// The source text a finding's rewrite replaces.
std::string replaced(const Analyzed& a, const Finding& f) {
  return a.text.substr(f.rewrite_range.begin_byte, f.rewrite_range.end_byte - f.rewrite_range.begin_byte);
}

TEST(ZeroGradFixes, RewritesToTheDefaultWhereNothingReadsGrad) {
  Analyzed a = analyze("samples/python/zero_grad_variants.py");
  std::vector<Finding> found = of_rule(a, "TRN001");
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
  Analyzed a = analyze("samples/python/zero_grad_reads_grad.py");
  std::vector<Finding> found = of_rule(a, "TRN001");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].rewrite.empty()) << found[0].rewrite;
  Analyzed clean = analyze("samples/python/zero_grad_variants.py");
  std::vector<Finding> other = of_rule(clean, "TRN001");
  ASSERT_FALSE(other.empty());
  EXPECT_LT(found[0].confidence, other[0].confidence);
}

}  // namespace
}  // namespace mlsem
