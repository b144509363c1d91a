// PackedModel (packed_model.h): the fused bf16 / int8 inference forward.
#include "model/packed_model.h"

#include <cstring>
#include <exception>
#include <mutex>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"

namespace rc::model {

using kernels::ActType;
using kernels::Epilogue;
using kernels::ExecCtx;
using kernels::PackedLinear;
using kernels::PackedType;

const char* packed_precision_name(PackedPrecision p) noexcept { return p == PackedPrecision::int8 ? "int8" : "bf16"; }

PackedWorkspace::PackedWorkspace(const RobertaConfig& c, int64_t max_B, int64_t max_T)
    : max_B_(max_B), max_T_(max_T) {
  RC_CHECK(max_B > 0 && max_T > 0, Errc::invalid_argument, "workspace needs a positive batch and length");
  const int64_t BT = max_B * max_T, C = c.hidden_size;
  x_ = FloatBuffer(BT * C);
  qkv_ = FloatBuffer(BT * 3 * C);
  attn_ = FloatBuffer(BT * C);
  tmp_ = FloatBuffer(BT * C);
  ffn_ = FloatBuffer((BT * c.intermediate_size + 1) / 2);  // bf16
  head_ = FloatBuffer(4 * max_B * C);
  positions_.resize(size_t(BT));
}

PackedModel::PackedModel(const RobertaModel& model, PackedPrecision precision) : model_(model), precision_(precision) {
  const RobertaConfig& c = model.config();
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  const PackedType t = precision == PackedPrecision::int8 ? PackedType::s8 : PackedType::bf16;
  layers_.resize(o.layers.size());
  struct Job {
    PackedLinear* out;
    const float* w;
    int64_t N, K;
    PackedType type;
  };
  std::vector<Job> jobs;
  for (size_t l = 0; l < o.layers.size(); ++l) {
    const LayerOffsets& L = o.layers[l];
    jobs.push_back({&layers_[l].qkv, P + L.qkv_w, 3 * C, C, t});
    jobs.push_back({&layers_[l].attn_out, P + L.attn_out_w, C, C, t});
    jobs.push_back({&layers_[l].ffn_in, P + L.ffn_in_w, I, C, t});
    jobs.push_back({&layers_[l].ffn_out, P + L.ffn_out_w, C, I, t});
  }
  jobs.push_back({&head_dense_, P + o.head_dense_w, C, C, PackedType::bf16});
  // One parallel region over the 49 matrices (each packed by one thread; the conversions and
  // oneDNN reorders inside see omp_in_parallel() and run serially) rather than 49 × several
  // short parallel regions: on a loaded 2-core machine every region's barrier costs a
  // time slice.  Errors are carried out of the region and rethrown.
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t j = 0; j < int64_t(jobs.size()); ++j) {
    try {
      const Job& job = jobs[size_t(j)];
      *job.out = PackedLinear::pack(job.w, job.N, job.K, job.type);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

size_t PackedModel::packed_bytes() const {
  size_t n = head_dense_.packed_bytes();
  for (const Layer& L : layers_)
    n += L.qkv.packed_bytes() + L.attn_out.packed_bytes() + L.ffn_in.packed_bytes() + L.ffn_out.packed_bytes();
  return n;
}

void PackedModel::forward_logits(const ExecCtx& ctx, const Batch& batch, PackedWorkspace& ws, float* logits) const {
  const RobertaConfig& c = model_.config();
  RC_CHECK(batch.B <= ws.max_B() && batch.T <= ws.max_T(), Errc::invalid_argument, "batch ", batch.B, "x", batch.T,
           " exceeds the workspace ", ws.max_B(), "x", ws.max_T());
  validate_batch(c, batch);
  const ModelOffsets& o = model_.offsets();
  const float* P = model_.params();
  const int64_t B = batch.B, T = batch.T, BT = B * T, C = c.hidden_size;
  const int64_t H = c.num_attention_heads, D = c.head_dim(), K = c.num_labels();
  const float eps = c.layer_norm_eps;
  float *x = ws.x_.data(), *qkv = ws.qkv_.data(), *attn = ws.attn_.data(), *tmp = ws.tmp_.data();
  void* ffn = ws.ffn_.data();

  embed_for_inference(ctx, model_, batch, ws.positions_.data(), tmp, x);

  const size_t NL = layers_.size();
  for (size_t l = 0; l < NL; ++l) {
    const LayerOffsets& L = o.layers[l];
    const Layer& W = layers_[l];
    kernels::linear_forward(ctx, qkv, ActType::f32, x, ActType::f32, W.qkv, P + L.qkv_b, BT, Epilogue::none);
    kernels::attention_forward(ctx, attn, nullptr, qkv, batch.seq_lens, B, T, H, D, 0.0f, 0);
    // Rows that continue: all tokens, except after the last attention, where only token 0 of
    // each row reaches the head (its attention already read every token's keys and values).
    int64_t M = BT;
    if (l + 1 == NL && T > 1) {
      for (int64_t b = 1; b < B; ++b) {
        std::memmove(attn + b * C, attn + b * T * C, size_t(C) * sizeof(float));
        std::memmove(x + b * C, x + b * T * C, size_t(C) * sizeof(float));
      }
      M = B;
    }
    kernels::linear_forward(ctx, tmp, ActType::f32, attn, ActType::f32, W.attn_out, P + L.attn_out_b, M,
                            Epilogue::none);
    kernels::add_layernorm_forward(ctx, x, tmp, nullptr, nullptr, tmp, x, P + L.ln_attn_gamma, P + L.ln_attn_beta, M,
                                   C, eps);
    kernels::linear_forward(ctx, ffn, ActType::bf16, x, ActType::f32, W.ffn_in, P + L.ffn_in_b, M,
                            Epilogue::gelu_erf);
    kernels::linear_forward(ctx, tmp, ActType::f32, ffn, ActType::bf16, W.ffn_out, P + L.ffn_out_b, M,
                            Epilogue::none);
    kernels::add_layernorm_forward(ctx, x, tmp, nullptr, nullptr, tmp, x, P + L.ln_ffn_gamma, P + L.ln_ffn_beta, M,
                                   C, eps);
  }

  // Head: dense → tanh → out_proj on the first token (x now holds one row per sequence, or
  // every token when there are no layers).
  float* cls = ws.head_.data();
  float* hidden = cls + B * C;
  if (NL == 0) {
    for (int64_t b = 0; b < B; ++b) std::memcpy(cls + b * C, x + b * T * C, size_t(C) * sizeof(float));
  } else {
    std::memcpy(cls, x, size_t(B * C) * sizeof(float));
  }
  kernels::linear_forward(ctx, hidden, cls, head_dense_, P + o.head_dense_b, B, Epilogue::none);
  kernels::tanh_forward(ctx, hidden, hidden, B * C);
  kernels::matmul_nt(ctx, logits, hidden, P + o.head_out_w, P + o.head_out_b, B, K, C);
}

}  // namespace rc::model
