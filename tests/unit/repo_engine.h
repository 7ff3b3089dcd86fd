// A test fixture holding the repository's own rules, loaded once per test suite; a test
// fails with the loader's errors when they do not load.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "core/finding.h"
#include "engine/engine.h"

namespace mlsem::test_support {

class RepoEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { loaded_ = Engine::load(MLSEM_SOURCE_DIR, load_errors_); }
  void SetUp() override {
    for (const FileError& e : load_errors_) ADD_FAILURE() << e.path << ":" << e.line << ": " << e.message;
    if (!loaded_) GTEST_FAIL() << "the rules in " << MLSEM_SOURCE_DIR << " do not load";
  }
  static const Engine& engine() { return *loaded_; }

 private:
  static inline std::vector<FileError> load_errors_;
  static inline std::optional<Engine> loaded_;
};

}  // namespace mlsem::test_support
