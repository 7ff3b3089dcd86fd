// The result cache: per-file findings and errors keyed by a hash of the file's text,
// its path, mlsem's version, the loaded rule data and the file's settings, stored as
// JSON under .mlsem_cache/ (marked with a CACHEDIR.TAG so backup tools skip it).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"

namespace mlsem::driver {

// 128-bit FNV-1a (two 64-bit lanes with different offsets), as 32 hex digits.
std::string content_hash(std::string_view data);

// The nearest directory at or above `start` holding .git, pyproject.toml or
// mlsem.toml; `start` itself when there is none.
std::filesystem::path project_root(const std::filesystem::path& start);

// A hash of every file under data_dir/{concepts,patterns,rules} (paths and texts), so
// that editing a rule or pattern invalidates the cache.
std::string data_hash(const std::filesystem::path& data_dir);

struct CachedResult {
  std::vector<Finding> findings;
  std::vector<FileError> errors;
  bool analyzed = false;
};

class Cache {
 public:
  explicit Cache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::optional<CachedResult> load(const std::string& key) const;
  // Best effort: a cache that cannot be written costs speed, never the run.
  void store(const std::string& key, const CachedResult& result) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace mlsem::driver
