// The CUDA frontend on small kernels written for these tests: what reaches the IR.
#include <gtest/gtest.h>

#include <optional>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <malloc.h>
#include <unistd.h>

#include "cuda/frontend.h"

namespace mlsem::cuda {
namespace {

namespace fs = std::filesystem;

CudaOptions prelude_mode() {
  CudaOptions o;
  o.cuda_path = "none";
  return o;
}

// The CUDA toolkit's headers, where they are installed (tests that need them skip
// without them).
std::optional<CudaOptions> toolkit_mode() {
  const char* toolkit = "/usr/local/cuda";
  if (!fs::exists(fs::path(toolkit) / "include" / "cuda_runtime.h")) return std::nullopt;
  CudaOptions o;
  o.cuda_path = toolkit;
  return o;
}

ir::Module parse(const std::string& text, const CudaOptions& options = prelude_mode(),
                 const std::string& path = "test.cu") {
  return build_ir(SourceFile{path, text}, options);
}

const ir::Function* function(const ir::Module& m, const std::string& name) {
  for (const auto& f : m.functions)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<const ir::Node*> nodes(const ir::Function& f, const std::string& op,
                                   const std::function<bool(const ir::Node&)>& keep = nullptr) {
  std::vector<const ir::Node*> out;
  for (const auto& n : f.nodes)
    if (n.op == op && (!keep || keep(n))) out.push_back(&n);
  return out;
}

std::string str(const ir::Node& n, const std::string& key) {
  const ir::Attr* a = n.attr(key);
  return a && std::holds_alternative<std::string>(*a) ? std::get<std::string>(*a) : "<absent>";
}
std::optional<int64_t> num(const ir::Node& n, const std::string& key) {
  const ir::Attr* a = n.attr(key);
  if (a && std::holds_alternative<int64_t>(*a)) return std::get<int64_t>(*a);
  return std::nullopt;
}
bool flag(const ir::Node& n, const std::string& key) {
  const ir::Attr* a = n.attr(key);
  return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
}
auto param_is(const std::string& p) {
  return [p](const ir::Node& n) { return str(n, "param") == p; };
}

std::string read_sample(const std::string& name) {
  std::ifstream in(fs::path(MLSEM_SOURCE_DIR) / "samples" / "cuda" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CudaLaneStride, RowPerThreadAccessHasStrideOfTheRowLength) {
  auto m = parse(R"(
__global__ void rows(const float* x, float* y, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int i = 0; i < C; ++i) s += x[row * C + i];
  y[row] = s;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "rows");
  ASSERT_NE(f, nullptr);
  auto x = nodes(*f, "load", param_is("x"));
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(str(*x[0], "lane_stride_text"), "C");
  EXPECT_TRUE(flag(*x[0], "uncoalesced"));
  EXPECT_TRUE(flag(*x[0], "in_loop"));
  EXPECT_EQ(str(*x[0], "space"), "global");
  auto y = nodes(*f, "store", param_is("y"));
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(num(*y[0], "lane_stride"), 1);
  EXPECT_FALSE(flag(*y[0], "uncoalesced"));
  // The lines of the accesses, 1-based, in the text above.
  EXPECT_EQ(x[0]->range.begin.line, 5u);
  EXPECT_EQ(y[0]->range.begin.line, 6u);
}

TEST(CudaLaneStride, WarpAndLaneIdsFromDivisionAndModulo) {
  // warp = gtid / 32 is the same for a warp's lanes; lane = threadIdx.x % 32 walks them.
  auto m = parse(R"(
__global__ void warp_rows(const float* __restrict__ x, float* __restrict__ y, int C) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  for (int i = lane; i < C; i += 32) y[warp * C + i] = x[warp * C + i];
}
)");
  const ir::Function* f = function(m, "warp_rows");
  ASSERT_NE(f, nullptr);
  auto loads = nodes(*f, "load");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(num(*loads[0], "lane_stride"), 1);
  EXPECT_FALSE(flag(*loads[0], "uncoalesced"));
}

TEST(CudaLaneStride, TransposedThreadRolesAreReported) {
  auto m = parse(R"(
__global__ void col_major(const float* __restrict__ a, float* __restrict__ b, int n) {
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  b[c * n + r] = a[r * n + c];
}
)");
  const ir::Function* f = function(m, "col_major");
  ASSERT_NE(f, nullptr);
  auto store = nodes(*f, "store");
  ASSERT_EQ(store.size(), 1u);
  EXPECT_TRUE(flag(*store[0], "uncoalesced"));
  EXPECT_EQ(str(*store[0], "contiguous_dim_from"), "y");
  EXPECT_EQ(num(*store[0], "ty_stride"), 1);
  auto load = nodes(*f, "load");
  ASSERT_EQ(load.size(), 1u);
  EXPECT_EQ(str(*load[0], "contiguous_dim_from"), "x");
}

TEST(CudaBanks, ColumnReadOfTileWithPitch32ConflictsAnd33DoesNot) {
  auto m = parse(R"(
__global__ void tiles(float* out) {
  __shared__ float a[32][32];
  __shared__ float b[32][33];
  a[threadIdx.y][threadIdx.x] = 1.0f;
  b[threadIdx.y][threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = a[threadIdx.x][threadIdx.y] + b[threadIdx.x][threadIdx.y];
}
)");
  const ir::Function* f = function(m, "tiles");
  ASSERT_NE(f, nullptr);
  auto a = nodes(*f, "load", param_is("a"));
  auto b = nodes(*f, "load", param_is("b"));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(num(*a[0], "bank_conflict_ways"), 32);
  EXPECT_EQ(str(*a[0], "bank_stride_words"), "32");
  EXPECT_EQ(num(*b[0], "bank_conflict_ways"), 1);
  EXPECT_EQ(str(*b[0], "bank_stride_words"), "33");
  // Row-wise stores are conflict-free in both.
  for (const auto* s : nodes(*f, "store", [](const ir::Node& n) { return str(n, "space") == "shared"; }))
    EXPECT_EQ(num(*s, "bank_conflict_ways"), 1);
  auto tiles = nodes(*f, "shared_array");
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(num(*tiles[0], "pitch_words"), 32);
  EXPECT_EQ(num(*tiles[1], "pitch_words"), 33);
}

TEST(CudaBanks, StridedReductionIndexHasSymbolicStride) {
  auto m = parse(R"(
__global__ void reduce(const float* __restrict__ in, float* __restrict__ out) {
  extern __shared__ float s[];
  unsigned tid = threadIdx.x;
  s[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    unsigned index = 2 * stride * tid;
    if (index < blockDim.x) s[index] += s[index + stride];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}
)");
  const ir::Function* f = function(m, "reduce");
  ASSERT_NE(f, nullptr);
  auto strided = nodes(*f, "load", [](const ir::Node& n) { return str(n, "lane_stride_text") == "2*stride"; });
  ASSERT_EQ(strided.size(), 2u);  // s[index] (of +=) and s[index + stride]
  EXPECT_EQ(num(*strided[0], "bank_conflict_ways"), 2);
  EXPECT_TRUE(flag(*strided[0], "bank_stride_symbolic"));
  auto tree = nodes(*f, "tree_reduction");
  ASSERT_EQ(tree.size(), 1u);
  EXPECT_TRUE(flag(*tree[0], "interleaved"));
  EXPECT_TRUE(flag(*tree[0], "reaches_warp"));
  EXPECT_FALSE(flag(*tree[0], "kernel_uses_shuffle"));
}

TEST(CudaControlFlow, BarriersUnderThreadDependentControl) {
  auto m = parse(R"(
__global__ void k(float* x, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __syncthreads();
  if (threadIdx.x < n) { s[threadIdx.x] = x[i]; __syncthreads(); }
  if (blockIdx.x > 0) __syncthreads();
  if (i >= n) return;
  __syncthreads();
}
)");
  const ir::Function* f = function(m, "k");
  ASSERT_NE(f, nullptr);
  auto b = nodes(*f, "barrier");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_FALSE(flag(*b[0], "under_thread_dependent_branch"));
  EXPECT_TRUE(flag(*b[1], "under_thread_dependent_branch"));
  EXPECT_FALSE(flag(*b[2], "under_thread_dependent_branch"));  // blockIdx is uniform in a block
  EXPECT_FALSE(flag(*b[2], "after_thread_dependent_return"));
  EXPECT_TRUE(flag(*b[3], "after_thread_dependent_return"));
}

TEST(CudaPasses, ThreePassSoftmaxAndOnePassStatistics) {
  auto m = parse(read_sample("softmax_naive.cu") + read_sample("layernorm.cu"), prelude_mode(), "both.cu");
  auto kinds = [&](const char* fn) {
    std::vector<std::string> out;
    const ir::Function* f = function(m, fn);
    if (f)
      for (const auto* n : nodes(*f, "multi_pass")) out.push_back(str(*n, "kind") + "/" + std::to_string(*num(*n, "passes")));
    return out;
  };
  EXPECT_EQ(kinds("softmax_thread_per_row"), std::vector<std::string>{"softmax/3"});
  EXPECT_EQ(kinds("softmax_block_per_row"), std::vector<std::string>{"softmax/3"});
  EXPECT_EQ(kinds("layernorm_two_pass"), std::vector<std::string>{"statistics/3"});
  EXPECT_EQ(kinds("layernorm_welford"), std::vector<std::string>{"reread/2"});
}

// blockDim.x as the launch states it: a literal, a constant variable, a dim3 built in
// place (with parentheses or braces) or in a variable; nothing when it is known only at
// run time.
TEST(CudaHost, LaunchesStateTheirBlockWidthManyWays) {
  auto m = parse(R"(
__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }
void run(float* d, int n) {
  const int threads = 128;
  const dim3 tall(1, 256, 1);
  k<<<1, 256>>>(d);
  k<<<1, threads>>>(d);
  k<<<1, dim3(64, 4)>>>(d);
  k<<<1, tall>>>(d);
  k<<<1, dim3{32, 8, 1}>>>(d);
  k<<<1, n>>>(d);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto launches = nodes(*function(m, "run"), "launch");
  ASSERT_EQ(launches.size(), 6u);
  std::vector<std::optional<int64_t>> widths;
  for (const ir::Node* l : launches) widths.push_back(num(*l, "block_x"));
  EXPECT_EQ(widths, (std::vector<std::optional<int64_t>>{256, 128, 64, 1, 32, std::nullopt}));
}

// ggml's snake.cu: one launch per dtype, in the arms of a switch, each reading x->data
// and writing dst->data. Only one arm runs, and x->data is not dst->data.
TEST(CudaHost, LaunchesInOtherBranchesOrOtherTensorsDoNotFollowEachOther) {
  auto m = parse(R"(
struct tensor { void* data; int type; };
__global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
void by_type(const tensor* x, tensor* dst, int n) {
  switch (x->type) {
    case 0: scale<<<(n + 255) / 256, 256>>>((const float*)x->data, (float*)dst->data, n); break;
    case 1: scale<<<(n + 255) / 256, 256>>>((const float*)x->data, (float*)dst->data, n); break;
  }
  if (n > 4096) scale<<<(n + 255) / 256, 256>>>((const float*)x->data, (float*)dst->data, n);
  else scale<<<(n + 255) / 256, 256>>>((const float*)x->data, (float*)dst->data, n);
}
void chained(const tensor* x, tensor* dst, int n) {
  scale<<<(n + 255) / 256, 256>>>((const float*)x->data, (float*)dst->data, n);
  scale<<<(n + 255) / 256, 256>>>((const float*)dst->data, (float*)dst->data, n);
}
void on_two_gpus(const tensor* x, tensor* dst, int n) {
  cudaSetDevice(1);
  scale<<<(n + 255) / 256, 256>>>((const float*)x->data, (float*)dst->data, n);
  cudaSetDevice(0);
  scale<<<(n + 255) / 256, 256>>>((const float*)dst->data, (float*)dst->data, n);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto launches = nodes(*function(m, "by_type"), "launch");
  ASSERT_EQ(launches.size(), 4u);
  for (const ir::Node* l : launches) EXPECT_FALSE(flag(*l, "consumes_previous_output"));
  auto chained = nodes(*function(m, "chained"), "launch");
  ASSERT_EQ(chained.size(), 2u);
  EXPECT_TRUE(flag(*chained[1], "consumes_previous_output"));
  // After cudaSetDevice the next launch runs on another GPU (cuda-samples' simpleP2P).
  auto two = nodes(*function(m, "on_two_gpus"), "launch");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_FALSE(flag(*two[1], "consumes_previous_output"));
}

// llm.c's forward pass: each kernel behind a host function, the pass a sequence of calls.
// A call of such a wrapper stands for its first and last launches on the caller's
// buffers; a dispatcher (a switch over variants) and a launch under a branch or in a
// conditional expression are not wrappers, an overload of a wrapper is not one, and the
// wrapper's last launch does not follow its first.
TEST(CudaHost, CallsOfLaunchingHostFunctionsAreTheirLaunches) {
  auto m = parse(R"(
__global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
void scale_forward(float* out, const float* in, int n) { scale<<<(n + 255) / 256, 256>>>(in, out, n); }
void twice(float* out, float* tmp, const float* in, int n) {
  scale<<<(n + 255) / 256, 256>>>(in, tmp, n);
  scale<<<(n + 255) / 256, 256>>>(tmp, out, n);
}
void dispatch(int k, float* out, const float* in, int n) {
  switch (k) { case 1: scale_forward(out, in, n); break; case 2: twice(out, out, in, n); break; }
}
void maybe(bool on, float* out, const float* in, int n) { if (on) scale<<<(n + 255) / 256, 256>>>(in, out, n); }
void either(bool c, float* out, const float* in, int n) { c ? scale<<<1, 256>>>(in, out, n) : scale<<<2, 256>>>(in, out, n); }
void scale_forward(int n, float* host) { host[0] = n; }  // an overload that queues nothing
void forward(float* a, float* b, float* c, float* t, int n) {
  scale_forward(b, a, n);
  scale_forward(c, b, n);
  twice(a, t, c, n);
  dispatch(1, b, a, n);
  maybe(true, c, b, n);
  either(true, c, b, n);
  scale_forward(n, t);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* forward = function(m, "forward");
  ASSERT_NE(forward, nullptr);  // kept only because it launches
  auto launches = nodes(*forward, "launch");
  // scale_forward twice, twice's first and last launch; not dispatch, maybe, either (a
  // conditional expression), nor the other scale_forward overload.
  ASSERT_EQ(launches.size(), 4u);
  for (const ir::Node* l : launches) EXPECT_EQ(str(*l, "kernel"), "scale");
  EXPECT_EQ(str(*launches[0], "via"), "scale_forward");
  EXPECT_FALSE(flag(*launches[0], "consumes_previous_output"));
  EXPECT_TRUE(flag(*launches[1], "consumes_previous_output"));   // reads b, which the first wrote
  EXPECT_TRUE(flag(*launches[2], "consumes_previous_output"));   // twice's first launch reads c
  EXPECT_FALSE(flag(*launches[3], "consumes_previous_output"));  // twice's last: after its own first
  EXPECT_EQ(str(*launches[3], "via"), "twice");
  // The dispatcher's own calls are still seen as launches in it.
  EXPECT_EQ(nodes(*function(m, "dispatch"), "launch").size(), 3u);
}

// cuda-samples' mergeSort: checkCudaErrors(cudaMemcpy(..., cudaMemcpyDeviceToDevice)) in a
// launching loop. The kind is the enumerator, not the call's text (which a macro makes the
// whole, truncated invocation).
TEST(CudaHost, DeviceToDeviceCopyInAMacroIsNotAHostSync) {
  auto m = parse(R"(
#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
void check(cudaError_t e, const char* what, const char* file, int line) {}
__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }
void steps(float* okey, float* ikey, int N, int lastSegmentElements, int steps) {
  for (int s = 0; s < steps; ++s) {
    k<<<1, 256>>>(ikey);
    checkCudaErrors(cudaMemcpy(okey + (N - lastSegmentElements), ikey + (N - lastSegmentElements),
                               lastSegmentElements * sizeof(float), cudaMemcpyDeviceToDevice));
    checkCudaErrors(cudaMemcpy(okey + (N - lastSegmentElements), ikey + (N - lastSegmentElements),
                               lastSegmentElements * sizeof(float), cudaMemcpyDeviceToHost));
  }
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto syncs = nodes(*function(m, "steps"), "host_sync");
  ASSERT_EQ(syncs.size(), 1u);  // the device-to-host copy only
}

// cuda-samples' alignedTypes: one copy kernel over T, run on 1- to 16-byte structs. The
// widest vector-like instantiation is what its accesses move; a copy by type size
// (uint8_t..uint64_t, ggml's concat) still moves scalars.
TEST(CudaAccess, TemplateElementTypesAreReadFromTheFilesInstantiations) {
  auto m = parse(R"(
struct __align__(16) rgba32 { unsigned r, g, b, a; };
template <class T> __global__ void copy_structs(T* __restrict__ out, const T* __restrict__ in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
template <class T> __global__ void copy_by_size(T* __restrict__ out, const T* __restrict__ in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
void run(void* out, const void* in, int n) {
  copy_structs<unsigned char><<<n / 256, 256>>>((unsigned char*)out, (const unsigned char*)in, n);
  copy_structs<rgba32><<<n / 256, 256>>>((rgba32*)out, (const rgba32*)in, n);
  copy_by_size<unsigned><<<n / 256, 256>>>((unsigned*)out, (const unsigned*)in, n);
  copy_by_size<unsigned long long><<<n / 256, 256>>>((unsigned long long*)out, (const unsigned long long*)in, n);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto structs = nodes(*function(m, "copy_structs"), "store");
  ASSERT_EQ(structs.size(), 1u);
  EXPECT_EQ(num(*structs[0], "elem_bytes"), 16);
  EXPECT_EQ(num(*structs[0], "vector_width"), 4);
  EXPECT_FALSE(flag(*structs[0], "vectorizable"));
  auto by_size = nodes(*function(m, "copy_by_size"), "store");
  ASSERT_EQ(by_size.size(), 1u);
  EXPECT_EQ(num(*by_size[0], "elem_bytes"), 4);
  EXPECT_TRUE(flag(*by_size[0], "vectorizable"));
}

TEST(CudaHost, LaunchesLinkToTheProducerOfTheirInput) {
  auto m = parse(R"(
__global__ void producer(const float* __restrict__ a, float* __restrict__ b, int n) {
  for (int i = 0; i < n; ++i) b[blockIdx.x * n + i] = a[i] * a[i];
}
__global__ void relu(float* __restrict__ b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = b[i] > 0.0f ? b[i] : 0.0f;
}
void run(const float* d_a, float* d_b, int n) {
  for (int step = 0; step < 10; ++step) {
    producer<<<n, 1>>>(d_a, d_b, n);
    relu<<<(n + 255) / 256, 256>>>(d_b, n);
    cudaDeviceSynchronize();
  }
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "run");
  ASSERT_NE(f, nullptr);
  auto launches = nodes(*f, "launch");
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(str(*launches[0], "kernel"), "producer");
  EXPECT_FALSE(flag(*launches[0], "kernel_pointwise"));
  EXPECT_TRUE(flag(*launches[1], "kernel_pointwise"));
  EXPECT_TRUE(flag(*launches[1], "consumes_previous_output"));
  ASSERT_EQ(launches[1]->inputs.size(), 1u);
  EXPECT_EQ(&f->nodes[launches[1]->inputs[0]], launches[0]);
  auto sync = nodes(*f, "host_sync");
  ASSERT_EQ(sync.size(), 1u);
  EXPECT_TRUE(flag(*sync[0], "in_loop"));
  EXPECT_TRUE(flag(*sync[0], "loop_launches"));
}

TEST(CudaParams, ConstRestrictAndUse) {
  auto m = parse(R"(
__global__ void k(float* a, const float* __restrict__ b, float* c, int n) {
  int i = threadIdx.x;
  c[i] = a[i] + b[i];
}
)");
  const ir::Function* f = function(m, "k");
  ASSERT_NE(f, nullptr);
  auto params = nodes(*f, "param");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_TRUE(flag(*params[0], "read"));
  EXPECT_FALSE(flag(*params[0], "written"));
  EXPECT_FALSE(flag(*params[0], "const_pointee"));
  EXPECT_TRUE(flag(*params[1], "const_pointee"));
  EXPECT_TRUE(flag(*params[1], "restrict"));
  EXPECT_TRUE(flag(*params[2], "written"));
  EXPECT_FALSE(flag(*params[3], "pointer"));
}

TEST(CudaRobustness, MissingIncludeDegradesOnlyTheCodeThatNeedsIt) {
  auto m = parse(R"(#include "no_such_header.cuh"
__global__ void needs_header(const float* x, float* y) { y[threadIdx.x] = helper_from_header(x[threadIdx.x]); }
__global__ void independent(const float* x, float* y, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  y[row] = x[row * C];
}
)");
  ASSERT_FALSE(m.diagnostics.empty());
  EXPECT_NE(m.diagnostics[0].message.find("no_such_header.cuh"), std::string::npos);
  EXPECT_EQ(m.diagnostics[0].range.begin.line, 1u);
  const ir::Function* f = function(m, "independent");
  ASSERT_NE(f, nullptr);
  auto loads = nodes(*f, "load");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(str(*loads[0], "lane_stride_text"), "C");
  EXPECT_NE(function(m, "needs_header"), nullptr);
}

TEST(CudaRobustness, MissingHeaderIsOneDiagnosticNotItsConsequences) {
  // Everything from the missing header is undeclared: one diagnostic names the header.
  auto m = parse(R"(#include <mpi.h_not_installed>
void host(int argc, char** argv) { MPI_Init(&argc, &argv); MPI_Comm c = MPI_COMM_WORLD; int r; MPI_Comm_rank(c, &r); }
__global__ void k(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] + undeclared_helper(); }
)");
  ASSERT_EQ(m.diagnostics.size(), 1u) << m.diagnostics.back().message;
  EXPECT_NE(m.diagnostics[0].message.find("mpi.h_not_installed"), std::string::npos);
  EXPECT_NE(m.diagnostics[0].message.find("later errors"), std::string::npos);
  EXPECT_NE(function(m, "k"), nullptr);
}

// What nvcc 13 accepts in a .cu file and Clang's CUDA headers alone do not.
// llm.c's layernorm_backward_kernel2: a warp index from cooperative groups
// (warp.meta_group_rank()) guards an early return before __syncthreads(): warps of one
// block can take it differently.
TEST(CudaModes, AWarpRankFromCooperativeGroupsIsThreadDependent) {
  std::optional<CudaOptions> toolkit = toolkit_mode();
  if (!toolkit) GTEST_SKIP() << "no CUDA toolkit here";
  const CudaOptions& with_toolkit = *toolkit;
  auto m = parse(R"(
#include <cooperative_groups.h>
__global__ void rows(float* out, const float* x, int N, int C) {
  namespace cg = cooperative_groups;
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
  if (idx >= N) return;
  extern __shared__ float acc[];
  for (int i = threadIdx.x; i < C; i += blockDim.x) acc[i] = 0.0f;
  __syncthreads();
  out[idx * C + warp.thread_rank()] = x[idx * C] + acc[warp.thread_rank()];
}
)", with_toolkit);
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "rows");
  ASSERT_NE(f, nullptr);
  auto barriers = nodes(*f, "barrier");
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_TRUE(flag(*barriers[0], "after_thread_dependent_return"));
}

// Cooperative groups' barriers: block.sync() on a thread_block (a static member, called
// through the object) and cg::sync(block) are block barriers, tile.sync() a warp's
// (DeepSpeed's softmax syncs its block under a per-row guard).
TEST(CudaModes, CooperativeGroupsSyncIsABarrier) {
  std::optional<CudaOptions> toolkit = toolkit_mode();
  if (!toolkit) GTEST_SKIP() << "no CUDA toolkit here";
  const CudaOptions& with_toolkit = *toolkit;
  auto m = parse(R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void rows(float* out, const float* x, int total) {
  cg::thread_block b = cg::this_thread_block();
  cg::thread_block_tile<32> g = cg::tiled_partition<32>(b);
  __shared__ float part[32];
  int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row < total) {
    if (g.thread_rank() == 0) part[threadIdx.x >> 5] = x[row];
    b.sync();
    g.sync();
    out[row] = part[0];
  }
  cg::sync(b);
}
)", with_toolkit);
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto barriers = nodes(*function(m, "rows"), "barrier");
  ASSERT_EQ(barriers.size(), 3u);
  EXPECT_EQ(str(*barriers[0], "kind"), "block");
  EXPECT_TRUE(flag(*barriers[0], "under_thread_dependent_branch"));
  EXPECT_EQ(str(*barriers[1], "kind"), "warp");
  EXPECT_EQ(str(*barriers[2], "kind"), "block");
  EXPECT_FALSE(flag(*barriers[2], "under_thread_dependent_branch"));
}

TEST(CudaModes, ToolkitModeAcceptsWhatNvccAccepts) {
  std::optional<CudaOptions> toolkit = toolkit_mode();
  if (!toolkit) GTEST_SKIP() << "no CUDA toolkit here";
  const CudaOptions& with_toolkit = *toolkit;
  auto m = parse(R"(#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_fp8.h>
#include <cuda/barrier>
namespace cg = cooperative_groups;
struct alignas(16) Pack { float v[4]; };
__global__ void __launch_bounds__(256) k(const float* __restrict__ x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int4 bits = __ldcs(reinterpret_cast<const int4*>(x) + i);
  __stcs(reinterpret_cast<int4*>(y) + i, bits);
  __stcg(y + i, __ldg(x + i));
  float m = max(x[i], 0.0f) + min(i, n);
  if (isfinite(m) && !isnan(m)) y[i] = m;
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  y[i] += cg::reduce(warp, m, cg::plus<float>{});
  __nv_fp8_e4m3 f8(m);
  y[i] += float(f8) + __bfloat162float(__float2bfloat16(m));
  unsigned lane; asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
#pragma diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
}
template <typename T> __global__ void cast(const float* x, T* y) { y[threadIdx.x] = (T)x[threadIdx.x]; }
template __global__ void cast<__half>(const float*, __half*);
template __global__ void cast<__nv_bfloat16>(const float*, __nv_bfloat16*);
int host_only(const float* a, int n) {
  int bad = 0;
  for (int i = 0; i < n; i++) bad += !isfinite(a[i]) || isnan(a[i]);
  clock_t t = clock();
  return max(bad, 0) + min(n, 3) + (int)(t % 2);
}
)", with_toolkit);
  for (const auto& d : m.diagnostics) ADD_FAILURE() << d.message;
  EXPECT_NE(function(m, "k"), nullptr);
}

// curand_kernel.h's skip-ahead tables are declared by the toolkit preamble instead of
// parsed from curand_precalc.h and curand_mrg32k3a.h in every file: the header and code
// using its generators and tables still parse cleanly.
TEST(CudaModes, CurandKernelParsesWithItsTablesDeclared) {
  std::optional<CudaOptions> toolkit = toolkit_mode();
  if (!toolkit) GTEST_SKIP() << "no CUDA toolkit here";
  auto m = parse(R"(#include <curand_kernel.h>
__global__ void dropout(const float* x, float* y, float p, unsigned long long seed, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  curandStatePhilox4_32_10_t philox;
  curand_init(seed, i, 0, &philox);
  curandState xorwow;
  curand_init(seed, i, 0, &xorwow);
  curandStateMRG32k3a mrg;
  curand_init(seed, i, 0, &mrg);
  float r = curand_uniform(&philox) + curand_normal(&xorwow) + curand_uniform(&mrg);
  if (i < n) y[i] = r > p ? x[i] / (1.0f - p) : 0.0f;
}
__global__ void table_row(unsigned* out) {
  out[threadIdx.x] = precalc_xorwow_matrix[PRECALC_NUM_MATRICES - 1][threadIdx.x] + mrg32k3aM1[0][0][0];
}
)", *toolkit);
  for (const auto& d : m.diagnostics) ADD_FAILURE() << d.message;
  ASSERT_NE(function(m, "dropout"), nullptr);
  EXPECT_EQ(nodes(*function(m, "dropout"), "store").size(), 1u);
  EXPECT_NE(function(m, "table_row"), nullptr);
}

TEST(CudaRobustness, GarbageAndEmptyInputGiveDiagnosticsNotCrashes) {
  auto empty = parse("");
  EXPECT_TRUE(empty.functions.empty());
  auto garbage = parse("__global__ void k( { int x = ; }}}} \x01\x02 template<<<");
  EXPECT_FALSE(garbage.diagnostics.empty());
  EXPECT_EQ(garbage.language, "cuda");
}

TEST(CudaRobustness, DeeplyNestedTemplatesAreDiagnosticsNotCrashes) {
  // Instantiation 5000 deep: Clang's own limit (1024) is a diagnostic, the kernel beside
  // it is still lowered.
  auto recursive = parse(R"(template <int N> struct Deep { enum { value = Deep<N - 1>::value + 1 }; };
template <> struct Deep<0> { enum { value = 0 }; };
__global__ void uses_deep(float* y) { y[threadIdx.x] = Deep<5000>::value; }
__global__ void scale(const float* x, float* y, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  y[row] = x[row * C];
}
)");
  bool depth = false;
  for (const auto& d : recursive.diagnostics) depth = depth || d.message.find("maximum depth") != std::string::npos;
  EXPECT_TRUE(depth);
  const ir::Function* f = function(recursive, "scale");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(nodes(*f, "load").size(), 1u);
  // Template arguments 3000 deep overflow Clang's parser (clang++ itself crashes): the
  // file is refused with a diagnostic at the place, before Clang sees it.
  std::string nested = "template <typename T> struct W { T t; };\nusing N = ";
  for (int i = 0; i < 3000; ++i) nested += "W<";
  nested += "int";
  for (int i = 0; i < 3000; ++i) nested += ">";
  nested += ";\n__global__ void k(float* y) { y[threadIdx.x] = 1; }\n";
  auto deep = parse(nested);
  ASSERT_EQ(deep.diagnostics.size(), 1u);
  EXPECT_NE(deep.diagnostics[0].message.find("nest deeper than 256 levels"), std::string::npos);
  EXPECT_EQ(deep.diagnostics[0].range.begin.line, 2u);
  EXPECT_TRUE(deep.functions.empty());
}

#if defined(__SANITIZE_ADDRESS__)
#define MLSEM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MLSEM_TEST_ASAN 1
#endif
#endif
#ifndef MLSEM_TEST_ASAN
#define MLSEM_TEST_ASAN 0
#endif

// Each file's AST, Sema and preprocessor are freed when it is done. Clang's driver asks
// for -disable-free, and Clang then keeps the first 16 of those objects reachable
// (llvm::BuryPointer) and loses the rest: a long run or the language server grew by
// about 450 KB per .cu file. Under LeakSanitizer (scripts/sanitize.sh) the lost objects
// fail this test at exit; in a plain build the heap must not grow with the files parsed.
TEST(CudaRobustness, EachFilesAstIsFreed) {
  const std::string kernel = R"(__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";
  auto in_use = [] { return mallinfo2().uordblks; };
  for (int i = 0; i < 5; ++i) ASSERT_NE(function(parse(kernel), "scale"), nullptr);
  size_t after_5 = in_use();
  for (int i = 0; i < 40; ++i) ASSERT_NE(function(parse(kernel), "scale"), nullptr);
  size_t after_45 = in_use();
#if !MLSEM_TEST_ASAN
  // 40 more files: well under 1 MB of growth when freed (about 18 MB when not).
  EXPECT_LT(after_45, after_5 + (1u << 20)) << "heap grew by " << (after_45 - after_5) << " bytes over 40 files";
#else
  (void)after_5, (void)after_45;  // ASan's allocator keeps its own books; LeakSanitizer checks at exit
#endif
}

TEST(CudaSuppressions, IgnoreCommentsAreRecordedByLine) {
  auto m = parse("__global__ void k(float* x) {\n  x[0] = 1;  // mlsem: ignore[CU001, CU003]\n  x[1] = 2;  // mlsem: ignore\n}\n");
  ASSERT_EQ(m.suppressions.count(2), 1u);
  EXPECT_EQ(m.suppressions.at(2), (std::vector<std::string>{"CU001", "CU003"}));
  ASSERT_EQ(m.suppressions.count(3), 1u);
  EXPECT_TRUE(m.suppressions.at(3).empty());
}

TEST(CudaModes, PreludeAndToolkitParseTheSameSample) {
  std::optional<CudaOptions> toolkit = toolkit_mode();
  if (!toolkit) GTEST_SKIP() << "no CUDA toolkit here";
  std::string text = read_sample("bias_gelu.cu");
  const CudaOptions& with_toolkit = *toolkit;
  auto a = parse(text, prelude_mode(), "samples/cuda/bias_gelu.cu");
  auto b = parse(text, with_toolkit, "samples/cuda/bias_gelu.cu");
  EXPECT_TRUE(a.diagnostics.empty()) << a.diagnostics[0].message;
  EXPECT_TRUE(b.diagnostics.empty()) << b.diagnostics[0].message;
  ASSERT_EQ(a.functions.size(), b.functions.size());
  for (size_t i = 0; i < a.functions.size(); ++i) {
    EXPECT_EQ(a.functions[i].name, b.functions[i].name);
    std::vector<std::string> ops_a, ops_b;
    for (const auto& n : a.functions[i].nodes) ops_a.push_back(n.op + "@" + std::to_string(n.range.begin.line));
    for (const auto& n : b.functions[i].nodes) ops_b.push_back(n.op + "@" + std::to_string(n.range.begin.line));
    EXPECT_EQ(ops_a, ops_b) << a.functions[i].name;
  }
}

TEST(CudaCompileCommands, NvccFlagsAreTranslated) {
  fs::path dir = fs::temp_directory_path() / ("mlsem_cuda_cc_" + std::to_string(::getpid()));
  fs::create_directories(dir / "inc");
  std::ofstream(dir / "inc" / "helper.cuh") << "__device__ inline float twice(float v) { return 2.0f * v; }\n";
  std::string source = (dir / "k.cu").string();
  std::string text =
      "#include \"helper.cuh\"\n"
      "#ifndef FROM_COMPILE_COMMANDS\n#error the -D flag was lost\n#endif\n"
      "#if __CUDA_ARCH__ != 800\n#error the -arch flag was lost\n#endif\n"
      "__global__ void k(float* y) { y[threadIdx.x] = twice(y[threadIdx.x]); }\n";
  std::ofstream(source) << text;
  std::ofstream(dir / "compile_commands.json")
      << "[{\"directory\": \"" << dir.string() << "\", \"file\": \"" << source
      << "\", \"command\": \"/usr/local/cuda/bin/nvcc -O3 -arch=sm_80 --use_fast_math -Xcompiler -fPIC "
         "--expt-relaxed-constexpr -DFROM_COMPILE_COMMANDS=1 -Iinc -lineinfo -c k.cu -o k.o\"}]";
  CudaOptions options = prelude_mode();
  options.compile_commands_dir = dir.string();
  auto m = parse(text, options, source);
  fs::remove_all(dir);
  for (const auto& d : m.diagnostics) ADD_FAILURE() << d.range.begin.line << ": " << d.message;
  EXPECT_NE(function(m, "k"), nullptr);
}

// Files of one project compiled with different -I directories share the toolkit
// preamble, unless a directory holds a header the preamble includes (it could change
// what <cuda_fp16.h> resolves to). Other flags (-D, -std) still tell preambles apart.
TEST(CudaCompileCommands, ThePreambleKeyLeavesOutProjectIncludeDirectories) {
  fs::path dir = fs::temp_directory_path() / ("mlsem_cuda_key_" + std::to_string(::getpid()));
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  fs::create_directories(dir / "shadow");
  std::ofstream(dir / "shadow" / "cuda_fp16.h") << "// a project's own cuda_fp16.h\n";
  auto key = [&](const std::string& inc, const std::string& define) {
    return preamble_key({"-x", "cuda", "-I" + (dir / inc).string(), define, "-std=c++17"});
  };
  std::string a = key("a", "-DX=1"), b = key("b", "-DX=1"), shadow = key("shadow", "-DX=1"), other = key("a", "-DX=2");
  fs::remove_all(dir);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, shadow);
  EXPECT_NE(a, other);
}

// A loop that breaks on a value it copies back from the device (a convergence check, as
// cuda-samples' jacobi) must wait for it every iteration: its syncs decide the exit. A
// loop that copies back and goes on regardless, or breaks on something else, does not.
TEST(CudaHost, ASyncWhoseCopyDecidesTheLoopsExit) {
  auto m = parse(R"(
__global__ void step(float* d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] *= 0.5f;
}
float converge(float* d, int n, float tol) {
  float r = 0.0f;
  for (int k = 0; k < 100; ++k) {
    step<<<(n + 255) / 256, 256>>>(d, n);
    cudaMemcpy(&r, d, sizeof(float), cudaMemcpyDeviceToHost);
    if (r <= tol) break;
  }
  return r;
}
float outer_checks(float* d, int n, float tol) {
  float r = 0.0f;
  for (int k = 0; k < 100; ++k) {
    for (int s = 0; s < 10; ++s) {
      step<<<(n + 255) / 256, 256>>>(d, n);
      cudaDeviceSynchronize();
    }
    cudaMemcpy(&r, d, sizeof(float), cudaMemcpyDeviceToHost);
    if (r <= tol) break;
  }
  return r;
}
float regardless(float* d, int n, float tol, int stop) {
  float r = 0.0f;
  for (int k = 0; k < 100; ++k) {
    step<<<(n + 255) / 256, 256>>>(d, n);
    cudaMemcpy(&r, d, sizeof(float), cudaMemcpyDeviceToHost);
    if (k == stop) break;
  }
  return r;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto decides = [&](const char* fn) {
    auto syncs = nodes(*function(m, fn), "host_sync");
    EXPECT_EQ(syncs.size(), 1u) << fn;
    return !syncs.empty() && flag(*syncs[0], "decides_exit");
  };
  EXPECT_TRUE(decides("converge"));
  EXPECT_FALSE(decides("regardless"));
  // The inner loop's sync every step is not what the outer loop's check waits for.
  auto outer = nodes(*function(m, "outer_checks"), "host_sync");
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_FALSE(flag(*outer[0], "decides_exit"));  // cudaDeviceSynchronize, inner loop
  EXPECT_TRUE(flag(*outer[1], "decides_exit"));   // the copy, in the checking loop
}

}  // namespace
}  // namespace mlsem::cuda
