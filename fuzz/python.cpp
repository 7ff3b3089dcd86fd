// bytes -> Python frontend -> IR -> engine -> findings, through the driver's in-memory
// entry (suppressions, context, fingerprints) and the text report that quotes the source.
// An input holding 0x1e bytes is a project instead: each part (at most 8) a file of a
// scratch directory marked by a pyproject.toml, `m<k>.py` (`c<k>.json`, a configuration
// file, when the part starts with '{'), analyzed by analyze_paths, which also runs the
// cross-file pass (driver/references.cpp, driver/switched_off.cpp, python/switches.cpp,
// driver/compile_sites.cpp, driver/fallbacks.cpp). Each part is also read as a CI file
// (driver/torch_version.cpp): the driver's torch pin is cached per directory for the
// process, so the scratch project's CI files would be read for the first input only.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "driver/driver.h"
#include "driver/torch_version.h"
#include "engine/engine.h"
#include "fuzz.h"
#include "report/report.h"

namespace fs = std::filesystem;

namespace mlsem::fuzz {
namespace {

// The project directory, emptied for each input: its name, not the process's, is what
// the pass's messages quote.
fs::path project_dir() {
  static const Scratch owner{fs::temp_directory_path() / ("mlsem-fuzz-python-" + std::to_string(getpid()))};
  const fs::path dir = owner.root / "project";
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

DriverOptions fuzz_options() {
  DriverOptions options;
  options.jobs = 1;
  options.show_demoted = true;
  options.report_unused_suppressions = true;
  return options;
}

}  // namespace

int python(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Sources sources;
  if (bytes.find('\x1e') == std::string_view::npos) {
    SourceFile file;
    file.text.assign(bytes);
    // A notebook's JSON starts with '{'; everything else is a .py file.
    file.path = size && data[0] == '{' ? "fuzz.ipynb" : "fuzz.py";
    Report report = analyze_source(file, engine(), fuzz_options(), &sources);
    std::string text = report::to_text(report, sources, {});
    return 0;
  }
  const fs::path dir = project_dir();
  write(dir / "pyproject.toml", "");
  size_t begin = 0;
  for (int k = 0; k < 8 && begin <= bytes.size(); ++k) {
    size_t end = std::min(bytes.find('\x1e', begin), bytes.size());
    std::string_view part = bytes.substr(begin, end - begin);
    std::string name = (part.starts_with('{') ? "c" : "m") + std::to_string(k) + (part.starts_with('{') ? ".json" : ".py");
    write(dir / name, part);
    (void)driver::ci_torch_pin_in(part);
    begin = end + 1;
  }
  Report report = analyze_paths({dir.string()}, engine(), fuzz_options(), &sources);
  std::string text = report::to_text(report, sources, {});
  return 0;
}

}  // namespace mlsem::fuzz
