// CUDA softmax / cross-entropy (kernels/cuda/loss.cu) against kernels/ref/loss.cpp.
// Tolerances: fp32 vs the double ref, not yet measured on a GPU.
#include "kernels/gpu_test_util.h"
#include "kernels/loss.h"

#if RC_WITH_CUDA
namespace {

using namespace rc::test::gpu;
namespace kc = rc::kernels::cuda;

TEST(LossGpu, SoftmaxCrossEntropyForwardBackwardMatchRef) {
  RC_REQUIRE_GPU();
  for (auto [B, K] : {std::pair<int64_t, int64_t>{1, 2}, {16, 3}, {37, 20}, {5, 100}}) {
    const auto logits = randn(B * K, 1, 4.0f);
    std::vector<int32_t> labels(B);
    for (int64_t b = 0; b < B; ++b) labels[b] = int32_t((b * 5 + 1) % K);
    std::vector<float> probs(B * K), losses(B), dl(B * K), sm(B * K);
    rc::kernels::ref::softmax_forward(sm.data(), logits.data(), B, K);
    rc::kernels::ref::cross_entropy_forward(losses.data(), probs.data(), logits.data(), labels.data(), B, K);
    rc::kernels::ref::cross_entropy_backward(dl.data(), probs.data(), labels.data(), B, K, 1.0f / float(B));
    auto dlog = up(logits);
    auto dlab = up(labels);
    Dev<float> dsm(B * K), dpr(B * K), dlo(B), ddl(B * K);
    rc::kernels::softmax_forward(cuda_ctx(), dsm.data(), dlog.data(), B, K);
    rc::kernels::cross_entropy_forward(cuda_ctx(), dlo.data(), dpr.data(), dlog.data(), dlab.data(), B, K);
    rc::kernels::cross_entropy_backward(cuda_ctx(), ddl.data(), dpr.data(), dlab.data(), B, K, 1.0f / float(B));
    const std::string tag = std::to_string(B) + "x" + std::to_string(K);
    expect_close("softmax." + tag, down(dsm), sm, {1e-6, 1e-5});
    expect_close("ce_probs." + tag, down(dpr), probs, {1e-6, 1e-5});
    expect_close("ce_loss." + tag, down(dlo), losses, {1e-5, 1e-5});
    expect_close("ce_dlogits." + tag, down(ddl), dl, {1e-6, 1e-5});
  }
}

}  // namespace
#else
TEST(LossGpu, NotBuilt) { GTEST_SKIP() << "built without RC_WITH_CUDA"; }
#endif
