// bytes -> CUDA frontend (built-in prelude, no toolkit headers: fast) -> IR -> findings.
// Without the CUDA frontend the driver answers with an error entry; only the fuzz_cuda
// binary, built when the frontend is, fuzzes it.
#include "driver/driver.h"
#include "engine/engine.h"
#include "fuzz.h"
#include "report/report.h"

namespace mlsem::fuzz {

int cuda(const uint8_t* data, size_t size) {
  SourceFile file;
  file.text.assign(reinterpret_cast<const char*>(data), size);
  file.path = "fuzz.cu";
  DriverOptions options;
  options.jobs = 1;
  options.show_demoted = true;
  options.cuda.cuda_path = "none";
  Sources sources;
  Report report = analyze_source(file, engine(), options, &sources);
  std::string text = report::to_text(report, sources, {});
  return 0;
}

}  // namespace mlsem::fuzz
