// NEON attention core: the structure of avx512/attention.cpp (one task per (b, h) over the real
// length L only; every product one register-blocked micro-GEMM, here 4 rows × 16 columns in 16
// q-register accumulators):
//   forward:  S = scale·Q·Kᵀ (K packed transposed), softmax rows, out = dropout(P)·V,
//             16 query rows at a time so the scores stay in L1 when probs is null;
//   backward: dP' = dOut·Vᵀ, dS = P ⊙ (dP - rowsum(P ⊙ dP))·scale, dQ = dS·K, dK = dSᵀ·Q,
//             dV = P'ᵀ·dOut.
// Scratch: thread_local buffers grown on first use of a larger L: the only allocation here.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/neon/vec_math.h"
#include "kernels/dropout.h"

namespace rc::kernels::cpu::neon {

namespace {

inline float32x4_t load(const float* p, int64_t left) { return left >= 4 ? vld1q_f32(p) : load_partial(p, left); }
inline void store(float* p, float32x4_t v, int64_t left) {
  if (left >= 4)
    vst1q_f32(p, v);
  else
    store_partial(p, v, left);
}

// C(M×N) = alpha · A(M×K)·B(K×N), or C += that when acc_into. A(m, k) = a[m·ars + k·acs];
// B and C row-major with leading dims ldb, ldc.
template <int MR>
inline void micro(float* c, int64_t ldc, const float* a, int64_t ars, int64_t acs, const float* b, int64_t ldb,
                  int64_t N, int64_t K, float alpha, bool acc_into) {
  for (int64_t n0 = 0; n0 < N; n0 += 16) {
    const bool full = n0 + 16 <= N;
    int64_t nw[4];
    for (int u = 0; u < 4; ++u) nw[u] = N - n0 - 4 * u < 0 ? 0 : (N - n0 - 4 * u > 4 ? 4 : N - n0 - 4 * u);
    float32x4_t acc[MR][4];
    for (int r = 0; r < MR; ++r)
      for (int u = 0; u < 4; ++u) acc[r][u] = vdupq_n_f32(0.0f);
    const float* bp = b + n0;
    for (int64_t k = 0; k < K; ++k) {
      float32x4_t bv[4];
      if (full) {
        for (int u = 0; u < 4; ++u) bv[u] = vld1q_f32(bp + k * ldb + 4 * u);
      } else {
        for (int u = 0; u < 4; ++u) bv[u] = nw[u] ? load(bp + k * ldb + 4 * u, nw[u]) : vdupq_n_f32(0.0f);
      }
      for (int r = 0; r < MR; ++r) {
        const float32x4_t av = vdupq_n_f32(a[r * ars + k * acs]);
        for (int u = 0; u < 4; ++u) acc[r][u] = vfmaq_f32(acc[r][u], av, bv[u]);
      }
    }
    const float32x4_t va = vdupq_n_f32(alpha);
    for (int r = 0; r < MR; ++r)
      for (int u = 0; u < 4; ++u) {
        if (!nw[u]) continue;
        float* cp = c + r * ldc + n0 + 4 * u;
        float32x4_t v = vmulq_f32(acc[r][u], va);
        if (acc_into) v = vaddq_f32(v, load(cp, nw[u]));
        store(cp, v, nw[u]);
      }
  }
}

void gemm(float* c, int64_t ldc, const float* a, int64_t ars, int64_t acs, const float* b, int64_t ldb, int64_t M,
          int64_t N, int64_t K, float alpha, bool acc_into) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) micro<4>(c + m * ldc, ldc, a + m * ars, ars, acs, b, ldb, N, K, alpha, acc_into);
  switch (M - m) {
    case 3:
      micro<3>(c + m * ldc, ldc, a + m * ars, ars, acs, b, ldb, N, K, alpha, acc_into);
      break;
    case 2:
      micro<2>(c + m * ldc, ldc, a + m * ars, ars, acs, b, ldb, N, K, alpha, acc_into);
      break;
    case 1:
      micro<1>(c + m * ldc, ldc, a + m * ars, ars, acs, b, ldb, N, K, alpha, acc_into);
      break;
    default:
      break;
  }
}

float* grow(std::vector<float>& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
  return v.data();
}

// dst(D × L) = src rowsᵀ, src row j at src + j·ld.
void pack_transposed(float* dst, const float* src, int64_t ld, int64_t L, int64_t D) {
  for (int64_t j = 0; j < L; ++j)
    for (int64_t d = 0; d < D; ++d) dst[d * L + j] = src[j * ld + d];
}

// Row softmax in place over n entries (padding lanes of the tail: -inf for the max, 0 after exp).
void softmax_row(float* row, int64_t n) {
  float32x4_t mx = vdupq_n_f32(-INFINITY);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) mx = vmaxq_f32(mx, vld1q_f32(row + j));
  float m = vmaxvq_f32(mx);
  for (; j < n; ++j) m = row[j] > m ? row[j] : m;
  const float32x4_t vmax = vdupq_n_f32(m);
  float32x4_t sum = vdupq_n_f32(0.0f);
  for (j = 0; j < n; j += 4) {
    const int64_t left = n - j;
    float32x4_t e = exp_ps(vsubq_f32(load(row + j, left), vmax));
    if (left < 4) {
      static const uint32_t lane[4] = {0, 1, 2, 3};
      e = vbslq_f32(vcltq_u32(vld1q_u32(lane), vdupq_n_u32(uint32_t(left))), e, vdupq_n_f32(0.0f));
    }
    store(row + j, e, left);
    sum = vaddq_f32(sum, e);
  }
  const float32x4_t inv = vdupq_n_f32(1.0f / vaddvq_f32(sum));
  for (j = 0; j < n; j += 4) store(row + j, vmulq_f32(load(row + j, n - j), inv), n - j);
}

void zero(float* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 4) store(p + i, vdupq_n_f32(0.0f), n - i);
}

// dst[j] = src[j] · (kept(j) ? 1/(1-p) : 0) for attention-dropout element (h, i, j) of the
// row whose stream is row_seed (attention.h).
void apply_dropout(float* dst, const float* src, int64_t n, float p, uint64_t row_seed, int64_t h, int64_t i) {
  const float inv_keep = 1.0f / (1.0f - p);
  for (int64_t j = 0; j < n; ++j)
    dst[j] = dropout_uniform(row_seed, rng::attention_dropout_index(h, i, j)) >= p ? src[j] * inv_keep : 0.0f;
}

constexpr int64_t kQueryBlock = 16;

void forward_head(float* out, float* probs, const float* qkv, int64_t b, int64_t h, int64_t L, int64_t T, int64_t H,
                  int64_t D, float p, uint64_t row_seed) {
  const int64_t C = H * D, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));
  const float* q = qkv + b * T * C3 + h * D;
  const float* v = q + 2 * C;
  thread_local std::vector<float> kt_buf, s_buf, d_buf;
  float* kt = grow(kt_buf, D * L);
  pack_transposed(kt, q + C, C3, L, D);
  float* sbuf = probs ? nullptr : grow(s_buf, kQueryBlock * L);
  float* dbuf = p > 0.0f ? grow(d_buf, kQueryBlock * L) : nullptr;
  for (int64_t i0 = 0; i0 < L; i0 += kQueryBlock) {
    const int64_t mb = i0 + kQueryBlock <= L ? kQueryBlock : L - i0;
    float* s = probs ? probs + ((b * H + h) * T + i0) * T : sbuf;
    const int64_t lds = probs ? T : L;
    gemm(s, lds, q + i0 * C3, C3, 1, kt, L, mb, L, D, scale, false);
    for (int64_t r = 0; r < mb; ++r) {
      softmax_row(s + r * lds, L);
      if (probs) zero(s + r * lds + L, T - L);
      if (dbuf) apply_dropout(dbuf + r * L, s + r * lds, L, p, row_seed, h, i0 + r);
    }
    const float* pa = dbuf ? dbuf : s;
    const int64_t lda = dbuf ? L : lds;
    gemm(out + (b * T + i0) * C + h * D, C, pa, lda, 1, v, C3, mb, D, L, 1.0f, false);
  }
  for (int64_t i = L; i < T; ++i) {
    zero(out + (b * T + i) * C + h * D, D);
    if (probs) zero(probs + ((b * H + h) * T + i) * T, T);
  }
}

void backward_head(float* dqkv, const float* dout, const float* qkv, const float* probs, int64_t b, int64_t h,
                   int64_t L, int64_t T, int64_t H, int64_t D, float p, uint64_t row_seed) {
  const int64_t C = H * D, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));
  const float* q = qkv + b * T * C3 + h * D;
  const float* k = q + C;
  const float* v = q + 2 * C;
  const float* go = dout + b * T * C + h * D;
  const float* P = probs + (b * H + h) * T * T;  // row i at P + i·T
  float* dq = dqkv + b * T * C3 + h * D;
  float* dk = dq + C;
  float* dv = dq + 2 * C;
  for (int64_t t = L; t < T; ++t) {
    zero(dq + t * C3, D);
    zero(dk + t * C3, D);
    zero(dv + t * C3, D);
  }
  if (L == 0) return;
  thread_local std::vector<float> vt_buf, ds_buf, pd_buf, f_buf;
  float* vt = grow(vt_buf, D * L);
  float* ds = grow(ds_buf, L * L);
  float* pd = p > 0.0f ? grow(pd_buf, L * L) : nullptr;  // P' = dropout(P)
  float* f = p > 0.0f ? grow(f_buf, L) : nullptr;
  pack_transposed(vt, v, C3, L, D);
  gemm(ds, L, go, C, 1, vt, L, L, L, D, 1.0f, false);  // dP' = dOut·Vᵀ
  const float32x4_t vscale = vdupq_n_f32(scale);
  for (int64_t i = 0; i < L; ++i) {
    float* dsr = ds + i * L;
    const float* pr = P + i * T;
    if (p > 0.0f) {
      const float inv_keep = 1.0f / (1.0f - p);
      for (int64_t j = 0; j < L; ++j)
        f[j] = dropout_uniform(row_seed, rng::attention_dropout_index(h, i, j)) >= p ? inv_keep : 0.0f;
    }
    float32x4_t dot = vdupq_n_f32(0.0f);
    for (int64_t j = 0; j < L; j += 4) {
      const int64_t left = L - j;
      float32x4_t dp = load(dsr + j, left);
      const float32x4_t pv = load(pr + j, left);
      if (f) {
        const float32x4_t fv = load(f + j, left);
        dp = vmulq_f32(dp, fv);
        store(pd + i * L + j, vmulq_f32(pv, fv), left);
      }
      store(dsr + j, dp, left);
      dot = vfmaq_f32(dot, pv, dp);  // padding lanes: pv = 0
    }
    const float32x4_t vdot = vdupq_n_f32(vaddvq_f32(dot));
    for (int64_t j = 0; j < L; j += 4) {
      const int64_t left = L - j;
      const float32x4_t r = vmulq_f32(load(pr + j, left), vsubq_f32(load(dsr + j, left), vdot));
      store(dsr + j, vmulq_f32(r, vscale), left);
    }
  }
  gemm(dq, C3, ds, L, 1, k, C3, L, D, L, 1.0f, false);  // dQ = dS·K
  gemm(dk, C3, ds, 1, L, q, C3, L, D, L, 1.0f, false);  // dK = dSᵀ·Q
  if (pd)
    gemm(dv, C3, pd, 1, L, go, C, L, D, L, 1.0f, false);  // dV = P'ᵀ·dOut
  else
    gemm(dv, C3, P, 1, T, go, C, L, D, L, 1.0f, false);
}

}  // namespace

void attention_forward(float* out, float* probs, const float* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0) noexcept {
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      forward_head(out, probs, qkv, b, h, seq_lens[b], T, H, D, dropout_p,
                   rng::dropout_row_seed(seed, row0 + uint64_t(b)));
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed,
                        uint64_t row0) noexcept {
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      backward_head(dqkv, dout, qkv, probs, b, h, seq_lens[b], T, H, D, dropout_p,
                    rng::dropout_row_seed(seed, row0 + uint64_t(b)));
}

}  // namespace rc::kernels::cpu::neon

#endif  // __aarch64__
