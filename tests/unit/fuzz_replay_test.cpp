// Replays every input under tests/fuzz/<target>/ (inputs that once crashed a fuzz
// target, and hand-made hostile ones) through the fuzz entry points, without libFuzzer:
// the normal suite, and its ASan+UBSan build, catch a regression (docs/hardening.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz.h"

namespace fs = std::filesystem;

namespace {

size_t replay(const char* target, int (*entry)(const uint8_t*, size_t)) {
  size_t count = 0;
  const fs::path dir = fs::path(MLSEM_SOURCE_DIR) / "tests/fuzz" / target;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
    ++count;
  }
  return count;
}

TEST(FuzzReplay, Python) { EXPECT_GT(replay("python", mlsem::fuzz::python), 0u); }
TEST(FuzzReplay, Cuda) { EXPECT_GT(replay("cuda", mlsem::fuzz::cuda), 0u); }
TEST(FuzzReplay, Toml) { EXPECT_GT(replay("toml", mlsem::fuzz::toml), 0u); }
TEST(FuzzReplay, Report) { EXPECT_GT(replay("report", mlsem::fuzz::report), 0u); }
TEST(FuzzReplay, Lsp) { EXPECT_GT(replay("lsp", mlsem::fuzz::lsp), 0u); }

}  // namespace
