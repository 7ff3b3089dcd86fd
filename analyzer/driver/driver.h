// The driver: finds files, reads them safely, runs the frontend for each file's
// language and the engine over its IR, in parallel, and returns one sorted report.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/finding.h"
#include "cuda/frontend.h"
#include "engine/engine.h"

namespace mlsem {

struct DriverOptions {
  unsigned jobs = 0;                  // 0 = all cores
  double min_confidence = 0.0;        // findings below are dropped
  size_t max_file_bytes = 4u << 20;   // larger files get an error entry
  cuda::CudaOptions cuda;
};

// Directories are walked recursively for .py (.cu/.cuh when CUDA support is built),
// skipping .git, virtual environments, build and node_modules directories.
// A path that does not exist or cannot be read becomes an error entry; the run goes on.
Report analyze_paths(const std::vector<std::string>& paths, const Engine& engine,
                     const DriverOptions& options);

// One in-memory file (used by tests and editors).
Report analyze_source(const SourceFile& file, const Engine& engine, const DriverOptions& options);

}  // namespace mlsem
