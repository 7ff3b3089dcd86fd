// The torch version a project targets, read from its pinned requirements when the
// command line does not give one (README.md, "API availability").
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlsem::driver {

// The torch version ("2.1") that one requirements file pins: `torch==2.1.0`,
// `torch>=2.1`, `torch~=2.1`, poetry's `torch = "^2.1"`; the lower bound of a range.
// nullopt when the text does not constrain torch from below.
std::optional<std::string> torch_pin_in(std::string_view text);

// The torch version a conda environment file pins through its `pytorch` package:
// `pytorch=1.12.1`, `pytorch::pytorch=2.0.0`, `pytorch>=1.13`; nullopt when none.
std::optional<std::string> conda_torch_pin_in(std::string_view text);

// The oldest torch ("1.8") a CI file installs or tests: `pip install torch==1.8.1+cu111`,
// `"torch<2.2,>=2.0"`, `conda install pytorch=1.12`, a matrix `torch-version: [1.13.1, 2.0.0]`
// (or a block list, or one entry's `torch: 2.1`); nullopt when it names no torch version.
std::optional<std::string> ci_torch_pin_in(std::string_view text);

// The oldest torch a README or INSTALL file states the code needs: `PyTorch 1.12+`,
// `tested on PyTorch 1.10`, `- PyTorch 1.3.1` in a Requirements section, `pip install
// torch==1.8.1` in a code block. Not a line that moves from one torch to another (`upgrade`,
// `bump`), a container image, a table row, nor a section of news, results or records;
// nullopt when none.
std::optional<std::string> readme_torch_pin_in(std::string_view text);

// Finds the pin for files under a directory: the nearest directory, from the file's
// own upwards, with a pyproject.toml, setup.cfg, setup.py or requirements*.txt that pins
// torch (in that order within a directory), else a conda environment file
// (environment*.yml, conda*.yaml, ...) that does; the search stops after a directory
// holding .git. When nothing pins torch up to there, the oldest torch the CI files of that
// top directory install (.circleci, .github/workflows, .travis.yml, .gitlab-ci.yml,
// azure-pipelines.yml), else what the README or INSTALL file of the nearest directory on the
// way up that has one stating it says. Results are cached per directory; safe to call from
// several threads.
// Whether `path` is a file TorchVersionFinder reads for a pin (a pyproject.toml, setup.cfg,
// setup.py, requirements*.txt, conda environment, CI, README or INSTALL file): a change to it may change the
// answer (the editor server watches them).
bool reads_torch_pin(const std::filesystem::path& path);

class TorchVersionFinder {
 public:
  std::string for_file(const std::string& path);  // "" when nothing pins torch
  // Drops every cached answer: a requirements, project, environment or CI file changed
  // (the editor server hears of it; one analysis run reads each directory once).
  void forget();

 private:
  std::optional<std::string> in_directory(const std::filesystem::path& dir);
  std::string stated_from(std::filesystem::path dir);  // a README's or INSTALL file's torch; mutex_ held
  std::optional<std::string> readme_pin_at(const std::filesystem::path& dir);
  // One directory's files that may state a torch, listed once for both searches.
  struct Listing {
    std::vector<std::filesystem::path> requirements, conda, readmes;  // sorted
    bool python = false;  // a .py, requirements, setup.cfg or pyproject.toml file: a Python project's
  };
  const Listing& listing(const std::filesystem::path& dir);
  std::mutex mutex_;
  std::map<std::string, std::string> cache_;  // directory -> version ("" = none up to the root)
  std::map<std::string, std::string> stated_;  // directory -> the nearest README's version upwards ("" = none)
  std::map<std::string, Listing> listings_;    // directory -> its files, as listed
};

}  // namespace mlsem::driver
