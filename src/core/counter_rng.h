// The project's one random-number source: splitmix64 (Steele, Lea & Flood 2014, Vigna's
// constants), as a stream and as a counter-based hash. Weight init, dropout masks (CPU and
// CUDA kernels), masked-LM masking and the epoch order all derive from these functions, so a
// run is a pure function of its seed on any thread count, device, rank count or standard
// library. Host and device code include this header (RC_HOST_DEVICE); changing any constant
// changes every saved run's masks and data order, so don't.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define RC_HOST_DEVICE __host__ __device__
#else
#define RC_HOST_DEVICE
#endif

namespace rc::rng {

inline constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // 2^64 / φ, splitmix64's increment

// splitmix64's output function: a bijective 64-bit mix.
RC_HOST_DEVICE inline uint64_t finalize(uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next value of a splitmix64 stream.
RC_HOST_DEVICE inline uint64_t splitmix64(uint64_t& state) noexcept { return finalize(state += kGolden); }

// A splitmix64 stream with the draws the host code needs.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() noexcept { return splitmix64(state); }
  double uniform53() noexcept { return double(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  // Uniform in [0, n) (Lemire's multiply; the bias for n < 2^32 is below 2^-32).
  uint64_t below(uint64_t n) noexcept { return uint64_t((unsigned __int128)next() * n >> 64); }
};

// Seed of the derived stream `key` of `seed` (dropout sites, dropout rows): one splitmix64
// step from seed ^ key·(an odd constant).
RC_HOST_DEVICE inline uint64_t derive(uint64_t seed, uint64_t key) noexcept {
  uint64_t state = seed ^ (key * 0xD1B54A32D192ED03ull);
  return splitmix64(state);
}

// Element i of the counter stream `seed`, as 24 bits mapped to [0, 1): the dropout draw.
RC_HOST_DEVICE inline float uniform24(uint64_t seed, uint64_t i) noexcept {
  return float(finalize(seed * kGolden + i + 0x632BE59BD9B4E019ull) >> 40) * (1.0f / 16777216.0f);
}

// ---- dropout keys (kernels/dropout.h explains them) -----------------------------------
// The stream of global sample `row` under a site seed.
RC_HOST_DEVICE inline uint64_t dropout_row_seed(uint64_t site_seed, uint64_t row) noexcept {
  return derive(site_seed, row);
}
// Attention-probability element (head h, query i, key j) within its row's stream; the
// positions' bit fields do not depend on the padded length T (positions < 2^20, heads < 2^24).
RC_HOST_DEVICE inline uint64_t attention_dropout_index(int64_t h, int64_t i, int64_t j) noexcept {
  return (uint64_t(h) << 40) | (uint64_t(i) << 20) | uint64_t(j);
}

}  // namespace rc::rng
