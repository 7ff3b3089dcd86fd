// The constant-flags step of the cross-file pass: a finding in a branch on an attribute
// (`if self.stratified:`) that the project only ever sets to literals, none of which takes
// the branch (`self.stratified = False` in `__init__`, and nothing sets it again).
#include <cctype>

#include "driver/project.h"
#include "engine/engine.h"
#include "python/switches.h"

namespace mlsem::driver::project {
namespace {

std::string_view rest_of_line(std::string_view text, size_t from) {
  size_t e = text.find('\n', from);
  return text.substr(from, (e == std::string_view::npos ? text.size() : e) - from);
}

// A literal as Python spells it.
std::string spelled(const python::Literal& l) {
  switch (l.kind) {
    case python::Literal::None: return "None";
    case python::Literal::Bool: return l.truthy() ? "True" : "False";
    case python::Literal::String: return "\"" + l.text + "\"";
    default: return l.text;
  }
}

}  // namespace

ConstantFlags::ConstantFlags(std::vector<Finding>& findings, const std::map<std::string, fs::path>& root_of,
                             const std::map<fs::path, Project>& projects) {
  // The candidates by file: each file's text (as the pass read it), lines and definitions once.
  std::map<std::string, std::vector<Finding*>> by_file;
  for (Finding& f : findings)
    if (f.context.empty() && f.path.ends_with(".py") && f.function.find('.') != std::string::npos && f.range.begin.line > 0 &&
        root_of.count(f.path))
      by_file[f.path].push_back(&f);
  for (const auto& [path, in_file] : by_file) {
    const fs::path& root = root_of.at(path);
    auto project = projects.find(root);
    if (project == projects.end()) continue;
    auto read = project->second.texts.find(canonical(path));
    if (read == project->second.texts.end()) continue;
    std::string_view text = read->second;
    std::vector<std::string_view> lines = lines_of(text);
    std::vector<Definition> defs = top_definitions(text);
    for (Finding* f : in_file) {
      size_t line = f->range.begin.line - 1;
      const Definition* d = line < lines.size() ? enclosing(defs, line) : nullptr;
      if (!d) continue;
      // A cheap test first: an `if` on `self.` above it in its class.
      bool maybe = false;
      for (size_t i = d->lines.first; i <= line && !maybe; ++i) {
        size_t p = lines[i].find("if ");
        maybe = p != std::string_view::npos && lines[i].find("self.", p) != std::string_view::npos;
      }
      if (!maybe) continue;
      size_t begin = static_cast<size_t>(lines[d->lines.first].data() - text.data());
      size_t end = d->lines.second < lines.size() ? static_cast<size_t>(lines[d->lines.second].data() - text.data()) : text.size();
      std::string_view l = lines[line];
      size_t at = static_cast<size_t>(l.data() - text.data()) + std::min(l.find_first_not_of(" \t"), l.size());
      std::vector<python::Switches> sw = python::switches_at(text.substr(begin, end - begin), {static_cast<uint32_t>(at - begin)});
      if (sw.empty() || sw[0].guards.empty()) continue;
      Names keys;
      for (const python::Guard& g : sw[0].guards) python::tested(g.condition, keys);
      bool any = false;
      for (const std::string& k : keys)
        if (!sw[0].defaults.count(k) && k != "training") keys_[root].insert(k), any = true;
      if (any) candidates_.push_back({f, root, sw[0].guards, sw[0].function});
    }
  }
}

void ConstantFlags::scan(const fs::path& root, const std::string& file, std::string_view text, bool python) {
  auto keys = keys_.find(root);
  if (keys == keys_.end()) return;
  std::map<std::string, Flag, std::less<>>& flags = flags_[root];
  words(text, python, [&](std::string_view w, size_t at, size_t line) {
    auto k = keys->second.find(w);
    if (k == keys->second.end()) return;
    Flag& flag = flags[*k];
    // Only `.name = literal` sets it, and only attribute reads leave it alone.
    if (!python || at == 0 || text[at - 1] != '.') return void(flag.other = true);
    std::string_view after = rest_of_line(text, at + w.size());
    size_t i = after.find_first_not_of(" \t");
    if (i == std::string_view::npos) return;  // at the line's end: a read
    char c = after[i];
    char d = i + 1 < after.size() ? after[i + 1] : '\0';
    bool compare = (c == '=' || c == '!' || c == '<' || c == '>') && d == '=';
    if (c == '=' && !compare) {
      std::string_view rhs = after.substr(i + 1);
      if (size_t hash = rhs.find('#'); hash != std::string_view::npos) rhs = rhs.substr(0, hash);
      std::optional<python::Literal> l = python::parse_literal(rhs);
      if (!l || l->kind == python::Literal::Member) return void(flag.other = true);
      if (flag.values.empty()) flag.first = where_in(root, file, line);
      flag.values.push_back(*l);
      return;
    }
    // A read: the end of a condition, a bracket, a comparison, a word (`and`, `else`).
    if (compare || c == ':' || c == ')' || c == ']' || c == '}' || c == ',' || ((c == '<' || c == '>') && d != c) ||
        std::isalpha(static_cast<unsigned char>(c)))
      return;
    flag.other = true;  // `+=`, `|=`, `.name.x = ...`, `.name[...] = ...`: changed some other way
  });
}

size_t ConstantFlags::demote(const std::set<fs::path>& read) {
  size_t demoted = 0;
  // Per project, the attributes the candidates test that are such constant flags, with their values.
  std::map<fs::path, std::map<std::string, std::vector<python::Literal>, std::less<>>> constant;
  for (const auto& [root, flags] : flags_)
    for (const auto& [k, flag] : flags)
      if (!flag.other && !flag.values.empty()) constant[root][k] = flag.values;
  for (Candidate& c : candidates_) {
    if (!c.finding->context.empty() || !read.count(c.root)) continue;
    const auto& values = constant[c.root];
    if (values.empty()) continue;
    for (const python::Guard& g : c.guards) {
      std::optional<bool> v = python::evaluate(g.condition, values);
      if (!v || *v == g.taken) continue;
      Names in_guard;
      python::tested(g.condition, in_guard);
      std::string said;
      for (const std::string& k : in_guard) {
        auto it = values.find(k);
        if (it == values.end()) continue;
        std::set<std::string> seen;
        std::string given;
        for (const python::Literal& l : it->second)
          if (seen.insert(spelled(l)).second) given += (given.empty() ? "" : ", ") + spelled(l);
        said += (said.empty() ? "`." : ", `.") + k + "`, which the project only ever sets to " + given + " (" +
                flags_[c.root][k].first + ")";
      }
      ::mlsem::demote(*c.finding, "unused",
                      "unused under the project's own settings: `" + c.function +
                          "` runs this only under a condition on " + said + ": no value it sets meets it");
      ++demoted;
      break;
    }
  }
  return demoted;
}

}  // namespace mlsem::driver::project
