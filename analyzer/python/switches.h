// Switches: the branches a place in Python source sits in that test a parameter of its
// function, a parameter with a literal default (`attention_type="flash"`,
// `use_new_attention_order=False`). The cross-file pass (driver/references.cpp) asks which
// mentions of a class sit under such a switch and, from every value the project gives that
// parameter (its defaults, keyword arguments, configuration keys), whether any of them takes
// the branch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace mlsem::python {

// A literal value: None, True/False, a number or a string, spelled as Python or YAML spell
// it (`true`, `null` and bare words too), or an enum member (`BlockType.llama`), whose value
// the cross-file pass looks up in the project's enum classes.
struct Literal {
  enum Kind { None, Bool, Number, String, Member } kind = None;
  std::string text;  // True/False as "true"/"false"; a number as written; a string unquoted; `Enum.member`
  bool truthy() const;
  bool operator==(const Literal& o) const;
};

// The literal `text` spells, or nullopt (a name, a call, an expression). `bare_words`: as
// YAML spells a string (`kind: flash`), for a configuration file's value. In Python, `Name.member`
// with a CamelCase class name (`BlockType.llama`, not `F.gelu` nor `torch.float16`) is a Member.
std::optional<Literal> parse_literal(std::string_view text, bool bare_words = false);

// A branch condition over parameters: an atom tests one parameter (`p`, `p == "x"`,
// `p is None`, `p in ("a", "b")`) or one configuration key, an attribute read off a name
// (`config.block_type == BlockType.llama`, `self.cfg.use_rope`); `Other` is any condition
// this does not read.
struct Condition {
  enum Kind { Param, Compare, Not, And, Or, Other } kind = Other;
  std::string param;          // Param, Compare: the parameter, or the key (the attribute's name)
  std::string op;             // Compare: ==, !=, is, is not, in, not in
  std::vector<Literal> rhs;   // Compare
  std::vector<Condition> kids;  // Not (one), And, Or
};

// One branch a place sits in: it runs when `condition` is `taken`.
struct Guard {
  Condition condition;
  bool taken = true;
};

// The switches over one place: the guards between it and its function, whose atoms test
// that function's parameters with literal defaults (`defaults`) or configuration keys.
struct Switches {
  std::vector<Guard> guards;
  std::map<std::string, Literal, std::less<>> defaults;
  std::map<std::string, uint32_t, std::less<>> default_offsets;  // where each default's name is
  std::string function;  // the function: `name`, or `Class.name` for a method
};

// The parameters and keys `condition`'s atoms test, into `out`.
void tested(const Condition& condition, std::set<std::string, std::less<>>& out);

// Replaces each Member of `condition`'s right-hand sides by what `resolve` gives (a String);
// false when one has no value there (the condition then reads nothing).
template <typename Resolve>
bool resolve_members(Condition& condition, Resolve resolve) {
  for (Literal& l : condition.rhs)
    if (l.kind == Literal::Member) {
      std::optional<Literal> r = resolve(l);
      if (!r) return false;
      l = *r;
    }
  for (Condition& k : condition.kids)
    if (!resolve_members(k, resolve)) k = Condition{};
  return true;
}

// The switches over each byte offset of `source` (one entry per offset, in order); an
// offset in no function, or in a comment, gets none.
std::vector<Switches> switches_at(std::string_view source, const std::vector<uint32_t>& offsets);

// Whether `condition` is true, false or unknown (nullopt) for every combination of the
// parameter values `values` gives; a parameter it lacks is unknown.
std::optional<bool> evaluate(const Condition& condition,
                             const std::map<std::string, std::vector<Literal>, std::less<>>& values);

}  // namespace mlsem::python
