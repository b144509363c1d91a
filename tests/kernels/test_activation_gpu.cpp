// CUDA activations, adds and casts (kernels/cuda/activation.cu) against kernels/ref:
// erf GELU forward/backward, tanh, gelu_new, ReLU, add, fp32 and bf16. Tolerances: STYLE.md starting values,
// not yet measured on a GPU; gpu-check.sh prints the "[measured]" errors.
#include "kernels/activation.h"
#include "kernels/gpu_test_util.h"

#if RC_WITH_CUDA
namespace {

using namespace rc::test::gpu;
namespace kc = rc::kernels::cuda;

constexpr rc::test::Tol kF32{1e-6, 1e-5};     // erff/expf ≤ 2 ulp vs double
constexpr rc::test::Tol kBf16{1e-2, 1.6e-2};  // output rounded to bf16

TEST(ActivationGpu, GeluErfForwardBackwardF32AndBf16) {
  RC_REQUIRE_GPU();
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(3 * 768 * 37 + 5)}) {
    const auto x = randn(n, 1, 3.0f), dy = randn(n, 2);
    std::vector<float> y(n), dx(n);
    rc::kernels::ref::gelu_erf_forward(y.data(), x.data(), n);
    rc::kernels::ref::gelu_erf_backward(dx.data(), dy.data(), x.data(), n);
    auto dxv = up(x), ddy = up(dy);
    Dev<float> dyo(n), ddx(n);
    rc::kernels::gelu_erf_forward(cuda_ctx(), dyo.data(), dxv.data(), n);
    rc::kernels::gelu_erf_backward(cuda_ctx(), ddx.data(), ddy.data(), dxv.data(), n);
    expect_close("gelu_fwd.f32." + std::to_string(n), down(dyo), y, kF32);
    expect_close("gelu_bwd.f32." + std::to_string(n), down(ddx), dx, kF32);
    // in place (y aliases x; dx aliases dy)
    rc::kernels::gelu_erf_backward(cuda_ctx(), ddy.data(), ddy.data(), dxv.data(), n);
    rc::kernels::gelu_erf_forward(cuda_ctx(), dxv.data(), dxv.data(), n);
    expect_close("gelu_fwd.f32.inplace", down(dxv), y, kF32);
    expect_close("gelu_bwd.f32.inplace", down(ddy), dx, kF32);

    const auto xr = round_bf16(x), dyr = round_bf16(dy);
    rc::kernels::ref::gelu_erf_forward(y.data(), xr.data(), n);
    rc::kernels::ref::gelu_erf_backward(dx.data(), dyr.data(), xr.data(), n);
    auto x16 = up(to_bf16(x)), dy16 = up(to_bf16(dy));
    Dev<kc::Bf16> y16(n), dx16(n);
    kc::gelu_erf_forward(y16.data(), x16.data(), n, nullptr);
    kc::gelu_erf_backward(dx16.data(), dy16.data(), x16.data(), n, nullptr);
    expect_close("gelu_fwd.bf16", to_f32(down(y16)), y, kBf16);
    expect_close("gelu_bwd.bf16", to_f32(down(dx16)), dx, kBf16);
  }
}

TEST(ActivationGpu, TanhAddAndCasts) {
  RC_REQUIRE_GPU();
  const int64_t n = 4099;
  const auto x = randn(n, 3, 2.0f), dy = randn(n, 4), b = randn(n, 5);
  std::vector<float> y(n), dx(n), s(n);
  rc::kernels::ref::tanh_forward(y.data(), x.data(), n);
  rc::kernels::ref::tanh_backward(dx.data(), dy.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i) s[i] = x[i] + b[i];
  auto dxv = up(x), ddy = up(dy), dbv = up(b), dyv = up(y);
  Dev<float> o1(n), o2(n), o3(n);
  rc::kernels::tanh_forward(cuda_ctx(), o1.data(), dxv.data(), n);
  rc::kernels::tanh_backward(cuda_ctx(), o2.data(), ddy.data(), dyv.data(), n);
  rc::kernels::add(cuda_ctx(), o3.data(), dxv.data(), dbv.data(), n);
  expect_close("tanh_fwd.f32", down(o1), y, kF32);
  expect_close("tanh_bwd.f32", down(o2), dx, kF32);
  expect_close("add.f32", down(o3), s, {0, 0});  // one fp32 add: exact

  Dev<kc::Bf16> h(n);
  kc::cast(h.data(), dxv.data(), n, nullptr);
  const auto bits = down(h);
  const auto want_bits = to_bf16(x);
  EXPECT_EQ(bits, want_bits);  // round-to-nearest-even, same as rc::f32_to_bf16
  Dev<float> back(n);
  kc::cast(back.data(), h.data(), n, nullptr);
  EXPECT_EQ(down(back), to_f32(want_bits));  // widening is exact
}

// The other encoder activations: gelu_new (tanh approximation) and ReLU (DistilBERT's head).
TEST(ActivationGpu, GeluTanhAndRelu) {
  RC_REQUIRE_GPU();
  const int64_t n = 4099;
  const auto x = randn(n, 6, 3.0f), dy = randn(n, 7);
  std::vector<float> g(n), dg(n), r(n), dr(n);
  rc::kernels::ref::gelu_tanh_forward(g.data(), x.data(), n);
  rc::kernels::ref::gelu_tanh_backward(dg.data(), dy.data(), x.data(), n);
  rc::kernels::ref::relu_forward(r.data(), x.data(), n);
  rc::kernels::ref::relu_backward(dr.data(), dy.data(), r.data(), n);
  auto dxv = up(x), ddy = up(dy), drv = up(r);
  Dev<float> o1(n), o2(n), o3(n), o4(n);
  rc::kernels::gelu_tanh_forward(cuda_ctx(), o1.data(), dxv.data(), n);
  rc::kernels::gelu_tanh_backward(cuda_ctx(), o2.data(), ddy.data(), dxv.data(), n);
  rc::kernels::relu_forward(cuda_ctx(), o3.data(), dxv.data(), n);
  rc::kernels::relu_backward(cuda_ctx(), o4.data(), ddy.data(), drv.data(), n);
  expect_close("gelu_tanh_fwd.f32", down(o1), g, kF32);
  expect_close("gelu_tanh_bwd.f32", down(o2), dg, kF32);
  expect_close("relu_fwd.f32", down(o3), r, {0, 0});  // a select: exact
  expect_close("relu_bwd.f32", down(o4), dr, {0, 0});
}

}  // namespace
#else
TEST(ActivationGpu, NotBuilt) { GTEST_SKIP() << "built without RC_WITH_CUDA"; }
#endif
