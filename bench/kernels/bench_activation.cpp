// gelu_erf forward/backward on the FFN activations (B·T × 3072).   Args: {n}
#include "bench_common.h"
#include "kernels/activation.h"

namespace rc::kernels {
namespace {

void BM_gelu_erf_forward(benchmark::State& state) {
  const int64_t n = state.range(0);
  const ExecCtx ctx{};
  auto x = bench::randn(n, 1, 2.0f);
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    gelu_erf_forward(ctx, y.data(), x.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  bench::set_rates(state, 20.0 * n, 8.0 * n);
}

void BM_gelu_erf_backward(benchmark::State& state) {
  const int64_t n = state.range(0);
  const ExecCtx ctx{};
  auto x = bench::randn(n, 1, 2.0f), dy = bench::randn(n, 2);
  std::vector<float> dx(static_cast<size_t>(n));
  for (auto _ : state) {
    gelu_erf_backward(ctx, dx.data(), dy.data(), x.data(), n);
    benchmark::DoNotOptimize(dx.data());
  }
  bench::set_rates(state, 30.0 * n, 12.0 * n);
}

BENCHMARK(BM_gelu_erf_forward)->Arg(32 * 3072)->Arg(2048 * 3072)->UseRealTime();
BENCHMARK(BM_gelu_erf_backward)->Arg(2048 * 3072)->UseRealTime();

}  // namespace
}  // namespace rc::kernels

RC_BENCH_MAIN()
