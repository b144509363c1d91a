// MultipleNegativesRankingLoss (mnrl.h) as a HiddenHead (roberta_model.h): pooling, cosine
// scores and cross-entropy forward on the final hidden states, and their backward to them.
#include "model/mnrl.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"

namespace rc::model {
namespace {

class MnrlHead final : public HiddenHead {
 public:
  MnrlHead(const Batch& batch, int64_t C, const MnrlConfig& config, float loss_scale, bool backward)
      : batch_(batch), C_(C), config_(config), loss_scale_(loss_scale), backward_(backward) {}

  Result run(const float* x, float* d_x, const int32_t*) override {
    const int64_t R = batch_.B, T = batch_.T, C = C_, A = config_.anchors, N = R - A;
    // Pooled rows e (R, C) (Pooling._forward_padded, every position < seq_len counted) and
    // their unit vectors n. The linear modes are e = Σ_t w_t h_t (weights per row, kept for
    // the backward); max keeps each channel's argmax (the first on a tie).
    std::vector<double> e(size_t(R * C), 0.0), n(size_t(R * C)), norm(static_cast<size_t>(R));
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
      double ss = 0;
      for (int64_t c = 0; c < C; ++c) ss += er[c] * er[c];
      norm[size_t(r)] = std::max(std::sqrt(ss), 1e-12);  // F.normalize's eps (util.cos_sim)
      for (int64_t c = 0; c < C; ++c) n[size_t(r * C + c)] = er[c] / norm[size_t(r)];
    }
    // scores (A, N) = scale · n_a · n_cᵀ; cross-entropy against column i for anchor i.
    std::vector<double> p(size_t(A * N));
    double loss = 0;
    for (int64_t i = 0; i < A; ++i) {
      double mx = -1e300;
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t c = 0; c < C; ++c) s += n[size_t(i * C + c)] * n[size_t((A + j) * C + c)];
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
    std::vector<double> dn(size_t(R * C), 0.0);
    for (int64_t i = 0; i < A; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const double g = (p[size_t(i * N + j)] - (i == j ? 1.0 : 0.0)) / double(A) * loss_scale_ * config_.scale;
        for (int64_t c = 0; c < C; ++c) {
          dn[size_t(i * C + c)] += g * n[size_t((A + j) * C + c)];
          dn[size_t((A + j) * C + c)] += g * n[size_t(i * C + c)];
        }
      }
    // Through the normalisation, de = (dn - n (n·dn)) / ||e||, then the pooling.
    for (int64_t r = 0; r < R; ++r) {
      double dot = 0;
      for (int64_t c = 0; c < C; ++c) dot += n[size_t(r * C + c)] * dn[size_t(r * C + c)];
      const int64_t len = batch_.seq_lens[r];
      const double* wr = &w[size_t(r * T)];
      for (int64_t c = 0; c < C; ++c) {
        const double de = (dn[size_t(r * C + c)] - n[size_t(r * C + c)] * dot) / norm[size_t(r)];
        if (config_.pooling == PoolingMode::max) {
          d_x[(r * T + argmax[size_t(r * C + c)]) * C + c] += float(de);
        } else {
          for (int64_t t = 0; t < len; ++t)
            if (wr[t] != 0) d_x[(r * T + t) * C + c] += float(wr[t] * de);
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
};

}  // namespace

float mnrl_forward_backward(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                            const MnrlConfig& config, const DropoutConfig& dropout, uint64_t seed, float loss_scale,
                            float* grads, TrainWorkspace& ws) {
  RC_CHECK(ctx.device == Device::cpu, Errc::unsupported, "MultipleNegativesRankingLoss runs on the CPU only");
  RC_CHECK(model.head_kind() == HeadKind::encoder_only, Errc::invalid_argument,
           "MultipleNegativesRankingLoss trains a bare RobertaModel (HeadKind::encoder_only)");
  RC_CHECK(config.anchors > 0 && batch.B >= 2 * config.anchors, Errc::invalid_argument, "a batch of ", batch.B,
           " rows cannot hold ", config.anchors, " anchors and their positives");
  MnrlHead head(batch, model.config().hidden_size, config, loss_scale, grads != nullptr);
  // Without gradients the encoder backward is skipped (the head asks for none).
  std::vector<float> unused;
  float* g = grads;
  if (!g) {
    unused.assign(1, 0.0f);
    g = unused.data();
  }
  return forward_backward_hidden(ctx, model, batch, dropout, seed, g, ws, head);
}

}  // namespace rc::model
