// The rule and concept documentation the CLI prints: `rules`, `explain`, `concepts`.
#include <algorithm>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>

#include "core/text.h"
#include "report/report.h"

namespace mlsem::report {
namespace {

using Row = std::vector<std::string>;

// Columns padded to their widest cell; the last column is not padded.
std::string table(const std::vector<Row>& rows) {
  std::vector<size_t> widths;
  for (const Row& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

// A block of text indented under its heading; blocks with no text are left out.
void section(std::string_view heading, const std::string& text, std::string& out) {
  if (text.empty()) return;
  out += "\n" + std::string(heading) + "\n";
  size_t start = 0;
  std::string_view body = text;
  while (!body.empty() && body.back() == '\n') body.remove_suffix(1);
  while (start <= body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(start, end - start);
    out += line.empty() ? "\n" : "    " + std::string(line) + "\n";
    start = end + 1;
  }
}

// Every ancestor of a concept, nearest first, each once (the is-a graph is a DAG).
std::vector<std::string> ancestors(const Concept& start, const Engine& engine) {
  std::vector<std::string> found;
  std::set<std::string> seen;
  std::deque<std::string> queue(start.parents.begin(), start.parents.end());
  while (!queue.empty()) {
    std::string id = queue.front();
    queue.pop_front();
    if (!seen.insert(id).second) continue;
    found.push_back(id);
    if (const Concept* parent = engine.concept_by_id(id))
      queue.insert(queue.end(), parent->parents.begin(), parent->parents.end());
  }
  return found;
}

}  // namespace

std::vector<std::string> concept_ancestors(const std::string& concept_id, const Engine& engine) {
  const Concept* c = engine.concept_by_id(concept_id);
  return c ? ancestors(*c, engine) : std::vector<std::string>{};
}

std::map<std::string, std::vector<std::string>> rule_tags(const std::vector<Rule>& rules, const Engine& engine) {
  std::map<std::string, std::vector<std::string>> tags;
  for (const Rule& rule : rules) {
    std::vector<std::string>& list = tags[rule.id];
    if (!rule.concept_id.empty()) list.push_back(rule.concept_id);
    for (std::string& id : concept_ancestors(rule.concept_id, engine)) list.push_back(std::move(id));
  }
  return tags;
}

std::string rules_table(const std::vector<Rule>& rules) {
  std::vector<Row> rows = {{"ID", "NAME", "CONCEPT", "SEVERITY", "STATUS", "SUMMARY"}};
  for (const Rule& r : rules)
    rows.push_back({r.id, r.name, r.concept_id, r.severity, r.status, r.docs.summary});
  return table(rows);
}

std::string rules_json(const std::vector<Rule>& rules) {
  nlohmann::json list = nlohmann::json::array();
  for (const Rule& r : rules)
    list.push_back({{"id", r.id},
                    {"name", r.name},
                    {"concept", r.concept_id},
                    {"severity", r.severity},
                    {"status", r.status},
                    {"language", r.language},
                    {"summary", r.docs.summary},
                    {"kernel", r.kernel ? nlohmann::json(*r.kernel) : nlohmann::json(nullptr)}});
  return list.dump(2) + "\n";
}

std::string explain(const Rule& rule, const Engine& engine) {
  std::string out = rule.id + " " + rule.name + " (" + rule.severity + ", " + rule.status + ", " +
                    rule.language + ")\n";
  if (!rule.docs.summary.empty()) out += rule.docs.summary + "\n";
  section("Message", rule.message, out);
  section("Why", rule.docs.why, out);
  section("Example", rule.docs.example, out);
  section("Fixed", rule.docs.fixed_example, out);
  section("Fix", rule.fix, out);
  std::string concept_text = rule.concept_id;
  if (const Concept* c = engine.concept_by_id(rule.concept_id)) {
    concept_text = c->name + " (" + c->id + ")";
    if (std::vector<std::string> is_a = ancestors(*c, engine); !is_a.empty())
      concept_text += "\nis a: " + join(is_a, ", ");
    if (!c->summary.empty()) concept_text += "\n" + c->summary;
  }
  section("Concept", concept_text, out);
  if (rule.kernel) section("Kernel", *rule.kernel, out);
  return out;
}

namespace {

void md_section(std::string_view heading, const std::string& text, std::string& out) {
  std::string body = text;
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
  while (!body.empty() && body.front() == '\n') body.erase(0, 1);
  if (body.empty()) return;
  out += "\n## " + std::string(heading) + "\n\n";
  out += body + "\n";
}

}  // namespace

std::string explain_markdown(const Rule& rule, const Engine& engine, const std::string& measured) {
  std::string out = "# " + rule.id + " " + rule.name + "\n\n";
  out += "Severity " + rule.severity + ", " + rule.status + ", " + rule.language;
  if (!rule.level.empty()) out += "; fix level: " + rule.level;
  if (!rule.requires_torch.empty()) out += "; needs torch >= " + rule.requires_torch;
  out += ".\n";
  if (!rule.docs.summary.empty()) out += "\n" + rule.docs.summary + "\n";
  md_section("Message", rule.message, out);
  md_section("Why", rule.docs.why, out);
  std::string lang = rule.language == "cuda" ? "cuda" : "python";
  auto code = [&](std::string_view heading, const std::string& text) {
    std::string body = text;
    while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
    while (!body.empty() && body.front() == '\n') body.erase(0, 1);
    if (!body.empty()) out += "\n## " + std::string(heading) + "\n\n```" + lang + "\n" + body + "\n```\n";
  };
  code("Example", rule.docs.example);
  code("Fixed", rule.docs.fixed_example);
  code("Fix", rule.fix);
  std::string concept_text = "`" + rule.concept_id + "`";
  if (const Concept* c = engine.concept_by_id(rule.concept_id)) {
    concept_text = c->name + " (`" + c->id + "`)";
    if (std::vector<std::string> is_a = ancestors(*c, engine); !is_a.empty()) concept_text += ", is a: " + join(is_a, ", ");
    if (!c->summary.empty()) concept_text += "\n\n" + c->summary;
  }
  md_section("Concept", concept_text, out);
  if (rule.kernel) {
    std::string kernel = "[" + *rule.kernel + "](../../" + *rule.kernel + "/)";
    if (!measured.empty()) kernel += ": " + measured;
    md_section("Reference kernel", kernel, out);
  }
  if (!rule.supersedes.empty()) md_section("Supersedes", join(rule.supersedes, ", "), out);
  out += "\n---\nGenerated from `" + rule.file.substr(rule.file.rfind("rules/") == std::string::npos ? 0 : rule.file.rfind("rules/")) +
         "` by `mlsem explain --format markdown " + rule.id + "`; `bash scripts/rule_docs.sh` regenerates every page.\n";
  return out;
}

std::string concepts_list(const std::vector<Concept>& concepts) {
  std::vector<Row> rows = {{"ID", "NAME", "PARENTS"}};
  for (const Concept& c : concepts) rows.push_back({c.id, c.name, join(c.parents, ", ")});
  return table(rows);
}

}  // namespace mlsem::report
