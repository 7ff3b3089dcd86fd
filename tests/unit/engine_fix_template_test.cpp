// Fix templates (engine/fix_template.h): parsing, rendering with the user's names,
// optional segments, and the engine filling them from a match.
#include <gtest/gtest.h>

#include <map>

#include "engine/engine.h"
#include "engine/fix_template.h"
#include "engine_test_util.h"

namespace mlsem {
namespace {

using test_support::FunctionBuilder;
using test_support::TempDir;

FixTemplate parse_ok(std::string_view text) {
  auto parsed = parse_fix_template(text);
  if (auto* e = std::get_if<ParseError>(&parsed)) {
    ADD_FAILURE() << "parse error in '" << text << "' at " << e->offset << ": " << e->message;
    return {};
  }
  return std::get<FixTemplate>(parsed);
}

// Renders with a table of ref text -> value ("q", "drop.p", "function.self").
std::string render(std::string_view text, const std::map<std::string, std::string>& values) {
  FixTemplate t = parse_ok(text);
  return render_fix(t, [&](const FixRef& r) -> std::optional<std::string> {
    std::string key = r.label;
    for (const auto& p : r.path) key += "." + p;
    auto it = values.find(key);
    if (it == values.end()) return std::nullopt;
    return it->second;
  });
}

TEST(FixTemplate, PlaceholdersTakeTheUsersNames) {
  EXPECT_EQ(render("y = F.rms_norm(x, (x.size(-1),), w, eps={eps})", {{"eps", "self.variance_epsilon"}}),
            "y = F.rms_norm(x, (x.size(-1),), w, eps=self.variance_epsilon)");
  // No value: the default, else (outside segments) the ref's own name.
  EXPECT_EQ(render("f({q|query}, {k})", {}), "f(query, k)");
  EXPECT_EQ(render("f({mask.1})", {}), "f(1)");
  EXPECT_EQ(render("f({q|query})", {{"q", "hidden"}}), "f(hidden)");
  EXPECT_TRUE(parse_ok("no placeholders [0] here").plain);
  EXPECT_FALSE(parse_ok("{q}").plain);
}

TEST(FixTemplate, OptionalSegmentsAreDroppedWhenALabelDidNotMatch) {
  const char* t = "sdpa({q}, {k}, {v}[?mask: , attn_mask={mask.1}][?scale, !scale.sqrt_like: , scale={scale.1}])";
  EXPECT_EQ(render(t, {{"q", "q"}, {"k", "k"}, {"v", "v"}}), "sdpa(q, k, v)");
  EXPECT_EQ(render(t, {{"q", "q"}, {"k", "k"}, {"v", "v"}, {"mask", "m"}, {"mask.1", "bias"}}),
            "sdpa(q, k, v, attn_mask=bias)");
  // The scale is written only when it is not 1/sqrt(d) (a "False" attribute is false).
  EXPECT_EQ(render(t, {{"q", "q"}, {"k", "k"}, {"v", "v"}, {"scale", "s"}, {"scale.sqrt_like", "True"}, {"scale.1", "a"}}),
            "sdpa(q, k, v)");
  EXPECT_EQ(render(t, {{"q", "q"}, {"k", "k"}, {"v", "v"}, {"scale", "s"}, {"scale.sqrt_like", "False"}, {"scale.1", "a"}}),
            "sdpa(q, k, v, scale=a)");
  // A segment whose placeholder has no value is dropped even when its condition holds.
  EXPECT_EQ(render("f(x[?drop: , p={drop.p}])", {{"drop", "d"}}), "f(x)");
}

TEST(FixTemplate, MethodsAndFreeFunctionsGetDifferentText) {
  const char* t = "[?drop, function.self: dropout_p={drop.p} if {function.self}.training else 0.0]"
                  "[?drop, !function.self: dropout_p={drop.p}]";
  EXPECT_EQ(render(t, {{"drop", "d"}, {"drop.p", "0.1"}, {"function.self", "self"}}),
            "dropout_p=0.1 if self.training else 0.0");
  EXPECT_EQ(render(t, {{"drop", "d"}, {"drop.p", "dropout"}}), "dropout_p=dropout");
  EXPECT_EQ(render(t, {}), "");
}

TEST(FixTemplate, ConditionsCompareValuesAndOpRefs) {
  const char* t = "sdpa(q, k, v[?#mask.kind=fill: , attn_mask=~({#mask.1})][?#mask.kind='additive': , attn_mask={#mask.1}])";
  EXPECT_EQ(render(t, {{"#mask.kind", "fill"}, {"#mask.1", "m == 0"}}), "sdpa(q, k, v, attn_mask=~(m == 0))");
  EXPECT_EQ(render(t, {{"#mask.kind", "additive"}, {"#mask.1", "bias"}}), "sdpa(q, k, v, attn_mask=bias)");
  EXPECT_EQ(render(t, {{"#mask.kind", "where"}, {"#mask.1", "m"}}), "sdpa(q, k, v)");
  EXPECT_EQ(render("[?!#mask.kind=fill: no fill]", {}), "no fill");
}

TEST(FixTemplate, LiteralBracketsBracesAndNesting) {
  EXPECT_EQ(render("x[..., :d] {{k: v}}", {}), "x[..., :d] {k: v}");
  EXPECT_EQ(render("if (i < n) { ... } {'a': 1} }", {}), "if (i < n) { ... } {'a': 1} }");
  EXPECT_EQ(render("{{x}} {x}", {{"x", "y"}}), "{x} y");
  EXPECT_EQ(render("[?a: x[[?b: {b}]]]", {{"a", "1"}}), "x[]");
  EXPECT_EQ(render("[?a: x[[?b: {b}]]]", {{"a", "1"}, {"b", "2"}}), "x[2]");
}

TEST(FixTemplate, ErrorsNameTheirOffset) {
  for (const char* bad : {"f([?a: x)", "[?a x]", "{q.}", "[?: x]", "{a..b}"}) {
    auto parsed = parse_fix_template(bad);
    EXPECT_TRUE(std::holds_alternative<ParseError>(parsed)) << bad;
  }
}

// End to end: a rule's fix filled from a match over hand-built IR.
const char* kConcepts = R"(
[[concept]]
id = "rms-norm"
name = "RMSNorm"
summary = "s"
)";

const char* kPatterns = R"toml(
[[pattern]]
id = "rms"
language = "python"
match = "@out:mul($x, rsqrt(@eps_add:add(mean[dim == -1](@sq:pow($x, ...)), @eps:_)))"
base = 0.9
)toml";

std::string rule_with_fix(const std::string& fix) {
  return "id = \"NRM900\"\nname = \"rms\"\nlanguage = \"python\"\nconcept = \"rms-norm\"\nseverity = \"warning\"\n"
         "patterns = [\"rms\"]\nmessage = \"m\"\nfix = '''" + fix + "'''\n[docs]\nsummary = \"s\"\nwhy = \"w\"\n";
}

TEST(FixTemplate, TheEngineFillsLabelsFromTheMatch) {
  TempDir dir;
  dir.write("concepts/c.toml", kConcepts);
  dir.write("patterns/p.toml", kPatterns);
  dir.write("rules/NRM900.toml",
            rule_with_fix("y = F.rms_norm({out.0|x}, ({out.0|x}.size(-1),), eps={eps})[?sq.exponent:   # x**{sq.exponent}]"));
  std::vector<FileError> errors;
  auto engine = Engine::load(dir.path(), errors);
  ASSERT_TRUE(engine) << (errors.empty() ? "" : errors[0].message);

  FunctionBuilder b;
  auto x = b.add("input", {}, {{"name", std::string("hidden_states")}});
  auto two = b.add("const", {}, {{"value", 2.0}});
  auto sq = b.add("pow", {x, two}, {{"exponent", 2.0}});
  auto mean = b.add("mean", {sq}, {{"dim", int64_t{-1}}});
  auto eps = b.add("scalar", {}, {{"text", std::string("self.variance_epsilon")}});
  auto add = b.add("add", {mean, eps});
  auto rs = b.add("rsqrt", {add});
  b.add("mul", {x, rs});
  ir::Module m;
  m.path = "x.py";
  m.language = "python";
  m.functions.push_back(b.fn);
  auto findings = engine->analyze(m);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].fix,
            "y = F.rms_norm(hidden_states, (hidden_states.size(-1),), eps=self.variance_epsilon)  # x**2.0");
}

TEST(FixTemplate, LoadRejectsUnknownLabelsAndBadSyntax) {
  for (const char* fix : {"f({nope})", "f([?nope: x])", "f([?eps: x)"}) {
    TempDir dir;
    dir.write("concepts/c.toml", kConcepts);
    dir.write("patterns/p.toml", kPatterns);
    dir.write("rules/NRM900.toml", rule_with_fix(fix));
    std::vector<FileError> errors;
    EXPECT_FALSE(Engine::load(dir.path(), errors)) << fix;
    ASSERT_FALSE(errors.empty()) << fix;
    EXPECT_NE(errors[0].message.find("fix"), std::string::npos) << errors[0].message;
    EXPECT_NE(errors[0].path.find("NRM900.toml"), std::string::npos);
  }
}

}  // namespace
}  // namespace mlsem
