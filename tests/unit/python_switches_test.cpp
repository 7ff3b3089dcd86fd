// Switches (python/switches.h): the branches on a function's literal-default parameters
// that a place sits in, and whether a set of values takes them.
#include "python/switches.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlsem::python {
namespace {

const char* kSource = R"(class Block:
    def __init__(self, kind="flash", new_order=False, heads=None, width=4):
        if kind == "flash":
            self.a = Flash()
        else:
            self.a = Legacy()
        self.b = Fancy() if not new_order else Plain()
        if heads is None or width > 2:
            self.c = Other()
        elif new_order and kind in ("x", "y"):
            self.d = Mixed()
        # Legacy() in a comment
)";

size_t at(const std::string& word, size_t nth = 0) {
  std::string s = kSource;
  size_t p = s.find(word);
  while (nth-- > 0) p = s.find(word, p + 1);
  return p;
}

TEST(PythonSwitches, EachPlaceGetsTheBranchesOnItsFunctionsParameters) {
  std::vector<uint32_t> offsets;
  for (const char* w : {"Flash()", "Legacy()", "Fancy()", "Plain()", "Other()", "Mixed()"})
    offsets.push_back(static_cast<uint32_t>(at(w)));
  offsets.push_back(static_cast<uint32_t>(at("Legacy()", 1)));  // in the comment
  std::vector<Switches> s = switches_at(kSource, offsets);
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[0].function, "Block.__init__");
  EXPECT_EQ(s[0].defaults.at("kind").text, "flash");
  EXPECT_EQ(s[0].default_offsets.at("kind"), at("kind"));
  EXPECT_EQ(s[0].defaults.count("heads"), 1u);  // None is a literal
  std::map<std::string, std::vector<Literal>, std::less<>> defaults;
  for (const auto& [p, l] : s[0].defaults) defaults[p] = {l};
  auto runs = [&](const Switches& sw, const std::map<std::string, std::vector<Literal>, std::less<>>& values) {
    for (const Guard& g : sw.guards)
      if (std::optional<bool> v = evaluate(g.condition, values); v && *v != g.taken) return false;
    return true;
  };
  // At the defaults: Flash, Fancy and Other are built; Legacy, Plain and Mixed are not.
  EXPECT_TRUE(runs(s[0], defaults));
  EXPECT_FALSE(runs(s[1], defaults));
  EXPECT_TRUE(runs(s[2], defaults));
  EXPECT_FALSE(runs(s[3], defaults));
  EXPECT_TRUE(runs(s[4], defaults));
  EXPECT_FALSE(runs(s[5], defaults));
  EXPECT_TRUE(s[6].guards.empty());
  // With a second value given, both branches may run; an unknown value decides nothing.
  auto both = defaults;
  both["kind"].push_back(*parse_literal("legacy", true));
  both["new_order"].push_back(*parse_literal("True"));
  EXPECT_TRUE(runs(s[1], both));
  EXPECT_TRUE(runs(s[3], both));
  auto unknown = defaults;
  unknown.erase("new_order");
  EXPECT_TRUE(runs(s[3], unknown));
  EXPECT_FALSE(runs(s[1], unknown));
}

TEST(PythonSwitches, ConfigurationKeysAndEnumMembers) {
  const std::string src = R"(class Block:
    @classmethod
    def build(cls, config):
        if config.block_type == BlockType.sequential:
            return Sequential()
        elif self.cfg.model.block_type in ("llama", "other"):
            return Llama()
        if x.f().kind == "a":
            return Called()
        if mask == Mask.none:
            return Named()
)";
  std::vector<uint32_t> offsets;
  for (const char* w : {"Sequential()", "Llama()", "Called()", "Named()"})
    offsets.push_back(static_cast<uint32_t>(src.find(w)));
  std::vector<Switches> s = switches_at(src, offsets);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].function, "Block.build");
  EXPECT_TRUE(s[0].defaults.empty());
  ASSERT_EQ(s[0].guards.size(), 1u);
  const Condition& c = s[0].guards[0].condition;
  EXPECT_EQ(c.kind, Condition::Compare);
  EXPECT_EQ(c.param, "block_type");  // the key: the attribute's name (no parameter of build's)
  ASSERT_EQ(c.rhs.size(), 1u);
  EXPECT_EQ(c.rhs[0].kind, Literal::Member);
  EXPECT_EQ(c.rhs[0].text, "BlockType.sequential");
  std::set<std::string, std::less<>> all;
  tested(c, all);
  EXPECT_EQ(all, (std::set<std::string, std::less<>>{"block_type"}));
  // Under the elif: the if's condition is false, the elif's (a key off a chain) true.
  ASSERT_EQ(s[1].guards.size(), 2u);
  EXPECT_FALSE(s[1].guards[0].taken);
  EXPECT_EQ(s[1].guards[1].condition.param, "block_type");
  EXPECT_EQ(s[1].guards[1].condition.rhs.size(), 2u);
  // An attribute of a call's result is no key; a bare name that is no parameter tests nothing.
  EXPECT_TRUE(s[2].guards.empty());
  EXPECT_TRUE(s[3].guards.empty());
  // Members resolve to the project's values; one it lacks leaves the condition unread.
  Condition resolved = c;
  EXPECT_TRUE(resolve_members(resolved, [](const Literal&) { return std::optional<Literal>(Literal{Literal::String, "sequential"}); }));
  std::map<std::string, std::vector<Literal>, std::less<>> values{{"block_type", {*parse_literal("sequential", true)}}};
  EXPECT_EQ(evaluate(resolved, values), std::optional<bool>(true));
  Condition unresolved = c;
  EXPECT_FALSE(resolve_members(unresolved, [](const Literal&) { return std::optional<Literal>(); }));
}

TEST(PythonSwitches, LiteralsAsPythonAndYamlSpellThem) {
  EXPECT_EQ(parse_literal("True")->text, "true");
  EXPECT_EQ(parse_literal("false")->kind, Literal::Bool);
  EXPECT_EQ(parse_literal("null")->kind, Literal::None);
  EXPECT_EQ(parse_literal("'flash'")->text, "flash");
  EXPECT_EQ(parse_literal("flash", true)->kind, Literal::String);  // a YAML bare word
  EXPECT_FALSE(parse_literal("flash").has_value());               // a Python name
  EXPECT_EQ(parse_literal("1e-5")->kind, Literal::Number);
  EXPECT_FALSE(parse_literal("args.kind").has_value());
  EXPECT_FALSE(parse_literal("f(x)").has_value());
  EXPECT_FALSE(parse_literal("").has_value());
  EXPECT_TRUE(*parse_literal("1") == *parse_literal("True"));
  EXPECT_FALSE(parse_literal("0")->truthy());
  EXPECT_TRUE(parse_literal("0.5")->truthy());
  // An enum member (a CamelCase class's attribute); not a module's or a one-letter alias's.
  EXPECT_EQ(parse_literal("BlockType.llama")->kind, Literal::Member);
  EXPECT_FALSE(parse_literal("torch.float16").has_value());
  EXPECT_FALSE(parse_literal("F.gelu").has_value());
  EXPECT_FALSE(parse_literal("NN.gelu").has_value());
  EXPECT_FALSE(parse_literal("BlockType.llama.value").has_value());
  EXPECT_EQ(parse_literal("BlockType.llama", true)->kind, Literal::String);  // YAML: a bare word
}

}  // namespace
}  // namespace mlsem::python
