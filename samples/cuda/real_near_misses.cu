// Shapes from real projects (ggml, apex, llm.c, cuda-samples) that resemble a problem
// and are not it, each beside one that is.
//
// mask_rows_y: launched with blockDim.x = 1 (ggml's diag_mask): threadIdx.y walks the
// row, so the access is coalesced; mask_rows_x is the same kernel launched with the
// threads along x.
// grad_chunks: each thread sums its own 4 consecutive elements (apex's unrolled
// LayerNorm backward): the warp reads one contiguous span.
// attention_value: out[i] += a * v[i] over i, an element-wise update (an axpy), not one
// thread reducing a row.
// rope_sections: `sector % 3` picks one of three sections, not the interleaved pairs of
// a reduction tree.
// softmax_cached: the second pass reads the row from shared memory when it was cached
// there (ggml's cross-entropy); the global read is only the fallback.
// pad_strided: a generic strided-tensor index (ggml's pad and repeat_back), each
// dimension's index times its runtime stride: the lanes are s00 elements apart, and s00
// is 1 for the contiguous tensors callers pass; the layout is the caller's, not the code's.
// sort_rows: (col & k) == 0 with an else is a bitonic sort's direction test, both sides
// working (ggml's argsort); group_scales: i % 16 == 0 picks one writer per group (ggml's
// quantize). Neither is the interleaved pairs of a reduction tree.
// scale_by_type: one launch per dtype in the arms of a switch, each reading x->data and
// writing dst->data (ggml's snake): only one runs, and x->data is not dst->data.
// copy_any: a copy kernel the file also instantiates with a 16-byte struct
// (cuda-samples' alignedTypes): its accesses are already 16 bytes wide there.
// conv_taps: every thread sums its own output's taps (ggml's conv_transpose_1d), not
// one thread folding a row while the others wait. upscale_nearest: the source element is
// found by scaling the coordinate in floating point (ggml's upscale): a gather, where
// wider loads do not fit.
// sort_rows returns `if (col >= ncols)` before its barriers, and its one launch makes
// the block exactly ncols wide: no thread returns (ggml's argsort).
// benchmark / step_copies: a loop that records events to time its launches waits on
// purpose; a device-to-device copy does not make the host wait. train_copy_back waits
// for the GPU every step. solve_until_converged copies the residual back to decide
// whether to stop (cuda-samples' jacobi): each iteration must wait for it.
// conv_weights_once: each thread loads its own channel's K weights once (strided by K
// across lanes), then streams the tokens coalesced (ggml's ssm_conv, rwkv's state load):
// the weights are a small share of the bytes. conv_weights_per_token reloads them for
// every token, inside the loop over the data.
// stats_in_struct: the mean summed into a field of a local float2 (as ggml's norm_f32
// keeps its sums), then a pass for the variance: the statistics read the row twice.
// stats_by_kind: a mean loop or a squared-difference loop, in the two arms of an if/else
// (as apex's l2norm cleanup picks max or sum): only one runs, one pass. stats_split_y:
// the same two arms under `threadIdx.y == 0`: both run in every block, two passes.
// weighted_by_macro: a sum pass, then a product of a difference and a weight written
// through a macro (`MUL(p[i] - mean, w[i])`): not a square, though inside a macro both
// operands' source text is the whole invocation.
//
// Expected: CU001 in mask_rows_x and on attention_value's row-per-thread accesses (a
// real problem, not the one it is a near miss for), CU002 on the pointwise stores,
// CU014 in train_copy_back, CU001 in conv_weights_per_token, CU005 in stats_in_struct and stats_split_y.

#include <cuda_runtime.h>

__global__ void mask_rows_y(float* __restrict__ dst, const float* __restrict__ x, int ncols) {
  const int col = blockDim.y * blockIdx.y + threadIdx.y;
  const int row = blockDim.x * blockIdx.x + threadIdx.x;
  if (col >= ncols) return;
  dst[row * ncols + col] = x[row * ncols + col] * 0.5f;  // ok: CU001
}

__global__ void mask_rows_x(float* __restrict__ dst, const float* __restrict__ x, int ncols) {
  const int col = blockDim.y * blockIdx.y + threadIdx.y;
  const int row = blockDim.x * blockIdx.x + threadIdx.x;
  if (col >= ncols) return;
  dst[row * ncols + col] = x[row * ncols + col] * 0.5f;  // expect: CU001
}

void launch_masks(float* dst, const float* x, int nrows, int ncols) {
  const dim3 along_y(1, 256, 1);
  mask_rows_y<<<dim3(nrows, (ncols + 255) / 256, 1), along_y>>>(dst, x, ncols);
  const dim3 along_x(256, 1, 1);
  mask_rows_x<<<dim3((nrows + 255) / 256, ncols, 1), along_x>>>(dst, x, ncols);
}

__global__ void pad_strided(float* __restrict__ dst, const float* __restrict__ src, size_t s00, size_t s01,
                            size_t s02, int ne0, int ne1, int lp0) {
  const int i0 = blockIdx.x * blockDim.x + threadIdx.x;
  const int i1 = blockIdx.y;
  const int i2 = blockIdx.z;
  if (i0 >= ne0) return;
  const size_t dst_idx = (size_t)i2 * ne0 * ne1 + (size_t)i1 * ne0 + i0;
  dst[dst_idx] = i0 < lp0 ? 0.0f : src[(i0 - lp0) * s00 + i1 * s01 + i2 * s02];  // ok: CU001
}

__global__ void grad_chunks(float* __restrict__ out, const float* __restrict__ g, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int l = 4 * t;
  if (l + 3 >= n) return;
  float s = 0.0f;
  for (int k = 0; k < 4; ++k) s += g[l + k];  // ok: CU001
  out[t] = s;
}

__global__ void attention_value(float* __restrict__ out, const float* __restrict__ att,
                                const float* __restrict__ v, int T, int hs) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  float* o = out + t * hs;
  for (int i = 0; i < hs; i++) o[i] = 0.0f;  // expect: CU001
  for (int t2 = 0; t2 <= t; t2++) {
    const float a = att[t * T + t2];  // expect: CU001
    for (int i = 0; i < hs; i++) o[i] += a * v[t2 * hs + i];  // ok: CU007  // expect: CU001
  }
}

__global__ void rope_sections(float* __restrict__ dst, const float* __restrict__ pos, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int sector = i / 2;
  float theta = 0.0f;
  if (sector % 3 == 1) theta = pos[n + i];  // ok: CU011
  else theta = pos[i];
  dst[i] = theta;  // expect: CU002
}

__global__ void softmax_cached(float* __restrict__ y, const float* __restrict__ x, int C, bool use_shared) {
  extern __shared__ float tmp[];
  const float* xr = x + blockIdx.x * C;
  float m = -1e30f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    const float v = xr[i];
    if (use_shared) tmp[i] = v;
    m = fmaxf(m, v);
  }
  float s = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) s += expf((use_shared ? tmp[i] : xr[i]) - m);  // ok: CU006
  if (threadIdx.x == 0) y[blockIdx.x] = s;
}

__global__ void sort_rows(float* __restrict__ x, int ncols) {
  extern __shared__ float row[];
  const int col = threadIdx.x;
  if (col >= ncols) return;
  row[col] = x[blockIdx.x * ncols + col];
  __syncthreads();  // ok: CU010
  for (int k = 2; k <= ncols; k *= 2) {
    for (int j = k / 2; j > 0; j /= 2) {
      const int ixj = col ^ j;
      if (ixj > col) {
        const float a = row[col], b = row[ixj];
        if ((col & k) == 0) {  // ok: CU011
          if (a > b) { row[col] = b; row[ixj] = a; }
        } else {
          if (a < b) { row[col] = b; row[ixj] = a; }
        }
      }
      __syncthreads();
    }
  }
  x[blockIdx.x * ncols + col] = row[col];
}

void sort_all_rows(float* x, int nrows, int ncols) {
  const dim3 block_dims(ncols, 1, 1);
  sort_rows<<<nrows, block_dims, ncols * sizeof(float)>>>(x, ncols);
}

__global__ void group_scales(float* __restrict__ scales, const float* __restrict__ x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float amax = fabsf(x[i]);
  for (int off = 8; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffff, amax, off, 16));
  if (i % 16 == 0) scales[i / 16] = amax / 127.0f;  // ok: CU011
}

struct tensor {
  void* data;
  int type;
};

__global__ void scale_from(const float* __restrict__ x, float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];  // expect: CU002
}

void scale_by_type(const tensor* x, tensor* dst, int n) {
  switch (x->type) {
    case 0:
      scale_from<<<(n + 255) / 256, 256>>>((const float*)x->data, (float*)dst->data, n);
      break;
    case 1:
      scale_from<<<(n + 255) / 256, 256>>>((const float*)x->data, (float*)dst->data, n);  // ok: CU012
      break;
  }
}

struct __align__(16) rgba32 {
  unsigned r, g, b, a;
};

template <class T>
__global__ void copy_any(T* __restrict__ out, const T* __restrict__ in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];  // ok: CU002
}

void copy_pixels(void* out, const void* in, int n, bool wide) {
  if (wide) copy_any<rgba32><<<(n + 255) / 256, 256>>>((rgba32*)out, (const rgba32*)in, n);
  else copy_any<unsigned char><<<(n + 255) / 256, 256>>>((unsigned char*)out, (const unsigned char*)in, n);
}

__global__ void conv_taps(float* __restrict__ out, const float* __restrict__ w, const float* __restrict__ x, int K,
                          int C, int T, int n) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= n) return;
  const int t = g % T, ch = (g / T) % C;
  float acc = 0.0f;
  for (int k = 0; k < K; k++) acc += w[ch * K + k] * x[(t + k) / 2];  // ok: CU007
  out[g] = acc;
}

__global__ void upscale_nearest(const float* __restrict__ x, float* __restrict__ dst, int ne0, int n, float sf) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int src0 = (i % ne0) / sf;
  dst[i] = x[(i / ne0) * ne0 + src0];  // ok: CU002
}

__global__ void step(float* __restrict__ x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f;  // expect: CU002
}

void benchmark(float* d, int n, int reps, cudaEvent_t start, cudaEvent_t stop) {
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start, 0);
    step<<<(n + 255) / 256, 256>>>(d, n);
    cudaEventRecord(stop, 0);
    cudaEventSynchronize(stop);  // ok: CU014
  }
}

void step_copies(float* d, float* d_prev, int n, int steps) {
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256>>>(d, n);
    cudaMemcpy(d_prev, d, n * sizeof(float), cudaMemcpyDeviceToDevice);  // ok: CU014
  }
}

void train_copy_back(float* d, float* h, int n, int steps) {
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256>>>(d, n);
    cudaMemcpy(h, d, sizeof(float), cudaMemcpyDeviceToHost);  // expect: CU014
  }
}

float solve_until_converged(float* d, int n, int max_iter, float tol) {
  float residual = 0.0f;
  for (int k = 0; k < max_iter; ++k) {
    step<<<(n + 255) / 256, 256>>>(d, n);
    cudaMemcpy(&residual, d, sizeof(float), cudaMemcpyDeviceToHost);  // ok: CU014
    if (residual <= tol) break;
  }
  return residual;
}

__global__ void conv_weights_once(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ w,
                                  int n_t, int channels, int w_stride) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  float wk[4];
  for (int k = 0; k < 4; k++) wk[k] = w[ch * w_stride + k];  // ok: CU001
  for (int t = 0; t < n_t; t++) {
    float acc = 0.0f;
    for (int k = 0; k < 4; k++) acc += wk[k] * x[(t + k) * channels + ch];
    y[t * channels + ch] = acc;
  }
}

__global__ void conv_weights_per_token(float* __restrict__ y, const float* __restrict__ x,
                                       const float* __restrict__ w, int n_t, int channels, int w_stride) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  for (int t = 0; t < n_t; t++) {
    float acc = 0.0f;
    for (int k = 0; k < 4; k++) acc += w[ch * w_stride + k] * x[(t + k) * channels + ch];  // expect: CU001
    y[t * channels + ch] = acc;
  }
}

__global__ void stats_in_struct(const float* __restrict__ x, float* __restrict__ out, int ncols) {
  x += (size_t)blockIdx.x * ncols;
  float2 acc = make_float2(0.0f, 0.0f);
  for (int col = threadIdx.x; col < ncols; col += blockDim.x) acc.x += x[col];
  const float mean = acc.x / ncols;
  for (int col = threadIdx.x; col < ncols; col += blockDim.x) {
    const float d = x[col] - mean;  // expect: CU005
    acc.y += d * d;
  }
  if (threadIdx.x == 0) out[blockIdx.x] = acc.y / ncols;
}

__global__ void stats_by_kind(const float* __restrict__ x, float* __restrict__ out, int n, float mean, int kind) {
  const float* p = x + (size_t)blockIdx.x * n;
  float val = 0.0f;
  if (kind == 0) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) val += p[i];
  } else {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const float d = p[i] - mean;  // ok: CU005
      val += d * d;
    }
  }
  if (threadIdx.x == 0) out[blockIdx.x] = val;
}

__global__ void stats_split_y(const float* __restrict__ x, float* __restrict__ out, int n, float mean) {
  const float* p = x + (size_t)blockIdx.x * n;
  float val = 0.0f;
  if (threadIdx.y == 0) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) val += p[i];
  } else {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const float d = p[i] - mean;  // expect: CU005
      val += d * d;
    }
  }
  out[blockIdx.x * blockDim.y + threadIdx.y] = val;
}

#define MUL(a, b) ((a) * (b))
__global__ void weighted_by_macro(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                                  int n) {
  const float* p = x + (size_t)blockIdx.x * n;
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += p[i];
  const float mean = s / n;
  float t = 0.0f, u = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    t += MUL(p[i] - mean, w[i]);  // ok: CU005
    const float pw = MUL(p[i], w[i]);
    u = fmaxf(u, pw);
  }
  if (threadIdx.x == 0) out[blockIdx.x] = t + u;
}
