// Context facts of a CUDA file, after every function is lowered (docs/IR.md, "Context
// facts"): kernels and launchers kept side by side for comparison. Benchmark files such as
// llm.c's dev/cuda/*.cu hold kernel1 .. kernel6 of one operation, from the naive first
// attempt to the fast one, and samples show a deliberately naive version beside the good
// one. A finding in a superseded variant is not something to act on, so such functions
// get Function::attrs["comparison"] (the reason), which demotes findings of rules that list
// "comparison" in demote_in (the default). No Clang here: this works on the IR alone.
#include "cuda/context.h"

#include "core/text.h"

#include <algorithm>
#include <cctype>

namespace mlsem::cuda {
std::string simple_name(const std::string& qualified) {
  size_t colon = qualified.rfind("::");
  return colon == std::string::npos ? qualified : qualified.substr(colon + 2);
}

namespace {

// Who calls each device function, by simple names.
std::map<std::string, std::set<std::string>> device_callers(
    const std::map<std::string, std::set<std::string>>& device_callees) {
  std::map<std::string, std::set<std::string>> callers;
  for (const auto& [fn, called] : device_callees)
    for (const auto& c : called) callers[simple_name(c)].insert(simple_name(fn));
  return callers;
}

// A launch written in the function itself, not a wrapper's call standing for the launches
// of another function of the file (`via`): those are the wrapper's own, with their shape.
bool own_launch(const ir::Node& n) { return n.op == "launch" && !n.attr("via"); }

}  // namespace

std::optional<NumberedName> numbered_name(const std::string& name) {
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  size_t n = name.size() - digits;
  if (n == 0 || n > 2) return std::nullopt;  // kernel1 .. kernel12; not sm_90a, not 1024
  // The word before the number (an underscore between them allowed: launch_softmax_3): a
  // name (kernel, forward, reduce), not a dtype or a quantization tag (q4, fp8, bf16,
  // sm90, q4_0), nor a stage of one computation (pass1, phase_2, step3: all of them run).
  size_t word_end = digits > 0 && name[digits - 1] == '_' ? digits - 1 : digits;
  size_t letters = word_end;
  while (letters > 0 && std::isalpha(static_cast<unsigned char>(name[letters - 1]))) --letters;
  if (word_end - letters < 3) return std::nullopt;
  std::string word = lower_ascii(name.substr(letters, word_end - letters));
  for (const char* stage : {"stage", "phase", "pass", "step", "part", "level", "round", "split", "half", "chunk"})
    if (word.ends_with(stage)) return std::nullopt;
  return NumberedName{name.substr(0, digits), std::stoi(name.substr(digits))};
}

void mark_variants(ir::Module& module, const std::map<std::string, std::set<std::string>>& device_callees) {
  // Functions by simple name (kernels are launched by their simple name).
  std::map<std::string, std::vector<size_t>> by_name;
  for (size_t i = 0; i < module.functions.size(); ++i) by_name[simple_name(module.functions[i].name)].push_back(i);

  // Families: two or more functions stem1, stem2, ... counting from 0 or 1.
  std::map<std::string, std::map<int, std::string>> families;
  for (const auto& [name, _] : by_name)
    if (auto nn = numbered_name(name)) families[nn->stem][nn->number] = name;
  std::erase_if(families, [](const auto& f) { return f.second.size() < 2 || f.second.begin()->first > 1; });

  // Who launches or calls each function: host functions by their launches, device
  // functions by their calls.
  std::map<std::string, std::set<std::string>> callers = device_callers(device_callees);
  for (const ir::Function& fn : module.functions) {
    std::string caller = simple_name(fn.name);
    for (const ir::Node& n : fn.nodes)
      if (own_launch(n))
        if (const auto* k = n.attr("kernel"); k && std::holds_alternative<std::string>(*k))
          callers[simple_name(std::get<std::string>(*k))].insert(caller);
  }

  std::map<std::string, std::string> variant;  // simple name -> reason
  for (const auto& [stem, members] : families) {
    const std::string& latest = members.rbegin()->second;
    std::string range = members.begin()->second + ".." + std::to_string(members.rbegin()->first);
    for (const auto& [number, name] : members) {
      if (name == latest) continue;
      // A caller that launches this member and no other one of its family runs it for
      // real (a dispatcher over kernel numbers launches several of them).
      bool real_caller = false;
      for (const std::string& c : callers[name]) {
        auto cn = numbered_name(c);
        bool caller_is_member = cn && families.count(cn->stem) && families[cn->stem].rbegin()->second != c;
        size_t launched = 0;
        for (const auto& [_, other] : members) launched += callers[other].count(c);
        if (!caller_is_member && launched == 1) real_caller = true;
      }
      if (real_caller) continue;
      variant[name] = "variant " + std::to_string(number) + " of the numbered versions " + range +
                      " kept side by side for comparison; the latest, " + latest + ", is the one reported";
    }
  }
  for (const auto& [name, _] : by_name) {
    std::string l = lower_ascii(name);
    if (!variant.count(name) && (l.find("naive") != std::string::npos || l.find("baseline") != std::string::npos))
      variant[name] = "named as the naive version (" + name + "), kept to compare faster ones against";
  }
  // Kernels a benchmark times against each other through one pointer: a loop that records
  // events or reads a timer launches `kernel`, which the function sets to each of several
  // kernels in turn (cuda-samples' transpose: copy, naive, coalesced, ...). One also
  // launched by name elsewhere in the file runs for real.
  for (const ir::Function& fn : module.functions)
    for (const ir::Node& n : fn.nodes) {
      const auto* list = n.attr("pointer_kernels");
      const auto* timed = n.attr("timing_loop");
      if (n.op != "launch" || !list || !timed || !std::get<bool>(*timed)) continue;
      std::vector<std::string> names = split(std::get<std::string>(*list), ',');
      if (names.size() < 2) continue;
      for (const std::string& name : names)
        if (!variant.count(name) && callers[name].empty())
          variant[name] = "one of the " + std::to_string(names.size()) + " kernels (" + join(names, ", ") + ") that " +
                          simple_name(fn.name) + " times against each other through one pointer: a benchmark of alternatives";
    }
  // Helpers reached only from variants are part of them.
  for (bool changed = !variant.empty(); changed;) {
    changed = false;
    for (const auto& [name, _] : by_name) {
      if (variant.count(name)) continue;
      auto it = callers.find(name);
      if (it == callers.end() || it->second.empty()) continue;
      bool all = std::all_of(it->second.begin(), it->second.end(), [&](const std::string& c) { return variant.count(c) > 0; });
      if (!all) continue;
      variant[name] = "used only by " + join(it->second, ", ") + (it->second.size() == 1 ? ", a variant" : ", variants") +
                      " kept for comparison";
      changed = true;
    }
  }
  for (const auto& [name, why] : variant)
    for (size_t i : by_name[name]) module.functions[i].attrs["comparison"] = why;
}

// A barrier after an early return under `if (threadIdx.D >= P)` is reached by every
// thread only when each launch in the file makes blockDim.D the argument it passes for
// P; with no launch in the file to show it, the return is taken as divergent.
void settle_launch_bound_returns(ir::Module& module) {
  std::map<std::string, bool> all_dead;  // kernel -> every launch's bound returns are dead
  for (const ir::Function& fn : module.functions)
    for (const ir::Node& n : fn.nodes) {
      const auto* k = n.attr("kernel");
      const auto* dead = n.attr("bound_returns_dead");
      if (!own_launch(n) || !k || !std::holds_alternative<std::string>(*k)) continue;
      bool& all = all_dead.try_emplace(simple_name(std::get<std::string>(*k)), true).first->second;
      all = all && dead && std::get<bool>(*dead);
    }
  for (ir::Function& fn : module.functions) {
    auto it = all_dead.find(simple_name(fn.name));
    bool dead = it != all_dead.end() && it->second;
    for (ir::Node& n : fn.nodes) {
      const auto* after = n.attr("after_launch_bound_return");
      if (n.op == "barrier" && after && std::get<bool>(*after) && !dead) n.attrs["after_thread_dependent_return"] = true;
    }
  }
}

void mark_small_launches(ir::Module& module) {
  // Buffers cudaMalloc'd in this file, by name: their size when every allocation of that
  // name states one (the largest), none when any does not.
  std::map<std::string, std::optional<int64_t>> sizes;
  for (const ir::Function& fn : module.functions)
    for (const ir::Node& n : fn.nodes) {
      const auto* buf = n.attr("buffer");
      if (n.op != "host_sync" || !buf || !std::holds_alternative<std::string>(*buf)) continue;
      const auto* bytes = n.attr("bytes");
      std::optional<int64_t> b;
      if (bytes && std::holds_alternative<int64_t>(*bytes)) b = std::get<int64_t>(*bytes);
      auto [it, fresh] = sizes.try_emplace(std::get<std::string>(*buf), b);
      if (!fresh) it->second = it->second && b ? std::optional<int64_t>(std::max(*it->second, *b)) : std::nullopt;
    }
  if (sizes.empty()) return;
  // Per kernel: the most any of its launches touches, when every launch reads and writes
  // only such buffers (none when one touches a buffer of unknown size, or names none); a
  // buffer both read and written counts twice.
  std::map<std::string, std::optional<int64_t>> most;
  std::map<std::string, std::string> biggest;  // the largest buffer touched, for the message
  for (const ir::Function& fn : module.functions)
    for (const ir::Node& n : fn.nodes) {
      const auto* k = n.attr("kernel");
      if (!own_launch(n) || !k || !std::holds_alternative<std::string>(*k)) continue;
      std::string kernel = simple_name(std::get<std::string>(*k));
      auto names = [&](const char* key) {
        const auto* a = n.attr(key);
        return a && std::holds_alternative<std::string>(*a) ? split(std::get<std::string>(*a), ',')
                                                             : std::vector<std::string>{};
      };
      // What it reads and what it writes (a kernel filling a large output is not small).
      std::vector<std::string> reads = names("read_buffers"), writes = names("write_buffers");
      // Written buffers of unknown size that this launch bounds (a fixed grid and block,
      // stores outside loops): `d_Histogram[blockIdx.x] = ...` by one thread a block. The
      // bound is on what the launch stores, not on what it reads: a kernel reading a whole
      // buffer and writing one value a block to it is bounded only in its writes.
      std::map<std::string, int64_t> bounded;
      for (const std::string& item : names("bounded_writes"))
        if (size_t colon = item.rfind(':'); colon != std::string::npos)
          bounded[item.substr(0, colon)] = std::stoll(item.substr(colon + 1));
      std::optional<int64_t> total = reads.empty() && writes.empty() ? std::nullopt : std::optional<int64_t>(0);
      std::string largest;
      int64_t largest_bytes = -1;
      for (size_t i = 0; i < reads.size() + writes.size(); ++i) {
        bool write = i >= reads.size();
        const std::string& name = write ? writes[i - reads.size()] : reads[i];
        auto it = sizes.find(name);
        std::optional<int64_t> bytes = it != sizes.end() ? it->second : std::nullopt;
        if (auto b = bounded.find(name); !bytes && write && b != bounded.end()) bytes = b->second;
        if (!bytes) { total.reset(); break; }
        *total += *bytes;
        if (*bytes > largest_bytes) largest_bytes = *bytes, largest = name;
      }
      auto [it, fresh] = most.try_emplace(kernel, total);
      if (!fresh) it->second = it->second && total ? std::optional<int64_t>(std::max(*it->second, *total)) : std::nullopt;
      if (total && it->second && *total >= *it->second) biggest[kernel] = largest;
    }
  for (ir::Function& fn : module.functions) {
    auto it = most.find(simple_name(fn.name));
    if (it == most.end() || !it->second || *it->second > kSmallLaunchBytes) continue;
    int64_t kib = (*it->second + 1023) / 1024;
    fn.attrs["cold"] = "every launch of " + simple_name(fn.name) + " in this file reads and writes only buffers the file "
                       "allocates with a fixed size (at most " + std::to_string(kib) + " KiB a launch; the largest is " +
                       biggest[simple_name(fn.name)] + "): so little data moves in a few microseconds, and how it "
                       "is accessed costs little";
  }
}

void apply_launch_shapes(ir::Module& module) {
  settle_launch_bound_returns(module);
  // blockDim.x of every launch of each kernel in this file (-1: not stated).
  std::map<std::string, std::set<int64_t>> block_x;
  for (const ir::Function& fn : module.functions)
    for (const ir::Node& n : fn.nodes) {
      if (!own_launch(n)) continue;
      const auto* k = n.attr("kernel");
      if (!k || !std::holds_alternative<std::string>(*k)) continue;
      const auto* x = n.attr("block_x");
      block_x[simple_name(std::get<std::string>(*k))].insert(
          x && std::holds_alternative<int64_t>(*x) ? std::get<int64_t>(*x) : -1);
    }
  for (ir::Function& fn : module.functions) {
    auto it = block_x.find(simple_name(fn.name));
    if (it == block_x.end()) continue;
    // blockDim.x below a warp (dim3 {4, 8, ...}): a warp's lanes are several threadIdx.y
    // rows of blockDim.x threads, so the banks its lanes hit are not those of 32
    // consecutive threadIdx.x; the conflict computed from threadIdx.x alone is unknown.
    if (it->second != std::set<int64_t>{1} &&
        std::all_of(it->second.begin(), it->second.end(), [](int64_t x) { return x > 1 && x < 32; })) {
      fn.attrs["block_x_below_warp"] = true;
      for (ir::Node& n : fn.nodes)
        if (n.attrs.count("bank_conflict_ways")) n.attrs["bank_conflict_ways"] = int64_t{1};
      continue;
    }
    if (it->second != std::set<int64_t>{1}) continue;
    // One thread per block row: threadIdx.x is always 0 and a warp's lanes are
    // consecutive threadIdx.y. An access is uncoalesced only if y does not walk memory
    // one element at a time.
    fn.attrs["block_x_one"] = true;
    for (ir::Node& n : fn.nodes) {
      if (n.op != "load" && n.op != "store") continue;
      auto u = n.attrs.find("uncoalesced");
      if (u == n.attrs.end()) continue;
      const auto* ty = n.attr("ty_stride");
      bool y_unit_or_zero = ty && std::holds_alternative<int64_t>(*ty) &&
                            (std::get<int64_t>(*ty) == 1 || std::get<int64_t>(*ty) == -1 || std::get<int64_t>(*ty) == 0);
      u->second = bool(ty && !y_unit_or_zero);
      n.attrs["block_x_one"] = true;
    }
  }
}

void mark_cold_callees(ir::Module& module, const std::map<std::string, std::set<std::string>>& device_callees) {
  std::map<std::string, std::set<std::string>> callers = device_callers(device_callees);
  std::map<std::string, ir::Function*> by_name;
  for (ir::Function& fn : module.functions) by_name[simple_name(fn.name)] = &fn;
  for (bool changed = true; changed;) {
    changed = false;
    for (ir::Function& fn : module.functions) {
      if (!attr_true(fn, "device") || attr_true(fn, "global") || fn.attrs.count("cold")) continue;
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
