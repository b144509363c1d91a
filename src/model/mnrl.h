// sentence-transformers' MultipleNegativesRankingLoss (losses/MultipleNegativesRankingLoss.py)
// on a bare RobertaModel (HeadKind::encoder_only) with any single Pooling mode (the prompt
// included): one batch holds the
// anchors (rows 0..A-1) and the candidates (rows A..: the positives, one per anchor in order,
// then any hard negatives); scores = cos_sim(anchor, candidate) · scale, and the loss is the
// mean cross-entropy of each anchor against its own positive (in-batch negatives).
// A sentence-transformers model's Dense modules (models/Dense.py) run between the pooling and
// the cosine: their weights are trained too (dense_grad.h).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/exec_ctx.h"
#include "model/pooling.h"
#include "model/roberta_model.h"
#include "model/sentence_transformer.h"

namespace rc::model {

struct MnrlConfig {
  int64_t anchors = 0;                      // A: rows 0..A-1 are anchors, rows A..2A-1 their positives
  float scale = 20.0f;                      // MultipleNegativesRankingLoss's default
  PoolingMode pooling = PoolingMode::mean;  // any mode (pooling.h), every position < seq_len counted
  // The Dense modules after the pooling, in order (the first takes hidden_size features, each
  // the one before's); empty: none. Not owned.
  std::span<const DenseLayer> dense;
};

// The loss (its mean over anchors); gradients of (loss · loss_scale) ACCUMULATE into grads
// (the model's layout) and, with Dense modules, into dense_grads (dense_param_count floats:
// each layer's weight (out, in), then its bias, layer after layer). grads null: the loss only
// (eval, dropout 0). CPU only.
float mnrl_forward_backward(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                            const MnrlConfig& config, const DropoutConfig& dropout, uint64_t seed, float loss_scale,
                            float* grads, TrainWorkspace& ws, float* dense_grads = nullptr);

// The trainable floats of Dense modules, as dense_grads lays them out.
int64_t dense_param_count(std::span<const DenseLayer> dense);

}  // namespace rc::model
