// A BERT text-pair classifier trained and evaluated through the sequence-classification task:
// the data's pairs are tokenized with their token types (1 for the second text), collated into
// the training batch, and the loss and the token-type embeddings' gradient of one step, and the
// evaluation loss, equal the PyTorch reference's on HF's batch
// (tests/data/tiny_families/bert-seq-pair, tools/make_golden_families.py).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "support/bert_pair_case.h"
#include "train/task.h"

namespace rc {
namespace {

TEST(PairTaskParity, BertPairStepAndEvaluationMatchPyTorch) {
  const test::BertPairCase c;
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::classifier;
  auto m = model::load_checkpoint(c.dir, lo);
  const model::RobertaConfig& cfg = m->config();
  auto tok = Tokenizer::from_dir(c.dir);

  train::TextSplit split;
  split.name = "val";
  split.texts = c.texts;
  split.text_pairs = c.text_pairs;
  for (int32_t l : c.labels) {
    train::RawLabel r;
    r.id = l;
    split.labels.push_back(r);
  }
  const train::PreparedSplit p = train::prepare_split(split, {}, cfg.id2label, *tok, int(cfg.max_tokens()));
  auto task = train::sequence_classification_task(p, {p}, train::ProblemType::single_label, 0.5);

  train::TaskBatch tb;
  task->reserve(tb, c.B, c.T);
  std::vector<int64_t> idx(size_t(c.B));
  std::iota(idx.begin(), idx.end(), int64_t(0));
  task->collate(idx, 0, cfg.pad_token_id, tb);
  ASSERT_EQ(tb.pb.token_types, c.types);
  ASSERT_NE(tb.batch().token_types, nullptr);

  std::vector<float> grads(size_t(m->num_params()), 0.0f);
  model::TrainWorkspace ws(cfg, c.B, c.T, model::HeadKind::classifier);
  const float loss = model::forward_backward({}, *m, tb.batch(), task->targets(tb), model::DropoutConfig{}, 7, 1.0f,
                                             grads.data(), ws, nullptr);
  EXPECT_NEAR(loss, c.loss, 1e-5);
  // The token type embeddings' gradient: only the types the batch holds get one.
  const auto golden = io::open_safetensors(c.dir / "golden.safetensors");
  const std::string name = "bert.embeddings.token_type_embeddings.weight";
  const io::TensorInfo* want_info = golden->find("grad." + name);
  ASSERT_TRUE(want_info);
  std::vector<float> want(size_t(want_info->numel()));
  io::convert_to_f32(want_info->dtype, golden->data("grad." + name), want.data(), want_info->numel());
  const model::ParamEntry* e = nullptr;
  for (const model::ParamEntry& x : m->layout().entries())
    if (x.name == name) e = &x;
  ASSERT_TRUE(e);
  double scale = 1e-3, worst = 0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  for (int64_t i = 0; i < e->numel; ++i)
    worst = std::max(worst, std::fabs(double(grads[size_t(e->offset + i)]) - want[size_t(i)]) / scale);
  EXPECT_LE(worst, 1e-4);

  // Evaluation (batches of 3 and 1 rows, sorted by length) gives the batch's mean loss.
  model::InferenceWorkspace iws(cfg, c.B, c.T);
  const EvalResult r = task->evaluate({}, *m, "val", 3, iws);
  EXPECT_NEAR(r.loss, c.loss, 1e-5);
}

}  // namespace
}  // namespace rc
