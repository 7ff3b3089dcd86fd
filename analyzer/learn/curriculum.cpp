#include "learn/curriculum.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace mlsem::learn {

Curriculum::Curriculum(const std::vector<Concept>& concepts) : concepts_(&concepts) {
  const size_t n = concepts.size();
  for (size_t i = 0; i < n; ++i) index_.emplace(concepts[i].id, i);
  prerequisites_.resize(n);
  children_.resize(n);
  needed_by_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Concept& c = concepts[i];
    auto add = [&](const std::string& id) {
      if (!index_.count(id) || id == c.id) return;
      auto& pre = prerequisites_[i];
      if (std::find(pre.begin(), pre.end(), id) == pre.end()) pre.push_back(id);
    };
    for (const auto& r : c.requires_) add(r);
    for (const auto& p : c.parents) add(p);
    for (const auto& p : c.parents)
      if (index_.count(p)) children_[index_.at(p)].push_back(c.id);
    for (const auto& p : prerequisites_[i]) needed_by_[index_.at(p)].push_back(c.id);
  }
  // Depths and stages, memoized; the loader refuses cyclic data, and a cycle that reaches
  // here anyway (a Concept list built by hand) is an error rather than a stack overflow.
  depth_.assign(n, -1);
  stage_.assign(n, -1);
  std::vector<char> on_path(n, 0);
  std::function<void(size_t)> visit = [&](size_t i) {
    if (depth_[i] >= 0) return;
    if (on_path[i]) throw std::runtime_error("prerequisite cycle through concept '" + concepts[i].id + "'");
    on_path[i] = 1;
    int depth = 0, stage = 0;
    for (const auto& p : prerequisites_[i]) {
      size_t j = index_.at(p);
      visit(j);
      depth = std::max(depth, depth_[j] + 1);
      stage = std::max(stage, stage_[j]);
    }
    int own = depth >= kAdvancedDepth ? 2 : depth >= kIntermediateDepth ? 1 : 0;
    for (int s = 0; s < 3; ++s)
      if (concepts[i].stage == kStages[s]) own = s;
    depth_[i] = depth;
    stage_[i] = std::max(own, stage);
    on_path[i] = 0;
  };
  for (size_t i = 0; i < n; ++i) visit(i);
}

size_t Curriculum::at(std::string_view id) const {
  auto it = index_.find(id);
  if (it == index_.end()) throw std::out_of_range("unknown concept '" + std::string(id) + "'");
  return it->second;
}

const Concept* Curriculum::find(std::string_view id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &(*concepts_)[it->second];
}

const std::vector<std::string>& Curriculum::prerequisites(std::string_view id) const { return prerequisites_[at(id)]; }
const std::vector<std::string>& Curriculum::children(std::string_view id) const { return children_[at(id)]; }
const std::vector<std::string>& Curriculum::needed_by(std::string_view id) const { return needed_by_[at(id)]; }
int Curriculum::depth(std::string_view id) const { return depth_[at(id)]; }
int Curriculum::stage(std::string_view id) const { return stage_[at(id)]; }

int Curriculum::minutes(std::string_view id) const {
  size_t i = at(id);
  if ((*concepts_)[i].minutes > 0) return (*concepts_)[i].minutes;
  static constexpr int kDefault[] = {15, 25, 40};
  return kDefault[stage_[i]];
}

const std::string& Curriculum::explanation(std::string_view id) const {
  const Concept& c = (*concepts_)[at(id)];
  return c.explanation.empty() ? c.summary : c.explanation;
}

std::set<std::string> Curriculum::closure(const std::vector<std::string>& ids) const {
  std::set<std::string> out;
  std::vector<std::string> todo(ids.begin(), ids.end());
  while (!todo.empty()) {
    std::string id = std::move(todo.back());
    todo.pop_back();
    if (!out.insert(id).second) continue;
    for (const auto& p : prerequisites(id)) todo.push_back(p);
  }
  return out;
}

std::vector<std::string> Curriculum::order(const std::set<std::string>& ids) const {
  // Kahn's algorithm over the prerequisite edges inside `ids`; among the concepts whose
  // prerequisites are all placed, the earliest (stage, depth, data order) goes next.
  // Stages never decrease along an edge, so this is grouped by stage.
  std::map<size_t, int> waiting;  // index -> unplaced prerequisites
  for (const auto& id : ids) {
    int count = 0;
    for (const auto& p : prerequisites(id)) count += ids.count(p) ? 1 : 0;
    waiting[at(id)] = count;
  }
  using Key = std::tuple<int, int, size_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  for (const auto& [i, count] : waiting)
    if (count == 0) ready.emplace(stage_[i], depth_[i], i);
  std::vector<std::string> out;
  while (!ready.empty()) {
    size_t i = std::get<2>(ready.top());
    ready.pop();
    out.push_back((*concepts_)[i].id);
    for (const auto& next : needed_by_[i]) {
      auto it = waiting.find(at(next));
      if (it != waiting.end() && --it->second == 0) ready.emplace(stage_[it->first], depth_[it->first], it->first);
    }
  }
  return out;
}

std::vector<std::string> Curriculum::fundamentals() const {
  std::vector<std::string> out;
  for (const Concept& c : *concepts_) {
    if (stage(c.id) == 2) continue;  // advanced topics that merely cite a lesson (autotuning, grouped GEMM)
    for (const auto& lesson : c.lessons)
      if (lesson.rfind("kernels/lesson_", 0) == 0) {
        out.push_back(c.id);
        break;
      }
  }
  return out;
}

}  // namespace mlsem::learn
