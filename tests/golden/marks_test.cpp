// The mark parser the golden test relies on: if it misread marks, the golden test
// would check the wrong expectations and still pass.
#include "marks.h"

#include <gtest/gtest.h>

namespace mlsem::golden {
namespace {

TEST(GoldenMarks, ReadsEachKindOnItsLine) {
  ParsedMarks parsed = parse_marks(
      "import torch\n"
      "y = att @ v  # expect: ATT001\n"
      "p = logits.softmax(-1)  # ok: ATT001\n"
      "x = a * b  # todo-expect: FUS001\n"
      "z = f(x)  # todo-ok: FUS003\n"
      "h = F.relu(self.fc1(x))  # hint: FUS002\n",
      "#");
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_EQ(parsed.marks, (std::vector<Mark>{{MarkKind::Expect, "ATT001", 2},
                                              {MarkKind::Ok, "ATT001", 3},
                                              {MarkKind::TodoExpect, "FUS001", 4},
                                              {MarkKind::TodoOk, "FUS003", 5},
                                              {MarkKind::Hint, "FUS002", 6}}));
}

TEST(GoldenMarks, SplitsRuleListsAndSeveralMarksOnALine) {
  ParsedMarks parsed =
      parse_marks("x = self.w2(F.silu(self.w1(x)) * self.w3(x))  # expect: FUS001 ,NRM002 # ok: FUS002\n", "#");
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_EQ(parsed.marks, (std::vector<Mark>{{MarkKind::Expect, "FUS001", 1},
                                              {MarkKind::Expect, "NRM002", 1},
                                              {MarkKind::Ok, "FUS002", 1}}));
}

TEST(GoldenMarks, IgnoresOrdinaryCommentsAndOtherPrefixes) {
  ParsedMarks parsed = parse_marks(
      "# expected findings are listed in the docstring\n"
      "x = 1  # note: ok to ignore\n"
      "y = 2  // expect: ATT001\n"
      "# okay: ATT001\n",
      "#");
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_TRUE(parsed.marks.empty());
}

TEST(GoldenMarks, CudaCommentsUseSlashes) {
  ParsedMarks parsed = parse_marks(
      "__global__ void k(float* x) {\n"
      "  float v = x[threadIdx.x * 32];  //expect: CU001\n"
      "  int n = 4 / 2;  # ok: CU002\n"
      "}\r\n",
      "//");
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_EQ(parsed.marks, (std::vector<Mark>{{MarkKind::Expect, "CU001", 2}}));
}

TEST(GoldenMarks, ReportsMalformedMarks) {
  ParsedMarks parsed = parse_marks(
      "a = 1  # expect:\n"
      "b = 2  # expect: att001\n"
      "c = 3  # ok: ATT001, and more\n"
      "d = 4  # todo-ok: 001\n",
      "#");
  EXPECT_TRUE(parsed.marks.size() == 1 && parsed.marks[0].rule == "ATT001" && parsed.marks[0].line == 3);
  ASSERT_EQ(parsed.errors.size(), 4u);
  EXPECT_EQ(parsed.errors[0].line, 1u);
  EXPECT_EQ(parsed.errors[1].line, 2u);
  EXPECT_EQ(parsed.errors[2].line, 3u);
  EXPECT_EQ(parsed.errors[3].line, 4u);
  EXPECT_NE(parsed.errors[1].message.find("att001"), std::string::npos);
}

TEST(GoldenMarks, LinesCountFromOneWithWindowsEndings) {
  ParsedMarks parsed = parse_marks("\r\n\r\nx  # expect: SYN001\r\n", "#");
  ASSERT_EQ(parsed.marks.size(), 1u);
  EXPECT_EQ(parsed.marks[0].line, 3u);
  EXPECT_EQ(parsed.marks[0].rule, "SYN001");
}

TEST(GoldenMarks, CommentPrefixFollowsTheFileType) {
  EXPECT_EQ(comment_prefix_for("samples/python/gpt.py"), "#");
  EXPECT_EQ(comment_prefix_for("samples/cuda/softmax.cu"), "//");
  EXPECT_EQ(comment_prefix_for("samples/cuda/common.cuh"), "//");
  EXPECT_EQ(comment_prefix_for("samples/README.md"), "");
}

Finding finding(std::string rule, uint32_t begin_line, uint32_t end_line) {
  Finding f;
  f.rule = std::move(rule);
  f.range.begin = {begin_line, 5};
  f.range.end = {end_line, 9};
  f.message = "msg";
  return f;
}

bool mentions(const std::vector<std::string>& problems, std::string_view text) {
  for (const std::string& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

TEST(GoldenCompare, FindingCoveringAnExpectLineIsRight) {
  std::vector<Mark> marks = {{MarkKind::Expect, "ATT001", 12}};
  // A multi-line range counts when it covers the mark, whichever line it starts on.
  Comparison c = compare("a.py", marks, {finding("ATT001", 10, 12)});
  EXPECT_TRUE(c.problems.empty());
  EXPECT_EQ(c.right, std::vector<bool>{true});
  EXPECT_EQ(c.expect_marks, 1u);
  EXPECT_EQ(c.expect_found, 1u);
}

TEST(GoldenCompare, RelatedLocationsCoverTheirLines) {
  // One finding per kernel: its other places are related locations, and a mark on one of
  // them is covered; an evidence item that is not a related location covers nothing.
  Finding f = finding("CU001", 10, 10);
  Evidence other;
  other.text = "another uncoalesced access: x[i * C]";
  other.range.begin = {14, 5};
  other.range.end = {14, 13};
  other.range.begin_byte = 200;
  other.range.end_byte = 208;
  other.related = true;
  f.evidence.push_back(other);
  Evidence plain = other;
  plain.related = false;
  plain.range.begin.line = plain.range.end.line = 16;
  f.evidence.push_back(plain);
  std::vector<Mark> marks = {{MarkKind::Expect, "CU001", 10}, {MarkKind::Expect, "CU001", 14}};
  Comparison c = compare("k.cu", marks, {f});
  EXPECT_TRUE(c.problems.empty());
  EXPECT_EQ(c.expect_found, 2u);
  Comparison ok = compare("k.cu", {{MarkKind::Ok, "CU001", 14}}, {f});
  EXPECT_TRUE(mentions(ok.problems, "k.cu:14: reported on a line marked 'ok: CU001'"));
  Comparison miss = compare("k.cu", {{MarkKind::Expect, "CU001", 10}, {MarkKind::Expect, "CU001", 16}}, {f});
  EXPECT_TRUE(mentions(miss.problems, "k.cu:16: missed"));
}

TEST(GoldenCompare, WrongRuleOrLineIsAMissAndAnUnexpectedFinding) {
  std::vector<Mark> marks = {{MarkKind::Expect, "ATT001", 12}};
  Comparison c = compare("a.py", marks, {finding("NRM001", 12, 12), finding("ATT001", 13, 14)});
  EXPECT_EQ(c.right, (std::vector<bool>{false, false}));
  EXPECT_EQ(c.expect_found, 0u);
  EXPECT_EQ(c.problems.size(), 3u);
  EXPECT_TRUE(mentions(c.problems, "a.py:12: missed: no ATT001"));
  EXPECT_TRUE(mentions(c.problems, "a.py:12: unexpected finding NRM001"));
  EXPECT_TRUE(mentions(c.problems, "a.py:13: unexpected finding ATT001"));
}

TEST(GoldenCompare, OkLineMustStayClean) {
  std::vector<Mark> marks = {{MarkKind::Ok, "FUS002", 7}};
  EXPECT_TRUE(compare("a.py", marks, {}).problems.empty());
  Comparison c = compare("a.py", marks, {finding("FUS002", 7, 7)});
  EXPECT_EQ(c.right, std::vector<bool>{false});
  EXPECT_TRUE(mentions(c.problems, "a.py:7: reported on a line marked 'ok: FUS002'"));
}

TEST(GoldenCompare, TodoMarksFailWhenTheyStopBeingTrue) {
  std::vector<Mark> marks = {{MarkKind::TodoExpect, "POS001", 3}, {MarkKind::TodoOk, "FUS003", 5}};
  // As documented: the miss is not reported, the false positive is.
  Comparison c = compare("a.py", marks, {finding("FUS003", 5, 5)});
  EXPECT_TRUE(c.problems.empty());
  EXPECT_EQ(c.right, std::vector<bool>{false});  // a known false positive is still wrong
  EXPECT_EQ(c.todo_expect_marks, 1u);
  EXPECT_EQ(c.expect_marks, 0u);
  // Both stop holding: each asks for its mark to be updated.
  c = compare("a.py", marks, {finding("POS001", 3, 3)});
  EXPECT_EQ(c.right, std::vector<bool>{true});
  EXPECT_EQ(c.problems.size(), 2u);
  EXPECT_TRUE(mentions(c.problems, "a.py:3: a known miss is now reported"));
  EXPECT_TRUE(mentions(c.problems, "a.py:5: a known false positive is no longer reported"));
}

TEST(GoldenCompare, HintMarksWantAQuietFindingAndNoShownOne) {
  std::vector<Mark> marks = {{MarkKind::Hint, "FUS002", 7}};
  // Reported below the default threshold: as marked.
  Comparison c = compare("a.py", marks, {}, {finding("FUS002", 7, 7)});
  EXPECT_TRUE(c.problems.empty());
  EXPECT_EQ(c.hint_marks, 1u);
  EXPECT_EQ(c.hint_found, 1u);
  // Not reported at all, or reported on another line: a miss.
  c = compare("a.py", marks, {}, {finding("FUS002", 8, 8)});
  EXPECT_EQ(c.hint_found, 0u);
  EXPECT_TRUE(mentions(c.problems, "a.py:7: missed: no FUS002 finding below the default threshold"));
  // Shown by default: the finding is on the marked line but too loud.
  c = compare("a.py", marks, {finding("FUS002", 7, 7)}, {});
  EXPECT_EQ(c.right, std::vector<bool>{false});
  EXPECT_EQ(c.problems.size(), 1u);
  EXPECT_TRUE(mentions(c.problems, "a.py:7: shown by default on a line marked 'hint: FUS002'"));
}

}  // namespace
}  // namespace mlsem::golden
