// The concept hierarchy as a curriculum: prerequisites, stages and a stable order in
// which every concept comes after everything it needs (docs/learning.md).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace mlsem::learn {

// Stages in the order they are taught.
inline constexpr std::string_view kStages[] = {"beginner", "intermediate", "advanced"};

// Depth in the prerequisite graph at which a concept without an explicit `stage` becomes
// intermediate, and advanced.
inline constexpr int kIntermediateDepth = 5, kAdvancedDepth = 7;

class Curriculum {
 public:
  // Indexes the loaded concepts (the loader has checked that edges exist and are acyclic).
  explicit Curriculum(const std::vector<Concept>& concepts);

  const std::vector<Concept>& concepts() const { return *concepts_; }
  const Concept* find(std::string_view id) const;

  // What must be learnt first: the concept's `requires`, then its `parents` (the general
  // idea before the special case), without duplicates.
  const std::vector<std::string>& prerequisites(std::string_view id) const;
  // Concepts that list `id` among their parents, in data order.
  const std::vector<std::string>& children(std::string_view id) const;
  // Concepts that list `id` among their prerequisites (requires or parents), in data order.
  const std::vector<std::string>& needed_by(std::string_view id) const;

  // Longest chain of prerequisites below the concept (0 for a concept that needs nothing).
  int depth(std::string_view id) const;
  // 0 beginner, 1 intermediate, 2 advanced: the concept's own `stage` or one derived from
  // its depth, raised to the latest stage of any prerequisite so stages never run backwards.
  int stage(std::string_view id) const;
  std::string_view stage_name(std::string_view id) const { return kStages[stage(id)]; }
  // The concept's `minutes`, or a default by stage (15, 25, 40) when the data gives none.
  int minutes(std::string_view id) const;
  // The explanation, or the summary when the data gives none.
  const std::string& explanation(std::string_view id) const;

  // `ids` and everything they need, transitively.
  std::set<std::string> closure(const std::vector<std::string>& ids) const;
  // A stable topological order of `ids` (each must be known): stage by stage, and inside a
  // stage every concept after its prerequisites; ties go to the shallower concept, then to
  // data order. Prerequisites outside `ids` are ignored.
  std::vector<std::string> order(const std::set<std::string>& ids) const;

  // The concepts, short of the advanced stage, that name a kernels/lesson_* kernel among
  // their lessons: the fundamentals path's targets.
  std::vector<std::string> fundamentals() const;

 private:
  const std::vector<Concept>* concepts_;
  std::map<std::string, size_t, std::less<>> index_;
  std::vector<std::vector<std::string>> prerequisites_, children_, needed_by_;
  std::vector<int> depth_, stage_;
  size_t at(std::string_view id) const;
};

}  // namespace mlsem::learn
