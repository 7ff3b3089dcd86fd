// Switches (python/switches.h): the branches on a function's literal-default parameters
// that a place sits in, and whether a set of values takes them.
#include "python/switches.h"

#include <gtest/gtest.h>

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
}

}  // namespace
}  // namespace mlsem::python
