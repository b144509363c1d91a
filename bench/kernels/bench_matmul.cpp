// matmul_nt / nn / tn at roberta-base shapes, fp32 and bf16 (ANCHORS.md: oneDNN fp32
// ~330-400 GFLOP/s, bf16 ~2000 at 2 threads with pre-packed weights).
//   Args: {M, N, K, precision (0 fp32, 1 bf16)}
#include "bench_common.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"

namespace rc::kernels {
namespace {

MatmulPrecision prec_of(int64_t v) { return v ? MatmulPrecision::bf16 : MatmulPrecision::fp32; }

// The three matmul benchmarks share all but the call: sizes and precision from the Args,
// an (M, N) output, the timing loop and the rates (2·M·N·K FLOP; `bytes` moved per call).
struct Gemm {
  int64_t M, N, K;
  ExecCtx ctx;
  std::vector<float> y;
  explicit Gemm(const benchmark::State& state)
      : M(state.range(0)),
        N(state.range(1)),
        K(state.range(2)),
        ctx{Device::cpu, prec_of(state.range(3))},
        y(static_cast<size_t>(M * N)) {}
  template <class Call>
  void time(benchmark::State& state, double bytes, Call&& call) {
    for (auto _ : state) {
      call();
      benchmark::DoNotOptimize(y.data());
    }
    bench::set_rates(state, 2.0 * M * N * K, bytes);
  }
};

void BM_matmul_nt(benchmark::State& state) {  // y = x · Wᵀ + b
  Gemm g(state);
  auto x = bench::randn(g.M * g.K, 1), w = bench::randn(g.N * g.K, 2), b = bench::randn(g.N, 3);
  g.time(state, 4.0 * (g.M * g.K + g.N * g.K + g.M * g.N),
         [&] { matmul_nt(g.ctx, g.y.data(), x.data(), w.data(), b.data(), g.M, g.N, g.K); });
}

void BM_matmul_nn(benchmark::State& state) {  // dx = dy · W: (M, K_in) = (M, N_out) · (N_out, K_in)
  Gemm g(state);
  auto x = bench::randn(g.M * g.K, 1), w = bench::randn(g.K * g.N, 2);
  g.time(state, 4.0 * (g.M * g.K + g.N * g.K + g.M * g.N),
         [&] { matmul_nn(g.ctx, g.y.data(), x.data(), w.data(), g.M, g.N, g.K, false); });
}

void BM_matmul_tn(benchmark::State& state) {  // dW += dyᵀ · x, accumulating
  Gemm g(state);
  auto a = bench::randn(g.K * g.M, 1), b = bench::randn(g.K * g.N, 2);
  g.time(state, 4.0 * (g.M * g.K + g.N * g.K + 2 * g.M * g.N),
         [&] { matmul_tn(g.ctx, g.y.data(), a.data(), b.data(), g.M, g.N, g.K, true); });
}

// Inference with weights packed once (kernels/linear.h).  Args: {M, N, K, bf16, gelu}
void BM_linear_forward(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const ExecCtx ctx{};
  auto x = bench::randn(M * K, 1), w = bench::randn(N * K, 2), b = bench::randn(N, 3);
  const PackedLinear packed = PackedLinear::pack(w.data(), N, K, state.range(3) ? PackedType::bf16 : PackedType::f32);
  const Epilogue ep = state.range(4) ? Epilogue::gelu_erf : Epilogue::none;
  std::vector<float> y(static_cast<size_t>(M * N));
  for (auto _ : state) {
    linear_forward(ctx, y.data(), x.data(), packed, b.data(), M, ep);
    benchmark::DoNotOptimize(y.data());
  }
  bench::set_rates(state, 2.0 * M * N * K, double(packed.packed_bytes()) + 4.0 * (M * K + M * N));
}

void forward_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t prec : {0, 1})
    for (int64_t M : {32, 2048})
      for (auto [N, K] : {std::pair<int64_t, int64_t>{768, 768}, {2304, 768}, {3072, 768}, {768, 3072}})
        b->Args({M, N, K, prec});
}
void backward_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t prec : {0, 1})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{768, 768}, {768, 2304}, {768, 3072}, {3072, 768}})
      b->Args({2048, N, K, prec});
}
void weight_grad_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t prec : {0, 1})
    for (auto [M, N] : {std::pair<int64_t, int64_t>{768, 768}, {2304, 768}, {3072, 768}, {768, 3072}})
      b->Args({M, N, 2048, prec});
}

BENCHMARK(BM_matmul_nt)->Apply(forward_shapes)->ArgNames({"M", "N", "K", "bf16"})->UseRealTime();
BENCHMARK(BM_linear_forward)
    ->Args({32, 768, 768, 0, 0})
    ->Args({32, 768, 768, 1, 0})
    ->Args({32, 3072, 768, 1, 1})
    ->Args({32, 768, 3072, 1, 0})
    ->Args({2048, 768, 768, 1, 0})
    ->Args({2048, 3072, 768, 1, 1})
    ->ArgNames({"M", "N", "K", "bf16", "gelu"})
    ->UseRealTime();
BENCHMARK(BM_matmul_nn)->Apply(backward_shapes)->ArgNames({"M", "N", "K", "bf16"})->UseRealTime();
BENCHMARK(BM_matmul_tn)->Apply(weight_grad_shapes)->ArgNames({"M", "N", "K", "bf16"})->UseRealTime();

}  // namespace
}  // namespace rc::kernels

RC_BENCH_MAIN()
