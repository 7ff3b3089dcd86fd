// The `mlsem learn` and `mlsem concepts` commands. Each parses its own options, prints
// its own usage errors, and returns the process exit code (0 done, 1 files that could
// not be analyzed, 2 usage or data errors).
#pragma once

#include <string>
#include <vector>

namespace mlsem::learn {

int learn_main(const std::vector<std::string>& args, const char* argv0);
int concepts_main(const std::vector<std::string>& args, const char* argv0);

// The help text of "learn" or "concepts"; "" for other commands.
std::string help(const std::string& command);

}  // namespace mlsem::learn
