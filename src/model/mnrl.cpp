// MultipleNegativesRankingLoss (mnrl.h) as a HiddenHead (roberta_model.h): pooling, cosine
// scores and cross-entropy forward on the final hidden states, and their backward to them.
#include "model/mnrl.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "model/dense_grad.h"

namespace rc::model {
namespace {

class MnrlHead final : public HiddenHead {
 public:
  MnrlHead(const Batch& batch, int64_t C, const MnrlConfig& config, float loss_scale, bool backward, float* dense_grads)
      : batch_(batch),
        C_(C),
        config_(config),
        loss_scale_(loss_scale),
        backward_(backward),
        dense_grads_(dense_grads) {}

  Result run(const float* x, float* d_x, const int32_t*) override {
    const int64_t R = batch_.B, T = batch_.T, C = C_, A = config_.anchors, N = R - A;
    // Pooled rows e (R, C) (Pooling._forward_padded, every position < seq_len counted). The
    // linear modes are e = Σ_t w_t h_t (weights per row, kept for the backward); max keeps
    // each channel's argmax (the first on a tie).
    std::vector<double> e(size_t(R * C), 0.0);
    std::vector<double> w(size_t(R * T), 0.0);
    std::vector<int64_t> argmax(config_.pooling == PoolingMode::max ? size_t(R * C) : 0);
    for (int64_t r = 0; r < R; ++r) {
      const int64_t len = batch_.seq_lens[r];
      double* er = &e[size_t(r * C)];
      double* wr = &w[size_t(r * T)];
      switch (config_.pooling) {
        case PoolingMode::cls:
          wr[0] = 1;
          break;
        case PoolingMode::last_token:
          wr[len - 1] = 1;
          break;
        case PoolingMode::mean:
        case PoolingMode::mean_sqrt_len: {
          const double d = config_.pooling == PoolingMode::mean ? double(len) : std::sqrt(double(len));
          for (int64_t t = 0; t < len; ++t) wr[t] = 1.0 / d;
          break;
        }
        case PoolingMode::weighted_mean: {  // position weights t + 1 over the counted positions
          const double d = double(len) * double(len + 1) / 2;
          for (int64_t t = 0; t < len; ++t) wr[t] = double(t + 1) / d;
          break;
        }
        case PoolingMode::max:
          for (int64_t c = 0; c < C; ++c) {
            int64_t best = 0;
            for (int64_t t = 1; t < len; ++t)
              if (x[(r * T + t) * C + c] > x[(r * T + best) * C + c]) best = t;
            argmax[size_t(r * C + c)] = best;
            er[c] = x[(r * T + best) * C + c];
          }
          break;
      }
      if (config_.pooling != PoolingMode::max)
        for (int64_t t = 0; t < len; ++t)
          if (wr[t] != 0)
            for (int64_t c = 0; c < C; ++c) er[c] += wr[t] * x[(r * T + t) * C + c];
    }
    // The Dense modules (Dense.py: activation(linear(e))) in fp32 as nn.Linear: layer l's
    // input is acts[l] (acts[0] the pooled rows), kept for its backward; the embedding is then
    // the last layer's output, of D features.
    const std::span<const DenseLayer> dense = config_.dense;
    std::vector<std::vector<float>> acts(dense.size() + 1);
    int64_t D = C;
    std::vector<double> emb_dense;
    const double* emb = e.data();
    if (!dense.empty()) {
      acts[0].assign(e.begin(), e.end());
      for (size_t l = 0; l < dense.size(); ++l) {
        acts[l + 1].resize(size_t(R * dense[l].out_features));
        dense[l].forward(acts[l].data(), R, acts[l + 1].data());
      }
      D = dense.back().out_features;
      emb_dense.assign(acts.back().begin(), acts.back().end());
      emb = emb_dense.data();
    }
    // Unit vectors n (R, D).
    std::vector<double> n(size_t(R * D)), norm(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < D; ++c) ss += emb[r * D + c] * emb[r * D + c];
      norm[size_t(r)] = std::max(std::sqrt(ss), 1e-12);  // F.normalize's eps (util.cos_sim)
      for (int64_t c = 0; c < D; ++c) n[size_t(r * D + c)] = emb[r * D + c] / norm[size_t(r)];
    }
    // scores (A, N) = scale · n_a · n_cᵀ; cross-entropy against column i for anchor i.
    std::vector<double> p(size_t(A * N));
    double loss = 0;
    for (int64_t i = 0; i < A; ++i) {
      double mx = -1e300;
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t c = 0; c < D; ++c) s += n[size_t(i * D + c)] * n[size_t((A + j) * D + c)];
        p[size_t(i * N + j)] = double(config_.scale) * s;
        mx = std::max(mx, p[size_t(i * N + j)]);
      }
      double z = 0;
      for (int64_t j = 0; j < N; ++j) z += std::exp(p[size_t(i * N + j)] - mx);
      loss += mx + std::log(z) - p[size_t(i * N + i)];
      for (int64_t j = 0; j < N; ++j) p[size_t(i * N + j)] = std::exp(p[size_t(i * N + j)] - mx) / z;  // softmax
    }
    loss /= double(A);
    if (!backward_) return {float(loss), false};
    // dS = (softmax - onehot) / A · loss_scale; dn_a = scale·dS·n_c, dn_c = scale·dSᵀ·n_a.
    std::vector<double> dn(size_t(R * D), 0.0);
    for (int64_t i = 0; i < A; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const double g = (p[size_t(i * N + j)] - (i == j ? 1.0 : 0.0)) / double(A) * loss_scale_ * config_.scale;
        for (int64_t c = 0; c < D; ++c) {
          dn[size_t(i * D + c)] += g * n[size_t((A + j) * D + c)];
          dn[size_t((A + j) * D + c)] += g * n[size_t(i * D + c)];
        }
      }
    // Through the normalisation, d_emb = (dn - n (n·dn)) / ||emb||.
    std::vector<double> de(size_t(R * D));
    for (int64_t r = 0; r < R; ++r) {
      double dot = 0;
      for (int64_t c = 0; c < D; ++c) dot += n[size_t(r * D + c)] * dn[size_t(r * D + c)];
      for (int64_t c = 0; c < D; ++c)
        de[size_t(r * D + c)] = (dn[size_t(r * D + c)] - n[size_t(r * D + c)] * dot) / norm[size_t(r)];
    }
    // Back through the Dense modules (their weight and bias gradients accumulate, dense_grad.h)
    // to the pooled rows, in fp32 as autograd's.
    if (!dense.empty()) {
      std::vector<float> dy(de.begin(), de.end()), dx;
      std::vector<int64_t> offset(dense.size());
      int64_t at = 0;
      for (size_t l = 0; l < dense.size(); ++l) {
        offset[l] = at;
        at += dense_param_count(dense.subspan(l, 1));
      }
      for (size_t l = dense.size(); l-- > 0;) {
        const DenseLayer& d = dense[l];
        dx.resize(size_t(R * d.in_features));
        float* dW = dense_grads_ + offset[l];
        dense_backward(d, acts[l].data(), R, dy.data(), dx.data(), dW,
                       d.bias.empty() ? nullptr : dW + d.out_features * d.in_features);
        dy.swap(dx);
      }
      de.assign(dy.begin(), dy.end());
    }
    // Then the pooling.
    for (int64_t r = 0; r < R; ++r) {
      const int64_t len = batch_.seq_lens[r];
      const double* wr = &w[size_t(r * T)];
      for (int64_t c = 0; c < C; ++c) {
        const double dp = de[size_t(r * C + c)];
        if (config_.pooling == PoolingMode::max) {
          d_x[(r * T + argmax[size_t(r * C + c)]) * C + c] += float(dp);
        } else {
          for (int64_t t = 0; t < len; ++t)
            if (wr[t] != 0) d_x[(r * T + t) * C + c] += float(wr[t] * dp);
        }
      }
    }
    return {float(loss), true};
  }

 private:
  Batch batch_;
  int64_t C_;
  MnrlConfig config_;
  float loss_scale_;
  bool backward_;
  float* dense_grads_;
};

}  // namespace

float mnrl_forward_backward(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                            const MnrlConfig& config, const DropoutConfig& dropout, uint64_t seed, float loss_scale,
                            float* grads, TrainWorkspace& ws, float* dense_grads) {
  RC_CHECK(ctx.device == Device::cpu, Errc::unsupported, "MultipleNegativesRankingLoss runs on the CPU only");
  RC_CHECK(model.head_kind() == HeadKind::encoder_only, Errc::invalid_argument,
           "MultipleNegativesRankingLoss trains a bare RobertaModel (HeadKind::encoder_only)");
  RC_CHECK(config.anchors > 0 && batch.B >= 2 * config.anchors, Errc::invalid_argument, "a batch of ", batch.B,
           " rows cannot hold ", config.anchors, " anchors and their positives");
  int64_t features = model.config().hidden_size;
  for (const DenseLayer& d : config.dense) {
    RC_CHECK(d.in_features == features, Errc::invalid_argument, "a Dense module takes ", d.in_features,
             " features, the one before it gives ", features);
    RC_CHECK(int64_t(d.weight.size()) == d.out_features * d.in_features &&
                 (d.bias.empty() || int64_t(d.bias.size()) == d.out_features),
             Errc::invalid_argument, "a Dense module's weights do not have its shape");
    features = d.out_features;
  }
  RC_CHECK(!grads || config.dense.empty() || dense_grads, Errc::invalid_argument,
           "training Dense modules needs their gradient buffer (dense_grads)");
  MnrlHead head(batch, model.config().hidden_size, config, loss_scale, grads != nullptr, dense_grads);
  // Without gradients the encoder backward is skipped (the head asks for none).
  std::vector<float> unused;
  float* g = grads;
  if (!g) {
    unused.assign(1, 0.0f);
    g = unused.data();
  }
  return forward_backward_hidden(ctx, model, batch, dropout, seed, g, ws, head);
}

int64_t dense_param_count(std::span<const DenseLayer> dense) {
  int64_t n = 0;
  for (const DenseLayer& d : dense) n += d.out_features * d.in_features + (d.bias.empty() ? 0 : d.out_features);
  return n;
}

}  // namespace rc::model
