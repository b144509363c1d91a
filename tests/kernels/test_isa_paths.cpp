// Both CPU code paths in one binary: the portable cpu::generic:: kernels and the hand-vectorised
// cpu::avx512:: ones (when this CPU has AVX-512), each against the reference.  The op-family
// tests go through the dispatch, which picks one path per process (RC_CPU_ISA=generic forces
// the portable one); this file makes sure the other one is tested too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/layernorm.h"
#include "kernels/optimizer.h"

namespace rc::kernels {
namespace {

using test::randn;

enum class Path { generic, avx512 };

bool available(Path p) { return p == Path::generic || cpu::avx512::supported(); }

class IsaPath : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    if (!available(GetParam())) GTEST_SKIP() << "this CPU has no AVX-512";
  }
  bool avx() const { return GetParam() == Path::avx512; }
};

TEST_P(IsaPath, LayerNorm) {
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 768}, {37, 768}, {5, 1000}, {3, 7}}) {
    auto x = randn(N * C, 1, 2.0f, 3.0f), r = randn(N * C, 2), g = randn(C, 3, 0.5f, 1.0f), b = randn(C, 4),
         dy = randn(N * C, 5);
    std::vector<float> y(size_t(N * C)), sum(size_t(N * C)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
    std::vector<float> ry(size_t(N * C)), rmean(static_cast<size_t>(N)), rrstd(static_cast<size_t>(N));
    std::vector<float> xs(size_t(N * C));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = x[i] + r[i];
    ref::layernorm_forward(ry.data(), rmean.data(), rrstd.data(), xs.data(), g.data(), b.data(), N, C, 1e-5f);
    if (avx())
      cpu::avx512::add_layernorm_forward(y.data(), sum.data(), mean.data(), rstd.data(), x.data(), r.data(), g.data(),
                                         b.data(), N, C, 1e-5f);
    else
      cpu::generic::add_layernorm_forward(y.data(), sum.data(), mean.data(), rstd.data(), x.data(), r.data(), g.data(),
                                          b.data(), N, C, 1e-5f);
    EXPECT_EQ(sum, xs);
    RC_EXPECT_CLOSE(y.data(), ry.data(), N * C, (test::Tol{1e-5, 1e-5}));  // measured 4.3e-6
    std::vector<float> y2(size_t(N * C));
    if (avx())
      cpu::avx512::layernorm_forward(y2.data(), nullptr, nullptr, xs.data(), g.data(), b.data(), N, C, 1e-5f);
    else
      cpu::generic::layernorm_forward(y2.data(), nullptr, nullptr, xs.data(), g.data(), b.data(), N, C, 1e-5f);
    EXPECT_EQ(y2, y);

    std::vector<float> dx(size_t(N * C)), rdx(size_t(N * C)), dg(static_cast<size_t>(C), 1.0f), db = dg, rdg = dg,
        rdb = dg;
    ref::layernorm_backward(rdx.data(), rdg.data(), rdb.data(), dy.data(), xs.data(), g.data(), rmean.data(),
                            rrstd.data(), N, C);
    if (avx())
      cpu::avx512::layernorm_backward(dx.data(), dg.data(), db.data(), dy.data(), xs.data(), g.data(), rmean.data(),
                                      rrstd.data(), N, C);
    else
      cpu::generic::layernorm_backward(dx.data(), dg.data(), db.data(), dy.data(), xs.data(), g.data(), rmean.data(),
                                       rrstd.data(), N, C);
    RC_EXPECT_CLOSE(dx.data(), rdx.data(), N * C, (test::Tol{1e-5, 1e-5}));  // measured 4.8e-7
    RC_EXPECT_CLOSE(dg.data(), rdg.data(), C, (test::Tol{2e-5, 1e-5}));      // measured 2.9e-6
    RC_EXPECT_CLOSE(db.data(), rdb.data(), C, (test::Tol{2e-5, 1e-5}));      // measured 4.8e-6
  }
}

TEST_P(IsaPath, GeluErf) {
  for (int64_t n : {1, 17, 3072 * 5 + 3, 200000}) {
    auto x = randn(n, 6, 3.0f), dy = randn(n, 7);
    std::vector<float> y(static_cast<size_t>(n)), ry = y, dx = y, rdx = y;
    ref::gelu_erf_forward(ry.data(), x.data(), n);
    ref::gelu_erf_backward(rdx.data(), dy.data(), x.data(), n);
    if (avx()) {
      cpu::avx512::gelu_erf_forward(y.data(), x.data(), n);
      cpu::avx512::gelu_erf_backward(dx.data(), dy.data(), x.data(), n);
    } else {
      cpu::generic::gelu_erf_forward(y.data(), x.data(), n);
      cpu::generic::gelu_erf_backward(dx.data(), dy.data(), x.data(), n);
    }
    // measured max |Δ| 4.8e-7 on both paths (A&S erf on avx512); 1e-6 is the bound asked for
    RC_EXPECT_CLOSE(y.data(), ry.data(), n, (test::Tol{1e-6, 1e-6}));
    RC_EXPECT_CLOSE(dx.data(), rdx.data(), n, (test::Tol{2e-6, 1e-5}));  // measured 6.0e-7
  }
}

// A dense grid over GELU's whole interesting range, against std::erf in double.
TEST_P(IsaPath, GeluErfDenseGrid) {
  const int64_t n = 400001;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n)), ry(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -10.0f + 20.0f * float(i) / float(n - 1);
  ref::gelu_erf_forward(ry.data(), x.data(), n);
  if (avx())
    cpu::avx512::gelu_erf_forward(y.data(), x.data(), n);
  else
    cpu::generic::gelu_erf_forward(y.data(), x.data(), n);
  RC_EXPECT_CLOSE(y.data(), ry.data(), n, (test::Tol{1e-6, 0.0}));  // measured max |Δ| 4.8e-7 on both paths (1 ulp at |y| = 10)
}

TEST_P(IsaPath, Attention) {
  struct Case {
    int64_t B, T, H, D;
    std::vector<int32_t> lens;
    float p;
  };
  for (const Case& c : {Case{2, 7, 2, 5, {7, 3}, 0.0f}, Case{3, 33, 12, 64, {33, 1, 17}, 0.1f},
                        Case{1, 130, 2, 64, {129}, 0.0f}, Case{2, 9, 3, 16, {0, 9}, 0.2f}}) {
    const int64_t C = c.H * c.D, BT = c.B * c.T;
    auto qkv = randn(BT * 3 * C, 8, 1.5f), dout = randn(BT * C, 9);
    std::vector<float> out(size_t(BT * C), 3.0f), probs(size_t(c.B * c.H * c.T * c.T), 3.0f), rout(out.size()),
        rprobs(probs.size()), dqkv(qkv.size(), 3.0f), rdqkv(qkv.size());
    ref::attention_forward(rout.data(), rprobs.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 5);
    ref::attention_backward(rdqkv.data(), dout.data(), qkv.data(), rprobs.data(), c.lens.data(), c.B, c.T, c.H, c.D,
                            c.p, 5);
    if (avx()) {
      cpu::avx512::attention_forward(out.data(), probs.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 5);
      cpu::avx512::attention_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), c.lens.data(), c.B, c.T,
                                      c.H, c.D, c.p, 5);
    } else {
      cpu::generic::attention_forward(out.data(), probs.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p,
                                      5);
      cpu::generic::attention_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), c.lens.data(), c.B, c.T,
                                       c.H, c.D, c.p, 5);
    }
    RC_EXPECT_CLOSE(out.data(), rout.data(), BT * C, (test::Tol{2e-5, 1e-5}));                 // measured 3.9e-6
    RC_EXPECT_CLOSE(probs.data(), rprobs.data(), int64_t(probs.size()), (test::Tol{5e-6, 1e-5}));  // 6.6e-7
    RC_EXPECT_CLOSE(dqkv.data(), rdqkv.data(), int64_t(qkv.size()), (test::Tol{3e-5, 1e-5}));   // 3.6e-6
    std::vector<float> out2(out.size());
    if (avx())
      cpu::avx512::attention_forward(out2.data(), nullptr, qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 5);
    else
      cpu::generic::attention_forward(out2.data(), nullptr, qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 5);
    EXPECT_EQ(out2, out);
  }
}

TEST_P(IsaPath, AdamW) {
  const int64_t n = 50001;
  const std::vector<AdamWSegment> segs = {{0, 30000, true}, {30007, n - 30007, false}};
  auto p0 = randn(n, 10, 0.05f);
  std::vector<float> p = p0, rp = p0, m(static_cast<size_t>(n), 0.0f), v = m, rm = m, rv = m;
  AdamWHyper h;
  h.lr = 1e-3f;
  h.weight_decay = 0.01f;
  for (int64_t step = 1; step <= 3; ++step) {
    h.step = step;
    auto g = randn(n, 20 + uint64_t(step), 1e-2f);
    ref::adamw_step(rp.data(), g.data(), rm.data(), rv.data(), segs.data(), 2, h);
    if (avx())
      cpu::avx512::adamw_step(p.data(), g.data(), m.data(), v.data(), segs.data(), 2, h);
    else
      cpu::generic::adamw_step(p.data(), g.data(), m.data(), v.data(), segs.data(), 2, h);
  }
  RC_EXPECT_CLOSE(p.data(), rp.data(), n, (test::Tol{1e-7, 1e-6}));  // measured 4.5e-8
  RC_EXPECT_CLOSE(m.data(), rm.data(), n, (test::Tol{1e-9, 1e-6}));
}

INSTANTIATE_TEST_SUITE_P(Cpu, IsaPath, ::testing::Values(Path::generic, Path::avx512),
                         [](const auto& info) { return std::string(info.param == Path::generic ? "generic" : "avx512"); });

}  // namespace
}  // namespace rc::kernels
