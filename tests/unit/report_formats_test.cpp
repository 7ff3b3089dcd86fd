// The three report formats on a hand-built report whose positions are worked out
// below, so each expectation follows from the source text, not from the program.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "report/report.h"

namespace mlsem {
namespace {

using nlohmann::json;

// Line 3 is "    return p @ v": `p @ v` starts after 4 spaces and "return " (11
// bytes), so at column 12, and ends before column 17 (exclusive).
const char* kModel =
    "def attention(q, k, v):\n"
    "    p = F.softmax(q @ k.T, dim=-1)\n"
    "    return p @ v\n";

Range range(uint32_t line, uint32_t column, uint32_t end_line, uint32_t end_column) {
  return {{line, column}, {end_line, end_column}, 0, 0};
}

Finding attention_finding() {
  Finding f;
  f.rule = "ATT001";
  f.rule_name = "hand-written-attention";
  f.concept_id = "scaled-dot-product-attention";
  f.severity = "warning";
  f.message = "attention computed by hand";
  f.path = "model.py";
  f.range = range(3, 12, 3, 17);
  f.function = "attention";
  f.confidence = 0.8;
  // `F.softmax(...)` on line 2 starts at column 9.
  f.evidence = {{"softmax over the last dim", true, 0.15, range(2, 9, 2, 35)},
                {"no 1/sqrt(d) scale found", false, 0.1, {}}};
  f.fix = "out = F.scaled_dot_product_attention(q, k, v)";
  f.kernel = "kernels/attention_fwd";
  f.measured = "fused: 3.1x faster";
  return f;
}

Report sample_report() {
  Report report;
  report.findings.push_back(attention_finding());
  Finding info = attention_finding();
  info.rule = "SYN001";
  info.rule_name = "item-in-loop";
  info.severity = "info";
  info.path = "my dir/train.py";
  info.evidence.clear();
  info.kernel.reset();
  info.measured.clear();
  report.findings.push_back(info);
  report.errors.push_back({"broken.py", "syntax error", 4, 2});
  report.errors.push_back({"blob.py", "binary file (contains a NUL byte), not analyzed", 0, 0});
  report.files_analyzed = 3;
  return report;
}

Rule attention_rule() {
  Rule rule;
  rule.id = "ATT001";
  rule.name = "hand-written-attention";
  rule.status = "stable";
  rule.language = "python";
  rule.concept_id = "scaled-dot-product-attention";
  rule.severity = "warning";
  rule.message = "attention computed by hand";
  rule.fix = "use F.scaled_dot_product_attention";
  rule.docs.summary = "Attention written as softmax(QK^T)V";
  rule.docs.why = "It materializes the T x T score matrix.";
  return rule;
}

SourceTexts model_source() { return {{"model.py", SourceFile{"model.py", kModel}}}; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

TEST(ReportText, HeaderExcerptEvidenceFixAndKernel) {
  Report report;
  report.findings.push_back(attention_finding());
  report.files_analyzed = 1;
  std::vector<std::string> lines = lines_of(report::to_text(report, model_source(), {}));
  std::vector<std::string> expected = {
      "model.py:3:12: ATT001 [scaled-dot-product-attention] attention computed by hand (confidence 0.80)",
      "  |",
      "3 |     return p @ v",
      "  |            ^^^^^",  // under `p @ v`: 11 columns in, 5 wide
      "  + softmax over the last dim (line 2)",
      "  - no 1/sqrt(d) scale found",
      "  fix: out = F.scaled_dot_product_attention(q, k, v)",
      "  kernel: kernels/attention_fwd (fused: 3.1x faster)",
      "",
      "1 finding (1 warning) in 1 file",
  };
  EXPECT_EQ(lines, expected);
}

TEST(ReportText, CaretsFollowTabsAndMultiLineRangesMarkTheFirstLine) {
  Report report;
  Finding f = attention_finding();
  f.range = range(2, 2, 3, 5);  // from `p = F.softmax(...` (after a tab) into line 3
  f.evidence.clear();
  report.findings.push_back(f);
  SourceTexts sources = {{"model.py", SourceFile{"model.py", "x\n\tp = F.softmax(s)  \nmore\n"}}};
  std::vector<std::string> lines = lines_of(report::to_text(report, sources, {}));
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[2], "2 |     p = F.softmax(s)  ");  // the tab printed as 4 spaces
  EXPECT_EQ(lines[3], "  |     ^^^^^^^^^^^^^^^^");    // to the last non-blank character
}

TEST(ReportText, ErrorsAndSummaryCountEverything) {
  std::string text = report::to_text(sample_report(), model_source(), {});
  EXPECT_NE(text.find("\nbroken.py:4:2: error: syntax error\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nblob.py: error: binary file"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\n2 findings (1 warning, 1 info) in 3 files; 2 file errors\n")) << text;
  // No source for "my dir/train.py": its header is printed without an excerpt.
  EXPECT_NE(text.find("my dir/train.py:3:12: SYN001 [scaled-dot-product-attention]"), std::string::npos);
}

TEST(ReportText, ColourOnlyWhenAsked) {
  Report report = sample_report();
  EXPECT_EQ(report::to_text(report, model_source(), {false}).find('\x1b'), std::string::npos);
  EXPECT_NE(report::to_text(report, model_source(), {true}).find("\x1b[1;33mATT001\x1b[0m"), std::string::npos);
}

TEST(ReportText, EmptyReport) {
  Report report;
  report.files_analyzed = 1;
  EXPECT_EQ(report::to_text(report, SourceTexts{}, {}), "no findings in 1 file\n");
}

TEST(ReportJson, FindingsAndErrorsCarryEveryFieldOneBased) {
  json root = json::parse(report::to_json(sample_report()));
  EXPECT_EQ(root["version"], std::string(version()));
  ASSERT_EQ(root["findings"].size(), 2u);
  const json& f = root["findings"][0];
  EXPECT_EQ(f["rule"], "ATT001");
  EXPECT_EQ(f["name"], "hand-written-attention");
  EXPECT_EQ(f["concept"], "scaled-dot-product-attention");
  EXPECT_EQ(f["severity"], "warning");
  EXPECT_EQ(f["message"], "attention computed by hand");
  EXPECT_EQ(f["path"], "model.py");
  EXPECT_EQ(f["line"], 3);
  EXPECT_EQ(f["column"], 12);
  EXPECT_EQ(f["end_line"], 3);
  EXPECT_EQ(f["end_column"], 17);
  EXPECT_EQ(f["function"], "attention");
  EXPECT_DOUBLE_EQ(f["confidence"].get<double>(), 0.8);
  ASSERT_EQ(f["evidence"].size(), 2u);
  EXPECT_EQ(f["evidence"][0], json({{"text", "softmax over the last dim"},
                                     {"present", true},
                                     {"weight", 0.15},
                                     {"line", 2},
                                     {"column", 9},
                                     {"related", false}}));
  EXPECT_EQ(f["evidence"][1]["present"], false);
  EXPECT_TRUE(f["evidence"][1]["line"].is_null());  // never seen: no position
  EXPECT_EQ(f["fix"], "out = F.scaled_dot_product_attention(q, k, v)");
  EXPECT_EQ(f["kernel"], "kernels/attention_fwd");
  EXPECT_EQ(f["measured"], "fused: 3.1x faster");
  EXPECT_TRUE(root["findings"][1]["kernel"].is_null());
  EXPECT_TRUE(root["findings"][1]["measured"].is_null());

  ASSERT_EQ(root["errors"].size(), 2u);
  EXPECT_EQ(root["errors"][0], json({{"path", "broken.py"}, {"message", "syntax error"}, {"line", 4}, {"column", 2}}));
  EXPECT_TRUE(root["errors"][1]["line"].is_null());
}

TEST(ReportSarif, RunToolRulesAndResults) {
  json log = json::parse(report::to_sarif(sample_report(), {attention_rule()}));
  EXPECT_EQ(log["version"], "2.1.0");
  ASSERT_EQ(log["runs"].size(), 1u);
  const json& run = log["runs"][0];
  const json& driver = run["tool"]["driver"];
  EXPECT_EQ(driver["name"], "mlsem");
  ASSERT_EQ(driver["rules"].size(), 1u);
  const json& rule = driver["rules"][0];
  EXPECT_EQ(rule["id"], "ATT001");
  EXPECT_EQ(rule["name"], "hand-written-attention");
  EXPECT_EQ(rule["shortDescription"]["text"], "Attention written as softmax(QK^T)V");
  EXPECT_EQ(rule["fullDescription"]["text"], "It materializes the T x T score matrix.");
  EXPECT_EQ(rule["defaultConfiguration"]["level"], "warning");
  EXPECT_FALSE(rule.contains("helpUri"));

  ASSERT_EQ(run["results"].size(), 2u);
  const json& result = run["results"][0];
  EXPECT_EQ(result["ruleId"], "ATT001");
  EXPECT_EQ(result["ruleIndex"], 0);
  EXPECT_EQ(result["level"], "warning");
  EXPECT_EQ(result["message"]["text"], "attention computed by hand");
  const json& location = result["locations"][0]["physicalLocation"];
  EXPECT_EQ(location["artifactLocation"], json({{"uri", "model.py"}, {"uriBaseId", "%SRCROOT%"}}));
  EXPECT_EQ(location["region"], json({{"startLine", 3}, {"startColumn", 12}, {"endLine", 3}, {"endColumn", 17}}));
  // Only the evidence that was seen has a place to point to.
  ASSERT_EQ(result["relatedLocations"].size(), 1u);
  EXPECT_EQ(result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"], 2);
  EXPECT_EQ(result["relatedLocations"][0]["message"]["text"], "softmax over the last dim");
  EXPECT_DOUBLE_EQ(result["properties"]["confidence"].get<double>(), 0.8);
  EXPECT_EQ(result["properties"]["concept"], "scaled-dot-product-attention");

  const json& info = run["results"][1];
  EXPECT_EQ(info["level"], "note");
  EXPECT_FALSE(info.contains("ruleIndex"));  // SYN001 is not in the rules given
  EXPECT_EQ(info["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "my%20dir/train.py");
  EXPECT_TRUE(run["originalUriBaseIds"]["%SRCROOT%"]["uri"].get<std::string>().starts_with("file:///"));
}

TEST(ReportSarif, FileErrorsAreToolExecutionNotifications) {
  json log = json::parse(report::to_sarif(sample_report(), std::vector<Rule>{}));
  const json& notifications = log["runs"][0]["invocations"][0]["toolExecutionNotifications"];
  ASSERT_EQ(notifications.size(), 2u);
  EXPECT_EQ(notifications[0]["level"], "error");
  EXPECT_NE(notifications[0]["message"]["text"].get<std::string>().find("syntax error"), std::string::npos);
  const json& location = notifications[0]["locations"][0]["physicalLocation"];
  EXPECT_EQ(location["artifactLocation"]["uri"], "broken.py");
  EXPECT_EQ(location["region"], json({{"startLine", 4}, {"startColumn", 2}}));
  EXPECT_FALSE(notifications[1]["locations"][0]["physicalLocation"].contains("region"));
  EXPECT_EQ(log["runs"][0]["invocations"][0]["executionSuccessful"], true);
}

TEST(ReportSarif, AbsolutePathsAreFileUris) {
  Report report;
  Finding f = attention_finding();
  f.path = "/srv/repo/model.py";
  report.findings.push_back(f);
  json log = json::parse(report::to_sarif(report, {attention_rule()}));
  EXPECT_EQ(log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"],
            json({{"uri", "file:///srv/repo/model.py"}}));
}

}  // namespace
}  // namespace mlsem
