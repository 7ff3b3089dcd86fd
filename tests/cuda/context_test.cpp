// CUDA facts that depend on more than one expression: variants kept for comparison, the
// launch shape of a kernel, reuse of read-only buffers, benchmark loops, element-wise
// updates that are not reductions. Small kernels written for these tests, prelude mode.
#include <gtest/gtest.h>

#include <functional>

#include "cuda/context.h"
#include "cuda/frontend.h"
#include "cuda_test_helpers.h"

namespace mlsem::cuda {
namespace {

using cuda_test::function;
using cuda_test::parse;

std::string fn_str(const ir::Function& f, const std::string& key) {
  auto it = f.attrs.find(key);
  return it != f.attrs.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second) : "";
}

bool flag(const ir::Node& n, const std::string& key) {
  const ir::Attr* a = n.attr(key);
  return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
}

std::vector<const ir::Node*> nodes(const ir::Function& f, const std::string& op,
                                   const std::function<bool(const ir::Node&)>& keep = nullptr) {
  std::vector<const ir::Node*> out;
  for (const auto& n : f.nodes)
    if (n.op == op && (!keep || keep(n))) out.push_back(&n);
  return out;
}

const ir::Node* param(const ir::Function& f, const std::string& name) {
  for (const auto& n : f.nodes)
    if (n.op == "param" && n.attr("name") && std::get<std::string>(*n.attr("name")) == name) return &n;
  return nullptr;
}

TEST(CudaContext, NumberedNamesAreWordsFollowedBySmallNumbers) {
  auto nn = numbered_name("layernorm_forward_kernel3");
  ASSERT_TRUE(nn);
  EXPECT_EQ(nn->stem, "layernorm_forward_kernel");
  EXPECT_EQ(nn->number, 3);
  EXPECT_EQ(numbered_name("reduce0")->number, 0);
  EXPECT_EQ(numbered_name("launch_softmax_3")->stem, "launch_softmax_");
  // Dtypes, quantization tags, architectures and separated indices are not versions.
  for (const char* name : {"dequantize_q4", "convert_fp16", "gemm_sm90", "vec_dot_q4_0", "kernel", "tile1024",
                           "histogram_pass1", "reduce_stage_2"})
    EXPECT_FALSE(numbered_name(name)) << name;
}

const char* kVariants = R"(
__global__ void scale_kernel1(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void scale_kernel2(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void helper_kernel(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
__global__ void matmul_naive(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 0.0f; }
__global__ void shared_kernel(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 1.0f; }
__global__ void scale_kernel3(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
void scale1(float* x, int n) { scale_kernel1<<<n / 256, 256>>>(x, n); helper_kernel<<<n / 256, 256>>>(x, n); shared_kernel<<<1, 1>>>(x, n); }
void scale2(float* x, int n) { scale_kernel2<<<n / 256, 256>>>(x, n); }
void scale3(float* x, int n) { scale_kernel3<<<n / 256, 256>>>(x, n); shared_kernel<<<1, 1>>>(x, n); }
void run_all(int which, float* x, int n) {
  if (which == 1) scale_kernel1<<<n / 256, 256>>>(x, n);
  else scale_kernel2<<<n / 256, 256>>>(x, n);
}
)";

TEST(CudaContext, OlderNumberedVariantsAndTheirHelpersAreMarked) {
  auto m = parse(kVariants);
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  for (const char* name : {"scale_kernel1", "scale_kernel2", "scale1", "scale2"}) {
    const ir::Function* f = function(m, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_NE(fn_str(*f, "comparison").find("kept side by side for comparison"), std::string::npos) << name;
  }
  EXPECT_NE(fn_str(*function(m, "scale_kernel1"), "comparison").find("the latest, scale_kernel3"), std::string::npos);
  // The latest of each family is the one to improve.
  EXPECT_EQ(fn_str(*function(m, "scale_kernel3"), "comparison"), "");
  EXPECT_EQ(fn_str(*function(m, "scale3"), "comparison"), "");
  // Launched only from a variant: part of it. Launched also from the latest: not.
  EXPECT_NE(fn_str(*function(m, "helper_kernel"), "comparison").find("used only by scale1"), std::string::npos);
  EXPECT_EQ(fn_str(*function(m, "shared_kernel"), "comparison"), "");
  EXPECT_NE(fn_str(*function(m, "matmul_naive"), "comparison").find("named as the naive version"), std::string::npos);
  // A dispatcher launching several versions is not a real caller of any of them.
  EXPECT_EQ(fn_str(*function(m, "run_all"), "comparison"), "");
}

TEST(CudaContext, AVersionLaunchedAloneByARealCallerIsNotAVariant) {
  auto m = parse(R"(
__global__ void step_kernel1(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void step_kernel2(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 3.0f; }
void forward(float* x, int n) { step_kernel1<<<n / 256, 256>>>(x, n); }
void backward(float* x, int n) { step_kernel2<<<n / 256, 256>>>(x, n); }
)");
  EXPECT_EQ(fn_str(*function(m, "step_kernel1"), "comparison"), "");
  EXPECT_EQ(fn_str(*function(m, "step_kernel2"), "comparison"), "");
}

TEST(CudaContext, BlockOfOneColumnMakesWarpsRunAlongY) {
  const char* src = R"(
__global__ void mask_rows(float* dst, const float* x, int ncols) {
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  dst[row * ncols + col] = x[row * ncols + col];
}
void launch_mask(float* dst, const float* x, int nrows, int ncols) {
  const dim3 block_dims(1, 256, 1);
  mask_rows<<<dim3(nrows, ncols / 256, 1), block_dims>>>(dst, x, ncols);
}
)";
  auto m = parse(src);
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "mask_rows");
  ASSERT_NE(f, nullptr);
  auto accesses = nodes(*f, "load");
  ASSERT_EQ(accesses.size(), 1u);
  EXPECT_FALSE(flag(*accesses[0], "uncoalesced"));
  EXPECT_TRUE(flag(*accesses[0], "block_x_one"));
  // The same kernel launched with 256 threads along x is strided by the row length.
  std::string wide = src;
  wide.replace(wide.find("block_dims(1, 256, 1)"), 21, "block_dims(256, 1, 1)");
  auto w = parse(wide);
  auto wide_loads = nodes(*function(w, "mask_rows"), "load");
  ASSERT_EQ(wide_loads.size(), 1u);
  EXPECT_TRUE(flag(*wide_loads[0], "uncoalesced"));
}

TEST(CudaParams, ReuseIsWhatMakesConstRestrictPay) {
  auto m = parse(R"(
__global__ void scale_rows(float* out, float* x, float* w, float* once, int C) {
  int row = blockIdx.x;
  for (int i = threadIdx.x; i < C; i += blockDim.x)
    out[row * C + i] = x[row * C + i] * w[i] + once[row * C + i];
}
__global__ void twice(float* out, float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = x[i];
  out[i + n] = x[i] * 2.0f;
}
typedef volatile int Latch;
__global__ void wait_twice(float* out, Latch* flag, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  while (flag[0] == 0) {}
  out[i] = flag[0];
}
)");
  const ir::Function* f = function(m, "scale_rows");
  ASSERT_NE(f, nullptr);
  // w[i] is the same for every row's block: shared. x and once: one read per element.
  EXPECT_TRUE(flag(*param(*f, "w"), "reused"));
  EXPECT_FALSE(flag(*param(*f, "x"), "reused"));
  EXPECT_FALSE(flag(*param(*f, "once"), "reused"));
  const ir::Function* t = function(m, "twice");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(flag(*param(*t, "x"), "reused"));
  // A volatile flag (through a typedef, as cuda-samples' LatchType) is polled on purpose.
  ASSERT_NE(function(m, "wait_twice"), nullptr);
  EXPECT_FALSE(flag(*param(*function(m, "wait_twice"), "flag"), "reused"));
}

// apex: a column sum whose index the inner loop steps itself (flat_idx += features) reads
// each element once; a read only block 0 makes (blockIdx.x == 0, l2norm's cleanup) is not
// shared by blocks. The same read outside that branch is.
TEST(CudaParams, SteppedIndicesAndOneBlocksReadsAreNotReuse) {
  auto m = parse(R"(
__global__ void column_sum(float* dY, int features, int n, float* db) {
  int f = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int nidx = 0; nidx < n; nidx += 4) {
    long flat_idx = (long)nidx * features + f;
    for (int u = 0; u < 4; u++) {
      s += dY[flat_idx];
      flat_idx += features;
    }
  }
  db[f] = s;
}
__global__ void cleanup(float* output, float* per_block, float* ret) {
  if (blockIdx.x == 0) {
    if (threadIdx.x < 320) ret[threadIdx.x] = output[threadIdx.x];
  }
  ret[512 + blockIdx.x] = per_block[blockIdx.x * 64];
}
__global__ void every_block(float* output, float* per_block, float* ret) {
  ret[threadIdx.x] = output[threadIdx.x];
  ret[512 + blockIdx.x] = per_block[blockIdx.x * 64];
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  EXPECT_FALSE(flag(*param(*function(m, "column_sum"), "dY"), "reused"));
  EXPECT_FALSE(flag(*param(*function(m, "cleanup"), "output"), "reused"));
  EXPECT_TRUE(flag(*param(*function(m, "every_block"), "output"), "reused"));
}

TEST(CudaHost, BenchmarkLoopsAndDeviceCopiesAreNotStalls) {
  auto m = parse(R"(
__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }
void bench(float* d, float* h, int reps, cudaEvent_t start, cudaEvent_t stop) {
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start, 0);
    k<<<1, 256>>>(d);
    cudaEventRecord(stop, 0);
    cudaEventSynchronize(stop);
  }
  for (int r = 0; r < reps; ++r) {
    k<<<1, 256>>>(d);
    cudaMemcpy(d + 256, d, 256 * sizeof(float), cudaMemcpyDeviceToDevice);
  }
  for (int r = 0; r < reps; ++r) {
    k<<<1, 256>>>(d);
    cudaMemcpy(h, d, 256 * sizeof(float), cudaMemcpyDeviceToHost);
  }
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "bench");
  ASSERT_NE(f, nullptr);
  auto syncs = nodes(*f, "host_sync");
  ASSERT_EQ(syncs.size(), 2u);  // the device-to-device copy is not one
  EXPECT_TRUE(flag(*syncs[0], "timing_loop"));
  EXPECT_FALSE(flag(*syncs[1], "timing_loop"));
  EXPECT_TRUE(flag(*syncs[1], "loop_launches"));
}

TEST(CudaReductions, AxpyIsNotASerialReductionAndOnlyAStrideModulusIsInterleaved) {
  auto m = parse(R"(
__global__ void attention_value(float* out, const float* att, const float* v, int T, int hs) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float* o = out + t * hs;
  for (int t2 = 0; t2 < T; t2++) {
    float a = att[t * T + t2];
    for (int i = 0; i < hs; i++) o[i] += a * v[t2 * hs + i];
  }
}
__global__ void row_sum(float* out, const float* x, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int i = 0; i < C; i++) s += x[row * C + i];
  out[row] = s;
}
__global__ void sections(float* out, const float* pos, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i % 3 == 0) out[i] = pos[i];
  if (i % 16 == 0) out[i] = 0.0f;
  for (int s = 1; s < blockDim.x; s *= 2) {
    if (i % (2 * s) == 0) out[i] += out[i + s];
    if ((i & (2 * s - 1)) == 0) out[i] += out[i + s];
    if ((i & s) == 0) out[i] = pos[i]; else out[i] = -pos[i];
  }
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  EXPECT_TRUE(nodes(*function(m, "attention_value"), "serial_reduction").empty());
  EXPECT_EQ(nodes(*function(m, "row_sum"), "serial_reduction").size(), 1u);
  auto branches = nodes(*function(m, "sections"), "branch");
  ASSERT_EQ(branches.size(), 5u);
  EXPECT_FALSE(flag(*branches[0], "interleaved_modulo"));  // % 3: one of three sections
  EXPECT_FALSE(flag(*branches[1], "interleaved_modulo"));  // % 16: one writer per group
  EXPECT_TRUE(flag(*branches[2], "interleaved_modulo"));   // % (2*s)
  EXPECT_TRUE(flag(*branches[3], "interleaved_modulo"));   // & (2*s - 1)
  EXPECT_FALSE(flag(*branches[4], "interleaved_modulo"));  // & s, both sides work: bitonic
}

// ggml's conv_transpose_1d: every thread sums its own output's taps, its inputs reached
// through divisions; neither one row per lane nor one thread working while the others
// wait. A thread-0 loop over the row is the serial reduction.
TEST(CudaReductions, OnlyARowPerLaneOrALoneThreadIsASerialReduction) {
  auto m = parse(R"(
__global__ void conv_taps(float* out, const float* w, const float* x, int K, int C, int T, int n) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= n) return;
  int t = g % T, ch = (g / T) % C;
  float acc = 0.0f;
  for (int k = 0; k < K; k++) acc += w[ch * K + k] * x[(t + k) / 2];
  out[g] = acc;
}
__global__ void lone_sum(float* out, const float* x, int C) {
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int i = 0; i < C; i++) s += x[blockIdx.x * C + i];
    out[blockIdx.x] = s;
  }
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  EXPECT_TRUE(nodes(*function(m, "conv_taps"), "serial_reduction").empty());
  EXPECT_EQ(nodes(*function(m, "lone_sum"), "serial_reduction").size(), 1u);
}

// ggml's upscale: the source element is found by scaling the output coordinate in
// floating point, so the reads are a gather that wider loads do not fit.
TEST(CudaAccess, ReadsAtFloatingPointCoordinatesAreNotAnElementWiseMap) {
  auto m = parse(R"(
__global__ void upscale(const float* x, float* dst, int ne0, int n, float sf) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int i0 = i % ne0;
  int src0 = i0 / sf;
  dst[i] = x[(i / ne0) * ne0 + src0];
}
__global__ void scale(const float* x, float* dst, int n, float sf) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = x[i] * sf;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto loads = nodes(*function(m, "upscale"), "load");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_TRUE(flag(*loads[0], "float_coordinate"));
  EXPECT_FALSE(flag(*nodes(*function(m, "upscale"), "store")[0], "vectorizable"));
  EXPECT_TRUE(flag(*nodes(*function(m, "scale"), "store")[0], "vectorizable"));
}

// ggml's argsort: `if (col >= ncols_pad) return;` before __syncthreads(), col being
// threadIdx.x and every launch's block ncols_pad threads wide: no thread returns. A
// launch of another width, or none in the file, leaves the barrier divergent.
TEST(CudaBarriers, AReturnPastTheBlockWidthIsDeadWhenEveryLaunchSetsThatWidth) {
  const char* kernel = R"(
__global__ void sort_rows(int* dst, int ncols_pad) {
  int col = threadIdx.x;
  if (col >= ncols_pad) return;
  extern __shared__ int row[];
  row[col] = col;
  __syncthreads();
  dst[blockIdx.x * ncols_pad + col] = row[ncols_pad - 1 - col];
}
)";
  auto after_return = [](const ir::Module& m) {
    auto barriers = nodes(*function(m, "sort_rows"), "barrier");
    EXPECT_EQ(barriers.size(), 1u);
    return !barriers.empty() && flag(*barriers[0], "after_thread_dependent_return");
  };
  auto exact = parse(std::string(kernel) + R"(
void run(int* dst, int nrows, int ncols_pad) {
  const dim3 block_dims(ncols_pad, 1, 1);
  sort_rows<<<nrows, block_dims, ncols_pad * sizeof(int)>>>(dst, ncols_pad);
}
)");
  ASSERT_TRUE(exact.diagnostics.empty()) << exact.diagnostics[0].message;
  EXPECT_FALSE(after_return(exact));
  auto wider = parse(std::string(kernel) + R"(
void run(int* dst, int nrows, int ncols_pad) {
  sort_rows<<<nrows, 256, 256 * sizeof(int)>>>(dst, ncols_pad);
}
)");
  EXPECT_TRUE(after_return(wider));
  // Inside a macro every argument's text is the whole invocation: the block width and the
  // bound are still two different variables.
  auto macro = parse(std::string(kernel) + R"(
#define LAUNCH(k, grid, block, ...) k<<<grid, block, 0>>>(__VA_ARGS__)
void run(int* dst, int nrows, int ncols, int ncols_pad) {
  LAUNCH(sort_rows, nrows, ncols_pad, dst, ncols);
}
void run_exact(int* dst, int nrows, int ncols_pad) {
  LAUNCH(sort_rows, nrows, ncols_pad, dst, ncols_pad);
}
)");
  ASSERT_TRUE(macro.diagnostics.empty()) << macro.diagnostics[0].message;
  EXPECT_TRUE(after_return(macro));
  auto macro_exact = parse(std::string(kernel) + R"(
#define LAUNCH(k, grid, block, ...) k<<<grid, block, 0>>>(__VA_ARGS__)
void run_exact(int* dst, int nrows, int ncols_pad) {
  LAUNCH(sort_rows, nrows, ncols_pad, dst, ncols_pad);
}
void run_literal(int* dst, int nrows) { sort_rows<<<nrows, 128, 0>>>(dst, 128); }
)");
  ASSERT_TRUE(macro_exact.diagnostics.empty()) << macro_exact.diagnostics[0].message;
  EXPECT_FALSE(after_return(macro_exact));
  EXPECT_TRUE(after_return(parse(kernel)));
}

// ggml's solve_tri: the bound is `k_template == 0 ? k_arg : k_template`, and the launcher
// switches on k, instantiating <k> in `case k:` with a block k threads tall, or <0> with
// k passed for k_arg. Every launch makes blockDim.y what the bound is there. A case whose
// template argument differs from its value, or a <0> launch passing another count, does not.
TEST(CudaBarriers, ABoundChosenBetweenATemplateArgumentAndAParameterFollowsEachLaunch) {
  const char* kernel = R"(
template <int k_template>
__global__ void solve(float* x, int k_arg) {
  const int k = k_template == 0 ? k_arg : k_template;
  const int col = threadIdx.y;
  if (col >= k) return;
  __shared__ float s[32 * 32];
  s[threadIdx.x + 32 * col] = x[threadIdx.x + 32 * col];
  __syncthreads();
  x[threadIdx.x + 32 * col] = s[col + 32 * threadIdx.x];
}
)";
  auto after_return = [](const ir::Module& m) {
    for (const auto& f : m.functions)
      if (f.name.find("solve") != std::string::npos)
        for (const ir::Node* b : nodes(f, "barrier")) return flag(*b, "after_thread_dependent_return");
    ADD_FAILURE() << "no barrier in solve";
    return false;
  };
  auto launches = [&](const char* cases) {
    return parse(std::string(kernel) + R"(
void run(float* x, int k) {
  dim3 threads(32, k);
  switch (k) {
)" + cases + R"(
    default: solve<0><<<1, threads>>>(x, k);
  }
}
)");
  };
  auto exact = launches("    case 16: solve<16><<<1, threads>>>(x, 0); break;\n"
                        "    case 8: solve<8><<<1, threads>>>(x, 0); break;\n");
  ASSERT_TRUE(exact.diagnostics.empty()) << exact.diagnostics[0].message;
  EXPECT_FALSE(after_return(exact));
  EXPECT_TRUE(after_return(launches("    case 16: solve<8><<<1, threads>>>(x, 0); break;\n")));
  auto other_count = parse(std::string(kernel) + R"(
void run(float* x, int k, int j) {
  dim3 threads(32, k);
  solve<0><<<1, threads>>>(x, j);
}
)");
  ASSERT_TRUE(other_count.diagnostics.empty()) << other_count.diagnostics[0].message;
  EXPECT_TRUE(after_return(other_count));
}

// Lanes 3 or 4 bytes apart (a uchar RGB or RGBA pixel each) span one 128-byte line per
// warp, as unit-stride floats do; floats 3 apart span three lines.
TEST(CudaLaneStride, LanesAFewBytesApartAreCoalesced) {
  auto m = parse(R"(
__global__ void to_rgb(unsigned char* __restrict__ dst, const float* __restrict__ src, int n) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= n) return;
  for (int c = 0; c < 3; ++c) dst[x * 3 + c] = (unsigned char)src[x];
}
__global__ void to_rgb_float(float* __restrict__ dst, const float* __restrict__ src, int n) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= n) return;
  dst[x * 3] = src[x];
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto bytes = nodes(*function(m, "to_rgb"), "store");
  ASSERT_EQ(bytes.size(), 1u);
  EXPECT_FALSE(flag(*bytes[0], "uncoalesced"));
  auto floats = nodes(*function(m, "to_rgb_float"), "store");
  ASSERT_EQ(floats.size(), 1u);
  EXPECT_TRUE(flag(*floats[0], "uncoalesced"));
}

TEST(CudaLaneStride, ShortChunkPerThreadIsNotARowPerThread) {
  auto m = parse(R"(
__global__ void chunk4(float* out, const float* g, int n) {
  int l = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  float s = 0.0f;
  for (int k = 0; k < 4; ++k) s += g[l + k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void row_per_thread(float* out, const float* x, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int i = 0; i < C; ++i) s += x[row * C + i];
  out[row] = s;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto chunk = nodes(*function(m, "chunk4"), "load");
  ASSERT_EQ(chunk.size(), 1u);
  EXPECT_TRUE(flag(*chunk[0], "uncoalesced"));
  EXPECT_TRUE(flag(*chunk[0], "chunk_per_thread"));
  auto row = nodes(*function(m, "row_per_thread"), "load");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_TRUE(flag(*row[0], "uncoalesced"));
  EXPECT_FALSE(flag(*row[0], "chunk_per_thread"));
}

TEST(CudaLaneStride, AnAccessMadeOnceBesideTheLoopOverTheDataIsMarked) {
  auto m = parse(R"(
template <int K>
__global__ void conv(float* y, const float* x, const float* w, int n_t, int channels, int w_stride) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  float wk[K];
  for (int k = 0; k < K; k++) wk[k] = w[ch * w_stride + k];
  for (int t = 0; t < n_t; t++) {
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += wk[k] * x[(t + k) * channels + ch];
    y[t * channels + ch] = acc;
  }
}
template __global__ void conv<4>(float*, const float*, const float*, int, int, int);
template <int COLS>
__global__ void wide(float* y, const float* x, const float* b, int ld, int nb) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int c = 0; c < COLS; c++) acc += x[c + r * ld];
  for (int j = 0; j < nb; j++) acc += b[j * ld + r];
  y[r] = acc;
}
template __global__ void wide<4096>(float*, const float*, const float*, int, int);
template <int ROWS, int COLS>
__global__ void tile_product(float* y, const float* x, const float* b, int ld, int nb) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int c = 0; c < ROWS * COLS; c++) acc += x[c + r * ld];
  for (int j = 0; j < nb; j++) acc += b[j * ld + r];
  y[r] = acc;
}
template __global__ void tile_product<64, 64>(float*, const float*, const float*, int, int);
template <int ROWS, int COLS>
__global__ void tile_small(float* y, const float* x, const float* b, int ld, int nb) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int c = 0; c < ROWS * COLS; c++) acc += x[c + r * ld];
  for (int j = 0; j < nb; j++) acc += b[j * ld + r];
  y[r] = acc;
}
template __global__ void tile_small<4, 8>(float*, const float*, const float*, int, int);
__global__ void scaled(float* y, const float* x, const float* s, int stride, int nscale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float f = 0.0f;
  for (int j = 0; j < nscale; j++) f += s[j];
  y[i * stride] = x[i * stride] * f;
}
__global__ void no_data_loop(float* out, const float* w, int k) {
  float s = 0.0f;
  for (int j = 0; j < 4; ++j) s += w[threadIdx.x * 4 + j];
  out[threadIdx.x] = s;
}
template <int ILP>
__device__ void load_store(float* dst, const float* src, int i) { dst[i] = src[i]; }
__global__ void reduce_after_helper_loop(float* out, const float* x, int n) {
  __shared__ float sm[4 * 256];
  float r[4] = {0, 0, 0, 0};
  for (int i = threadIdx.x; i < n; i += blockDim.x) load_store<4>(r, x, i);
  for (int j = 0; j < 4; ++j) sm[4 * threadIdx.x + j] = r[j];
  __syncthreads();
  out[threadIdx.x] = sm[threadIdx.x];
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto loads = nodes(*function(m, "conv"), "load");
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_TRUE(flag(*loads[0], "uncoalesced"));
  EXPECT_TRUE(flag(*loads[0], "once_beside_data_loop"));   // w, in the K loop
  EXPECT_FALSE(flag(*loads[1], "once_beside_data_loop"));  // x, in the token loop
  EXPECT_FALSE(flag(*nodes(*function(m, "conv"), "store")[0], "once_beside_data_loop"));
  // No loop over the data: the strided load is the kernel's work.
  EXPECT_FALSE(flag(*nodes(*function(m, "no_data_loop"), "load")[0], "once_beside_data_loop"));
  // A template bound the file instantiates with 4096 is a loop over the data.
  auto wide = nodes(*function(m, "wide"), "load");
  ASSERT_EQ(wide.size(), 2u);
  EXPECT_FALSE(flag(*wide[0], "once_beside_data_loop"));
  // So is a product of small template parameters above 256 (ROWS * COLS = 64 * 64); at
  // 4 * 8 it is a short loop beside the runtime loop over nb.
  auto product = nodes(*function(m, "tile_product"), "load");
  ASSERT_EQ(product.size(), 2u);
  EXPECT_FALSE(flag(*product[0], "once_beside_data_loop"));
  auto small = nodes(*function(m, "tile_small"), "load");
  ASSERT_EQ(small.size(), 2u);
  EXPECT_TRUE(flag(*small[0], "once_beside_data_loop"));
  // A short runtime loop over a few broadcast scales is not the kernel's data: its strided
  // accesses outside it are.
  for (const auto* n : nodes(*function(m, "scaled"), "load"))
    EXPECT_FALSE(flag(*n, "once_beside_data_loop"));
  EXPECT_FALSE(flag(*nodes(*function(m, "scaled"), "store")[0], "once_beside_data_loop"));
  // The loop over the data moves its bytes through a helper given the global pointer.
  auto st = nodes(*function(m, "reduce_after_helper_loop"), "store");
  ASSERT_FALSE(st.empty());
  EXPECT_TRUE(flag(*st[0], "once_beside_data_loop"));
}

// The bodies of the file's kernel specializations are not instantiated when they name
// nothing the file declares (frontend.cpp, LeafInstantiations); a host template's body,
// which names the kernels it launches, still is: the kernels' template arguments are the
// ones its instantiations launch them with.
TEST(CudaLaneStride, TemplateArgumentsGivenThroughAHostTemplateStillCount) {
  auto m = parse(R"(
template <int COLS>
__global__ void wide(float* y, const float* x, const float* b, int ld, int nb) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int c = 0; c < COLS; c++) acc += x[c + r * ld];
  for (int j = 0; j < nb; j++) acc += b[j * ld + r];
  y[r] = acc;
}
template <int ROWS, int COLS>
__global__ void tile_small(float* y, const float* x, const float* b, int ld, int nb) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int c = 0; c < ROWS * COLS; c++) acc += x[c + r * ld];
  for (int j = 0; j < nb; j++) acc += b[j * ld + r];
  y[r] = acc;
}
template <int C>
void launch_wide(float* y, const float* x, const float* b, int ld, int nb) {
  wide<C><<<1, 256>>>(y, x, b, ld, nb);
}
template <int R, int C>
void launch_tile(float* y, const float* x, const float* b, int ld, int nb) {
  tile_small<R, C><<<1, 256>>>(y, x, b, ld, nb);
}
void run(float* y, const float* x, const float* b, int ld, int nb) {
  launch_wide<4096>(y, x, b, ld, nb);
  launch_tile<4, 8>(y, x, b, ld, nb);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  auto wide = nodes(*function(m, "wide"), "load");
  ASSERT_EQ(wide.size(), 2u);
  EXPECT_FALSE(flag(*wide[0], "once_beside_data_loop"));  // wide<4096>, made by launch_wide<4096>
  auto small = nodes(*function(m, "tile_small"), "load");
  ASSERT_EQ(small.size(), 2u);
  EXPECT_TRUE(flag(*small[0], "once_beside_data_loop"));  // tile_small<4, 8> only
}

TEST(CudaPasses, AGlobalReadBesideASharedCopyIsNotASecondPass) {
  auto m = parse(R"(
__global__ void softmax_cached(float* y, const float* x, int C, bool use_shared) {
  extern __shared__ float tmp[];
  const float* xr = x + blockIdx.x * C;
  float m = -1e30f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) { float v = xr[i]; if (use_shared) tmp[i] = v; m = fmaxf(m, v); }
  float s = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) s += expf((use_shared ? tmp[i] : xr[i]) - m);
  y[blockIdx.x] = s;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "softmax_cached");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(nodes(*f, "multi_pass").empty());
  EXPECT_EQ(nodes(*f, "load", [](const ir::Node& n) { return flag(n, "shared_alternative"); }).size(), 1u);
}

TEST(CudaParams, CompoundAssignmentOnATemplateTypeIsAWrite) {
  // With an operator overload in scope, `*result /= ...` on a dependent type is a call of
  // an unresolved operator, not a compound assignment.
  auto m = parse(R"(
struct half_t { unsigned short bits; };
__device__ half_t& operator/=(half_t& a, half_t b);
template <typename T> __global__ void divide_by_count(T* result, unsigned long count) {
  *result /= static_cast<T>(count);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "divide_by_count");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(flag(*param(*f, "result"), "written"));
  EXPECT_EQ(nodes(*f, "store").size(), 1u);
}

TEST(CudaCalls, APointerArgumentIsLoweredOnce) {
  // `first(x + offs[b], i)` reads offs[b] once; lowering the argument as a pointer and
  // again as a value read it twice, which made offs look re-read. A non-const pointer
  // (`put(y + offs[b], ...)`) is also marked written, still with one read of offs.
  auto m = parse(R"(
__device__ float first(const float* p, int i) { return p[i]; }
__device__ void put(float* p, int i, float v) { p[i] = v; }
__global__ void gather(float* __restrict__ y, const float* __restrict__ x, const int* __restrict__ offs) {
  float v = first(x + offs[blockIdx.x], threadIdx.x);
  put(y + offs[gridDim.x + blockIdx.x], threadIdx.x, v);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "gather");
  ASSERT_NE(f, nullptr);
  auto offs_loads = nodes(*f, "load", [](const ir::Node& n) {
    auto it = n.attrs.find("param");
    return it != n.attrs.end() && std::get_if<std::string>(&it->second) && std::get<std::string>(it->second) == "offs";
  });
  EXPECT_EQ(offs_loads.size(), 2u);  // one per call
  EXPECT_TRUE(flag(*param(*f, "y"), "written"));
}

// cudaMalloc's size, when the host function fixes it: a constant, or locals initialized
// so and written nowhere after (not assigned, not through a reference, not by address).
TEST(CudaSmallLaunches, AllocationSizesFollowLocalsNeverWrittenAfter) {
  auto m = parse(R"(
void parse_into(int& n);
__global__ void add(const float* a, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] * 2.0f;
}
void run(int runtime) {
  int fixed = 1000;
  size_t bytes = fixed * sizeof(float);
  int parsed = 64; parse_into(parsed);
  int addressed = 64; int* p = &addressed; (void)p;
  int assigned = 64; assigned += 1;
  float *a, *b, *c, *d, *e, *out;
  cudaMalloc((void**)&a, bytes);
  cudaMalloc((void**)&b, parsed * sizeof(float));
  cudaMalloc((void**)&c, addressed * sizeof(float));
  cudaMalloc((void**)&d, assigned * sizeof(float));
  cudaMalloc((void**)&e, runtime * sizeof(float));
  cudaMalloc((void**)&out, bytes);
  add<<<4, 256>>>(a, out, fixed);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* run = function(m, "run");
  ASSERT_NE(run, nullptr);
  std::map<std::string, std::optional<int64_t>> sizes;
  for (const ir::Node* n : nodes(*run, "host_sync", [](const ir::Node& n) { return n.attr("buffer") != nullptr; })) {
    const ir::Attr* bytes = n->attr("bytes");
    sizes[std::get<std::string>(*n->attr("buffer"))] = bytes ? std::optional<int64_t>(std::get<int64_t>(*bytes)) : std::nullopt;
  }
  ASSERT_EQ(sizes.size(), 6u);
  EXPECT_EQ(sizes["a"], 4000);
  EXPECT_EQ(sizes["out"], 4000);
  EXPECT_FALSE(sizes["b"]);  // written through a reference parameter
  EXPECT_FALSE(sizes["c"]);  // its address taken
  EXPECT_FALSE(sizes["d"]);  // assigned after its declaration
  EXPECT_FALSE(sizes["e"]);  // a parameter
  // add reads `a` and writes `out` (4000 bytes each) at its one launch: a small launch, marked cold.
  const ir::Function* add = function(m, "add");
  ASSERT_NE(add, nullptr);
  EXPECT_NE(fn_str(*add, "cold").find("at most 8 KiB"), std::string::npos) << fn_str(*add, "cold");
}

TEST(CudaSmallLaunches, ALaunchOfUnknownOrLargeBuffersIsNotSmall) {
  auto m = parse(R"(
__global__ void add(const float* a, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] * 2.0f;
}
__global__ void big(const float* a, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] * 2.0f;
}
__global__ void fill(const float* a, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[0];
}
__global__ void head(const float* a, float* c) { c[blockIdx.x * blockDim.x + threadIdx.x] = a[0]; }
__global__ void head_sized(const float* a, float* c) { c[blockIdx.x * blockDim.x + threadIdx.x] = a[0]; }
void run(const float* input, float* out, int n_out) {
  float *a, *huge;
  cudaMalloc((void**)&a, 1000 * sizeof(float));
  cudaMalloc((void**)&huge, (8 << 20) * sizeof(float));
  add<<<4, 256>>>(input, out, 1000);  // input: a buffer of unknown size, before a known one
  add<<<4, 256>>>(a, out, 1000);
  big<<<4, 256>>>(huge, out, 1000);   // 32 MiB allocated
  fill<<<4, 256>>>(a, out, 1000);     // writes `out`, of unknown size, in a loop
  head<<<4, 256>>>(a, out);           // one store a thread, 4 x 256 threads: 4 KiB
  head_sized<<<(n_out + 255) / 256, 256>>>(a, out);  // a grid of unknown size
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  for (const char* name : {"add", "big", "fill", "head_sized"}) {
    const ir::Function* f = function(m, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(fn_str(*f, "cold"), "") << name;
  }
  ASSERT_NE(function(m, "head"), nullptr);
  EXPECT_NE(fn_str(*function(m, "head"), "cold").find("at most 8 KiB"), std::string::npos)
      << fn_str(*function(m, "head"), "cold");
}

// A launch with a fixed grid bounds what a kernel stores outside loops, not what it reads:
// `sum_into` reads all of `buf` (its size unknown) and writes one value a block back to it.
TEST(CudaSmallLaunches, ABoundedWriteDoesNotBoundTheReadsOfItsBuffer) {
  auto m = parse(R"(
__global__ void sum_into(float* buf, int n) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += buf[i];
  if (threadIdx.x == 0) buf[blockIdx.x] = s;
}
__global__ void sum_to(const float* a, float* out, int n) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += a[i];
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
void run(float* data, float* partial, int n) {
  float* a;
  cudaMalloc((void**)&a, 1000 * sizeof(float));
  sum_into<<<4, 256>>>(data, n);
  sum_to<<<4, 256>>>(a, partial, 1000);  // reads 4000 bytes, stores 4 x 256 x 4 bytes
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  ASSERT_NE(function(m, "sum_into"), nullptr);
  EXPECT_EQ(fn_str(*function(m, "sum_into"), "cold"), "");
  ASSERT_NE(function(m, "sum_to"), nullptr);
  EXPECT_NE(fn_str(*function(m, "sum_to"), "cold").find("at most 8 KiB"), std::string::npos)
      << fn_str(*function(m, "sum_to"), "cold");
}

// What a thread stores through a parameter is known only when every write to it is a plain
// store outside loops: an atomic or a helper handed the pointer may write anything.
TEST(CudaSmallLaunches, AtomicsAndHelperWritesLeaveTheStoreSizeUnknown) {
  auto m = parse(R"(
__device__ void put(float* p, int i, float v) { p[i] = v; }
__global__ void count(const float* x, int* hist, int n) {
  hist[blockIdx.x] = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(&hist[(int)x[i]], 1);
}
__global__ void scatter(const float* x, float* y) {
  y[blockIdx.x] = 0.0f;
  put(y, blockIdx.x * blockDim.x + threadIdx.x, x[0]);
}
__global__ void only_atomic(const float* x, int* hist) { atomicAdd(&hist[threadIdx.x], (int)x[0]); }
__global__ void plain(const float* x, float* y) { y[blockIdx.x * blockDim.x + threadIdx.x] = x[0]; }
void run(int* h, float* out) {
  float* x;
  cudaMalloc((void**)&x, 1000 * sizeof(float));
  count<<<4, 256>>>(x, h, 1000);
  scatter<<<4, 256>>>(x, out);
  only_atomic<<<4, 256>>>(x, h);
  plain<<<4, 256>>>(x, out);
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* run = function(m, "run");
  ASSERT_NE(run, nullptr);
  std::map<std::string, std::string> bounded;  // kernel -> its launch's bounded_writes
  for (const ir::Node* n : nodes(*run, "launch")) {
    const ir::Attr* b = n->attr("bounded_writes");
    bounded[std::get<std::string>(*n->attr("kernel"))] = b ? std::get<std::string>(*b) : "";
  }
  ASSERT_EQ(bounded.size(), 4u);
  EXPECT_EQ(bounded["count"], "");
  EXPECT_EQ(bounded["scatter"], "");
  EXPECT_EQ(bounded["only_atomic"], "");
  EXPECT_EQ(bounded["plain"], "out:4096");
  for (const char* name : {"count", "scatter", "only_atomic"}) {
    ASSERT_NE(function(m, name), nullptr) << name;
    EXPECT_EQ(fn_str(*function(m, name), "cold"), "") << name;
  }
  ASSERT_NE(function(m, "plain"), nullptr);
  EXPECT_NE(fn_str(*function(m, "plain"), "cold").find("at most 8 KiB"), std::string::npos)
      << fn_str(*function(m, "plain"), "cold");
}

TEST(CudaLoops, ALoopSteppingAVariableOfTheFunctionMakesItTheInduction) {
  // apex's LayerNorm backward: an unrolled loop over 4-element chunks, then the remainder
  // loop `for (; l < n; ++l)` continuing from where it stopped. Both step l: in the first
  // it is a block-stride walk, in the second it starts from an unknown, per-thread value
  // (not the first loop's start plus one step), so the remainder's read is not strided.
  auto m = parse(R"(
__global__ void chunks(float* __restrict__ out, const float* __restrict__ x, int n) {
  const int numx = blockDim.x;
  float s = 0.0f;
  int l = 4 * threadIdx.x;
  for (; l + 3 < n; l += 4 * numx)
    for (int k = 0; k < 4; ++k) s += x[l + k];
  for (; l < n; ++l) s += x[l];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)");
  ASSERT_TRUE(m.diagnostics.empty()) << m.diagnostics[0].message;
  const ir::Function* f = function(m, "chunks");
  ASSERT_NE(f, nullptr);
  auto loads = nodes(*f, "load");
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_TRUE(flag(*loads[0], "chunk_per_thread"));
  EXPECT_FALSE(flag(*loads[1], "uncoalesced")) << std::get<std::string>(*loads[1]->attr("index"));
  EXPECT_TRUE(flag(*loads[1], "thread_dependent"));
  std::vector<std::string> kinds;
  for (const auto& r : f->regions)
    if (r.kind == "loop" && r.attrs.count("induction")) kinds.push_back(std::get<std::string>(r.attrs.at("induction")));
  EXPECT_EQ(kinds, (std::vector<std::string>{"l", "k", "l"}));
}

}  // namespace
}  // namespace mlsem::cuda
