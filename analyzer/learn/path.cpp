#include "learn/path.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "learn/levels.h"

namespace mlsem::learn {
namespace {

// The ladder's rungs: the results variant that measures each level.
struct RungSpec {
  const char* level;
  const char* title;
  const char* variant;
};
constexpr RungSpec kRungs[] = {
    {"eager", "eager PyTorch", "torch_eager"},
    {"library", "library call", "torch_library"},
    {"torch-compile", "torch.compile", "torch_compile"},
    {"triton", "Triton", "triton"},
    {"cuda", "custom CUDA", "fused"},
};

void add_unique(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

int level_rank(const std::string& id) {
  for (size_t i = 0; i < kLevels.size(); ++i)
    if (kLevels[i].id == id) return static_cast<int>(i);
  return static_cast<int>(kLevels.size());
}

}  // namespace

int LearningPath::total_minutes() const {
  int total = 0;
  for (const Step& s : steps) total += s.minutes;
  return total;
}

std::string format_minutes(int minutes) {
  if (minutes < 60) return std::to_string(minutes) + " min";
  std::string text = std::to_string(minutes / 60) + " h";
  if (minutes % 60) text += " " + std::to_string(minutes % 60) + " min";
  return text;
}

std::string format_ms(double ms) {
  char buffer[32];
  if (ms >= 100) std::snprintf(buffer, sizeof buffer, "%.0f ms", ms);
  else std::snprintf(buffer, sizeof buffer, "%.3g ms", ms);
  return buffer;
}

KernelLesson kernel_lesson(const std::string& path, const kernels::Catalog& catalog) {
  KernelLesson lesson;
  lesson.path = path;
  if (const kernels::KernelEntry* entry = catalog.find(path)) lesson.title = entry->title;
  const kernels::Measurement* m = catalog.nearest(path);
  if (!m) return lesson;
  lesson.shape = m->shape;
  lesson.dtype = m->dtype;
  lesson.mode = m->mode;
  lesson.device = m->device;
  std::map<std::string, double> ms;  // variant -> time, correct runs only
  for (const kernels::Run& run : catalog.runs_of(*m))
    if (run.correct && run.ms > 0) ms[run.variant] = run.ms;
  if (ms.count("baseline")) lesson.naive_ms = ms["baseline"];
  if (ms.count("fused")) lesson.optimized_ms = ms["fused"];
  for (const RungSpec& spec : kRungs) {
    Rung rung{spec.level, spec.title, std::nullopt};
    if (auto it = ms.find(spec.variant); it != ms.end()) rung.ms = it->second;
    lesson.ladder.push_back(rung);
  }
  return lesson;
}

LearningPath build_path(const Report& report, const Curriculum& curriculum, const kernels::Catalog& catalog,
                        bool fundamentals) {
  LearningPath path;
  path.files = report.files_analyzed;
  path.fundamentals = fundamentals;
  std::map<std::string, std::vector<const Finding*>> by_concept;
  if (fundamentals) {
    path.targets = curriculum.fundamentals();
  } else {
    path.findings = report.findings.size();
    for (const Finding& f : report.findings) {
      if (!curriculum.find(f.concept_id)) continue;  // a rule's concept always exists; be safe with hand-made reports
      add_unique(path.targets, f.concept_id);
      by_concept[f.concept_id].push_back(&f);
    }
  }
  const std::set<std::string> ids = curriculum.closure(path.targets);
  for (const std::string& id : curriculum.order(ids)) {
    const Concept& c = *curriculum.find(id);
    Step step;
    step.concept_id = id;
    step.title = c.name;
    step.stage = std::string(curriculum.stage_name(id));
    step.depth = curriculum.depth(id);
    step.minutes = curriculum.minutes(id);
    step.explanation = curriculum.explanation(id);
    step.checkpoint = c.checkpoint;
    step.prerequisites = curriculum.prerequisites(id);
    for (const auto& next : curriculum.needed_by(id))
      if (ids.count(next)) step.needed_by.push_back(next);
    for (const Finding* f : by_concept[id]) {
      step.findings.push_back(*f);
      if (!f->level.empty()) add_unique(step.levels, f->level);
    }
    std::stable_sort(step.levels.begin(), step.levels.end(),
                     [](const std::string& a, const std::string& b) { return level_rank(a) < level_rank(b); });
    // Kernels: the concept's lessons first, then the kernels it names, then those of its findings' rules.
    std::vector<std::string> kernel_paths;
    for (const auto& lesson : c.lessons) {
      if (lesson.rfind("kernels/", 0) == 0) add_unique(kernel_paths, lesson);
      else add_unique(step.samples, lesson);
    }
    for (const auto& name : c.kernels) add_unique(kernel_paths, "kernels/" + name);
    for (const Finding& f : step.findings)
      if (f.kernel) add_unique(kernel_paths, *f.kernel);
    for (const auto& k : kernel_paths)
      if (catalog.find(k)) step.kernels.push_back(kernel_lesson(k, catalog));
    path.steps.push_back(std::move(step));
  }
  return path;
}

}  // namespace mlsem::learn
