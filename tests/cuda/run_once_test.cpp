// The run-once context (analyzer/cuda/run_once.h, host_graph.cpp): in a file with a
// `main`, a kernel whose every launch runs a fixed number of times per program run (from
// main, outside any loop, directly or through functions called so) is cold. Both ways: on
// the file's call graph alone, and on small programs parsed in prelude mode.
#include <gtest/gtest.h>

#include "cuda/context.h"
#include "cuda/frontend.h"
#include "cuda_test_helpers.h"
#include "cuda/run_once.h"

namespace mlsem::cuda {
namespace {

using cuda_test::function;
using cuda_test::parse;

std::string cold(const ir::Module& m, const std::string& name) {
  const ir::Function* f = function(m, name);
  if (!f) return "<no function " + name + ">";
  auto it = f->attrs.find("cold");
  return it != f->attrs.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second) : "";
}

// ---------------------------------------------------------------------------
// On graphs.

ir::Module kernels(std::initializer_list<const char*> names) {
  ir::Module m;
  for (const char* n : names) {
    ir::Function f;
    f.name = n;
    f.attrs["global"] = true;
    f.attrs["device"] = true;
    m.functions.push_back(std::move(f));
  }
  return m;
}

HostGraph::Site call(const std::string& target, bool in_loop = false, uint32_t line = 1) {
  return {target, false, in_loop, line};
}
HostGraph::Site launch(const std::string& target, bool in_loop = false, uint32_t line = 1) {
  return {target, true, in_loop, line};
}

TEST(CudaRunOnceGraph, AKernelIsColdOnlyWhenEveryLaunchIsReachedFromMainOutsideLoops) {
  HostGraph g;
  g.main = "main";
  g.names = {{"main", "main"}, {"demo", "demo"}, {"step", "step"}, {"lib", "lib"}};
  g.sites["main"] = {launch("direct", false, 10), call("demo", false, 11), call("step", true, 12),
                     call("twice", false, 13), call("twice", false, 14)};
  g.sites["twice"] = {call("demo", false, 50)};
  g.sites["demo"] = {launch("via_demo", false, 20), launch("both", false, 21)};
  g.sites["step"] = {launch("in_step", false, 30), launch("both", false, 31)};
  g.sites["lib"] = {launch("from_lib", false, 40)};  // nothing calls lib: an entry point
  auto m = kernels({"direct", "via_demo", "in_step", "both", "from_lib", "never"});
  mark_run_once(m, g, "f.cu");
  EXPECT_EQ(cold(m, "direct"), "launched once per run, from main at f.cu:10, outside any loop: what its accesses "
                               "cost is paid once per program run, not per step");
  // demo runs once from main and twice through twice: 3 times.
  EXPECT_NE(cold(m, "via_demo").find("launched at most 3 times per run, each reached from main outside any loop (the "
                                     "first from main at f.cu:13 (through twice))"),
            std::string::npos)
      << cold(m, "via_demo");
  for (const char* hot : {"in_step", "both", "from_lib", "never"}) EXPECT_EQ(cold(m, hot), "") << hot;
}

TEST(CudaRunOnceGraph, CyclesDepthEscapesEntriesAndGraphsKeepKernelsHot) {
  auto run = [](HostGraph g) {
    g.main = "main";
    auto m = kernels({"k"});
    mark_run_once(m, g, "f.cu");
    return cold(m, "k");
  };
  HostGraph base;
  base.sites["main"] = {call("a")};
  base.sites["a"] = {launch("k")};
  EXPECT_NE(run(base), "");
  // a calls itself: any number of times.
  HostGraph cycle = base;
  cycle.sites["a"].push_back(call("a"));
  EXPECT_EQ(run(cycle), "");
  // a and b call each other.
  HostGraph mutual = base;
  mutual.sites["a"].push_back(call("b"));
  mutual.sites["b"] = {call("a")};
  EXPECT_EQ(run(mutual), "");
  // The kernel escapes (its address taken, set in a graph node, launched from device code).
  HostGraph escaped = base;
  escaped.escaped.insert("k");
  EXPECT_EQ(run(escaped), "");
  // So does its launcher (a callback, a thread's function).
  HostGraph callback = base;
  callback.escaped.insert("a");
  EXPECT_EQ(run(callback), "");
  // The launcher is handed the buffers it launches on: reusable code.
  HostGraph entry = base;
  entry.entries.insert("a");
  EXPECT_EQ(run(entry), "");
  // A graph launched in a loop replays whatever was captured; launched once, it does not.
  HostGraph graph_loop = base;
  graph_loop.sites["main"].push_back(launch(kGraphLaunch, true));
  EXPECT_EQ(run(graph_loop), "");
  HostGraph graph_once = base;
  graph_once.sites["main"].push_back(launch(kGraphLaunch, false));
  EXPECT_NE(run(graph_once), "");
  // Chains up to kMaxCallDepth calls from main are followed, deeper ones are not.
  auto chain = [&](int depth) {
    HostGraph g;
    std::string prev = "main";
    for (int i = 1; i <= depth; ++i) {
      std::string f = "f" + std::to_string(i);
      g.sites[prev].push_back(call(f));
      prev = f;
    }
    g.sites[prev].push_back(launch("k"));
    return run(g);
  };
  EXPECT_NE(chain(kMaxCallDepth), "");
  EXPECT_EQ(chain(kMaxCallDepth + 1), "");
}

TEST(CudaRunOnceGraph, NothingIsMarkedWithoutMainAndAReasonGivenEarlierIsKept) {
  HostGraph g;
  g.sites["run"] = {launch("k")};
  auto m = kernels({"k"});
  mark_run_once(m, g, "f.cu");
  EXPECT_EQ(cold(m, "k"), "");
  g.main = "run";
  m.functions[0].attrs["cold"] = std::string("small");
  mark_run_once(m, g, "f.cu");
  EXPECT_EQ(cold(m, "k"), "small");
}

TEST(CudaRunOnceGraph, DeviceHelpersCalledOnlyFromColdKernelsAreCold) {
  HostGraph g;
  g.main = "main";
  g.sites["main"] = {launch("once"), launch("hot", true)};
  auto m = kernels({"once", "hot"});
  for (const char* helper : {"only_once", "shared", "nested"}) {
    ir::Function f;
    f.name = helper;
    f.attrs["device"] = true;
    f.attrs["global"] = false;
    m.functions.push_back(std::move(f));
  }
  std::map<std::string, std::set<std::string>> callees = {
      {"once", {"only_once", "shared"}}, {"hot", {"shared"}}, {"only_once", {"nested"}}};
  mark_run_once(m, g, "f.cu");
  mark_cold_callees(m, callees);
  EXPECT_NE(cold(m, "once"), "");
  EXPECT_EQ(cold(m, "hot"), "");
  EXPECT_NE(cold(m, "only_once").find("called only from once"), std::string::npos) << cold(m, "only_once");
  EXPECT_NE(cold(m, "nested").find("called only from only_once"), std::string::npos) << cold(m, "nested");
  EXPECT_EQ(cold(m, "shared"), "");
}

// The helpers of a kernel cold for another reason (a small launch) are cold too, in a
// file with no main as well.
TEST(CudaRunOnceGraph, DeviceHelpersOfASmallLaunchKernelAreColdWithoutMain) {
  auto m = kernels({"small", "big"});
  m.functions[0].attrs["cold"] = std::string("every launch of small in this file reads and writes only small buffers");
  for (const char* helper : {"small_only", "both"}) {
    ir::Function f;
    f.name = helper;
    f.attrs["device"] = true;
    f.attrs["global"] = false;
    m.functions.push_back(std::move(f));
  }
  mark_run_once(m, HostGraph{}, "f.cu");  // no main: nothing run once
  mark_cold_callees(m, {{"small", {"small_only", "both"}}, {"big", {"both"}}});
  EXPECT_NE(cold(m, "small_only").find("called only from small"), std::string::npos) << cold(m, "small_only");
  EXPECT_EQ(cold(m, "both"), "");
  EXPECT_EQ(cold(m, "big"), "");
}

// ---------------------------------------------------------------------------
// On programs.

const char* kKernels = R"(
__global__ void k_main(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_demo(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_loop(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_step(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
)";

TEST(CudaRunOnce, LaunchesFromMainOutsideLoopsAreColdAndOnesInLoopsAreNot) {
  auto m = parse(std::string(kKernels) + R"(
void demo(int n) {
  float *x, *y;
  cudaMalloc((void**)&x, n * sizeof(float));
  cudaMalloc((void**)&y, n * sizeof(float));
  if (n > 0) k_demo<<<(n + 255) / 256, 256>>>(x, y, n);
}
void step(float scale, int n) {
  float *x, *y;
  cudaMalloc((void**)&x, n * sizeof(float));
  cudaMalloc((void**)&y, n * sizeof(float));
  k_step<<<(n + 255) / 256, 256>>>(x, y, n);
}
void steps(int n) { step(1.0f, n); }
int main(int argc, char** argv) {
  int n = argc * 1000000;
  float *x, *y;
  cudaMalloc((void**)&x, n * sizeof(float));
  cudaMalloc((void**)&y, n * sizeof(float));
  k_main<<<(n + 255) / 256, 256>>>(x, y, n);
  demo(n);
  demo(2 * n);
  for (int it = 0; it < argc; ++it) k_loop<<<(n + 255) / 256, 256>>>(x, y, n);
  int left = argc;
  while (left-- > 0) steps(n);
  return 0;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  EXPECT_EQ(cold(m, "k_main"), "launched once per run, from main at test.cu:25, outside any loop: what its accesses "
                               "cost is paid once per program run, not per step");
  // demo is called twice: its launch runs at most twice.
  EXPECT_NE(cold(m, "k_demo").find("launched at most 2 times per run, each reached from main outside any loop (the "
                                   "first from main at test.cu:26 (through demo))"),
            std::string::npos)
      << cold(m, "k_demo");
  EXPECT_EQ(cold(m, "k_loop"), "");
  EXPECT_EQ(cold(m, "k_step"), "");  // steps, which calls step, is called in a loop
}

TEST(CudaRunOnce, LaunchersMainDoesNotVisiblyCallOnceKeepTheirKernelsHot) {
  auto m = parse(std::string(kKernels) + R"(
__global__ void k_fp(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_rec(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_goto(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_lambda(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_method(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_lib(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_handed(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_passed(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_template(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
float *gx, *gy;
const int N = 1 << 20;
void by_pointer() { k_fp<<<N / 256, 256>>>(gx, gy, N); }
void recursive(int depth) { k_rec<<<N / 256, 256>>>(gx, gy, N); if (depth > 0) recursive(depth - 1); }
void with_goto(int n) {
again:
  k_goto<<<N / 256, 256>>>(gx, gy, N);
  if (--n > 0) goto again;
}
struct Runner {
  void run() { k_method<<<N / 256, 256>>>(gx, gy, N); }
};
void library() { k_lib<<<N / 256, 256>>>(gx, gy, N); }  // nothing here calls it
void launch_on(const float* x, float* y, int n) { k_handed<<<(n + 255) / 256, 256>>>(x, y, n); }
void take(void (*k)(const float*, float*, int)) { (void)k; }
template <typename T> void templated() { k_template<<<N / 256, 256>>>(gx, gy, N); }
void register_callback(void (*f)()) { (void)f; }
int main(int argc, char** argv) {
  void (*f)() = by_pointer;
  f();
  recursive(argc);
  with_goto(argc);
  auto go = [&] { k_lambda<<<N / 256, 256>>>(gx, gy, N); };
  go();
  Runner r;
  for (int i = 0; i < argc; ++i) r.run();
  launch_on(gx, gy, N);
  take(k_passed);
  k_passed<<<N / 256, 256>>>(gx, gy, N);
  for (int i = 0; i < argc; ++i) templated<float>();
  return 0;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  for (const char* name : {"k_fp", "k_rec", "k_goto", "k_lambda", "k_method", "k_lib", "k_handed", "k_passed",
                           "k_template"})
    EXPECT_EQ(cold(m, name), "") << name;
}

// The same launchers as above, called once and written without the loop, goto or
// recursion: each is followed to main.
TEST(CudaRunOnce, MethodsTemplatesAndConstructorsCalledOnceAreFollowed) {
  auto m = parse(std::string(kKernels) + R"(
__global__ void k_method(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_template(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_ctor(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_chain(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
float *gx, *gy;
const int N = 1 << 20;
struct Runner {
  void run() { k_method<<<N / 256, 256>>>(gx, gy, N); }
};
struct Setup {
  Setup() { k_ctor<<<N / 256, 256>>>(gx, gy, N); }
};
template <typename T> void templated() { k_template<<<N / 256, 256>>>(gx, gy, N); }
namespace stage {
void last() { k_chain<<<N / 256, 256>>>(gx, gy, N); }
void middle() { last(); }
}  // namespace stage
int main(int argc, char** argv) {
  Runner r;
  r.run();
  templated<float>();
  Setup s;
  stage::middle();
  return 0;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  for (const char* name : {"k_method", "k_template", "k_ctor", "k_chain"}) EXPECT_NE(cold(m, name), "") << name;
  EXPECT_NE(cold(m, "k_chain").find("(through stage::middle)"), std::string::npos) << cold(m, "k_chain");
}

TEST(CudaRunOnce, LaunchApisCountAsLaunchesAndQueriesDoNot) {
  auto m = parse(std::string(kKernels) + R"(
__global__ void k_api(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void k_api_loop(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
int main(int argc, char** argv) {
  float *x, *y;
  int n = argc * 1000;
  cudaMalloc((void**)&x, n * sizeof(float));
  cudaMalloc((void**)&y, n * sizeof(float));
  void* args[] = {&x, &y, &n};
  int blocks = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (const void*)k_api, 256, 0);
  cudaLaunchKernel((const void*)k_api, dim3(n / 256), dim3(256), args);
  for (int i = 0; i < argc; ++i) cudaLaunchCooperativeKernel((const void*)&k_api_loop, dim3(n / 256), dim3(256), args);
  return 0;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  EXPECT_NE(cold(m, "k_api"), "");
  EXPECT_EQ(cold(m, "k_api_loop"), "");
}

// Launches captured into a CUDA graph run each time the graph is launched.
TEST(CudaRunOnce, AGraphLaunchedInALoopKeepsTheFilesKernelsHot) {
  auto program = [](const char* graph_launch) {
    return std::string(kKernels) + R"(
int main(int argc, char** argv) {
  float *x, *y;
  int n = argc * 1000000;
  cudaMalloc((void**)&x, n * sizeof(float));
  cudaMalloc((void**)&y, n * sizeof(float));
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  k_main<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  cudaStreamEndCapture(s, &graph);
  cudaGraphInstantiate(&exec, graph);
  )" + graph_launch + R"(
  return 0;
}
)";
  };
  auto looped = parse(program("for (int i = 0; i < argc; ++i) cudaGraphLaunch(exec, s);"));
  ASSERT_TRUE(looped.diagnostics.empty()) << looped.diagnostics[0].message;
  EXPECT_EQ(cold(looped, "k_main"), "");
  auto once = parse(program("cudaGraphLaunch(exec, s);"));
  EXPECT_NE(cold(once, "k_main"), "");
}

// Dynamic parallelism: a kernel launched from device code runs once per launching thread.
// Without -rdc Clang drops such a launch from the AST (an error), so its text is read.
TEST(CudaRunOnce, AKernelAlsoLaunchedFromDeviceCodeIsHot) {
  auto m = parse(R"(
template <int N> __global__ void tree(float* y, int depth) {
  y[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
  if (depth > 0 && threadIdx.x == 0) tree<N>
      <<<4, N>>>(y, depth - 1);
}
__global__ void leaf(float* y) { y[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }
int main() {
  float* y;
  cudaMalloc((void**)&y, (1 << 24) * sizeof(float));
  tree<32><<<1, 32>>>(y, 4);
  leaf<<<1 << 16, 256>>>(y);
  return 0;
}
)");
  EXPECT_EQ(cold(m, "tree"), "");
  EXPECT_NE(cold(m, "leaf"), "");
}

TEST(CudaRunOnce, AFileWithoutMainMarksNothing) {
  auto m = parse(std::string(kKernels) + R"(
void run(int n) {
  float *x, *y;
  cudaMalloc((void**)&x, n * sizeof(float));
  cudaMalloc((void**)&y, n * sizeof(float));
  k_main<<<(n + 255) / 256, 256>>>(x, y, n);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  EXPECT_EQ(cold(m, "k_main"), "");
}

}  // namespace
}  // namespace mlsem::cuda
