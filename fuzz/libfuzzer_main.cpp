// One libFuzzer binary per entry point: MLSEM_FUZZ_ENTRY names it (fuzz/CMakeLists.txt).
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return mlsem::fuzz::MLSEM_FUZZ_ENTRY(data, size);
}
