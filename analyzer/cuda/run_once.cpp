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

#include "core/text.h"

namespace mlsem::cuda {
namespace {

std::string simple_name(const std::string& qualified) {
  size_t colon = qualified.rfind("::");
  return colon == std::string::npos ? qualified : qualified.substr(colon + 2);
}

bool flag(const ir::Function& fn, const char* key) {
  auto it = fn.attrs.find(key);
  return it != fn.attrs.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
}

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

  // The launches of a kernel (by simple name) and where each is reached from main, when
  // every one of them runs a fixed number of times; nullopt otherwise.
  std::optional<std::vector<std::pair<const HostGraph::Site*, Reach>>> launches(const std::string& kernel) {
    if (g_.escaped.count(kernel)) return std::nullopt;
    auto it = callers_.find(kernel);
    if (it == callers_.end()) return std::nullopt;
    std::vector<std::pair<const HostGraph::Site*, Reach>> out;
    runs_ = 0;
    for (const auto& [caller, site] : it->second) {
      if (!site->launch || site->in_loop) return std::nullopt;
      auto r = once(caller);
      if (!r) return std::nullopt;
      if (r->depth == 0) r->main_line = site->line;  // launched in main itself
      out.emplace_back(site, *r);
      runs_ = std::min(kManyRuns, runs_ + r->runs);
    }
    if (out.empty()) return std::nullopt;
    return out;
  }
  int64_t last_runs() const { return runs_; }  // the launches' runs, after launches()


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
  int64_t runs_ = 0;
};

}  // namespace

void mark_run_once(ir::Module& module, const HostGraph& graph,
                   const std::map<std::string, std::set<std::string>>& device_callees, const std::string& file) {
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
    if (!flag(fn, "global") || fn.attrs.count("cold")) continue;
    std::string kernel = simple_name(fn.name);
    auto sites = reach.launches(kernel);
    if (!sites) continue;
    const Reach& r = sites->front().second;
    std::string where = "from main at " + (file.empty() ? "line " : file + ":") + std::to_string(r.main_line);
    if (!r.through.empty()) where += " (through " + name_of(r.through) + ")";
    int64_t runs = reach.last_runs();
    std::string why = runs == 1 ? "launched once per run, " + where + ", outside any loop"
                                : "launched at most " + std::to_string(runs) + " times per run, each reached from "
                                  "main outside any loop (the first " + where + ")";
    fn.attrs["cold"] = why + ": what its accesses cost is paid once per program run, not per step";
  }
  // Device functions called only from cold kernels (or from such functions).
  std::map<std::string, std::set<std::string>> callers;
  for (const auto& [fn, called] : device_callees)
    for (const auto& c : called) callers[simple_name(c)].insert(simple_name(fn));
  std::map<std::string, ir::Function*> by_name;
  for (ir::Function& fn : module.functions) by_name[simple_name(fn.name)] = &fn;
  for (bool changed = true; changed;) {
    changed = false;
    for (ir::Function& fn : module.functions) {
      if (!flag(fn, "device") || flag(fn, "global") || fn.attrs.count("cold")) continue;
      auto it = callers.find(simple_name(fn.name));
      if (it == callers.end() || it->second.empty()) continue;
      bool all = std::all_of(it->second.begin(), it->second.end(), [&](const std::string& c) {
        auto f = by_name.find(c);
        return f != by_name.end() && f->second->attrs.count("cold") > 0;
      });
      if (!all) continue;
      fn.attrs["cold"] = "called only from " + join(it->second, ", ") +
                         ", launched a fixed number of times per run or over small data (cold)";
      changed = true;
    }
  }
}

}  // namespace mlsem::cuda
