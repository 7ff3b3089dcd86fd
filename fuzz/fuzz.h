// Fuzz entry points (docs/hardening.md). Each takes arbitrary bytes and must neither
// crash, hang, leak nor trip a sanitizer. libFuzzer drives them in the fuzz_* binaries
// (MLSEM_FUZZ=ON, Clang); the test suite replays tests/fuzz/<target>/ through the same
// functions without libFuzzer (tests/unit/fuzz_replay_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace mlsem {
class Engine;
}

namespace mlsem::fuzz {

int python(const uint8_t* data, size_t size);  // bytes -> .py (or .ipynb) -> IR -> findings -> text
int cuda(const uint8_t* data, size_t size);    // bytes -> .cu (prelude mode) -> IR -> findings
int toml(const uint8_t* data, size_t size);    // byte 0 picks concepts / patterns / rules / config
int report(const uint8_t* data, size_t size);  // findings built from the bytes -> every format
int lsp(const uint8_t* data, size_t size);     // framed messages -> the server, to its exit

// The real data (concepts/, patterns/, rules/ of the source tree), loaded once.
const Engine& engine();
// The source tree the entry points were built from.
const char* source_dir();

// A scratch directory, removed by its owner's destructor at exit: hold it in a function's
// static. (An atexit handler registered while the static was being built ran after the
// static was destroyed and removed nothing.)
struct Scratch {
  std::filesystem::path root;
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
};

// Writes `text` to `file`, replacing it.
inline void write(const std::filesystem::path& file, std::string_view text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(text.data(), std::streamsize(text.size()));
}

// Takes values off the front of the fuzz input; past the end everything is zero/empty.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  uint8_t byte() {
    if (!n_) return 0;
    --n_;
    return *p_++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | byte();
    return v;
  }
  double real() {
    uint64_t bits = uint64_t(u32()) << 32 | u32();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  // Up to the next 0 byte (or the end), at most `max` bytes.
  std::string text(size_t max = 256) {
    std::string out;
    while (n_ && out.size() < max) {
      uint8_t c = byte();
      if (c == 0) break;
      out.push_back(char(c));
    }
    return out;
  }
  std::string_view rest() {
    std::string_view v(reinterpret_cast<const char*>(p_), n_);
    p_ += n_;
    n_ = 0;
    return v;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

}  // namespace mlsem::fuzz
