// Kernels a program launches a fixed number of times per run (run_once.cpp). Clang-free:
// the frontend reads what each function of the file calls and launches into a HostGraph
// (host_graph.cpp), and this works on that alone, so it is unit-tested on graphs too.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace mlsem::cuda {

// What the functions of one file call and launch, where the source says so.
struct HostGraph {
  struct Site {
    std::string target;     // a function's key; a kernel's simple name (launch); kGraphLaunch
    bool launch = false;    // a kernel launch (<<<...>>>, cudaLaunchKernel & co.), not a call
    bool in_loop = false;   // inside a loop, a lambda's body, or a function with a goto
    uint32_t line = 0;
  };
  // By the key of the function the sites are in: the functions of this file it calls
  // directly, the kernels it launches and the CUDA graphs it launches.
  std::map<std::string, std::vector<Site>> sites;
  std::map<std::string, std::string> names;  // a function's key -> its name, for messages
  // Functions (keys) and kernels (simple names) named other than by a direct call or a
  // launch from host code: their address taken, passed as an argument or a template
  // argument, set in a graph node, launched from device code. They may run any number of
  // times, from anywhere.
  std::set<std::string> escaped;
  // Functions (keys) that launch a kernel on buffers they are handed (a pointer argument
  // naming a pointer or struct parameter): reusable code, such as a launcher that a
  // trainer calls every step and a test calls once. How often they run is up to callers
  // the file need not show.
  std::set<std::string> entries;
  std::string main;  // the key of `main`; empty when the file has none
};

// The target of a cudaGraphLaunch: a graph replays whatever launches were captured into
// it, wherever they are written.
inline constexpr const char* kGraphLaunch = "<cudaGraphLaunch>";

// How far up the call graph a launch is followed to `main`: deeper chains count as hot.
inline constexpr int kMaxCallDepth = 8;

// In a file with a `main`, sets Function::attrs["cold"] (why) on kernels whose every
// launch the file can see runs a fixed number of times per program run: each launch is
// outside any loop, in `main` or in a function every call of which is outside any loop of
// a function that is itself so (up to kMaxCallDepth calls from main). A kernel with no
// launch in the file, escaped, or launched from a function that nothing in the file calls
// (a library entry point), through a function pointer, from a loop or from a call cycle,
// is not marked, nor is one launched by a function handed the buffers it launches on
// (HostGraph::entries); none is when the file launches a CUDA graph that is not itself run once
// (captured launches replay). A function already marked keeps its reason; the device
// functions only cold kernels call are marked afterwards (context.h, mark_cold_callees).
// `file`: the file's name for the evidence.
void mark_run_once(ir::Module& module, const HostGraph& graph, const std::string& file);

}  // namespace mlsem::cuda
