// layernorm / add_layernorm forward and backward at C = 768 (memory-bound: GB/s is the figure;
// ANCHORS.md: ~54 GB/s for data that stays in cache, ~28 GB/s from DRAM at 2 threads).
//   Args: {N = B·T, C}
#include "bench_common.h"
#include "kernels/layernorm.h"

namespace rc::kernels {
namespace {

void BM_layernorm_forward(benchmark::State& state) {
  const int64_t N = state.range(0), C = state.range(1);
  const ExecCtx ctx{};
  auto x = bench::randn(N * C, 1), g = bench::randn(C, 2), b = bench::randn(C, 3);
  std::vector<float> y(static_cast<size_t>(N * C)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
  for (auto _ : state) {
    layernorm_forward(ctx, y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N, C, 1e-5f);
    benchmark::DoNotOptimize(y.data());
  }
  bench::set_rates(state, 8.0 * N * C, 8.0 * N * C);
}

void BM_add_layernorm_forward(benchmark::State& state) {
  const int64_t N = state.range(0), C = state.range(1);
  const ExecCtx ctx{};
  auto x = bench::randn(N * C, 1), r = bench::randn(N * C, 4), g = bench::randn(C, 2), b = bench::randn(C, 3);
  std::vector<float> y(static_cast<size_t>(N * C)), sum(static_cast<size_t>(N * C)), mean(static_cast<size_t>(N)),
      rstd(static_cast<size_t>(N));
  for (auto _ : state) {
    add_layernorm_forward(ctx, y.data(), sum.data(), mean.data(), rstd.data(), x.data(), r.data(), g.data(), b.data(),
                          N, C, 1e-5f);
    benchmark::DoNotOptimize(y.data());
  }
  bench::set_rates(state, 9.0 * N * C, 16.0 * N * C);
}

void BM_layernorm_backward(benchmark::State& state) {
  const int64_t N = state.range(0), C = state.range(1);
  const ExecCtx ctx{};
  auto x = bench::randn(N * C, 1), g = bench::randn(C, 2), b = bench::randn(C, 3), dy = bench::randn(N * C, 4);
  std::vector<float> y(static_cast<size_t>(N * C)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
  layernorm_forward(ctx, y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N, C, 1e-5f);
  std::vector<float> dx(static_cast<size_t>(N * C)), dg(static_cast<size_t>(C)), db(static_cast<size_t>(C));
  for (auto _ : state) {
    layernorm_backward(ctx, dx.data(), dg.data(), db.data(), dy.data(), x.data(), g.data(), mean.data(), rstd.data(), N,
                       C);
    benchmark::DoNotOptimize(dx.data());
  }
  bench::set_rates(state, 14.0 * N * C, 12.0 * N * C);  // dy and x read (twice: grads pass), dx written
}

BENCHMARK(BM_layernorm_forward)->Args({32, 768})->Args({2048, 768})->Args({16384, 768})->UseRealTime();
BENCHMARK(BM_add_layernorm_forward)->Args({32, 768})->Args({2048, 768})->Args({16384, 768})->UseRealTime();
BENCHMARK(BM_layernorm_backward)->Args({2048, 768})->Args({16384, 768})->UseRealTime();

}  // namespace
}  // namespace rc::kernels

RC_BENCH_MAIN()
