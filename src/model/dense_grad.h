// The backward of sentence-transformers' Dense module (sentence_transformer.h: DenseLayer,
// models/Dense.py: activation(x·Wᵀ + b)): MultipleNegativesRankingLoss runs it to train a
// folder's Dense modules (mnrl.h).
#pragma once

#include <cstdint>

#include "model/sentence_transformer.h"

namespace rc::model {

// Given the forward's input x (rows, in) and the gradient of its output dy (rows, out):
// dW (out, in) and db (out) ACCUMULATED (db ignored when the layer has no bias, may be null
// then), dx (rows, in) OVERWRITTEN (null: not needed). Host memory; sums in double.
void dense_backward(const DenseLayer& dense, const float* x, int64_t rows, const float* dy, float* dx, float* dW,
                    float* db);

}  // namespace rc::model
