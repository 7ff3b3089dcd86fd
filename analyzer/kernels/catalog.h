// The reference kernels under kernels/: their lessons (README.md) and the benchmark
// results (kernels/results/*.json) that findings quote as measured speedups.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"

namespace mlsem::kernels {

struct KernelEntry {
  std::string name;            // "attention_fwd"
  std::filesystem::path dir;   // kernels/attention_fwd
  std::string title;           // first heading of its README
};

// One measured (kernel, shape) pair from a results file: the fused kernel against the
// hand-written eager form, in the same run on one device.
struct Measurement {
  std::string kernel, mode, shape, dtype, device;
  int64_t elements = 0;  // product of the shape's dimensions
  double fused_ms = 0, eager_ms = 0;
  double baseline_ms = 0;  // the kernel's naive CUDA form; 0 when not timed
};

// What a measured kernel is compared with: the eager PyTorch form (a finding in Python
// code) or the kernel's naive CUDA form (a finding in a CUDA kernel).
enum class Against { eager, naive_cuda };
// What a finding in code of `language` ("python", "cuda") is compared with.
inline Against against_for(std::string_view language) {
  return language == "cuda" ? Against::naive_cuda : Against::eager;
}

// One timed variant of one (kernel, mode, shape, dtype) in a results file: "torch_eager",
// "torch_library", "torch_compile", "triton", "fused" (the CUDA kernel) or "baseline"
// (its naive CUDA form). The ladders of `mlsem learn` are made of these.
struct Run {
  std::string kernel, mode, shape, dtype, device, variant;
  double ms = 0;
  bool correct = false;
};

class Catalog {
 public:
  // Reads kernels_dir/*/README.md and kernels_dir/results/*.json; malformed results name the file.
  static Catalog load(const std::filesystem::path& kernels_dir, std::vector<FileError>& errors);

  const std::vector<KernelEntry>& kernels() const { return kernels_; }
  const std::vector<Measurement>& measurements() const { return measurements_; }
  const KernelEntry* find(std::string_view name) const;  // "attention_fwd" or "kernels/attention_fwd"
  std::string readme(std::string_view name) const;       // the lesson text ("" when unknown)

  // e.g. "fused: 3.1x faster than the eager form on NVIDIA H100 80GB HBM3 at 16384x8192 bf16",
  // at the measured shape whose element count is nearest the user's `shape`, or the
  // largest measured shape when the shape is unknown (empty); "no measurement yet" when
  // no correct measurement of the kernel exists. Against::naive_cuda quotes the naive
  // CUDA form instead ("... than the naive CUDA form ..."), or the eager form where it
  // was not timed.
  std::string speedup_summary(std::string_view name, std::span<const int64_t> shape = {},
                              Against against = Against::eager) const;

  // The command `mlsem kernels bench NAME` runs: python3 <dir>/bench/bench.py --kernel NAME --out OUT
  // (empty when the kernel is unknown).
  std::vector<std::string> bench_command(std::string_view name, const std::string& out_json) const;

  // The measurement speedup_summary quotes for `name` at `shape` (nullptr when none).
  const Measurement* nearest(std::string_view name, std::span<const int64_t> shape = {}) const;
  // Every timed variant of that measurement's kernel, mode, shape, dtype and device, in file order.
  std::vector<Run> runs_of(const Measurement& m) const;

  // The measured ladder of `name`, as text: one table per device, one row per (mode, shape,
  // dtype), one column per rung that device measured (eager PyTorch, library call,
  // torch.compile, Triton, naive CUDA, CUDA), each a median time and its speedup over the
  // eager form; "wrong" where the run was outside tolerance. "" when nothing was measured.
  std::string ladder_table(std::string_view name) const;

 private:
  std::filesystem::path dir_;
  std::vector<KernelEntry> kernels_;
  std::vector<Measurement> measurements_;
  std::vector<Run> runs_;
};

}  // namespace mlsem::kernels
