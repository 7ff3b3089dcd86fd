// The bare-parse baseline for bench/run.sh: parses every file of a list with
// tree-sitter-python and nothing else, so that mlsem's full analysis of the same
// files can be compared with the least work any tree-sitter-based tool must do.
//
//   mlsem_parse_bench [-j N] FILE_LIST
//
// FILE_LIST holds one path per line ("-" reads stdin). Files are read into memory
// first; only the parse (and freeing the tree) is timed, as wall time and as CPU
// time of all threads (less sensitive to other load on a shared machine). -j N
// parses with N threads pulling files from a shared index, as mlsem's driver does
// (0 = all cores). bench/run.sh repeats runs and takes the median. Output is one line:
//   files=1446 bytes=18745369 seconds=1.750 cpu_seconds=1.748 mb_per_s=10.71 files_per_s=826.29 error_trees=1 jobs=1
#include <tree_sitter/api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" const TSLanguage* tree_sitter_python();

namespace {

struct Options {
  unsigned jobs = 1;
  std::string file_list;
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr, "mlsem_parse_bench: %s\nusage: mlsem_parse_bench [-j N] FILE_LIST\n",
               message);
  std::exit(2);
}

unsigned parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > 4096)
    usage((std::string("bad value for ") + flag + ": " + text).c_str());
  return static_cast<unsigned>(value);
}

Options parse_args(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-j" && i + 1 < argc) {
      options.jobs = parse_count("-j", argv[++i]);
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      usage(("unknown option " + arg).c_str());
    } else if (options.file_list.empty()) {
      options.file_list = arg;
    } else {
      usage("more than one file list given");
    }
  }
  if (options.file_list.empty()) usage("no file list given");
  if (options.jobs == 0) options.jobs = std::max(1u, std::thread::hardware_concurrency());
  return options;
}

std::vector<std::string> read_paths(const std::string& file_list) {
  std::ifstream file;
  if (file_list != "-") {
    file.open(file_list);
    if (!file) usage(("cannot read file list " + file_list).c_str());
  }
  std::istream& in = file_list == "-" ? std::cin : file;
  std::vector<std::string> paths;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) paths.push_back(line);
  return paths;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "mlsem_parse_bench: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct ParseTimes {
  double wall = 0;
  double cpu = 0;
};

// Parses every text once with `jobs` threads; returns wall and CPU time in seconds and
// counts the trees that contain a syntax error (a sanity check that input is Python).
ParseTimes parse_all(const std::vector<std::string>& texts, unsigned jobs, size_t& error_trees) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> errors{0};
  auto worker = [&] {
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, tree_sitter_python());
    for (size_t i; (i = next.fetch_add(1)) < texts.size();) {
      const std::string& text = texts[i];
      TSTree* tree = ts_parser_parse_string(parser, nullptr, text.data(),
                                            static_cast<uint32_t>(text.size()));
      if (ts_node_has_error(ts_tree_root_node(tree))) errors.fetch_add(1);
      ts_tree_delete(tree);
    }
    ts_parser_delete(parser);
  };
  double cpu_start = process_cpu_seconds();
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (auto& thread : threads) thread.join();
  error_trees = errors.load();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          process_cpu_seconds() - cpu_start};
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_args(argc, argv);
  std::vector<std::string> paths = read_paths(options.file_list);
  std::vector<std::string> texts;
  texts.reserve(paths.size());
  size_t bytes = 0;
  for (const auto& path : paths) {
    texts.push_back(read_file(path));
    bytes += texts.back().size();
  }

  size_t error_trees = 0;
  ParseTimes times = parse_all(texts, options.jobs, error_trees);
  double seconds = times.wall;

  std::ostringstream line;
  line.setf(std::ios::fixed);
  line.precision(3);
  line << "files=" << texts.size() << " bytes=" << bytes << " seconds=" << seconds << " cpu_seconds=" << times.cpu;
  line.precision(2);
  line << " mb_per_s=" << (seconds > 0 ? bytes / 1e6 / seconds : 0.0)
       << " files_per_s=" << (seconds > 0 ? texts.size() / seconds : 0.0)
       << " error_trees=" << error_trees << " jobs=" << options.jobs;
  std::cout << line.str() << '\n';
  return 0;
}
