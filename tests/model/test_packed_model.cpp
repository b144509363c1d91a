// The packed weight formats (bf16 / int8) of RobertaModel against its fp32 format on the golden tiny checkpoint:
// per-row logit cosine and argmax, padding invariance, the first-token-only last layer, and the Classifier routing of
// --precision.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "device/cpu_isa.h"
#include "device/device_choice.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "roberta/classifier.h"
#include "support/model_batches.h"

namespace rc::model {
namespace {

using test::batch_logits;
using test::Ids;
using test::random_batch;

const char* kTiny = RC_TEST_DATA_DIR "/tiny";

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb + 1e-300);
}
int64_t argmax(const float* a, int64_t n) { return std::max_element(a, a + n) - a; }

// The same parameters in another weight format (packed from the fp32 master).
std::unique_ptr<RobertaModel> with_format(const RobertaModel& m, WeightFormat f) {
  auto p = std::make_unique<RobertaModel>(m.config());
  p->copy_params_from_host(m.params());
  p->set_weight_format(f);
  EXPECT_EQ(p->weight_format(), f);
  return p;
}
std::vector<float> packed_logits(const RobertaModel& m, const Ids& in) { return batch_logits(m, in); }
const char* packed_precision_name(WeightFormat f) { return weight_format_name(f); }

TEST(WeightFormats, Bf16LogitsMatchFp32OnTheTinyCheckpoint) {
  const auto m = load_checkpoint(kTiny, {});
  const auto pm = with_format(*m, WeightFormat::bf16);
  const RobertaModel& p = *pm;
  EXPECT_GT(p.packed_bytes(), 0u);
  const int64_t K = m->config().num_labels();
  double worst = 1;
  int64_t rows = 0;
  for (auto [B, T] : {std::pair<int64_t, int64_t>{1, 1}, {1, 32}, {8, 17}, {32, 64}}) {
    const Ids in = random_batch(m->config(), B, T, uint64_t(B * 100 + T));
    const auto want = batch_logits(*m, in), got = packed_logits(p, in);
    for (int64_t b = 0; b < B; ++b, ++rows) {
      const double cs = cosine(got.data() + b * K, want.data() + b * K, K);
      worst = std::min(worst, cs);
      EXPECT_GE(cs, 0.999) << "row " << b << " of " << B << "x" << T;  // measured worst: see below
      EXPECT_EQ(argmax(got.data() + b * K, K), argmax(want.data() + b * K, K)) << "row " << b;
    }
  }
  // Measured worst cosine over these 42 rows: 0.99999 (printed for the record).
  std::printf("    bf16 vs fp32: worst per-row cosine %.7f over %ld rows\n", worst, long(rows));
}

TEST(WeightFormats, Int8AgreesWithFp32OnTheTinyCheckpoint) {
  const auto m = load_checkpoint(kTiny, {});
  const auto pm = with_format(*m, WeightFormat::int8);
  const RobertaModel& p = *pm;
  const int64_t K = m->config().num_labels();
  int64_t same = 0, rows = 0;
  double worst = 1;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const Ids in = random_batch(m->config(), 32, 40, 1000 + seed);
    const auto want = batch_logits(*m, in), got = packed_logits(p, in);
    for (int64_t b = 0; b < in.B; ++b, ++rows) {
      same += argmax(got.data() + b * K, K) == argmax(want.data() + b * K, K);
      worst = std::min(worst, cosine(got.data() + b * K, want.data() + b * K, K));
    }
  }
  std::printf("    int8 vs fp32: %ld/%ld same label, worst cosine %.5f\n", long(same), long(rows), worst);
  // Measured: 128/128 same label, worst cosine 0.99989.
  EXPECT_GE(double(same), 0.99 * double(rows));
  EXPECT_GE(worst, 0.99);
}

TEST(WeightFormats, PaddingAndBatchMatesDoNotChangeARow) {
  const auto m = load_checkpoint(kTiny, {});
  const int64_t K = m->config().num_labels();
  for (WeightFormat pr : {WeightFormat::bf16, WeightFormat::int8}) {
    const auto pm = with_format(*m, pr);
    const RobertaModel& p = *pm;
    const Ids in = random_batch(m->config(), 6, 24, 77);
    const auto batched = packed_logits(p, in);
    double worst = 0;
    for (int64_t b = 0; b < in.B; ++b) {
      const int64_t n = in.lens[size_t(b)];
      Ids one{std::vector<int32_t>(in.ids.begin() + b * in.T, in.ids.begin() + b * in.T + n), {int32_t(n)}, 1, n};
      const auto alone = packed_logits(p, one);
      for (int64_t k = 0; k < K; ++k) {
        // Measured 0 here (printed); 1e-4 leaves room for a GEMM whose blocking depends on M.
        EXPECT_NEAR(batched[size_t(b * K + k)], alone[size_t(k)], 1e-4)
            << packed_precision_name(pr) << " row " << b << " len " << n;
        worst = std::max(worst, double(std::fabs(batched[size_t(b * K + k)] - alone[size_t(k)])));
      }
    }
    std::printf("    %s: a row alone vs in a padded batch: max |Δ logit| %.3g\n", packed_precision_name(pr), worst);
  }
}

TEST(WeightFormats, BadBatchIsAnError) {
  const auto m = load_checkpoint(kTiny, {});
  const auto pm = with_format(*m, WeightFormat::bf16);
  const RobertaModel& p = *pm;
  InferenceWorkspace ws(m->config(), 2, 8);
  std::vector<int32_t> ids(16, 0), lens{8, 8};
  std::vector<float> out(2 * size_t(m->config().num_labels()));
  ids[3] = int32_t(m->config().vocab_size);  // outside the vocabulary
  EXPECT_THROW(forward_logits({}, p, Batch{2, 8, ids.data(), lens.data(), nullptr}, ws, out.data()), rc::Error);
  std::vector<int32_t> big(3 * 8, 0), big_lens{8, 8, 8};
  EXPECT_THROW(forward_logits({}, p, Batch{3, 8, big.data(), big_lens.data(), nullptr}, ws, out.data()), rc::Error);
}

// Training always reads the fp32 master (packed copies are derived state for inference):
// the same loss and gradients whatever the weight format, bit for bit.
TEST(WeightFormats, TrainingReadsTheFp32MasterInEveryFormat) {
  const auto m = load_checkpoint(kTiny, {});
  const Ids in = random_batch(m->config(), 4, 12, 5);
  const std::vector<int32_t> labels = {0, 1, 2, 1};
  const Batch batch{in.B, in.T, in.ids.data(), in.lens.data(), nullptr};
  TrainWorkspace ws(m->config(), in.B, in.T);
  std::vector<float> want(size_t(m->num_params())), got(size_t(m->num_params()));
  const float want_loss = forward_backward({}, *m, batch, labels.data(), {}, 3, 1.0f, want.data(), ws, nullptr);
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int8}) {
    const auto p = with_format(*m, f);
    std::fill(got.begin(), got.end(), 0.0f);
    EXPECT_EQ(forward_backward({}, *p, batch, labels.data(), {}, 3, 1.0f, got.data(), ws, nullptr), want_loss);
    EXPECT_EQ(got, want) << weight_format_name(f);
  }
  // And switching back to fp32 drops the packed copies.
  auto p = with_format(*m, WeightFormat::int8);
  EXPECT_GT(p->packed_bytes(), 0u);
  p->set_weight_format(WeightFormat::fp32);
  EXPECT_EQ(p->packed_bytes(), 0u);
  EXPECT_EQ(batch_logits(*p, in), batch_logits(*m, in));
}

// Without a GPU, asking for CUDA memory or a CUDA classifier is Errc::device (exit code 4).
TEST(WeightFormats, CudaWithoutADeviceIsADeviceError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  kernels::ExecCtx cuda;
  cuda.device = Device::cuda;
  auto m = load_checkpoint(kTiny, {});
  try {
    m->to_device(cuda);
    FAIL() << "to_device(cuda) succeeded without a device";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), Errc::device) << e.what();
  }
  EXPECT_EQ(m->device(), Device::cpu);  // unchanged: still usable on the CPU
  LoadOptions o;
  o.device = "cuda";
  try {
    Classifier::load(kTiny, o);
    FAIL() << "a CUDA classifier loaded without a device";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), Errc::device);
    EXPECT_NE(std::string(e.what()).find("no CUDA device found"), std::string::npos) << e.what();
  }
}

TEST(WeightFormats, ClassifierRoutesEveryPrecision) {
  const std::vector<std::string> texts = {"I love it", "this is terrible news", "ok", "what a day!! @user"};
  LoadOptions o;
  o.precision = Precision::fp32;
  const auto ref = Classifier::load(kTiny, o)->predict(texts);
  for (Precision pr : {Precision::bf16, Precision::int8}) {
    o.precision = pr;
    const auto clf = Classifier::load(kTiny, o);
    const Precision expect = pr == Precision::bf16 && !cpu_has_bf16() ? Precision::fp32 : pr;
    EXPECT_EQ(clf->info().precision, expect);
    const auto got = clf->predict(texts);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].label_id, ref[i].label_id) << precision_name(pr) << " text " << i;
      EXPECT_GE(cosine(got[i].logits.data(), ref[i].logits.data(), int64_t(ref[i].logits.size())), 0.99);
    }
  }
  EXPECT_EQ(default_precision(), cpu_has_bf16() ? Precision::bf16 : Precision::fp32);
}

}  // namespace
}  // namespace rc::model
