// Runs the built `mlsem` binary as a user would, for end-to-end tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "temp_dir.h"

namespace mlsem::test_support {

struct Outcome {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `cd DIR && ENV mlsem ARGS` through the shell; ARGS and ENV are shell text.
inline Outcome run_mlsem(const std::string& args, const std::string& dir, const std::string& env = "") {
  TempDir capture;
  std::string err_file = capture.str() + "/stderr";
  std::string command = "cd '" + dir + "' && " + env + " '" MLSEM_BINARY "' " + args + " 2>'" + err_file + "'";
  Outcome run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) run.out.append(buffer, n);
  int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  run.err.assign(std::istreambuf_iterator<char>(err), {});
  return run;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace mlsem::test_support
