// A learning path: the concepts behind a report's findings and everything they need,
// in an order that teaches prerequisites first, with the reference kernels and their
// measured ladders (docs/learning.md). Rendered by render.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/finding.h"
#include "kernels/catalog.h"
#include "learn/curriculum.h"

namespace mlsem::learn {

// One rung of a measured ladder: a variant of the same computation at the same shape.
struct Rung {
  std::string level;    // "eager", "library", "torch-compile", "triton", "cuda"
  std::string title;    // "eager PyTorch", "library call", ...
  std::optional<double> ms;  // nullopt: not measured (or not correct) in that run
};

// A reference kernel to study, with what was measured at one shape.
struct KernelLesson {
  std::string path;   // "kernels/softmax"
  std::string title;  // its README's heading
  std::string shape, dtype, mode, device;  // the measurement shown ("" when none)
  std::optional<double> naive_ms, optimized_ms;  // the unfused CUDA baseline -> the fused kernel
  std::vector<Rung> ladder;  // eager -> library -> torch.compile -> Triton -> CUDA
};

struct Step {
  std::string concept_id, title, stage;
  int depth = 0;
  int minutes = 0;
  std::string explanation, checkpoint;
  std::vector<std::string> prerequisites;  // ids of its prerequisites (all of them are earlier steps)
  std::vector<std::string> needed_by;      // ids of later steps that need it
  std::vector<Finding> findings;           // the user's findings filed under this concept
  std::vector<std::string> levels;         // optimization levels of those findings' fixes, ladder order
  std::vector<KernelLesson> kernels;
  std::vector<std::string> samples;        // samples/ files that show it
};

struct LearningPath {
  std::vector<std::string> targets;  // the concepts the findings (or the fundamentals) named
  std::vector<Step> steps;           // prerequisites first, grouped by stage
  size_t findings = 0, files = 0;
  bool fundamentals = false;         // true: not derived from findings
  int total_minutes() const;
};

// The path for a report's findings (an empty path when there are none), or with
// `fundamentals`, the path to the concepts the kernels/lesson_* kernels teach.
LearningPath build_path(const Report& report, const Curriculum& curriculum, const kernels::Catalog& catalog,
                        bool fundamentals = false);

// The lesson for kernels/<name>: its title and the measured runs at the shape the
// catalog quotes for findings.
KernelLesson kernel_lesson(const std::string& path, const kernels::Catalog& catalog);

// "1 h 5 min", "45 min".
std::string format_minutes(int minutes);
// "0.145 ms", "12.3 ms", "31.8 µs" style with three significant digits ("1.14 ms").
std::string format_ms(double ms);

}  // namespace mlsem::learn
