#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "fuzz.h"

namespace mlsem::fuzz {

const char* source_dir() { return MLSEM_SOURCE_DIR; }

const Engine& engine() {
  static const Engine loaded = [] {
    std::vector<FileError> errors;
    std::optional<Engine> e = Engine::load(source_dir(), errors);
    if (!e) {
      for (const auto& err : errors) std::fprintf(stderr, "%s:%u: %s\n", err.path.c_str(), err.line, err.message.c_str());
      std::abort();
    }
    return std::move(*e);
  }();
  return loaded;
}

}  // namespace mlsem::fuzz
