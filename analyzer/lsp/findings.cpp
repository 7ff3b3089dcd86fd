#include "lsp/findings.h"

#include <cstdio>
#include <filesystem>

#include "driver/driver.h"

namespace mlsem::lsp {
namespace {

std::string confidence_text(double c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", c);
  return buf;
}

int severity_number(const std::string& s) {
  if (s == "error") return 1;
  if (s == "info") return 3;
  return 2;  // warning
}

std::string line_suffix(const Range& r) { return r.valid() ? " (line " + std::to_string(r.begin.line) + ")" : ""; }

}  // namespace

std::string default_docs_base() { return std::string(homepage()) + "/blob/main/docs/rules/"; }

std::string rule_docs_url(const Engine& engine, const std::string& rule_id, std::string_view base) {
  const Rule* rule = engine.rule(rule_id);
  if (!rule) return "";
  return std::string(base) + rule->id + ".md";
}

json to_json(const LspPosition& p) { return {{"line", p.line}, {"character", p.character}}; }
json to_json(const LspRange& r) { return {{"start", to_json(r.start)}, {"end", to_json(r.end)}}; }

json text_edit(const Edit& edit, const Text& text, Encoding e) {
  LspRange r{text.position(edit.begin, e), text.position(edit.end, e)};
  return {{"range", to_json(r)}, {"newText", edit.text}};
}

json to_diagnostic(const Finding& f, const Engine& engine, const Text& text, Encoding e, const std::string& uri,
                   std::string_view docs_base) {
  json d = {
      {"range", to_json(text.range(f.range, e))},
      {"severity", severity_number(f.severity)},
      {"code", f.rule},
      {"source", "mlsem"},
      {"message", f.message + " (confidence " + confidence_text(f.confidence) + ")"},
  };
  if (std::string url = rule_docs_url(engine, f.rule, docs_base); !url.empty()) d["codeDescription"] = {{"href", url}};
  json related = json::array();
  for (const Evidence& ev : f.evidence)
    if (ev.present && ev.range.valid())
      related.push_back({{"location", {{"uri", uri}, {"range", to_json(text.range(ev.range, e))}}}, {"message", ev.text}});
  if (!related.empty()) d["relatedInformation"] = std::move(related);
  d["data"] = {{"rule", f.rule}, {"concept", f.concept_id}, {"confidence", f.confidence}, {"fix", f.fix}};
  return d;
}

std::string hover_markdown(const Finding& f, const Engine& engine, std::string_view docs_base) {
  std::string md = "**mlsem " + f.rule + "** `" + f.rule_name + "` (confidence " + confidence_text(f.confidence) + ")\n\n";
  md += f.message + "\n\n";
  const Concept* concept_ = engine.concept_by_id(f.concept_id);
  if (concept_) md += "**Concept: " + concept_->name + "**. " + concept_->summary + "\n\n";
  bool any_present = false, any_absent = false;
  for (const Evidence& ev : f.evidence) (ev.present ? any_present : any_absent) = true;
  if (any_present || any_absent) {
    md += "**Evidence**\n\n";
    for (const Evidence& ev : f.evidence)
      md += std::string(ev.present ? "- found: " : "- not found: ") + ev.text + (ev.present ? line_suffix(ev.range) : "") + "\n";
    md += "\n";
  }
  if (!f.fix.empty()) md += "**Suggested fix**\n\n```" + std::string(f.path.ends_with(".py") ? "python" : "cpp") + "\n" + f.fix + "\n```\n\n";
  if (f.kernel) {
    md += "**Reference kernel**: `" + *f.kernel + "`";
    md += f.measured.empty() ? " (no measurement on file)" : ": " + f.measured;
    md += "\n\n";
  }
  if (concept_) {
    std::string before, after;
    for (const std::string& id : concept_->requires_)
      if (const Concept* c = engine.concept_by_id(id)) before += (before.empty() ? "" : ", ") + c->name + " (`" + id + "`)";
    for (const Concept& c : engine.concepts())
      for (const std::string& parent : c.parents)
        if (parent == concept_->id) after += (after.empty() ? "" : ", ") + c.name + " (`" + c.id + "`)";
    if (!before.empty() || !after.empty() || !concept_->kernels.empty()) {
      md += "**Next step**: ";
      if (!before.empty()) md += "builds on " + before + ". ";
      if (!after.empty()) md += "Go further: " + after + ". ";
      if (!concept_->kernels.empty()) md += "Lesson: `kernels/" + concept_->kernels.front() + "`.";
      md += "\n\n";
    }
  }
  if (std::string url = rule_docs_url(engine, f.rule, docs_base); !url.empty()) md += "[" + f.rule + " documentation](" + url + ")\n";
  return md;
}

}  // namespace mlsem::lsp
