// Learning paths as JSON and DOT; the concept hierarchy as a tree, a detail page and DOT.
#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "learn/levels.h"
#include "learn/render.h"

namespace mlsem::learn {
namespace {

using nlohmann::json;

json optional_ms(const std::optional<double>& ms) { return ms ? json(*ms) : json(nullptr); }

// A DOT string literal.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";  // a line break in a label
    else out += c;
  }
  return out + "\"";
}

constexpr const char* kStageColor[] = {"#c6e5b3", "#fde4a6", "#f7b7a3"};

// Nodes and edges of the concepts in `shown` (all when empty); `label` and `fill` style
// the nodes the caller highlights.
std::string hierarchy_dot(const Curriculum& curriculum, const std::set<std::string>& shown,
                          const std::map<std::string, std::string>& label, const std::string& title) {
  std::string out = "digraph concepts {\n  graph [rankdir=BT, fontname=\"Helvetica\", label=" + quoted(title) +
                    ", labelloc=t];\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", "
                    "fontsize=10, fillcolor=\"#f2f2f2\", color=\"#999999\", fontcolor=\"#555555\"];\n"
                    "  edge [color=\"#bbbbbb\", arrowsize=0.6];\n";
  auto in = [&](const std::string& id) { return shown.empty() || shown.count(id); };
  for (const Concept& c : curriculum.concepts()) {
    if (!in(c.id)) continue;
    out += "  " + quoted(c.id) + " [";
    if (auto it = label.find(c.id); it != label.end())
      out += "label=" + quoted(it->second) + ", fillcolor=\"" + kStageColor[curriculum.stage(c.id)] +
             "\", color=\"#333333\", fontcolor=\"#000000\", penwidth=1.5";
    else
      out += "label=" + quoted(c.name);
    out += "];\n";
  }
  for (const Concept& c : curriculum.concepts()) {
    if (!in(c.id)) continue;
    for (const auto& p : c.parents)
      if (in(p)) out += "  " + quoted(c.id) + " -> " + quoted(p) + ";\n";  // is-a
    for (const auto& r : c.requires_)
      if (in(r)) out += "  " + quoted(c.id) + " -> " + quoted(r) + " [style=dashed];\n";  // needs
  }
  return out + "}\n";
}

}  // namespace

std::string path_json(const LearningPath& path) {
  json steps = json::array();
  int number = 0;
  for (const Step& s : path.steps) {
    json why = json::array();
    for (const Finding& f : s.findings)
      why.push_back({{"rule", f.rule},
                     {"path", f.path},
                     {"line", f.range.begin.line},
                     {"column", f.range.begin.column},
                     {"message", f.message},
                     {"fix", f.fix},
                     {"level", f.level.empty() ? json(nullptr) : json(f.level)}});
    json kernel_paths = json::array(), lessons = json::array();
    for (const KernelLesson& k : s.kernels) {
      kernel_paths.push_back(k.path);
      json ladder = json::array();
      for (const Rung& r : k.ladder) ladder.push_back({{"level", r.level}, {"title", r.title}, {"ms", optional_ms(r.ms)}});
      lessons.push_back({{"path", k.path},
                         {"title", k.title},
                         {"device", k.device.empty() ? json(nullptr) : json(k.device)},
                         {"shape", k.shape.empty() ? json(nullptr) : json(k.shape)},
                         {"dtype", k.dtype.empty() ? json(nullptr) : json(k.dtype)},
                         {"mode", k.mode.empty() ? json(nullptr) : json(k.mode)},
                         {"naive_ms", optional_ms(k.naive_ms)},
                         {"optimized_ms", optional_ms(k.optimized_ms)},
                         {"ladder", ladder}});
    }
    steps.push_back({{"step", ++number},
                     {"concept", s.concept_id},
                     {"title", s.title},
                     {"stage", s.stage},
                     {"minutes", s.minutes},
                     {"prerequisites", s.prerequisites},
                     {"needed_by", s.needed_by},
                     {"why", why},
                     {"levels", s.levels},
                     {"kernels", kernel_paths},
                     {"lessons", lessons},
                     {"samples", s.samples},
                     {"explanation", s.explanation},
                     {"checkpoint", s.checkpoint}});
  }
  json doc = {{"targets", path.targets},          {"fundamentals", path.fundamentals}, {"findings", path.findings},
              {"files", path.files},              {"total_minutes", path.total_minutes()},
              {"steps", steps}};
  return doc.dump(2) + "\n";
}

std::string path_dot(const LearningPath& path, const Curriculum& curriculum) {
  std::map<std::string, std::string> label;
  int number = 0;
  for (const Step& s : path.steps) {
    std::string text = std::to_string(++number) + ". " + s.title;
    if (!s.findings.empty())
      text += "\n" + std::to_string(s.findings.size()) + (s.findings.size() == 1 ? " finding" : " findings");
    label[s.concept_id] = text;
  }
  std::string title = "learning path: " + std::to_string(path.steps.size()) + " steps, about " +
                      format_minutes(path.total_minutes()) + " (green beginner, yellow intermediate, red advanced)";
  return hierarchy_dot(curriculum, {}, label, title);
}

std::string concepts_dot(const Curriculum& curriculum, const std::string& id) {
  if (id.empty()) {
    std::map<std::string, std::string> label;
    for (const Concept& c : curriculum.concepts()) label[c.id] = c.name;
    return hierarchy_dot(curriculum, {}, label, "mlsem concepts (solid: is-a, dashed: requires)");
  }
  std::set<std::string> shown = curriculum.closure({id});
  for (const auto& child : curriculum.children(id)) shown.insert(child);
  std::map<std::string, std::string> label = {{id, curriculum.find(id)->name}};
  return hierarchy_dot(curriculum, shown, label, id + ": what it needs and its children");
}

std::string concepts_tree(const Curriculum& curriculum) {
  std::string out;
  std::set<std::string> printed;
  std::function<void(const std::string&, const std::string&)> print = [&](const std::string& id,
                                                                           const std::string& indent) {
    const Concept& c = *curriculum.find(id);
    out += indent + c.id + "  " + c.name;
    if (!printed.insert(id).second) {
      out += " (see above)\n";
      return;
    }
    out += "  [" + std::string(curriculum.stage_name(id)) + ", " + format_minutes(curriculum.minutes(id)) + "]\n";
    for (const auto& child : curriculum.children(id)) print(child, indent + "  ");
  };
  for (const Concept& c : curriculum.concepts())
    if (c.parents.empty()) print(c.id, "");
  out += "\n" + std::to_string(curriculum.concepts().size()) + " concepts; `mlsem concepts ID` shows one\n";
  return out;
}

std::string concept_detail(const std::string& id, const Curriculum& curriculum, const Engine& engine,
                           const kernels::Catalog& catalog) {
  const Concept& c = *curriculum.find(id);
  auto names = [&](const std::vector<std::string>& ids) {
    std::string text;
    for (const auto& i : ids) text += (text.empty() ? "" : ", ") + i;
    return text.empty() ? std::string("none") : text;
  };
  std::string out = c.name + " [" + c.id + "]\n";
  out += "  stage: " + std::string(curriculum.stage_name(id)) + " (depth " + std::to_string(curriculum.depth(id)) +
         "), about " + format_minutes(curriculum.minutes(id)) + "\n";
  out += "  defined at: " + c.file + ":" + std::to_string(c.line) + "\n";
  out += "  parents: " + names(c.parents) + "\n";
  out += "  children: " + names(curriculum.children(id)) + "\n";
  out += "  requires: " + names(c.requires_) + "\n";
  std::vector<std::string> needed_by;
  for (const Concept& other : curriculum.concepts())
    for (const auto& r : other.requires_)
      if (r == id) needed_by.push_back(other.id);
  out += "  required by: " + names(needed_by) + "\n";
  std::vector<std::string> rules;
  for (const Rule& rule : engine.rules())
    if (rule.concept_id == id)
      rules.push_back(rule.id + (rule.level.empty() ? "" : " (" + std::string(level_title(rule.level)) + ")"));
  out += "  rules: " + names(rules) + "\n\n";
  std::string text = curriculum.explanation(id);
  std::string line;
  for (std::istringstream words(text); words >> text;) {  // wrap at 96 columns
    if (!line.empty() && line.size() + text.size() + 1 > 94) out += "  " + line + "\n", line.clear();
    line += (line.empty() ? "" : " ") + text;
  }
  if (!line.empty()) out += "  " + line + "\n";
  if (!c.checkpoint.empty()) out += "\n  checkpoint: " + c.checkpoint + "\n";
  std::vector<std::string> lessons = c.lessons;
  for (const auto& k : c.kernels)
    if (std::find(lessons.begin(), lessons.end(), "kernels/" + k) == lessons.end()) lessons.push_back("kernels/" + k);
  if (!lessons.empty()) out += "\n  lessons:\n";
  for (const auto& lesson : lessons) {
    out += "    " + lesson + "\n";
    if (lesson.rfind("kernels/", 0) != 0 || !catalog.find(lesson)) continue;
    out += "      " + catalog.speedup_summary(lesson) + "\n";
    if (std::string ladder = ladder_text(kernel_lesson(lesson, catalog)); !ladder.empty())
      out += "      ladder: " + ladder + "\n";
  }
  if (!c.reading.empty()) out += "\n  reading:\n";
  for (const auto& r : c.reading) out += "    " + r + "\n";
  return out;
}

}  // namespace mlsem::learn
