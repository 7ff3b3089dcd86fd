// Finding the source files under the paths a user named (driver-internal).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "core/source.h"

namespace mlsem::driver {

inline constexpr const char* kNoCuda = "CUDA support is not built into this mlsem (it needs Clang at build time)";

// "python" for .py and .ipynb, "cuda" for .cu/.cuh when CUDA support is built, else "".
std::string_view language_of(std::string_view path);

// Expands files and directories into source files, each once, in the order named
// (a directory's files sorted by path), each as the user would write it: the named
// path, or the named directory joined with the relative path. Directories are walked recursively without
// following symlinked directories, skipping VCS, virtual environment, build and cache
// directories. Missing or unsupported paths are appended to `errors`.
// `excluded`, when set, is asked about every file and directory met during a walk
// (configuration exclusions, .gitignore); named paths are never excluded.
using Exclusion = std::function<bool(const std::filesystem::path& path, bool is_directory)>;
std::vector<std::string> collect_files(const std::vector<std::string>& paths,
                                      std::vector<FileError>& errors, const Exclusion& excluded = {});

// Whether a directory met during a walk is left out (an explicitly named one never is).
bool is_skipped_directory(const std::string& dir_path, std::string_view name);

// The checks every text passes before a frontend sees it: the size limit, no NUL
// byte (binary), well-formed UTF-8. Returns the first problem found.
std::optional<FileError> check_text(const SourceFile& file, size_t max_file_bytes);

}  // namespace mlsem::driver
