// CUDA LayerNorm (kernels/cuda/layernorm.cu) against kernels/ref/layernorm.cpp: forward,
// the fused residual + LayerNorm, backward with the += contract on dgamma/dbeta, fp32 and
// bf16 storage. Tolerances: STYLE.md starting values, not yet measured on a GPU (none was
// lent when written); gpu-check.sh prints "[measured]" lines to record beside them.
#include "kernels/gpu_test_util.h"
#include "kernels/layernorm.h"

#if RC_WITH_CUDA
namespace {

using namespace rc::test::gpu;
namespace kc = rc::kernels::cuda;

constexpr rc::test::Tol kLnF32{1e-5, 1e-5};     // fp32 sums vs double ref; expected ~1e-6
constexpr rc::test::Tol kLnBf16{2e-2, 1.6e-2};  // output rounded to bf16 (2^-8 relative)
const std::pair<int64_t, int64_t> kLayerNormShapes[] = {{1, 768}, {37, 768}, {5, 1000}, {300, 64}, {3, 1}};

TEST(LayerNormGpu, ForwardMatchesRefF32AndBf16) {
  RC_REQUIRE_GPU();
  for (auto [N, C] : kLayerNormShapes) {
    const auto x = randn(N * C, 1, 2.0f, 0.5f), g = randn(C, 2, 0.2f, 1.0f), b = randn(C, 3, 0.1f);
    std::vector<float> y(N * C), mean(N), rstd(N);
    rc::kernels::ref::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N, C, 1e-5f);
    auto dx = up(x), dg = up(g), db = up(b);
    Dev<float> dy(N * C), dm(N), dr(N);
    rc::kernels::layernorm_forward(cuda_ctx(), dy.data(), dm.data(), dr.data(), dx.data(), dg.data(), db.data(), N, C,
                                   1e-5f);
    const std::string tag = std::to_string(N) + "x" + std::to_string(C);
    expect_close("ln_fwd.f32.y." + tag, down(dy), y, kLnF32);
    expect_close("ln_fwd.f32.mean." + tag, down(dm), mean, kLnF32);
    expect_close("ln_fwd.f32.rstd." + tag, down(dr), rstd, {1e-5, 1e-4});

    const auto xr = round_bf16(x);
    rc::kernels::ref::layernorm_forward(y.data(), mean.data(), rstd.data(), xr.data(), g.data(), b.data(), N, C, 1e-5f);
    auto dx16 = up(to_bf16(x));
    Dev<kc::Bf16> dy16(N * C);
    kc::layernorm_forward(dy16.data(), dm.data(), dr.data(), dx16.data(), dg.data(), db.data(), N, C, 1e-5f, nullptr);
    expect_close("ln_fwd.bf16.y." + tag, to_f32(down(dy16)), y, kLnBf16);
    expect_close("ln_fwd.bf16.mean." + tag, down(dm), mean, kLnF32);
  }
}

TEST(LayerNormGpu, AddLayerNormEqualsAddThenLayerNorm) {
  RC_REQUIRE_GPU();
  const int64_t N = 41, C = 768;
  const auto x = randn(N * C, 4), r = randn(N * C, 5), g = randn(C, 6, 0.2f, 1.0f), b = randn(C, 7, 0.1f);
  std::vector<float> sum(N * C), y(N * C), mean(N), rstd(N);
  for (int64_t i = 0; i < N * C; ++i) sum[i] = x[i] + r[i];
  rc::kernels::ref::layernorm_forward(y.data(), mean.data(), rstd.data(), sum.data(), g.data(), b.data(), N, C, 1e-5f);
  auto dx = up(x), dr = up(r), dg = up(g), db = up(b);
  Dev<float> dsum(N * C), dm(N), drs(N);
  // y aliases x (allowed by the contract)
  rc::kernels::add_layernorm_forward(cuda_ctx(), dx.data(), dsum.data(), dm.data(), drs.data(), dx.data(), dr.data(),
                                     dg.data(), db.data(), N, C, 1e-5f);
  expect_close("add_ln.f32.sum", down(dsum), sum, {0, 0});  // one fp32 add: exact
  expect_close("add_ln.f32.y", down(dx), y, kLnF32);

  // bf16: sum is rounded when stored and normalised as stored
  const auto xr = round_bf16(x), rr = round_bf16(r);
  std::vector<float> sum16(N * C);
  for (int64_t i = 0; i < N * C; ++i) sum16[i] = xr[i] + rr[i];
  sum16 = round_bf16(sum16);
  rc::kernels::ref::layernorm_forward(y.data(), mean.data(), rstd.data(), sum16.data(), g.data(), b.data(), N, C,
                                      1e-5f);
  auto dx16 = up(to_bf16(x)), dr16 = up(to_bf16(r));
  Dev<kc::Bf16> dy16(N * C), dsum16(N * C);
  kc::add_layernorm_forward(dy16.data(), dsum16.data(), dm.data(), drs.data(), dx16.data(), dr16.data(), dg.data(),
                            db.data(), N, C, 1e-5f, nullptr);
  expect_close("add_ln.bf16.sum", to_f32(down(dsum16)), sum16, {0, 0});
  expect_close("add_ln.bf16.y", to_f32(down(dy16)), y, kLnBf16);
}

TEST(LayerNormGpu, BackwardMatchesRefAndAccumulatesParamGrads) {
  RC_REQUIRE_GPU();
  for (auto [N, C] : kLayerNormShapes) {
    const auto x = randn(N * C, 8, 1.5f), g = randn(C, 9, 0.2f, 1.0f), b = randn(C, 10), dyv = randn(N * C, 11);
    std::vector<float> y(N * C), mean(N), rstd(N), dx(N * C), dgam(C, 0.5f), dbet(C, -0.5f);
    rc::kernels::ref::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N, C, 1e-5f);
    for (int k = 0; k < 2; ++k)  // twice: dgamma/dbeta +=
      rc::kernels::ref::layernorm_backward(dx.data(), dgam.data(), dbet.data(), dyv.data(), x.data(), g.data(),
                                           mean.data(), rstd.data(), N, C);
    auto ddyv = up(dyv), dxv = up(x), dg = up(g), dm = up(mean), dr = up(rstd);
    Dev<float> ddx(N * C);
    auto ddgam = up(std::vector<float>(C, 0.5f)), ddbet = up(std::vector<float>(C, -0.5f));
    for (int k = 0; k < 2; ++k)
      rc::kernels::layernorm_backward(cuda_ctx(), ddx.data(), ddgam.data(), ddbet.data(), ddyv.data(), dxv.data(),
                                      dg.data(), dm.data(), dr.data(), N, C);
    const std::string tag = std::to_string(N) + "x" + std::to_string(C);
    expect_close("ln_bwd.f32.dx." + tag, down(ddx), dx, {1e-5, 1e-4});
    expect_close("ln_bwd.f32.dgamma." + tag, down(ddgam), dgam, {1e-4, 1e-4});  // sums over N rows
    expect_close("ln_bwd.f32.dbeta." + tag, down(ddbet), dbet, {1e-4, 1e-4});

    // bf16 dy/x/dx, fp32 params and grads
    const auto xr = round_bf16(x), dyr = round_bf16(dyv);
    std::vector<float> dx2(N * C), dgam2(C, 0.0f), dbet2(C, 0.0f);
    rc::kernels::ref::layernorm_backward(dx2.data(), dgam2.data(), dbet2.data(), dyr.data(), xr.data(), g.data(),
                                         mean.data(), rstd.data(), N, C);
    auto dx16 = up(to_bf16(x)), ddy16 = up(to_bf16(dyv));
    Dev<kc::Bf16> ddx16(N * C);
    auto dg2 = up(std::vector<float>(C, 0.0f)), db2 = up(std::vector<float>(C, 0.0f));
    kc::layernorm_backward(ddx16.data(), dg2.data(), db2.data(), ddy16.data(), dx16.data(), dg.data(), dm.data(),
                           dr.data(), N, C, nullptr);
    expect_close("ln_bwd.bf16.dx." + tag, to_f32(down(ddx16)), dx2, kLnBf16);
    expect_close("ln_bwd.bf16.dgamma." + tag, down(dg2), dgam2, {1e-4, 1e-4});
    expect_close("ln_bwd.bf16.dbeta." + tag, down(db2), dbet2, {1e-4, 1e-4});
  }
}

}  // namespace
#else
TEST(LayerNormGpu, NotBuilt) { GTEST_SKIP() << "built without RC_WITH_CUDA"; }
#endif
