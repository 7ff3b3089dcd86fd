#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "engine/engine.h"

namespace fs = std::filesystem;

namespace mlsem {
namespace {

// The running executable: /proc/self/exe sees through a bare `mlsem` found on PATH
// and through symlinks; argv[0] is the fallback elsewhere.
fs::path executable_path(const char* argv0) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) return self;
  if (!argv0 || !*argv0) return {};
  fs::path named = fs::weakly_canonical(argv0, ec);
  return ec ? fs::path() : named;
}

}  // namespace

std::filesystem::path find_data_dir(const char* argv0) {
  if (const char* env = std::getenv("MLSEM_DATA"); env && *env) return env;
  if (fs::path exe = executable_path(argv0); !exe.empty()) {
    fs::path installed = exe.parent_path() / ".." / "share" / "mlsem";
    std::error_code ec;
    if (fs::is_directory(installed / "rules", ec)) return installed.lexically_normal();
  }
  return MLSEM_SOURCE_DIR;  // a build run from its own tree
}

}  // namespace mlsem
