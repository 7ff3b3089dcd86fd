// The driver: finds files, reads them safely, runs the frontend for each file's
// language and the engine over its IR, in parallel, and returns one sorted report.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "cuda/frontend.h"
#include "engine/engine.h"

struct TSTree;

namespace mlsem {

namespace kernels {
class Catalog;
}

// Findings below this confidence are hidden unless --min-confidence says otherwise.
inline constexpr double kDefaultMinConfidence = 0.5;

namespace config {
class Resolver;
}

struct DriverOptions {
  unsigned jobs = 0;                  // 0 = all cores
  double min_confidence = 0.0;        // findings below are dropped
  size_t max_file_bytes = 4u << 20;   // larger files get an error entry
  cuda::CudaOptions cuda;
  // Target PyTorch version ("2.4"): rules whose fix needs a newer one are off. Empty:
  // the project's pinned requirements (driver/torch_version.h), else unknown.
  std::string torch_version;
  // Context kinds reported as user code rather than demoted ("test", "reference",
  // "parity", "fallback", "returns-weights", "cold", "unused", "modular", "variant", "comparison", "compiled", "vendored", "example", "env-bound", or "all"); empty: demote them all.
  std::set<std::string> keep_contexts;
  bool show_demoted = false;  // report demoted findings (info) whatever min_confidence says
  std::optional<std::set<std::string>> only_rules;  // rule ids to report; nullopt = every rule
  std::map<std::string, std::string> severity;      // rule id -> severity override
  // When set, fills Finding::measured. Called only for a finding that names a kernel, so
  // a run without one never loads the catalog; called from the worker threads.
  std::function<const kernels::Catalog*()> catalog;
  // Per-file settings from configuration files (select, ignore, per-file-ignores,
  // min-confidence, severities, torch-version) and exclusions; null = the fields above.
  config::Resolver* config = nullptr;
  bool report_unused_suppressions = false;  // unused `mlsem: ignore` / `noqa` become SUP001 findings
  std::string cache_dir;              // when set, per-file results are cached there (driver/cache.h)
  std::string cache_salt;             // the loaded data's hash, part of every cache key
  // analyze_source of a .py text only: a tree-sitter parse of exactly that text, which
  // the Python frontend uses instead of parsing it again (an editor reparses
  // incrementally after each change). Not taken over; null: parse.
  const TSTree* python_tree = nullptr;
};

// The texts of the files that have findings, by path, for reports that quote source.
using SourceTexts = std::map<std::string, SourceFile>;

// A notebook's code cells, concatenated into the program that was analyzed: for each
// program line (index line - 1), its cell (1-based, counting every cell as Jupyter
// shows them) and its line within that cell.
struct NotebookIndex {
  std::vector<uint32_t> cell;
  std::vector<uint32_t> line;
};
using Notebooks = std::map<std::string, NotebookIndex>;

// What reports need besides the findings: the texts of files with findings and the
// cell maps of notebooks.
struct Sources {
  SourceTexts texts;
  Notebooks notebooks;
};

// The rule id of unused-suppression findings (--report-unused-suppressions).
inline constexpr const char* kUnusedSuppression = "SUP001";

// Directories are walked recursively for .py (.cu/.cuh when CUDA support is built),
// skipping .git, virtual environments, build and node_modules directories.
// A path that does not exist or cannot be read becomes an error entry; the run goes on.
Report analyze_paths(const std::vector<std::string>& paths, const Engine& engine,
                     const DriverOptions& options);
// The same, also keeping the text of every file with a finding (and notebooks' cell
// maps) in `sources`. "-" reads stdin, shown as `stdin_name` ("-" when empty).
Report analyze_paths(const std::vector<std::string>& paths, const Engine& engine,
                     const DriverOptions& options, Sources* sources,
                     const std::string& stdin_name = "");

// Forgets the torch versions the projects' requirements, environment and CI files pin
// (read once per directory and kept for the process): the editor server calls it when
// one of those files changes.
void forget_torch_pins();

// One in-memory file (used by tests, editors and stdin). A path ending in .ipynb is
// read as a notebook's JSON.
Report analyze_source(const SourceFile& file, const Engine& engine, const DriverOptions& options,
                      Sources* sources = nullptr);

// The IR of one file from the frontend for its extension: CUDA for .cu/.cuh when
// CUDA support is built, else Python.
ir::Module build_module(const SourceFile& file, const DriverOptions& options);

// Reads one file the way analyze_paths does: the error for a missing, non-regular,
// unreadable, oversized, binary (NUL byte) or non-UTF-8 file, else nullopt and `out`.
std::optional<FileError> read_source_file(const std::string& path, size_t max_file_bytes,
                                          SourceFile& out);

// mlsem's version, "0.1.0".
std::string_view version();
// The project's home page (CMake's MLSEM_HOMEPAGE_URL).
std::string_view homepage();

}  // namespace mlsem
