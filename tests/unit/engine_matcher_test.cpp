// The matcher over hand-built IR: optional steps, commutative operands, variables,
// chains, deep search and regions.
#include <gtest/gtest.h>

#include "engine/matcher.h"
#include "engine_test_util.h"

namespace mlsem {
namespace {

using test_support::FunctionBuilder;

const std::set<std::string> kCommutative = {"add", "mul"};

PatternTerm P(std::string_view text) {
  OpClasses classes{{"pointwise", {"add", "mul", "exp", "tanh", "neg"}}};
  auto r = parse_pattern(text, classes);
  if (auto* e = std::get_if<ParseError>(&r)) {
    ADD_FAILURE() << e->message;
    return {};
  }
  return std::get<PatternTerm>(r);
}

// softmax(scale(matmul(q, transpose(k)))) @ v, optionally with a mask step.
struct Attention {
  FunctionBuilder b;
  ir::NodeId q, k, v, kt, scores, scaled, masked = ir::kNoNode, probs, out;
  explicit Attention(bool with_mask) {
    q = b.add("input", {}, {{"name", std::string("q")}});
    k = b.add("input", {}, {{"name", std::string("k")}});
    v = b.add("input", {}, {{"name", std::string("v")}});
    kt = b.add("transpose", {k});
    scores = b.add("matmul", {q, kt});
    ir::NodeId d = b.add("scalar", {}, {{"sqrt_like", true}});
    scaled = b.add("scale", {scores, d}, {{"sqrt_like", true}});
    ir::NodeId last = scaled;
    if (with_mask) {
      ir::NodeId m = b.add("name", {}, {{"causal", true}});
      masked = last = b.add("mask", {scaled, m}, {{"causal", true}});
    }
    probs = b.add("softmax", {last}, {{"dim", int64_t{-1}}});
    out = b.add("matmul", {probs, v});
  }
};

const char* kAttention = "@out:matmul(@probs:softmax(@mask:mask?(@scale:scale?(matmul($q, transpose($k)), _), _)), $v)";

TEST(Matcher, OptionalStepsMatchPresentAndAbsent) {
  for (bool with_mask : {true, false}) {
    Attention a(with_mask);
    FunctionView view(a.b.fn);
    auto m = match_at(P(kAttention), view, a.out, kCommutative);
    ASSERT_TRUE(m) << "with_mask=" << with_mask;
    EXPECT_EQ(m->label("probs"), a.probs);
    EXPECT_EQ(m->label("scale"), a.scaled);
    EXPECT_EQ(m->label("mask"), with_mask ? a.masked : ir::kNoNode);
    // Only op terms count as matched nodes: q, k, v (variables) and `_` do not.
    std::set<ir::NodeId> nodes(m->nodes.begin(), m->nodes.end());
    EXPECT_TRUE(nodes.count(a.scores) && nodes.count(a.kt) && nodes.count(a.out));
    EXPECT_FALSE(nodes.count(a.q) || nodes.count(a.v));
  }
}

TEST(Matcher, FailsWhenARequiredStepIsMissingOrAPredicateFails) {
  Attention a(false);
  FunctionView view(a.b.fn);
  EXPECT_FALSE(match_at(P(kAttention), view, a.scores, kCommutative));  // wrong root
  EXPECT_FALSE(match_at(P("matmul(softmax[dim == 1](_), _)"), view, a.out, kCommutative));
  EXPECT_TRUE(match_at(P("matmul(softmax[dim == -1](_), _)"), view, a.out, kCommutative));
  EXPECT_FALSE(match_at(P("matmul(_)"), view, a.out, kCommutative));   // arity must agree
  EXPECT_TRUE(match_at(P("matmul(_, ...)"), view, a.out, kCommutative));
}

TEST(Matcher, VariablesMustBindTheSameNode) {
  FunctionBuilder b;
  ir::NodeId x = b.add("input");
  ir::NodeId y = b.add("input");
  ir::NodeId same = b.add("mul", {x, x});
  ir::NodeId diff = b.add("mul", {x, y});
  FunctionView view(b.fn);
  EXPECT_TRUE(match_at(P("mul($a, $a)"), view, same, kCommutative));
  EXPECT_FALSE(match_at(P("mul($a, $a)"), view, diff, kCommutative));
}

TEST(Matcher, CommutativeOperandsMatchInAnyOrderWithBacktracking) {
  // 0.5 * x * (1 + tanh(x)): the n-ary mul lists its operands in source order, the
  // pattern in another, and $x must be the same node inside the tanh.
  FunctionBuilder b;
  ir::NodeId x = b.add("input");
  ir::NodeId half = b.add("const", {}, {{"value", 0.5}});
  ir::NodeId one = b.add("const", {}, {{"value", 1.0}});
  ir::NodeId t = b.add("tanh", {x});
  ir::NodeId inner = b.add("add", {one, t});
  ir::NodeId root = b.add("mul", {half, x, inner});
  FunctionView view(b.fn);
  auto pat = P("mul(add(tanh($x), const[value == 1]), $x, const[value == 0.5])");
  EXPECT_TRUE(match_at(pat, view, root, kCommutative));
  // Not commutative: order matters for matmul.
  ir::NodeId y = b.add("input");
  ir::NodeId mm = b.add("matmul", {x, y});
  FunctionView view2(b.fn);
  EXPECT_TRUE(match_at(P("matmul($a, $b)"), view2, mm, kCommutative));
  EXPECT_FALSE(match_at(P("matmul(input, tanh(_))"), view2, mm, kCommutative));
}

TEST(Matcher, ChainsCountSingleUseRegions) {
  // neg(exp(tanh(x))) is a fusible region of 3; if exp's result is also used
  // elsewhere, the region below neg stops there.
  FunctionBuilder b;
  ir::NodeId x = b.add("input");
  ir::NodeId t = b.add("tanh", {x});
  ir::NodeId e = b.add("exp", {t});
  ir::NodeId n = b.add("neg", {e});
  {
    FunctionView view(b.fn);
    auto m = match_at(P("%pointwise{3,}"), view, n, kCommutative);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->nodes.size(), 3u);
    EXPECT_FALSE(match_at(P("%pointwise{4,}"), view, n, kCommutative));
  }
  b.add("call", {e});  // a second user of exp
  FunctionView view(b.fn);
  EXPECT_FALSE(match_at(P("%pointwise{3,}"), view, n, kCommutative));
  EXPECT_EQ(view.users(e), 2u);
}

TEST(Matcher, DeepFindsTheNearestDescendant) {
  FunctionBuilder b;
  ir::NodeId c = b.add("const", {}, {{"value", 0.044715}});
  ir::NodeId x = b.add("input");
  ir::NodeId p = b.add("mul", {c, x});
  ir::NodeId s = b.add("add", {x, p});
  ir::NodeId t = b.add("tanh", {s});
  FunctionView view(b.fn);
  auto m = match_at(P("tanh(deep(@c:const[value == 0.044715]))"), view, t, kCommutative);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->label("c"), c);
  EXPECT_FALSE(match_at(P("tanh(deep(const[value == 3]))"), view, t, kCommutative));
}

TEST(Matcher, RegionsNest) {
  FunctionBuilder b;
  uint32_t loop = b.region("loop", {{"training", true}});
  uint32_t with = b.region("with", {{"context", std::string("torch.no_grad")}}, loop);
  b.add("input", {}, {}, with);
  FunctionView view(b.fn);
  auto spec = [](std::string_view text) { return std::get<RegionSpec>(parse_region_spec(text)); };
  EXPECT_TRUE(view.inside(with, spec("loop[training]")));
  EXPECT_TRUE(view.inside(with, spec("with[context == 'torch.no_grad']")));
  EXPECT_FALSE(view.inside(loop, spec("with")));
  EXPECT_TRUE(view.inside(0, spec("function")));
}

}  // namespace
}  // namespace mlsem

namespace mlsem {
namespace {

TEST(Matcher, ChainOperandAndDistinctVariables) {
  // exp(tanh(neg(a))) with a linear producer below: the chain's operand matches
  // `linear`; with a creation op below it does not.
  for (const char* producer : {"linear", "arange"}) {
    FunctionBuilder b;
    ir::NodeId x = b.add("input");
    ir::NodeId p = b.add(producer, {x});
    ir::NodeId n = b.add("neg", {p});
    ir::NodeId t = b.add("tanh", {n});
    ir::NodeId e = b.add("exp", {t});
    FunctionView view(b.fn);
    EXPECT_EQ(match_at(P("%pointwise{3,}(linear)"), view, e, kCommutative).has_value(),
              std::string(producer) == "linear");
  }
  // silu-like gate x * sigmoid(x) versus a real gate a * sigmoid(b).
  FunctionBuilder b;
  ir::NodeId a = b.add("input");
  ir::NodeId c = b.add("input");
  ir::NodeId self_gate = b.add("mul", {a, b.add("tanh", {a})});
  ir::NodeId real_gate = b.add("mul", {c, b.add("tanh", {a})});
  FunctionView view(b.fn);
  auto pat = P("mul(tanh($g), $u)");
  EXPECT_TRUE(match_at(pat, view, self_gate, kCommutative));
  EXPECT_FALSE(match_at(pat, view, self_gate, kCommutative, {"g", "u"}));
  EXPECT_TRUE(match_at(pat, view, real_gate, kCommutative, {"g", "u"}));
}

}  // namespace
}  // namespace mlsem
