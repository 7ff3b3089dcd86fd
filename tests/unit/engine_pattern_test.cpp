// The match language parser: structure of parsed terms and error positions.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/pattern.h"

namespace mlsem {
namespace {

const OpClasses kClasses = {{"pointwise", {"add", "mul", "exp"}}};

PatternTerm parse_ok(std::string_view text) {
  auto r = parse_pattern(text, kClasses);
  if (auto* e = std::get_if<ParseError>(&r)) ADD_FAILURE() << text << ": " << e->message << " at " << e->offset;
  return std::get_if<PatternTerm>(&r) ? std::get<PatternTerm>(r) : PatternTerm{};
}

ParseError parse_err(std::string_view text) {
  auto r = parse_pattern(text, kClasses);
  EXPECT_TRUE(std::holds_alternative<ParseError>(r)) << text << " parsed but should not";
  return std::holds_alternative<ParseError>(r) ? std::get<ParseError>(r) : ParseError{};
}

TEST(PatternParse, NestedOpsLabelsOptionalAndVars) {
  PatternTerm t = parse_ok("@out:matmul(@p:dropout?(softmax[dim == -1](matmul($q, $k))), $v)");
  EXPECT_EQ(t.kind, PatternTerm::Kind::kOp);
  EXPECT_EQ(t.label, "out");
  ASSERT_EQ(t.args.size(), 2u);
  const PatternTerm& drop = t.args[0];
  EXPECT_TRUE(drop.optional);
  EXPECT_EQ(drop.label, "p");
  const PatternTerm& sm = drop.args[0];
  EXPECT_EQ(sm.ops, std::vector<std::string>{"softmax"});
  ASSERT_EQ(sm.preds.size(), 1u);
  EXPECT_EQ(sm.preds[0].key, "dim");
  EXPECT_EQ(std::get<int64_t>(sm.preds[0].values[0]), -1);
  EXPECT_EQ(t.args[1].kind, PatternTerm::Kind::kVar);
  EXPECT_EQ(t.args[1].var, "v");
  std::vector<std::string> labels;
  collect_labels(t, labels);
  EXPECT_EQ(labels, (std::vector<std::string>{"out", "p"}));
}

TEST(PatternParse, AlternativesClassesChainsAndRest) {
  PatternTerm t = parse_ok("mul(_, ...) | %pointwise{3,} | deep(const[value == 0.5])");
  ASSERT_EQ(t.kind, PatternTerm::Kind::kAlt);
  ASSERT_EQ(t.children.size(), 3u);
  EXPECT_TRUE(t.children[0].rest);
  EXPECT_EQ(t.children[0].args.size(), 1u);
  EXPECT_EQ(t.children[1].ops, (std::vector<std::string>{"add", "mul", "exp"}));
  EXPECT_EQ(t.children[1].min_chain, 3);
  EXPECT_EQ(t.children[2].kind, PatternTerm::Kind::kDeep);
  EXPECT_DOUBLE_EQ(std::get<double>(t.children[2].children[0].preds[0].values[0]), 0.5);
  // The root of a deep(...) can be any op, so the engine cannot index it by op.
  EXPECT_FALSE(root_ops(t).has_value());
  auto ops = root_ops(parse_ok("scale?(softmax(_))"));
  ASSERT_TRUE(ops.has_value());
  EXPECT_EQ(*ops, (std::vector<std::string>{"scale", "softmax"}));
}

TEST(PatternParse, PredicateForms) {
  auto r = parse_predicates("causal, !divide, kind in ['fill', \"where\"], value <= -1e4, p != 0");
  ASSERT_TRUE(std::holds_alternative<std::vector<Predicate>>(r));
  const auto& ps = std::get<std::vector<Predicate>>(r);
  ASSERT_EQ(ps.size(), 5u);
  EXPECT_EQ(ps[0].kind, Predicate::Kind::kTruthy);
  EXPECT_EQ(ps[1].kind, Predicate::Kind::kFalsy);
  EXPECT_EQ(ps[2].kind, Predicate::Kind::kIn);
  EXPECT_EQ(std::get<std::string>(ps[2].values[1]), "where");
  EXPECT_EQ(ps[3].cmp, Predicate::Cmp::kLe);
  EXPECT_EQ(ps[4].cmp, Predicate::Cmp::kNe);
}

TEST(PatternParse, EvaluatesPredicatesAgainstAttributes) {
  std::map<std::string, ir::Attr> attrs{{"dim", int64_t{-1}}, {"value", -INFINITY}, {"kind", std::string("fill")},
                                        {"causal", true}};
  auto eval = [&](std::string_view text) {
    auto r = parse_predicates(text);
    return eval_predicates(std::get<std::vector<Predicate>>(r), attrs);
  };
  EXPECT_TRUE(eval("dim == -1"));
  EXPECT_TRUE(eval("dim in [-1, 3]"));
  EXPECT_FALSE(eval("dim == 1"));
  EXPECT_TRUE(eval("value < -1e4"));
  EXPECT_TRUE(eval("value == -inf"));
  EXPECT_TRUE(eval("causal, kind == 'fill'"));
  EXPECT_FALSE(eval("!causal"));
  EXPECT_TRUE(eval("!missing"));
  EXPECT_FALSE(eval("missing"));
  EXPECT_FALSE(eval("missing == 1"));
  EXPECT_TRUE(eval("missing != 1"));   // an absent attribute differs from anything
  EXPECT_FALSE(eval("kind == 3"));     // text never equals a number
  EXPECT_TRUE(eval("kind ~ 'il'"));
  EXPECT_FALSE(eval("kind ~ 'x'"));
  EXPECT_FALSE(eval("dim ~ '1'"));     // only text contains text
}

TEST(PatternParse, ErrorsPointAtTheProblem) {
  ParseError e = parse_err("matmul(softmax(_), ");
  EXPECT_EQ(e.offset, 19u);
  e = parse_err("softmax[dim == ](_)");
  EXPECT_NE(e.message.find("literal"), std::string::npos);
  e = parse_err("%nosuchclass(_)");
  EXPECT_NE(e.message.find("nosuchclass"), std::string::npos);
  e = parse_err("softmax?");
  EXPECT_NE(e.message.find("optional"), std::string::npos);
  e = parse_err("%pointwise{3,}(_, _)");
  EXPECT_NE(e.message.find("chain"), std::string::npos);
  parse_err("matmul(_) extra");
  parse_err("");
}

TEST(PatternParse, RegionSpecs) {
  auto r = parse_region_spec("with[context == 'torch.no_grad']");
  ASSERT_TRUE(std::holds_alternative<RegionSpec>(r));
  EXPECT_EQ(std::get<RegionSpec>(r).kind, "with");
  EXPECT_EQ(std::get<RegionSpec>(r).preds.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ParseError>(parse_region_spec("loop[")));
}

}  // namespace
}  // namespace mlsem
