// A real-sized CUDA file for mlsem's CUDA benchmark (bench/README.md, "CUDA"): the
// forward and backward kernels and the training loop of a small GPT-2, written in the
// style of single-file CUDA trainers (one kernel per layer op, cuBLAS for the matmuls).
// It is parsed, not built; the kernels are complete enough to be realistic input.
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      printf("CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__);   \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

constexpr int WARP_SIZE = 32;
constexpr int BLOCK = 256;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = WARP_SIZE / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffff, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = WARP_SIZE / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
  return v;
}

__device__ float block_sum(float v) {
  __shared__ float shared[WARP_SIZE];
  int lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
  v = warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / WARP_SIZE ? shared[lane] : 0.0f;
  v = warp_sum(v);
  __syncthreads();
  return v;
}

// out[b,t,:] = wte[token] + wpe[t]
__global__ void encoder_forward(float* __restrict__ out, const int* __restrict__ inp, const float* __restrict__ wte,
                                const float* __restrict__ wpe, int B, int T, int C) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  int N = B * T * C;
  if (idx >= N) return;
  int bt = idx / C, c = idx % C;
  int t = bt % T;
  int token = inp[bt];
  out[idx] = wte[token * C + c] + wpe[t * C + c];
}

__global__ void encoder_backward(float* dwte, float* dwpe, const float* __restrict__ dout, const int* __restrict__ inp,
                                 int B, int T, int C) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * T * C) return;
  int bt = idx / C, c = idx % C, t = bt % T;
  int token = inp[bt];
  atomicAdd(&dwte[token * C + c], dout[idx]);
  atomicAdd(&dwpe[t * C + c], dout[idx]);
}

// One warp per row: mean and rstd saved for the backward pass.
__global__ void layernorm_forward(float* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                                  const float* __restrict__ inp, const float* __restrict__ weight,
                                  const float* __restrict__ bias, int N, int C) {
  int lane = threadIdx.x % WARP_SIZE;
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / WARP_SIZE;
  if (row >= N) return;
  const float* x = inp + row * C;
  float sum = 0.0f;
  for (int i = lane; i < C; i += WARP_SIZE) sum += x[i];
  float m = warp_sum(sum) / C;
  float var = 0.0f;
  for (int i = lane; i < C; i += WARP_SIZE) {
    float d = x[i] - m;
    var += d * d;
  }
  float s = rsqrtf(warp_sum(var) / C + 1e-5f);
  float* o = out + row * C;
  for (int i = lane; i < C; i += WARP_SIZE) o[i] = s * (x[i] - m) * weight[i] + bias[i];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

__global__ void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* __restrict__ dout,
                                   const float* __restrict__ inp, const float* __restrict__ weight,
                                   const float* __restrict__ mean, const float* __restrict__ rstd, int N, int C) {
  int lane = threadIdx.x % WARP_SIZE;
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / WARP_SIZE;
  if (row >= N) return;
  const float* dout_bt = dout + row * C;
  const float* inp_bt = inp + row * C;
  float* dinp_bt = dinp + row * C;
  float mean_bt = mean[row], rstd_bt = rstd[row];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (int i = lane; i < C; i += WARP_SIZE) {
    float norm = (inp_bt[i] - mean_bt) * rstd_bt;
    float dnorm = weight[i] * dout_bt[i];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  dnorm_mean = warp_sum(dnorm_mean) / C;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / C;
  for (int i = lane; i < C; i += WARP_SIZE) {
    float norm = (inp_bt[i] - mean_bt) * rstd_bt;
    float dnorm = weight[i] * dout_bt[i];
    atomicAdd(&dbias[i], dout_bt[i]);
    atomicAdd(&dweight[i], norm * dout_bt[i]);
    dinp_bt[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd_bt;
  }
}

// qkv (B,T,3C) -> q, k, v (B,NH,T,HS)
__global__ void permute_qkv(float* __restrict__ q, float* __restrict__ k, float* __restrict__ v,
                            const float* __restrict__ inp, int B, int T, int NH, int HS) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * NH * T * HS) return;
  int b = idx / (NH * T * HS);
  int rest = idx % (NH * T * HS);
  int nh = rest / (T * HS);
  rest = rest % (T * HS);
  int t = rest / HS, hs = rest % HS;
  int src = b * T * 3 * NH * HS + t * 3 * NH * HS + nh * HS + hs;
  q[idx] = inp[src];
  k[idx] = inp[src + NH * HS];
  v[idx] = inp[src + 2 * NH * HS];
}

// Causal softmax of the attention scores, one thread per row of T scores.
__global__ void softmax_forward(float* __restrict__ out, const float* __restrict__ inp, float scale, int rows, int T) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  int t = row % T;
  const float* x = inp + row * T;
  float* y = out + row * T;
  float maxval = -INFINITY;
  for (int j = 0; j <= t; j++) maxval = fmaxf(maxval, x[j] * scale);
  float sum = 0.0f;
  for (int j = 0; j <= t; j++) {
    float e = expf(x[j] * scale - maxval);
    y[j] = e;
    sum += e;
  }
  for (int j = 0; j < T; j++) y[j] = j <= t ? y[j] / sum : 0.0f;
}

__global__ void softmax_backward(float* dpreatt, const float* __restrict__ datt, const float* __restrict__ att,
                                 float scale, int rows, int T) {
  int row = blockIdx.x;
  const float* a = att + row * T;
  const float* da = datt + row * T;
  float* dp = dpreatt + row * T;
  float dot = 0.0f;
  for (int j = threadIdx.x; j < T; j += blockDim.x) dot += a[j] * da[j];
  dot = block_sum(dot);
  for (int j = threadIdx.x; j < T; j += blockDim.x) dp[j] = scale * a[j] * (da[j] - dot);
}

__global__ void unpermute(float* __restrict__ out, const float* __restrict__ inp, int B, int T, int NH, int HS) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * NH * T * HS) return;
  int b = idx / (NH * T * HS);
  int rest = idx % (NH * T * HS);
  int nh = rest / (T * HS);
  rest = rest % (T * HS);
  int t = rest / HS, hs = rest % HS;
  out[b * T * NH * HS + t * NH * HS + nh * HS + hs] = inp[idx];
}

__global__ void residual_forward(float* __restrict__ out, const float* __restrict__ a, const float* __restrict__ b,
                                 int N) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < N) out[idx] = a[idx] + b[idx];
}

#define GELU_SCALING_FACTOR 0.7978845608f
__global__ void gelu_forward(float* __restrict__ out, const float* __restrict__ inp, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
  }
}

__global__ void gelu_backward(float* __restrict__ dinp, const float* __restrict__ inp, const float* __restrict__ dout,
                              int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    float tanh_arg = GELU_SCALING_FACTOR * (x + cube);
    float tanh_out = tanhf(tanh_arg);
    float cosh_out = coshf(tanh_arg);
    float sech_out = 1.0f / (cosh_out * cosh_out);
    float local_grad = 0.5f * (1.0f + tanh_out) + x * 0.5f * sech_out * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = local_grad * dout[i];
  }
}

__global__ void add_bias(float* __restrict__ out, const float* __restrict__ bias, int N, int OC) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) out[i] += bias[i % OC];
}

// dbias[oc] = sum over rows of dout[row, oc]: one thread per column walks all rows.
__global__ void matmul_backward_bias(float* dbias, const float* __restrict__ dout, int rows, int OC) {
  int oc = blockIdx.x * blockDim.x + threadIdx.x;
  if (oc >= OC) return;
  float sum = 0.0f;
  for (int r = 0; r < rows; r++) sum += dout[r * OC + oc];
  dbias[oc] += sum;
}

__global__ void fused_classifier(float* __restrict__ losses, float* __restrict__ dlogits,
                                 const float* __restrict__ logits, const int* __restrict__ targets, int rows, int V) {
  int row = blockIdx.x;
  const float* x = logits + (size_t)row * V;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, x[i]);
  m = warp_max(m);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) sum += expf(x[i] - m);
  sum = block_sum(sum);
  int target = targets[row];
  if (threadIdx.x == 0) losses[row] = -(x[target] - m - logf(sum));
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    float p = expf(x[i] - m) / sum;
    dlogits[(size_t)row * V + i] = p - (i == target ? 1.0f : 0.0f);
  }
}

__global__ void adamw(float* params, float* grads, float* m, float* v, long n, float lr, float beta1, float beta2,
                      float beta1_correction, float beta2_correction, float eps, float weight_decay) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = grads[i];
  float mi = beta1 * m[i] + (1.0f - beta1) * g;
  float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  float mhat = mi / beta1_correction, vhat = vi / beta2_correction;
  params[i] -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * params[i]);
}

__global__ void loss_sum(float* total, const float* __restrict__ losses, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(total, losses[i]);
}

struct Model {
  int B, T, C, NH, V, L;
  float *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *fcw, *fcb, *projw;
  float *grads, *m, *v, *params;
  long num_params;
  float *acts, *ln1, *ln1_mean, *ln1_rstd, *qkv, *q, *k, *vv, *preatt, *att, *atty, *fch, *fch_gelu, *residual, *logits,
      *losses, *dlogits, *loss;
  int *inputs, *targets;
};

void matmul_forward(cublasHandle_t handle, float* out, const float* inp, const float* weight, const float* bias,
                    int rows, int C, int OC) {
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, OC, rows, C, &one, weight, C, inp, C, &zero, out, OC);
  if (bias) add_bias<<<(rows * OC + BLOCK - 1) / BLOCK, BLOCK>>>(out, bias, rows * OC, OC);
}

void gpt2_forward(cublasHandle_t handle, Model& m) {
  int B = m.B, T = m.T, C = m.C, NH = m.NH, HS = C / NH, BT = B * T;
  encoder_forward<<<(BT * C + BLOCK - 1) / BLOCK, BLOCK>>>(m.residual, m.inputs, m.wte, m.wpe, B, T, C);
  for (int l = 0; l < m.L; l++) {
    layernorm_forward<<<(BT * WARP_SIZE + BLOCK - 1) / BLOCK, BLOCK>>>(m.ln1, m.ln1_mean, m.ln1_rstd, m.residual,
                                                                       m.ln1w + l * C, m.ln1b + l * C, BT, C);
    matmul_forward(handle, m.qkv, m.ln1, m.qkvw + l * 3 * C * C, m.qkvb + l * 3 * C, BT, C, 3 * C);
    permute_qkv<<<(BT * C + BLOCK - 1) / BLOCK, BLOCK>>>(m.q, m.k, m.vv, m.qkv, B, T, NH, HS);
    const float one = 1.0f, zero = 0.0f;
    cublasSgemmStridedBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, T, T, HS, &one, m.k, HS, T * HS, m.q, HS, T * HS,
                              &zero, m.preatt, T, T * T, B * NH);
    softmax_forward<<<(B * NH * T + BLOCK - 1) / BLOCK, BLOCK>>>(m.att, m.preatt, 1.0f / sqrtf(HS), B * NH * T, T);
    cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, HS, T, T, &one, m.vv, HS, T * HS, m.att, T, T * T,
                              &zero, m.atty, HS, T * HS, B * NH);
    unpermute<<<(BT * C + BLOCK - 1) / BLOCK, BLOCK>>>(m.ln1, m.atty, B, T, NH, HS);
    matmul_forward(handle, m.fch, m.ln1, m.attprojw + l * C * C, nullptr, BT, C, C);
    residual_forward<<<(BT * C + BLOCK - 1) / BLOCK, BLOCK>>>(m.residual, m.residual, m.fch, BT * C);
    matmul_forward(handle, m.fch, m.residual, m.fcw + l * 4 * C * C, m.fcb + l * 4 * C, BT, C, 4 * C);
    gelu_forward<<<(BT * 4 * C + BLOCK - 1) / BLOCK, BLOCK>>>(m.fch_gelu, m.fch, BT * 4 * C);
    matmul_forward(handle, m.ln1, m.fch_gelu, m.projw + l * 4 * C * C, nullptr, BT, 4 * C, C);
    residual_forward<<<(BT * C + BLOCK - 1) / BLOCK, BLOCK>>>(m.residual, m.residual, m.ln1, BT * C);
  }
  matmul_forward(handle, m.logits, m.residual, m.wte, nullptr, BT, C, m.V);
  fused_classifier<<<BT, 1024>>>(m.losses, m.dlogits, m.logits, m.targets, BT, m.V);
  cudaMemset(m.loss, 0, sizeof(float));
  loss_sum<<<(BT + BLOCK - 1) / BLOCK, BLOCK>>>(m.loss, m.losses, BT);
}

int main() {
  Model m{};
  m.B = 4; m.T = 1024; m.C = 768; m.NH = 12; m.V = 50257; m.L = 12;
  cublasHandle_t handle;
  cublasCreate(&handle);
  float h_loss = 0.0f;
  for (int step = 0; step < 1000; step++) {
    gpt2_forward(handle, m);
    CUDA_CHECK(cudaMemcpy(&h_loss, m.loss, sizeof(float), cudaMemcpyDeviceToHost));
    float lr = 3e-4f;
    adamw<<<(unsigned)((m.num_params + BLOCK - 1) / BLOCK), BLOCK>>>(m.params, m.grads, m.m, m.v, m.num_params, lr,
                                                                     0.9f, 0.999f, 1.0f, 1.0f, 1e-8f, 0.0f);
    CUDA_CHECK(cudaDeviceSynchronize());
    printf("step %d: loss %f\n", step, h_loss / (m.B * m.T));
  }
  cublasDestroy(handle);
  return 0;
}
