// Learning paths as text (the terminal) and Markdown (a page a learner keeps).
#include "learn/render.h"

#include <cctype>
#include <cstdio>
#include <sstream>

#include "core/text.h"
#include "learn/levels.h"

namespace mlsem::learn {
namespace {

// Words of `text` wrapped to `width` columns, each line starting with `indent`.
std::string wrap(const std::string& text, const std::string& indent, size_t width = 96) {
  std::istringstream words(text);
  std::string out, line, word;
  while (words >> word) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

std::string short_dtype(const std::string& dtype) {
  if (dtype == "bfloat16") return "bf16";
  if (dtype == "float16") return "fp16";
  if (dtype == "float32") return "fp32";
  return dtype;
}

// "on NVIDIA H200 at 16384x8192 bf16 (tanh)"
std::string where(const KernelLesson& k) {
  std::string text = "on " + k.device + " at " + k.shape + " " + short_dtype(k.dtype);
  if (!k.mode.empty()) text += " (" + k.mode + ")";
  return text;
}

std::string ratio(double slow, double fast) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1fx", slow / fast);
  return buffer;
}

// "naive CUDA 1.64 ms -> optimized 0.145 ms (11.3x)"
std::string naive_text(const KernelLesson& k, const char* arrow) {
  if (!k.naive_ms || !k.optimized_ms) return "";
  return "naive CUDA " + format_ms(*k.naive_ms) + arrow + "optimized " + format_ms(*k.optimized_ms) + " (" +
         ratio(*k.naive_ms, *k.optimized_ms) + ")";
}

std::string finding_ref(const Finding& f) {
  std::string text = f.path + ":" + std::to_string(f.range.begin.line) + ":" + std::to_string(f.range.begin.column) +
                     ": " + f.rule + " " + f.message;
  return text;
}

// A step shows its first findings; the rest are counted (`mlsem analyze` and the JSON path list them all).
constexpr size_t kShownFindings = 5;

std::string more_findings(const Step& step, size_t shown, const std::string& prefix) {
  if (step.findings.size() <= shown) return "";
  return prefix + "... and " + std::to_string(step.findings.size() - shown) +
         " more (`mlsem analyze` lists them all)\n";
}

std::string levels_text(const Step& step) {
  std::vector<std::string> titles;
  for (const auto& l : step.levels) titles.emplace_back(level_title(l));
  return join(titles, ", ");
}

std::string header(const LearningPath& path) {
  std::string text;
  if (path.fundamentals) {
    text = "The fundamentals path: the concepts the kernels/lesson_* kernels teach";
  } else {
    text = "Learning path for " + std::to_string(path.findings) + (path.findings == 1 ? " finding" : " findings") +
           " in " + std::to_string(path.files) + (path.files == 1 ? " file" : " files");
  }
  return text + ": " + std::to_string(path.steps.size()) + " steps, about " + format_minutes(path.total_minutes());
}

std::string stage_totals(const LearningPath& path) {
  std::string out;
  for (std::string_view stage : kStages) {
    int minutes = 0, steps = 0;
    for (const Step& s : path.steps)
      if (s.stage == stage) minutes += s.minutes, ++steps;
    if (steps) out += (out.empty() ? "" : ", ") + std::string(stage) + " " + format_minutes(minutes);
  }
  return out;
}

}  // namespace

std::string ladder_text(const KernelLesson& lesson, const char* arrow) {
  std::vector<std::string> rungs;
  for (const Rung& r : lesson.ladder)
    if (r.ms) rungs.push_back(r.title + " " + format_ms(*r.ms));
  if (rungs.size() < 2) return "";
  std::vector<std::string> missing;
  for (const Rung& r : lesson.ladder)
    if (!r.ms) missing.push_back(r.title);
  return join(rungs, arrow) + (missing.empty() ? "" : " (not measured: " + join(missing, ", ") + ")");
}

std::string path_text(const LearningPath& path) {
  if (path.steps.empty() && !path.fundamentals) {
    return "No findings in " + std::to_string(path.files) + (path.files == 1 ? " file" : " files") +
           ": nothing in this code points to a lesson.\n"
           "To learn the GPU fundamentals anyway: mlsem learn --fundamentals\n";
  }
  std::string out = header(path) + "\n";
  std::string stage;
  int number = 0;
  for (const Step& s : path.steps) {
    if (s.stage != stage) {
      stage = s.stage;
      out += "\n== " + std::string(1, char(std::toupper(stage[0]))) + stage.substr(1) + " ==\n";
    }
    out += "\n" + std::to_string(++number) + ". " + s.title + " [" + s.concept_id + "], " + format_minutes(s.minutes);
    if (!s.levels.empty()) out += ", fix level: " + levels_text(s);
    out += "\n" + wrap(s.explanation, "   ");
    if (!s.findings.empty()) {
      out += "   why it matters here:\n";
      for (size_t i = 0; i < s.findings.size() && i < kShownFindings; ++i) {
        const Finding& f = s.findings[i];
        out += "     " + finding_ref(f) + "\n";
        if (!f.fix.empty())
          out += "       fix" + (f.level.empty() ? "" : " (" + std::string(level_title(f.level)) + ")") + ": " + f.fix + "\n";
      }
      out += more_findings(s, kShownFindings, "     ");
    } else if (!s.needed_by.empty()) {
      out += "   needed for: " + join(s.needed_by, ", ") + "\n";
    }
    for (const KernelLesson& k : s.kernels) {
      out += "   study: " + k.path + (k.title.empty() ? "" : " (" + k.title + ")") + "\n";
      if (k.shape.empty()) {
        out += "     not measured yet\n";
        continue;
      }
      if (std::string naive = naive_text(k, " -> "); !naive.empty()) out += "     " + naive + " " + where(k) + "\n";
      if (std::string ladder = ladder_text(k); !ladder.empty()) out += "     ladder: " + ladder + "\n";
    }
    if (!s.samples.empty()) out += "   samples: " + join(s.samples, ", ") + "\n";
    if (!s.checkpoint.empty()) out += wrap("checkpoint: " + s.checkpoint, "   ");
  }
  out += "\nTotal: " + std::to_string(path.steps.size()) + " steps, about " + format_minutes(path.total_minutes()) +
         " (" + stage_totals(path) + ")\n";
  return out;
}

std::string path_markdown(const LearningPath& path) {
  if (path.steps.empty() && !path.fundamentals) {
    return "# Learning path\n\nNo findings in " + std::to_string(path.files) + (path.files == 1 ? " file" : " files") +
           ": nothing in this code points to a lesson. To learn the GPU fundamentals anyway, run "
           "`mlsem learn --fundamentals`.\n";
  }
  std::string out = "# Learning path\n\n" + header(path) + " (" + stage_totals(path) + ").\n\n";
  out += "Each step comes after everything it needs. Tick the checkpoints as you go. The kernels/ and samples/ "
         "paths are in the mlsem source tree; `mlsem kernels show NAME` prints a kernel's lesson.\n";
  std::string stage;
  int number = 0;
  for (const Step& s : path.steps) {
    if (s.stage != stage) {
      stage = s.stage;
      out += "\n## " + std::string(1, char(std::toupper(stage[0]))) + stage.substr(1) + "\n";
    }
    out += "\n### " + std::to_string(++number) + ". " + s.title + "\n\n";
    out += "`" + s.concept_id + "`, about " + format_minutes(s.minutes);
    if (!s.prerequisites.empty()) {
      std::vector<std::string> quoted;
      for (const auto& p : s.prerequisites) quoted.push_back("`" + p + "`");
      out += "; after " + join(quoted, ", ");
    }
    out += ".\n\n" + wrap(s.explanation, "", 100) + "\n";
    if (!s.findings.empty()) {
      out += "**Why it matters here**";
      if (!s.levels.empty()) out += " (fix level: " + levels_text(s) + ")";
      out += ":\n\n";
      for (size_t i = 0; i < s.findings.size() && i < 2 * kShownFindings; ++i) {
        const Finding& f = s.findings[i];
        out += "- `" + f.path + ":" + std::to_string(f.range.begin.line) + "` " + f.rule + ": " + f.message + "\n";
        if (!f.fix.empty()) out += "  - fix: `" + f.fix + "`\n";
      }
      out += more_findings(s, 2 * kShownFindings, "- ");
      out += "\n";
    }
    if (!s.kernels.empty()) {
      out += "**Study**:\n\n";
      for (const KernelLesson& k : s.kernels) {
        out += "- [" + k.path + "](" + k.path + "/README.md)" + (k.title.empty() ? "" : ": " + k.title) + "\n";
        if (k.shape.empty()) continue;
        if (std::string naive = naive_text(k, " → "); !naive.empty()) out += "  - " + naive + " " + where(k) + "\n";
        if (std::string ladder = ladder_text(k, " → "); !ladder.empty()) out += "  - ladder: " + ladder + "\n";
      }
      out += "\n";
    }
    if (!s.samples.empty()) {
      std::vector<std::string> links;
      for (const auto& sample : s.samples) links.push_back("[" + sample + "](" + sample + ")");
      out += "**Samples**: " + join(links, ", ") + "\n\n";
    }
    if (!s.checkpoint.empty()) out += "- [ ] " + s.checkpoint + "\n";
  }
  out += "\n---\n\nTotal: " + std::to_string(path.steps.size()) + " steps, about " +
         format_minutes(path.total_minutes()) + ".\n";
  return out;
}

}  // namespace mlsem::learn
