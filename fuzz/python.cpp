// bytes -> Python frontend -> IR -> engine -> findings, through the driver's in-memory
// entry (suppressions, context, fingerprints) and the text report that quotes the source.
#include "driver/driver.h"
#include "engine/engine.h"
#include "fuzz.h"
#include "report/report.h"

namespace mlsem::fuzz {

int python(const uint8_t* data, size_t size) {
  SourceFile file;
  file.text.assign(reinterpret_cast<const char*>(data), size);
  // A notebook's JSON starts with '{'; everything else is a .py file.
  file.path = size && data[0] == '{' ? "fuzz.ipynb" : "fuzz.py";
  DriverOptions options;
  options.jobs = 1;
  options.show_demoted = true;
  options.report_unused_suppressions = true;
  Sources sources;
  Report report = analyze_source(file, engine(), options, &sources);
  std::string text = report::to_text(report, sources, {});
  return 0;
}

}  // namespace mlsem::fuzz
