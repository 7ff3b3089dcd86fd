// Kernels launched a fixed number of times per program run (docs/IR.md, "Context facts").
// A demonstration program (a sample, a test driver) launches most of its kernels once from
// `main`, or from a function `main` calls once: whatever their accesses cost, it is paid a
// fixed number of times per run, not per step of a loop. A kernel is hot only if some
// launch of it sits in a loop, in a function reached from a loop, or in code the file
// does not show being called from `main` (a library entry point, a callback, a thread).
// No Clang here: this works on the HostGraph the frontend reads (host_graph.cpp).
#include "cuda/run_once.h"

#include <algorithm>
#include <optional>

#include "cuda/context.h"

namespace mlsem::cuda {
namespace {

// How a function is reached from main when every path to it runs a fixed number of times.
struct Reach {
  int depth = 0;          // calls from main; 0 for main itself
  uint32_t main_line = 0; // the call in main that leads here (0 for main)
  std::string through;    // the function main calls there, when it is not this one
  int64_t runs = 1;       // how many times per program run, at most (calls outside loops add up)
};

constexpr int64_t kManyRuns = int64_t{1} << 40;  // a cap on `runs`, against overflow

class RunOnce {
 public:
  explicit RunOnce(const HostGraph& g) : g_(g) {
    for (const auto& [caller, sites] : g.sites)
      for (const HostGraph::Site& s : sites) callers_[s.target].push_back({caller, &s});
  }

  // Every call of `key` runs a fixed number of times per run: nullopt when one is in a
  // loop, in a function not so reached, in a cycle, deeper than kMaxCallDepth, or when
  // the function escapes or nothing calls it.
  std::optional<Reach> once(const std::string& key) {
    if (key == g_.main) return Reach{};
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    if (visiting_.count(key)) return std::nullopt;  // a call cycle: any number of times
    visiting_.insert(key);
    std::optional<Reach> out = compute(key);
    visiting_.erase(key);
    memo_[key] = out;
    return out;
  }

  // Where the first launch of a kernel (by simple name) is reached from main, and how many
  // times per run its launches run in all, when every one of them runs a fixed number of
  // times; nullopt otherwise.
  struct Launches {
    Reach first;
    int64_t runs = 0;
  };
  std::optional<Launches> launches(const std::string& kernel) {
    if (g_.escaped.count(kernel)) return std::nullopt;
    auto it = callers_.find(kernel);
    if (it == callers_.end() || it->second.empty()) return std::nullopt;
    std::optional<Launches> out;
    for (const auto& [caller, site] : it->second) {
      if (!site->launch || site->in_loop) return std::nullopt;
      auto r = once(caller);
      if (!r) return std::nullopt;
      if (r->depth == 0) r->main_line = site->line;  // launched in main itself
      if (!out) out = Launches{*r, 0};
      out->runs = std::min(kManyRuns, out->runs + r->runs);
    }
    return out;
  }

  // Every CUDA graph the file launches is launched a fixed number of times.
  bool graphs_once() {
    auto it = callers_.find(kGraphLaunch);
    if (it == callers_.end()) return true;
    for (const auto& [caller, site] : it->second)
      if (site->in_loop || !once(caller)) return false;
    return true;
  }

 private:
  std::optional<Reach> compute(const std::string& key) {
    if (g_.escaped.count(key) || g_.entries.count(key)) return std::nullopt;
    auto it = callers_.find(key);
    if (it == callers_.end() || it->second.empty()) return std::nullopt;  // nothing here calls it
    std::optional<Reach> out;
    int64_t runs = 0;
    for (const auto& [caller, site] : it->second) {
      if (site->launch || site->in_loop) return std::nullopt;
      auto r = once(caller);
      if (!r || r->depth + 1 > kMaxCallDepth) return std::nullopt;
      runs = std::min(kManyRuns, runs + r->runs);
      Reach here{r->depth + 1, r->depth == 0 ? site->line : r->main_line, r->depth == 0 ? key : r->through};
      if (!out || here.depth > out->depth) out = here;  // the longest chain bounds the depth
    }
    out->runs = runs;
    return out;
  }

  const HostGraph& g_;
  std::map<std::string, std::vector<std::pair<std::string, const HostGraph::Site*>>> callers_;
  std::map<std::string, std::optional<Reach>> memo_;
  std::set<std::string> visiting_;
};

}  // namespace

void mark_run_once(ir::Module& module, const HostGraph& graph, const std::string& file) {
  if (graph.main.empty()) return;
  RunOnce reach(graph);
  // A graph launched in a loop replays the launches captured into it, wherever they are
  // written: none of the file's kernels is known to run once.
  if (!reach.graphs_once()) return;
  auto name_of = [&](const std::string& key) {
    auto it = graph.names.find(key);
    return it != graph.names.end() ? it->second : key;
  };
  for (ir::Function& fn : module.functions) {
    if (!attr_true(fn, "global") || fn.attrs.count("cold")) continue;
    auto launched = reach.launches(simple_name(fn.name));
    if (!launched) continue;
    const Reach& r = launched->first;
    std::string where = "from main at " + (file.empty() ? "line " : file + ":") + std::to_string(r.main_line);
    if (!r.through.empty()) where += " (through " + name_of(r.through) + ")";
    std::string why = launched->runs == 1 ? "launched once per run, " + where + ", outside any loop"
                                          : "launched at most " + std::to_string(launched->runs) +
                                                " times per run, each reached from main outside any loop (the first " +
                                                where + ")";
    fn.attrs["cold"] = why + ": what its accesses cost is paid once per program run, not per step";
  }
}

}  // namespace mlsem::cuda
