// CUDA softmax / cross-entropy (kernels/cuda/loss.cu) against kernels/ref/loss.cpp.
// Tolerances: fp32 vs the double ref, not yet measured on a GPU.
#include "kernels/gpu_test_util.h"
#include "kernels/loss.h"

#if RC_WITH_CUDA
namespace {

using namespace rc::test::gpu;
namespace kc = rc::kernels::cuda;

TEST(LossGpu, SoftmaxCrossEntropyForwardBackwardMatchRef) {  // with and without label smoothing
  RC_REQUIRE_GPU();
  for (const float eps : {0.0f, 0.1f})  // label smoothing off and on
    for (auto [B, K] : {std::pair<int64_t, int64_t>{1, 2}, {16, 3}, {37, 20}, {5, 100}}) {
      const auto logits = randn(B * K, 1, 4.0f);
      std::vector<int32_t> labels(B);
      for (int64_t b = 0; b < B; ++b) labels[b] = b % 4 == 3 ? -100 : int32_t((b * 5 + 1) % K);  // -100: ignored
      std::vector<float> probs(B * K), losses(B), dl(B * K), sm(B * K);
      rc::kernels::ref::softmax_forward(sm.data(), logits.data(), B, K);
      rc::kernels::ref::cross_entropy_forward(losses.data(), probs.data(), logits.data(), labels.data(), B, K, eps);
      rc::kernels::ref::cross_entropy_backward(dl.data(), probs.data(), labels.data(), B, K, 1.0f / float(B), eps);
      auto dlog = up(logits);
      auto dlab = up(labels);
      Dev<float> dsm(B * K), dpr(B * K), dlo(B), ddl(B * K);
      rc::kernels::softmax_forward(cuda_ctx(), dsm.data(), dlog.data(), B, K);
      rc::kernels::cross_entropy_forward(cuda_ctx(), dlo.data(), dpr.data(), dlog.data(), dlab.data(), B, K, eps);
      rc::kernels::cross_entropy_backward(cuda_ctx(), ddl.data(), dpr.data(), dlab.data(), B, K, 1.0f / float(B), eps);
      const std::string tag = std::to_string(B) + "x" + std::to_string(K) + (eps > 0 ? ".smoothed" : "");
      expect_close("softmax." + tag, down(dsm), sm, {1e-6, 1e-5});
      expect_close("ce_probs." + tag, down(dpr), probs, {1e-6, 1e-5});
      expect_close("ce_loss." + tag, down(dlo), losses, {1e-5, 1e-5});
      expect_close("ce_dlogits." + tag, down(ddl), dl, {1e-6, 1e-5});
    }
}

TEST(LossGpu, PointwiseLossesMatchRef) {
  RC_REQUIRE_GPU();
  using rc::kernels::PointwiseLoss;
  for (PointwiseLoss kind : {PointwiseLoss::bce_with_logits, PointwiseLoss::squared_error})
    for (auto [B, K] : {std::pair<int64_t, int64_t>{1, 1}, {16, 3}, {37, 40}}) {
      const auto logits = randn(B * K, 3, 6.0f);
      auto targets = randn(B * K, 4, 1.0f);
      if (kind == PointwiseLoss::bce_with_logits)
        for (float& t : targets) t = t > 0 ? 1.0f : 0.0f;
      std::vector<float> losses(B), dl(B * K);
      rc::kernels::ref::pointwise_loss_forward(kind, losses.data(), logits.data(), targets.data(), B, K);
      rc::kernels::ref::pointwise_loss_backward(kind, dl.data(), logits.data(), targets.data(), B, K, 0.5f);
      auto dlog = up(logits);
      auto dtar = up(targets);
      Dev<float> dlo(B), ddl(B * K);
      rc::kernels::pointwise_loss_forward(cuda_ctx(), kind, dlo.data(), dlog.data(), dtar.data(), B, K);
      rc::kernels::pointwise_loss_backward(cuda_ctx(), kind, ddl.data(), dlog.data(), dtar.data(), B, K, 0.5f);
      const std::string tag = std::to_string(int(kind)) + "." + std::to_string(B) + "x" + std::to_string(K);
      expect_close("pointwise_loss." + tag, down(dlo), losses, {1e-5, 1e-5});
      expect_close("pointwise_dlogits." + tag, down(ddl), dl, {1e-6, 1e-5});
    }
}

}  // namespace
#else
TEST(LossGpu, NotBuilt) { GTEST_SKIP() << "built without RC_WITH_CUDA"; }
#endif
