// Attention core (attention.h): scale + key mask + softmax + dropout + ·V over the real
// lengths only, fp32 math, fp32 or bf16 qkv/out, fp32 probs. One block per (query tile, h, b),
// one warp per query row; a warp's scores live in shared memory. Rows and columns at
// t >= seq_lens[b] cost nothing beyond writing their zeros.
//
// This is the straightforward CUDA-core version, correct first: dot products are per lane
// in fp32. The fast path for the MFU goal is a tensor-core kernel or cuDNN's fused SDPA
// behind the same launcher (docs/gpu.md, "what remains").
//
// Backward in two kernels, no atomics (deterministic):
//   rows (per query i):  dp_ij = f_ij·(dout_i·v_j), dot_i = Σ_j p_ij dp_ij (saved in the
//                        workspace), ds_ij = p_ij (dp_ij - dot_i)/√D, dq_i = Σ_j ds_ij k_j
//   cols (per key j):    dv_j = Σ_i p_ij f_ij dout_i,  dk_j = Σ_i ds_ij q_i
// with f_ij the dropout factor from the shared RNG (core/counter_rng.h): the stream of the
// row's global sample (row0 + b), index attention_dropout_index(h, i, j), as on the CPU.
#include "core/counter_rng.h"
#include "kernels/cuda/common.cuh"

namespace rc::kernels::cuda {

namespace {

// row_seed: rng::dropout_row_seed(seed, row0 + b), once per thread.
__device__ __forceinline__ float drop_factor(float p, float inv_keep, uint64_t row_seed, int64_t h, int64_t i,
                                             int64_t j) {
  if (p <= 0.0f) return 1.0f;
  return rng::uniform24(row_seed, rng::attention_dropout_index(h, i, j)) >= p ? inv_keep : 0.0f;
}

struct Dims {
  int64_t B, T, H, D;
  float scale, p, inv_keep;
  uint64_t seed, row0;
  __device__ uint64_t row_seed(int64_t b) const { return rng::dropout_row_seed(seed, row0 + uint64_t(b)); }
};

// smem per warp: scores[T] + q[D]
template <class T>
__global__ void attention_forward_kernel(T* out, float* probs, const T* qkv, const int32_t* seq_lens, Dims dm) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t b = blockIdx.z, h = blockIdx.y, i = blockIdx.x * int64_t(kAttnWarps) + warp;
  const int64_t Tn = dm.T, D = dm.D, C = dm.H * D, C3 = 3 * C;
  if (i >= Tn) return;
  float* sc = smem + warp * (Tn + D);
  float* qs = sc + Tn;
  const int64_t L = seq_lens[b];
  T* o = out + (b * Tn + i) * C + h * D;
  float* pr = probs ? probs + ((b * dm.H + h) * Tn + i) * Tn : nullptr;
  if (i >= L) {
    for (int64_t d = lane; d < D; d += kWarp) st(o + d, 0.0f);
    if (pr)
      for (int64_t j = lane; j < Tn; j += kWarp) pr[j] = 0.0f;
    return;
  }
  const T* q = qkv + (b * Tn + i) * C3 + h * D;
  for (int64_t d = lane; d < D; d += kWarp) qs[d] = ld(q + d);
  __syncwarp();
  float mx = -INFINITY;
  for (int64_t j = lane; j < L; j += kWarp) {
    const T* k = qkv + (b * Tn + j) * C3 + C + h * D;
    float s = 0.0f;
    for (int64_t d = 0; d < D; ++d) s += qs[d] * ld(k + d);
    s *= dm.scale;
    sc[j] = s;
    mx = fmaxf(mx, s);
  }
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int64_t j = lane; j < L; j += kWarp) {
    const float e = expf(sc[j] - mx);
    sc[j] = e;
    sum += e;
  }
  const float inv_sum = 1.0f / warp_sum(sum);
  const uint64_t row_seed = dm.row_seed(b);
  for (int64_t j = lane; j < Tn; j += kWarp) {
    const float pj = j < L ? sc[j] * inv_sum : 0.0f;
    if (pr) pr[j] = pj;  // saved BEFORE dropout
    if (j < L) sc[j] = pj * drop_factor(dm.p, dm.inv_keep, row_seed, h, i, j);
  }
  __syncwarp();
  for (int64_t d = lane; d < D; d += kWarp) {
    float acc = 0.0f;
    for (int64_t j = 0; j < L; ++j) acc += sc[j] * ld(qkv + (b * Tn + j) * C3 + 2 * C + h * D + d);
    st(o + d, acc);
  }
}

// Per query row: dot_i into `dots` (B,H,T), dq_i into dqkv. smem per warp: ds[T] + dout[D].
// Its prologue (which warp owns which row, its shared-memory slice) is the forward kernel's,
// alike on purpose: a device helper returning five values would read worse than the lines.
template <class T>
__global__ void attention_backward_rows_kernel(T* dqkv, float* dots, const T* dout, const T* qkv, const float* probs,
                                               const int32_t* seq_lens, Dims dm) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t b = blockIdx.z, h = blockIdx.y, i = blockIdx.x * int64_t(kAttnWarps) + warp;
  const int64_t Tn = dm.T, D = dm.D, C = dm.H * D, C3 = 3 * C;
  if (i >= Tn) return;
  float* ds = smem + warp * (Tn + D);
  float* go = ds + Tn;
  const int64_t L = seq_lens[b];
  T* dq = dqkv + (b * Tn + i) * C3 + h * D;
  if (i >= L) {
    for (int64_t d = lane; d < D; d += kWarp) st(dq + d, 0.0f);
    return;
  }
  const T* g = dout + (b * Tn + i) * C + h * D;
  for (int64_t d = lane; d < D; d += kWarp) go[d] = ld(g + d);
  __syncwarp();
  const int64_t row = (b * dm.H + h) * Tn + i;
  const float* pr = probs + row * Tn;
  const uint64_t row_seed = dm.row_seed(b);
  float dot = 0.0f;
  for (int64_t j = lane; j < L; j += kWarp) {
    const T* v = qkv + (b * Tn + j) * C3 + 2 * C + h * D;
    float s = 0.0f;
    for (int64_t d = 0; d < D; ++d) s += go[d] * ld(v + d);
    const float dp = s * drop_factor(dm.p, dm.inv_keep, row_seed, h, i, j);
    ds[j] = dp;
    dot += pr[j] * dp;
  }
  dot = warp_sum(dot);
  if (lane == 0) dots[row] = dot;
  for (int64_t j = lane; j < L; j += kWarp) ds[j] = pr[j] * (ds[j] - dot) * dm.scale;
  __syncwarp();
  for (int64_t d = lane; d < D; d += kWarp) {
    float acc = 0.0f;
    for (int64_t j = 0; j < L; ++j) acc += ds[j] * ld(qkv + (b * Tn + j) * C3 + C + h * D + d);
    st(dq + d, acc);
  }
}

// Per key row j: dk_j, dv_j. smem per warp: cv[T] (p·f), ck[T] (ds), v_j[D].
template <class T>
__global__ void attention_backward_cols_kernel(T* dqkv, const float* dots, const T* dout, const T* qkv,
                                               const float* probs, const int32_t* seq_lens, Dims dm) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t b = blockIdx.z, h = blockIdx.y, j = blockIdx.x * int64_t(kAttnWarps) + warp;
  const int64_t Tn = dm.T, D = dm.D, C = dm.H * D, C3 = 3 * C;
  if (j >= Tn) return;
  float* cv = smem + warp * (2 * Tn + D);
  float* ck = cv + Tn;
  float* vj = ck + Tn;
  const int64_t L = seq_lens[b];
  T* dk = dqkv + (b * Tn + j) * C3 + C + h * D;
  T* dv = dk + C;
  if (j >= L) {
    for (int64_t d = lane; d < D; d += kWarp) {
      st(dk + d, 0.0f);
      st(dv + d, 0.0f);
    }
    return;
  }
  const T* v = qkv + (b * Tn + j) * C3 + 2 * C + h * D;
  for (int64_t d = lane; d < D; d += kWarp) vj[d] = ld(v + d);
  __syncwarp();
  const int64_t head = (b * dm.H + h) * Tn;
  const uint64_t row_seed = dm.row_seed(b);
  for (int64_t i = lane; i < L; i += kWarp) {
    const T* g = dout + (b * Tn + i) * C + h * D;
    float s = 0.0f;
    for (int64_t d = 0; d < D; ++d) s += ld(g + d) * vj[d];
    const float f = drop_factor(dm.p, dm.inv_keep, row_seed, h, i, j);
    const float p = probs[(head + i) * Tn + j];
    cv[i] = p * f;
    ck[i] = p * (s * f - dots[head + i]) * dm.scale;
  }
  __syncwarp();
  for (int64_t d = lane; d < D; d += kWarp) {
    float acc_v = 0.0f, acc_k = 0.0f;
    for (int64_t i = 0; i < L; ++i) {
      acc_v += cv[i] * ld(dout + (b * Tn + i) * C + h * D + d);
      acc_k += ck[i] * ld(qkv + (b * Tn + i) * C3 + h * D + d);
    }
    st(dk + d, acc_k);
    st(dv + d, acc_v);
  }
}

Dims make_dims(int64_t B, int64_t T, int64_t H, int64_t D, float p, uint64_t seed, uint64_t row0) {
  return Dims{B, T, H, D, float(1.0 / std::sqrt(double(D))), p, p < 1.0f ? 1.0f / (1.0f - p) : 0.0f, seed, row0};
}

dim3 grid_of(int64_t B, int64_t T, int64_t H) {
  RC_CHECK(H <= kMaxGridY && B <= kMaxGridY, Errc::unsupported, "attention: B=", B, ", H=", H, " exceed 65535");
  return dim3(unsigned(ceil_div(T, kAttnWarps)), unsigned(H), unsigned(B));
}

size_t smem_checked(int64_t per_warp_floats, int64_t T) {
  const int64_t bytes = int64_t(kAttnWarps) * per_warp_floats * int64_t(sizeof(float));
  RC_CHECK(bytes <= kMaxSmemDefault, Errc::unsupported, "attention: T=", T, " needs ", bytes,
           " bytes of shared memory per block (limit ", kMaxSmemDefault,
           ")"
           "\nHINT: sequences up to ~1400 tokens are supported; RoBERTa's limit is 512");
  return size_t(bytes);
}

template <class T>
void forward(T* out, float* probs, const T* qkv, const int32_t* seq_lens, int64_t B, int64_t Tn, int64_t H, int64_t D,
             float p, uint64_t seed, uint64_t row0, void* stream) {
  if (B * Tn * H * D == 0) return;
  const size_t smem = smem_checked(Tn + D, Tn);
  attention_forward_kernel<T><<<grid_of(B, Tn, H), kAttnWarps * kWarp, smem, as_stream(stream)>>>(
      out, probs, qkv, seq_lens, make_dims(B, Tn, H, D, p, seed, row0));
  RC_CUDA_CHECK_LAUNCH();
}

template <class T>
void backward(T* dqkv, const T* dout, const T* qkv, const float* probs, const int32_t* seq_lens, int64_t B, int64_t Tn,
              int64_t H, int64_t D, float p, uint64_t seed, uint64_t row0, void* stream) {
  if (B * Tn * H * D == 0) return;
  const Dims dm = make_dims(B, Tn, H, D, p, seed, row0);
  float* dots = static_cast<float*>(workspace(Scratch::partials, size_t(B * H * Tn) * sizeof(float)));
  attention_backward_rows_kernel<T>
      <<<grid_of(B, Tn, H), kAttnWarps * kWarp, smem_checked(Tn + D, Tn), as_stream(stream)>>>(dqkv, dots, dout, qkv,
                                                                                               probs, seq_lens, dm);
  RC_CUDA_CHECK_LAUNCH();
  attention_backward_cols_kernel<T>
      <<<grid_of(B, Tn, H), kAttnWarps * kWarp, smem_checked(2 * Tn + D, Tn), as_stream(stream)>>>(
          dqkv, dots, dout, qkv, probs, seq_lens, dm);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace

void attention_forward(float* out, float* probs, const float* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float p, uint64_t seed, uint64_t row0, void* s) {
  forward<float>(out, probs, qkv, seq_lens, B, T, H, D, p, seed, row0, s);
}
void attention_forward(Bf16* out, float* probs, const Bf16* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float p, uint64_t seed, uint64_t row0, void* s) {
  forward<bf16>(as_bf16(out), probs, as_bf16(qkv), seq_lens, B, T, H, D, p, seed, row0, s);
}
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float p, uint64_t seed, uint64_t row0, void* s) {
  backward<float>(dqkv, dout, qkv, probs, seq_lens, B, T, H, D, p, seed, row0, s);
}
void attention_backward(Bf16* dqkv, const Bf16* dout, const Bf16* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float p, uint64_t seed, uint64_t row0, void* s) {
  backward<bf16>(as_bf16(dqkv), as_bf16(dout), as_bf16(qkv), probs, seq_lens, B, T, H, D, p, seed, row0, s);
}

}  // namespace rc::kernels::cuda
