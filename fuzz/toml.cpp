// The TOML loaders: byte 0 picks what the rest of the input is, written to a scratch
// data directory beside the real data it needs:
//   0 a concepts/ file, 1 a patterns/ file (with the real concepts), 2 a rules/ file
//   (with the real concepts, patterns and rules), 3 an mlsem.toml, 4 a pyproject.toml.
// The real data loads alone, so a refusal must come with an error naming the fuzzed file.
#include <cstdlib>
#include <fstream>
#include <optional>
#include <unistd.h>

#include "config/config.h"
#include "engine/engine.h"
#include "fuzz.h"

namespace fs = std::filesystem;

namespace mlsem::fuzz {
namespace {

const fs::path& scratch() {
  static const Scratch owner{[] {
    fs::path base = fs::temp_directory_path() / ("mlsem-fuzz-toml-" + std::to_string(getpid()));
    fs::remove_all(base);
    const fs::path src = source_dir();
    for (const char* d : {"c/concepts", "c/patterns", "c/rules", "p/patterns", "p/rules", "r/rules", "cfg"})
      fs::create_directories(base / d);
    fs::create_directory_symlink(src / "concepts", base / "p/concepts");
    for (const char* d : {"concepts", "patterns", "kernels", "samples"})
      fs::create_directory_symlink(src / d, base / "r" / d);
    // The real rules beside the fuzzed one (each file linked: the loader does not
    // follow linked directories), so that every real pattern is used by a rule.
    for (const auto& e : fs::recursive_directory_iterator(src / "rules"))
      if (e.is_regular_file()) {
        fs::path to = base / "r/rules" / fs::relative(e.path(), src / "rules");
        fs::create_directories(to.parent_path());
        fs::create_symlink(e.path(), to);
      }
    return base;
  }()};
  return owner.root;
}

void load_data(const fs::path& data_dir, const fs::path& file) {
  std::vector<FileError> errors;
  std::optional<Engine> e = Engine::load(data_dir, errors);
  if (!e && errors.empty()) std::abort();  // refused without a reason
  if (!e) {
    bool named = false;
    const std::string name = file.filename().string();
    for (const auto& err : errors)
      named = named || err.path.find(name) != std::string::npos || err.message.find(name) != std::string::npos;
    if (!named) std::abort();  // refused, but no error names the bad file
  }
}

}  // namespace

int toml(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const int kind = in.byte() % 5;
  std::string_view text = in.rest();
  const fs::path& root = scratch();
  switch (kind) {
    case 0: write(root / "c/concepts/fuzz.toml", text); load_data(root / "c", "fuzz.toml"); break;
    case 1: write(root / "p/patterns/fuzz.toml", text); load_data(root / "p", "fuzz.toml"); break;
    case 2: write(root / "r/rules/fuzz.toml", text); load_data(root / "r", "fuzz.toml"); break;
    default: {
      const fs::path file = root / "cfg" / (kind == 3 ? "mlsem.toml" : "pyproject.toml");
      fs::remove(root / "cfg/mlsem.toml");
      fs::remove(root / "cfg/pyproject.toml");
      write(file, text);
      std::vector<FileError> errors;
      std::optional<config::ConfigFile> config = config::read_config(file, errors);
      if (!config) break;
      for (const auto& item : config->select.value_or(std::vector<config::Item>{}))
        (void)config::rules_selected(item.text, engine());
      config::CommandLine command_line;
      command_line.config_file = file.string();
      config::Resolver resolver(engine(), command_line);
      std::vector<FileError> init_errors;
      if (!resolver.init(init_errors)) break;
      const std::string py = (root / "cfg/sub/model.py").string();
      if (resolver.prepare({py})) (void)resolver.settings_for(py);
      (void)resolver.excluded(root / "cfg/sub/model.py", false);
      break;
    }
  }
  return 0;
}

}  // namespace mlsem::fuzz
