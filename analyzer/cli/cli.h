// The command line's shared parts: option parsing, errors, data loading, output.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/finding.h"
#include "engine/engine.h"
#include "kernels/catalog.h"

namespace mlsem::cli {

constexpr int kClean = 0, kFound = 1, kFailed = 2;

// A mistake in the command line: printed with a pointer to the help, exit 2.
struct UsageError : std::runtime_error {
  std::string command;
  UsageError(std::string cmd, const std::string& message) : std::runtime_error(message), command(std::move(cmd)) {}
};

// Exit 2 after the reason was printed (data load failures, unwritable output).
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CommandLine {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
  std::vector<std::string> positional;

  std::optional<std::string> value(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional(it->second);
  }
};

struct OptionSpec {
  std::map<std::string, std::string> aliases;  // "-j" -> "--jobs"
  std::set<std::string> with_value;            // canonical names taking a value
  std::set<std::string> flags;
};

// Parses one command's arguments; unknown options are usage errors.
CommandLine parse(const std::string& command, const std::vector<std::string>& args, const OptionSpec& spec);

// Prints the help of a command ("" for the top level).
void print_help(const std::string& command);
std::filesystem::path data_dir(const CommandLine& line, const char* argv0);
Engine load_engine(const std::filesystem::path& dir);
kernels::Catalog load_catalog(const std::filesystem::path& dir, std::vector<FileError>& errors);
void print_file_errors(const std::vector<FileError>& errors);
std::vector<std::string> split_commas(const std::string& text);
std::string choice(const CommandLine& line, const std::string& command, const std::string& option,
                   const std::set<std::string>& allowed, const std::string& fallback);
// To stdout, or to `file` (Failure when it cannot be written).
void write_output(const std::string& text, const std::optional<std::string>& file);

// `mlsem analyze` (cli/analyze.cpp).
int analyze(const std::vector<std::string>& args, const char* argv0);

}  // namespace mlsem::cli
