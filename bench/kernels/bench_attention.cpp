// attention_forward / backward, roberta-base heads (H = 12, D = 64).
//   Args: {B, T, real length L of every row, dropout ×100}
#include "bench_common.h"
#include "kernels/attention.h"

namespace rc::kernels {
namespace {

constexpr int64_t H = 12, D = 64, C = H * D;

void BM_attention_forward(benchmark::State& state) {
  const int64_t B = state.range(0), T = state.range(1), L = state.range(2);
  const float p = float(state.range(3)) / 100.0f;
  const ExecCtx ctx{};
  auto qkv = bench::randn(B * T * 3 * C, 1);
  std::vector<int32_t> lens(static_cast<size_t>(B), int32_t(L));
  std::vector<float> out(static_cast<size_t>(B * T * C)), probs(static_cast<size_t>(B * H * T * T));
  for (auto _ : state) {
    attention_forward(ctx, out.data(), probs.data(), qkv.data(), lens.data(), B, T, H, D, p, 1);
    benchmark::DoNotOptimize(out.data());
  }
  bench::set_rates(state, 4.0 * B * H * L * L * D, 4.0 * (B * T * 4 * C + B * H * T * T));
}

void BM_attention_forward_inference(benchmark::State& state) {
  const int64_t B = state.range(0), T = state.range(1), L = state.range(2);
  const ExecCtx ctx{};
  auto qkv = bench::randn(B * T * 3 * C, 1);
  std::vector<int32_t> lens(static_cast<size_t>(B), int32_t(L));
  std::vector<float> out(static_cast<size_t>(B * T * C));
  for (auto _ : state) {
    attention_forward(ctx, out.data(), nullptr, qkv.data(), lens.data(), B, T, H, D, 0.0f, 1);
    benchmark::DoNotOptimize(out.data());
  }
  bench::set_rates(state, 4.0 * B * H * L * L * D, 4.0 * B * T * 4 * C);
}

void BM_attention_backward(benchmark::State& state) {
  const int64_t B = state.range(0), T = state.range(1), L = state.range(2);
  const float p = float(state.range(3)) / 100.0f;
  const ExecCtx ctx{};
  auto qkv = bench::randn(B * T * 3 * C, 1), dout = bench::randn(B * T * C, 2);
  std::vector<int32_t> lens(static_cast<size_t>(B), int32_t(L));
  std::vector<float> out(static_cast<size_t>(B * T * C)), probs(static_cast<size_t>(B * H * T * T)), dqkv(qkv.size());
  attention_forward(ctx, out.data(), probs.data(), qkv.data(), lens.data(), B, T, H, D, p, 1);
  for (auto _ : state) {
    attention_backward(ctx, dqkv.data(), dout.data(), qkv.data(), probs.data(), lens.data(), B, T, H, D, p, 1);
    benchmark::DoNotOptimize(dqkv.data());
  }
  bench::set_rates(state, 8.0 * B * H * L * L * D, 4.0 * (B * T * 7 * C + B * H * T * T));
}

BENCHMARK(BM_attention_forward)->Args({32, 64, 64, 10})->Args({8, 128, 100, 0})->Args({1, 512, 512, 0})->UseRealTime();
BENCHMARK(BM_attention_forward_inference)
    ->Args({1, 32, 32, 0})
    ->Args({32, 64, 64, 0})
    ->Args({1, 512, 512, 0})
    ->UseRealTime();
BENCHMARK(BM_attention_backward)->Args({32, 64, 64, 10})->Args({8, 128, 100, 0})->UseRealTime();

}  // namespace
}  // namespace rc::kernels

RC_BENCH_MAIN()
