// The kernels that need Armv8.6 BF16 (compiled with -march=armv8.2-a+bf16+i8mm, called only when
// rc::cpu_use_arm_bf16_i8mm()):
//   - fp32 → bf16 with BFCVTN, one instruction per 4 lanes instead of the seven integer
//     operations of the plain-NEON rounding;
//   - the packed bf16 linear y = x·Wᵀ (+ bias) on BFMMLA: each instruction multiplies a 2×4 bf16
//     block of x by a 4×2 block of Wᵀ into a 2×2 fp32 accumulator (16 MACs); the micro-kernel
//     holds 4 × 4 of them (8 rows × 8 columns of y), loading 4 + 4 q-registers per 16 BFMMLAs.
//     Layout (both operands): pairs of rows, K in steps of 4, the 8 bf16 of a step contiguous
//     (row r: k..k+3, then row r+1: k..k+3); K padded to a multiple of 4, rows to even, with 0.
//   - the packed int8 GEMM on SMMLA (I8MM): the same tiling with int8 and K in steps of 8
//     (2×8 · 8×2 → 2×2 int32, 32 MACs per instruction); int32 sums are exact, so the result is
//     the portable loop's bit for bit.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/neon/neon_kernels.h"
#include "tensor/bf16.h"

namespace rc::kernels::cpu::neon {

void convert_f32_to_bf16_bfcvt(uint16_t* dst, const float* src, int64_t n) noexcept {
  const int64_t blocks = n / 8;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 8;
    // BFCVTN/BFCVTN2: round to nearest even (FPCR.RMode is RNE for user code), NaN quietened.
    const bfloat16x8_t lo = vcvtq_low_bf16_f32(vld1q_f32(src + i));
    vst1q_u16(dst + i, vreinterpretq_u16_bf16(vcvtq_high_bf16_f32(lo, vld1q_f32(src + i + 4))));
  }
  for (int64_t i = blocks * 8; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

namespace {

inline int64_t k_padded(int64_t K) { return (K + 3) & ~int64_t(3); }

// Rows [r0, r0 + 2·pairs) of a row-major (rows × K) matrix into the pair layout; rows past
// `rows` and columns past K are 0. T is float or uint16_t (bf16 bits).
template <class T>
void pack_pairs(uint16_t* dst, const T* src, int64_t rows, int64_t K, int64_t r0, int64_t pairs) {
  const int64_t Kp = k_padded(K);
  for (int64_t p = 0; p < pairs; ++p) {
    uint16_t* d = dst + p * Kp * 2;
    for (int r = 0; r < 2; ++r) {
      const int64_t row = r0 + 2 * p + r;
      for (int64_t k4 = 0; k4 < Kp; k4 += 4)
        for (int64_t kk = 0; kk < 4; ++kk) {
          const int64_t k = k4 + kk;
          uint16_t v = 0;
          if (row < rows && k < K) {
            if constexpr (sizeof(T) == 4)
              v = f32_to_bf16(src[row * K + k]);
            else
              v = src[row * K + k];
          }
          d[k4 * 2 + r * 4 + kk] = v;
        }
    }
  }
}

// y rows [0, m_valid) (≤ 8) × columns [n0, n0 + 2·NB) ∩ [0, N) from 4 packed x pairs and NB
// packed W pairs.
template <int NB>
inline void tile(float* y, int64_t ldy, const uint16_t* a, const uint16_t* b, int64_t Kp, int64_t m_valid, int64_t n0,
                 int64_t N, const float* bias) {
  float32x4_t acc[4][NB];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < NB; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  for (int64_t k4 = 0; k4 < Kp; k4 += 4) {
    bfloat16x8_t av[4], bv[NB];
    for (int i = 0; i < 4; ++i) av[i] = vld1q_bf16(reinterpret_cast<const bfloat16_t*>(a + (i * Kp + k4) * 2));
    for (int j = 0; j < NB; ++j) bv[j] = vld1q_bf16(reinterpret_cast<const bfloat16_t*>(b + (j * Kp + k4) * 2));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < NB; ++j) acc[i][j] = vbfmmlaq_f32(acc[i][j], av[i], bv[j]);
  }
  // acc[i][j] = [y(2i, 2j), y(2i, 2j+1), y(2i+1, 2j), y(2i+1, 2j+1)].
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 2; ++r) {
      const int64_t m = 2 * i + r;
      if (m >= m_valid) return;
      float* yr = y + m * ldy;
      for (int j = 0; j < NB; ++j) {
        const int64_t n = n0 + 2 * j;
        float32x2_t v = r == 0 ? vget_low_f32(acc[i][j]) : vget_high_f32(acc[i][j]);
        if (n + 1 < N) {
          if (bias) v = vadd_f32(v, vld1_f32(bias + n));
          vst1_f32(yr + n, v);
        } else if (n < N) {
          yr[n] = vget_lane_f32(v, 0) + (bias ? bias[n] : 0.0f);
        }
      }
    }
}

template <class T>
void linear_bfmmla(float* y, const T* x, const uint16_t* wp, const float* bias, int64_t M, int64_t N, int64_t K) {
  const int64_t Kp = k_padded(K);
  const int64_t m_blocks = (M + 7) / 8;
  // x packed once (4 pairs per 8-row block), shared by every task.
  thread_local std::vector<uint16_t> xp_buf;
  if (int64_t(xp_buf.size()) < m_blocks * 8 * Kp) xp_buf.resize(size_t(m_blocks * 8 * Kp));
  uint16_t* xp = xp_buf.data();
  const bool par = M * N * K >= (int64_t(1) << 18);
#pragma omp parallel for schedule(static) if (par)
  for (int64_t mb = 0; mb < m_blocks; ++mb) pack_pairs(xp + mb * 8 * Kp, x, M, K, mb * 8, 4);
  constexpr int64_t kChunk = 64;  // columns per task: 8 tiles of 8
  const int64_t n_chunks = (N + kChunk - 1) / kChunk;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t nc = 0; nc < n_chunks; ++nc)
    for (int64_t mb = 0; mb < m_blocks; ++mb) {
      const uint16_t* a = xp + mb * 8 * Kp;
      float* yb = y + mb * 8 * N;
      const int64_t m_valid = std::min<int64_t>(8, M - mb * 8);
      for (int64_t n0 = nc * kChunk; n0 < std::min(N, (nc + 1) * kChunk); n0 += 8) {
        const uint16_t* b = wp + (n0 / 2) * Kp * 2;
        switch (std::min<int64_t>(4, (N - n0 + 1) / 2)) {
          case 4:
            tile<4>(yb, N, a, b, Kp, m_valid, n0, N, bias);
            break;
          case 3:
            tile<3>(yb, N, a, b, Kp, m_valid, n0, N, bias);
            break;
          case 2:
            tile<2>(yb, N, a, b, Kp, m_valid, n0, N, bias);
            break;
          default:
            tile<1>(yb, N, a, b, Kp, m_valid, n0, N, bias);
            break;
        }
      }
    }
}

inline int64_t k_padded8(int64_t K) { return (K + 7) & ~int64_t(7); }

void pack_pairs_s8(int8_t* dst, const int8_t* src, int64_t rows, int64_t K, int64_t r0, int64_t pairs) {
  const int64_t Kp = k_padded8(K);
  for (int64_t p = 0; p < pairs; ++p) {
    int8_t* d = dst + p * Kp * 2;
    for (int r = 0; r < 2; ++r) {
      const int64_t row = r0 + 2 * p + r;
      for (int64_t k8 = 0; k8 < Kp; k8 += 8)
        for (int64_t kk = 0; kk < 8; ++kk) {
          const int64_t k = k8 + kk;
          d[k8 * 2 + r * 8 + kk] = row < rows && k < K ? src[row * K + k] : int8_t(0);
        }
    }
  }
}

// The walk of tile() above over SMMLA instead of BFMMLA. Kept apart on purpose (a `duplicates`
// pair): element type, k-step (8 int8 vs 4 bf16 per lane pair) and epilogue (exact int32, no
// bias, vs fp32 + bias) differ in nearly every line, so one template would need a trait per line.
template <int NB>
inline void tile_s8(int32_t* c, int64_t ldc, const int8_t* a, const int8_t* b, int64_t Kp, int64_t m_valid, int64_t n0,
                    int64_t N) {
  int32x4_t acc[4][NB];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < NB; ++j) acc[i][j] = vdupq_n_s32(0);
  for (int64_t k8 = 0; k8 < Kp; k8 += 8) {
    int8x16_t av[4], bv[NB];
    for (int i = 0; i < 4; ++i) av[i] = vld1q_s8(a + (i * Kp + k8) * 2);
    for (int j = 0; j < NB; ++j) bv[j] = vld1q_s8(b + (j * Kp + k8) * 2);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < NB; ++j) acc[i][j] = vmmlaq_s32(acc[i][j], av[i], bv[j]);
  }
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 2; ++r) {
      const int64_t m = 2 * i + r;
      if (m >= m_valid) return;
      int32_t* cr = c + m * ldc;
      for (int j = 0; j < NB; ++j) {
        const int64_t n = n0 + 2 * j;
        const int32x2_t v = r == 0 ? vget_low_s32(acc[i][j]) : vget_high_s32(acc[i][j]);
        if (n + 1 < N)
          vst1_s32(cr + n, v);
        else if (n < N)
          cr[n] = vget_lane_s32(v, 0);
      }
    }
}

}  // namespace

int64_t smmla_packed_size(int64_t N, int64_t K) noexcept { return ((N + 1) / 2) * 2 * k_padded8(K); }

void pack_smmla_weights(int8_t* dst, const int8_t* wq, int64_t N, int64_t K) noexcept {
  const int64_t pairs = (N + 1) / 2, Kp = k_padded8(K);
#pragma omp parallel for schedule(static) if (N * K >= (1 << 16))
  for (int64_t p = 0; p < pairs; ++p) pack_pairs_s8(dst + p * 2 * Kp, wq, N, K, 2 * p, 1);
}

void gemm_s8_smmla(int32_t* acc, const int8_t* xq, const int8_t* wp, int64_t M, int64_t N, int64_t K) noexcept {
  const int64_t Kp = k_padded8(K);
  const int64_t m_blocks = (M + 7) / 8;
  thread_local std::vector<int8_t> xp_buf;
  if (int64_t(xp_buf.size()) < m_blocks * 8 * Kp) xp_buf.resize(size_t(m_blocks * 8 * Kp));
  int8_t* xp = xp_buf.data();
  const bool par = M * N * K >= (int64_t(1) << 18);
#pragma omp parallel for schedule(static) if (par)
  for (int64_t mb = 0; mb < m_blocks; ++mb) pack_pairs_s8(xp + mb * 8 * Kp, xq, M, K, mb * 8, 4);
  constexpr int64_t kChunk = 64;
  const int64_t n_chunks = (N + kChunk - 1) / kChunk;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t nc = 0; nc < n_chunks; ++nc)
    for (int64_t mb = 0; mb < m_blocks; ++mb) {
      const int8_t* a = xp + mb * 8 * Kp;
      int32_t* cb = acc + mb * 8 * N;
      const int64_t m_valid = std::min<int64_t>(8, M - mb * 8);
      for (int64_t n0 = nc * kChunk; n0 < std::min(N, (nc + 1) * kChunk); n0 += 8) {
        const int8_t* b = wp + (n0 / 2) * Kp * 2;
        switch (std::min<int64_t>(4, (N - n0 + 1) / 2)) {
          case 4:
            tile_s8<4>(cb, N, a, b, Kp, m_valid, n0, N);
            break;
          case 3:
            tile_s8<3>(cb, N, a, b, Kp, m_valid, n0, N);
            break;
          case 2:
            tile_s8<2>(cb, N, a, b, Kp, m_valid, n0, N);
            break;
          default:
            tile_s8<1>(cb, N, a, b, Kp, m_valid, n0, N);
            break;
        }
      }
    }
}

int64_t bfmmla_packed_size(int64_t N, int64_t K) noexcept { return ((N + 1) / 2) * 2 * k_padded(K); }

void pack_bfmmla_weights(uint16_t* dst, const float* w, int64_t N, int64_t K) noexcept {
  const int64_t pairs = (N + 1) / 2, Kp = k_padded(K);
#pragma omp parallel for schedule(static) if (N * K >= (1 << 16))
  for (int64_t p = 0; p < pairs; ++p) pack_pairs(dst + p * 2 * Kp, w, N, K, 2 * p, 1);
}

void linear_bf16_bfmmla(float* y, const float* x, const uint16_t* wp, const float* bias, int64_t M, int64_t N,
                        int64_t K) noexcept {
  linear_bfmmla(y, x, wp, bias, M, N, K);
}

void linear_bf16_bfmmla_bf16in(float* y, const uint16_t* x, const uint16_t* wp, const float* bias, int64_t M, int64_t N,
                               int64_t K) noexcept {
  linear_bfmmla(y, x, wp, bias, M, N, K);
}

}  // namespace rc::kernels::cpu::neon

#endif  // __aarch64__
