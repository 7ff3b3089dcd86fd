// Context facts of a CUDA file: functions kept for comparison (context.cpp). Clang-free.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "ir/ir.h"

namespace mlsem::cuda {

// "softmax_kernel3" -> {"softmax_kernel", 3}: a name ending in a one- or two-digit number
// after a word of three or more letters; nullopt for q4, fp16, sm90, q4_0, kernel.
struct NumberedName {
  std::string stem;
  int number = 0;
};
std::optional<NumberedName> numbered_name(const std::string& name);

// "ns::Class::name" -> "name": kernels are launched, and device functions called, by
// their simple name.
std::string simple_name(const std::string& qualified);

// Whether a function's boolean attribute (`global`, `device`) is set.
inline bool attr_true(const ir::Function& fn, const char* key) {
  auto it = fn.attrs.find(key);
  return it != fn.attrs.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
}

// Sets Function::attrs["comparison"] (why) on functions kept for comparison: all but the
// latest of a family of numbered versions (kernel1..kernel6, reduce0..reduce6, counting
// from 0 or 1) unless a caller launches that one alone, functions named naive or baseline,
// and kernels or helpers launched or called only from such variants. `device_callees`:
// each device function's callees by name.
void mark_variants(ir::Module& module, const std::map<std::string, std::set<std::string>>& device_callees);

// Kernels whose every launch in this file reads and writes only buffers that the file
// cudaMallocs with a size it fixes (`cudaMalloc(&d_A, 50000 * sizeof(float))`, or through locals
// never written after), at most kSmallLaunchBytes in all per launch: Function::attrs["cold"]
// (why). Such a kernel moves its data in microseconds, whatever its access pattern.
inline constexpr int64_t kSmallLaunchBytes = int64_t{4} << 20;
void mark_small_launches(ir::Module& module);

// Facts that need the launches of a kernel in this file: a kernel launched only with
// blockDim.x == 1 has warps along threadIdx.y, so its accesses' `uncoalesced` is judged
// by their threadIdx.y stride (Function::attrs["block_x_one"]).
void apply_launch_shapes(ir::Module& module);

// Device functions (not kernels) called only from cold functions, transitively, get
// Function::attrs["cold"] too, after every cold marker has run (small launches, run-once
// launches: run_once.h). `device_callees`: each device function's callees by name.
void mark_cold_callees(ir::Module& module, const std::map<std::string, std::set<std::string>>& device_callees);

}  // namespace mlsem::cuda
