// Per-file cost of the CUDA frontend (parse + lowering to IR), in prelude mode and with
// the toolkit's headers (whose precompiled preamble is built by the first file).
//   mlsem_cuda_bench [--cuda-path DIR] [-p DIR] [--toolkit-only] [--per-file] [--repeat N] FILE...
// Prints, per mode, the first file's time (preamble build included) and the median and
// maximum per-file wall and CPU time over the others, repeated N times. -p reads the
// files' flags from DIR/compile_commands.json, as `mlsem analyze -p` does; --per-file
// prints each file's median CPU time.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/frontend.h"

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct Sample {
  double wall_ms, cpu_ms;
  size_t diagnostics;
};

Sample run(const mlsem::SourceFile& file, const mlsem::cuda::CudaOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  double c0 = thread_cpu_ms();
  auto module = mlsem::cuda::build_ir(file, options);
  double c1 = thread_cpu_ms();
  auto t1 = std::chrono::steady_clock::now();
  return {std::chrono::duration<double, std::milli>(t1 - t0).count(), c1 - c0, module.diagnostics.size()};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void report(const char* mode, const std::vector<mlsem::SourceFile>& files, const mlsem::cuda::CudaOptions& options,
            int repeat, bool per_file) {
  Sample first = run(files.front(), options);
  std::vector<double> wall, cpu;
  std::vector<std::vector<double>> file_cpu(files.size());
  size_t diagnostics = 0;
  for (int r = 0; r < repeat; ++r)
    for (size_t i = 0; i < files.size(); ++i) {
      Sample s = run(files[i], options);
      wall.push_back(s.wall_ms);
      cpu.push_back(s.cpu_ms);
      file_cpu[i].push_back(s.cpu_ms);
      diagnostics += r == 0 ? s.diagnostics : 0;
    }
  if (per_file)
    for (size_t i = 0; i < files.size(); ++i)
      std::printf("%-8s %7.1f ms cpu  %s\n", mode, median(file_cpu[i]), files[i].path.c_str());
  std::printf("%-8s first file %7.1f ms (cpu %7.1f) | per file: median %6.1f ms (cpu %6.1f), max %6.1f ms | "
              "%zu files x %d, %zu diagnostics\n",
              mode, first.wall_ms, first.cpu_ms, median(wall), median(cpu), *std::max_element(wall.begin(), wall.end()),
              files.size(), repeat, diagnostics);
}

}  // namespace

int main(int argc, char** argv) {
  std::string cuda_path = "/usr/local/cuda";
  std::string compile_commands;
  bool toolkit_only = false, per_file = false;
  int repeat = 3;
  std::vector<mlsem::SourceFile> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cuda-path" && i + 1 < argc) {
      cuda_path = argv[++i];
    } else if (a == "-p" && i + 1 < argc) {
      compile_commands = argv[++i];
    } else if (a == "--toolkit-only") {
      toolkit_only = true;
    } else if (a == "--per-file") {
      per_file = true;
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::ifstream in(a);
      if (!in) {
        std::fprintf(stderr, "cannot read %s\n", a.c_str());
        return 2;
      }
      std::stringstream text;
      text << in.rdbuf();
      files.push_back({a, text.str()});
    }
  }
  if (files.empty()) {
    std::fprintf(stderr,
                 "usage: mlsem_cuda_bench [--cuda-path DIR] [-p DIR] [--toolkit-only] [--per-file] [--repeat N] "
                 "FILE...\n");
    return 2;
  }
  if (!toolkit_only) {
    mlsem::cuda::CudaOptions prelude;
    prelude.cuda_path = "none";
    prelude.compile_commands_dir = compile_commands;
    report("prelude", files, prelude, repeat, per_file);
  }
  mlsem::cuda::CudaOptions toolkit;
  toolkit.cuda_path = cuda_path;
  toolkit.compile_commands_dir = compile_commands;
  report("toolkit", files, toolkit, repeat, per_file);
  return 0;
}
