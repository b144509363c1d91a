// Packed weight formats on a roberta-base-sized random model (HF init, N(0, 0.02), made in-process by
// RobertaModel::init_weights — the same distribution as tools/make_checkpoint.py --size base):
// bf16 and int8 logits against the fp32 forward.  Labelled `slow` (file name): ~0.5 GB of
// weights and a few seconds of fp32 forward.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/roberta_model.h"

namespace rc::model {
namespace {

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb + 1e-300);
}
int64_t argmax(const float* a, int64_t n) { return std::max_element(a, a + n) - a; }

TEST(PackedBase, Bf16AndInt8AgainstFp32) {
  RobertaConfig c = preset_config("base");
  c.id2label = {"negative", "neutral", "positive"};
  c.layer_norm_eps = 1e-5f;
  RobertaModel m(c);
  m.init_weights(3);
  const int64_t B = 8, T = 48, K = c.num_labels();
  std::vector<int32_t> ids(size_t(B * T), c.pad_token_id), lens(static_cast<size_t>(B));
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> tok(3, int32_t(c.vocab_size) - 1);
  for (int64_t b = 0; b < B; ++b) {
    const int32_t n = int32_t(T - 5 * b);
    lens[size_t(b)] = n;
    for (int32_t t = 0; t < n; ++t) ids[size_t(b * T + t)] = tok(rng);
    ids[size_t(b * T)] = c.bos_token_id;
    ids[size_t(b * T + n - 1)] = c.eos_token_id;
  }
  const Batch batch{B, T, ids.data(), lens.data(), nullptr};
  std::vector<float> want(size_t(B * K)), got(size_t(B * K));
  {
    InferenceWorkspace ws(c, B, T);
    forward_logits({}, m, batch, ws, want.data());
  }
  for (WeightFormat pr : {WeightFormat::bf16, WeightFormat::int8}) {
    m.set_weight_format(pr);
    InferenceWorkspace ws(c, B, T);
    forward_logits({}, m, batch, ws, got.data());
    double worst = 1;
    int64_t same = 0;
    for (int64_t b = 0; b < B; ++b) {
      worst = std::min(worst, cosine(got.data() + b * K, want.data() + b * K, K));
      same += argmax(got.data() + b * K, K) == argmax(want.data() + b * K, K);
    }
    std::printf("    %s vs fp32 (roberta-base size): worst per-row cosine %.6f, same argmax %ld/%ld\n",
                weight_format_name(pr), worst, long(same), long(B));
    if (pr == WeightFormat::bf16) {
      EXPECT_GE(worst, 0.999);  // measured 0.999971
      EXPECT_EQ(same, B);
    } else {
      EXPECT_GE(worst, 0.99);  // measured 0.999466 (8/8 same argmax)
    }
  }
}

}  // namespace
}  // namespace rc::model
