// RobertaModel (roberta_model.h): parameter storage and initialisation, weight formats,
// batch validation and staging. The passes are in inference.cpp and training.cpp.
#include "model/roberta_model.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/counter_rng.h"
#include "kernels/rows.h"

namespace rc::model {

using kernels::ExecCtx;

// ---------------------------------------------------------------------------------------
// Storage

const char* weight_format_name(WeightFormat f) noexcept {
  switch (f) {
    case WeightFormat::fp32:
      return "fp32";
    case WeightFormat::bf16:
      return "bf16";
    case WeightFormat::int8:
      return "int8";
    case WeightFormat::fp32_packed:
      return "fp32-packed";
  }
  return "?";
}

// Refuse configs whose parameters alone would not fit in memory, before allocating:
// config.json is user input.
static void check_model_size(const RobertaConfig& c, const ParamLayout& layout) {
  constexpr int64_t max_params = int64_t(4) << 30;  // 16 GiB of fp32
  RC_CHECK(layout.total() > 0 && layout.total() <= max_params, Errc::resource_exhausted, "config.json describes ",
           layout.total(), " parameters, more than this build supports (", max_params, ")");
}

RobertaModel::RobertaModel(RobertaConfig config, HeadKind head, ParamStorage storage)
    : config_(std::move(config)),
      head_(head),
      layout_(ParamLayout::build(config_, head)),
      offsets_(model_offsets(layout_, config_)),
      storage_(storage) {
  check_model_size(config_, layout_);
  const size_t bytes = size_t(layout_.total()) * sizeof(float);
  // packed_inference: the GEMM weights' ~70% of the buffer is never touched, so never paid for.
  params_ = storage == ParamStorage::full ? Buffer::allocate(Device::cpu, 0, bytes) : Buffer::allocate_host_lazy(bytes);
}

bool RobertaModel::is_packed_weight(int64_t offset) const {
  for (const LayerOffsets& L : offsets_.layers)
    if (offset == L.qkv_w || offset == L.qkv_w + config_.hidden_size * config_.hidden_size ||
        offset == L.qkv_w + 2 * config_.hidden_size * config_.hidden_size || offset == L.attn_out_w ||
        offset == L.ffn_in_w || offset == L.ffn_out_w)
      return true;
  return offset == offsets_.head_dense_w;
}

void RobertaModel::require_fp32_weights(const char* what) const {
  RC_CHECK(storage_ == ParamStorage::full, Errc::unsupported, what, ": this model was loaded for ",
           weight_format_name(format_), " inference only (its GEMM weights were packed straight from the checkpoint, ",
           "with no fp32 copy)\nHINT: load the checkpoint again with fp32 weights (no packed format) for this");
}

void RobertaModel::use_external_word_embeddings(const float* wte, std::shared_ptr<const void> keep_alive) {
  RC_ASSERT(storage_ == ParamStorage::packed_inference && wte);
  wte_external_ = wte;
  external_ = std::move(keep_alive);
}

std::span<float> RobertaModel::param(std::string_view name) {
  const ParamEntry* e = layout_.find(name);
  RC_CHECK(!(e && wte_external_ && e->offset == offsets_.wte), Errc::unsupported, "param('", name,
           "'): read-only here (the word embeddings are read from the mapped checkpoint)");
  const auto s = std::as_const(*this).param(name);
  return {const_cast<float*>(s.data()), s.size()};
}

std::span<const float> RobertaModel::param(std::string_view name) const {
  const ParamEntry* e = layout_.find(name);
  RC_CHECK(e, Errc::not_found, "no parameter named '", name, "'");
  RC_CHECK(device() == Device::cpu, Errc::unsupported, "param('", name, "'): the model is not in host memory");
  if (storage_ != ParamStorage::full && is_packed_weight(e->offset))
    require_fp32_weights(("param('" + std::string(name) + "')").c_str());
  if (e->offset == offsets_.wte) return {word_embeddings(), size_t(e->numel)};
  return {params() + e->offset, size_t(e->numel)};
}

void RobertaModel::to_device(const ExecCtx& ctx) {
  if (ctx.device == device() && ctx.device_index == device_index()) return;
  require_fp32_weights("to_device");
  const size_t bytes = size_t(num_params()) * sizeof(float);
  std::vector<float> host(static_cast<size_t>(num_params()));
  copy_params_to_host(host.data());
  Buffer moved = kernels::alloc(ctx, bytes);
  kernels::upload(ctx, moved.data(), host.data(), bytes);
  params_ = std::move(moved);
  ++params_version_;
  set_weight_format(WeightFormat::fp32);
}

void RobertaModel::copy_params_to_host(float* dst) const {
  require_fp32_weights("copy_params_to_host");
  copy_from(device(), dst, params(), size_t(num_params()) * sizeof(float), nullptr);
}

void RobertaModel::copy_params_from_host(const float* src) {
  require_fp32_weights("copy_params_from_host");
  copy_to(device(), params(), src, size_t(num_params()) * sizeof(float), nullptr);
}

void RobertaModel::set_weight_format(WeightFormat format) {
  if (storage_ != ParamStorage::full) {
    if (format == format_) return;
    require_fp32_weights((std::string("set_weight_format(") + weight_format_name(format) + ")").c_str());
  }
  packed_.clear();
  packed_head_ = {};
  format_ = WeightFormat::fp32;
  if (format == WeightFormat::fp32) return;
  const float* P = params();
  pack_weights(format,
               [P](int64_t offset, int64_t rows, int64_t) {
                 return std::vector<kernels::PackedLinear::SourceRows>{{P + offset, DType::f32, rows}};
               },
               {}, {});
}

void RobertaModel::pack_from(WeightFormat format, const WeightSource& source, const WeightDone& packed,
                             std::shared_ptr<const void> borrow) {
  RC_CHECK(format != WeightFormat::fp32, Errc::invalid_argument, "pack_from: fp32 is not a packed format");
  packed_.clear();
  packed_head_ = {};
  format_ = WeightFormat::fp32;
  pack_weights(format, source, packed, borrow);
}

void RobertaModel::pack_weights(WeightFormat format, const WeightSource& source, const WeightDone& packed,
                                const std::shared_ptr<const void>& borrow) {
  RC_CHECK(device() == Device::cpu, Errc::unsupported, "weight format ", weight_format_name(format),
           " is packed for the CPU\nHINT: on CUDA, bf16 runs as fp32 weights with bf16 GEMMs");
  const ModelOffsets& o = offsets_;
  const int64_t C = config_.hidden_size, I = config_.intermediate_size;
  const kernels::PackedType t = format == WeightFormat::int8   ? kernels::PackedType::s8
                                : format == WeightFormat::bf16 ? kernels::PackedType::bf16
                                                               : kernels::PackedType::f32;
  std::vector<PackedLayer> layers(o.layers.size());
  kernels::PackedLinear head;
  struct Job {
    kernels::PackedLinear* out;
    int64_t offset, N, K;
    kernels::PackedType type;
    std::string what;  // for errors: which weight (the kernels know only its shape)
  };
  std::vector<Job> jobs;
  for (size_t l = 0; l < o.layers.size(); ++l) {
    const LayerOffsets& L = o.layers[l];
    const std::string layer = "layer " + std::to_string(l) + " ";
    jobs.push_back({&layers[l].qkv, L.qkv_w, 3 * C, C, t, layer + "attention query/key/value"});
    jobs.push_back({&layers[l].attn_out, L.attn_out_w, C, C, t, layer + "attention output"});
    jobs.push_back({&layers[l].ffn_in, L.ffn_in_w, I, C, t, layer + "intermediate (FFN in)"});
    jobs.push_back({&layers[l].ffn_out, L.ffn_out_w, C, I, t, layer + "output (FFN out)"});
  }
  // The head's dense layer is bf16 for bf16 and int8 (B rows: int8 would save nothing), fp32
  // for fp32_packed. A masked-LM layout has none (its lm_head runs fp32).
  const kernels::PackedType head_t = t == kernels::PackedType::f32 ? t : kernels::PackedType::bf16;
  if (o.head_dense_w >= 0) jobs.push_back({&head, o.head_dense_w, C, C, head_t, "classifier dense"});
  // One parallel region over the matrices (each packed by one thread; the conversions and
  // oneDNN reorders inside see omp_in_parallel() and run serially) rather than many short
  // parallel regions: on a loaded 2-core machine every region's barrier costs a time slice.
  // Errors are carried out of the region and rethrown.
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t j = 0; j < int64_t(jobs.size()); ++j) {
    try {
      const Job& job = jobs[size_t(j)];
      const auto parts = source(job.offset, job.N, job.K);
      *job.out = kernels::PackedLinear::pack(parts, job.K, job.type, borrow);
      if (packed) packed(job.offset, job.N, job.K, job.out->borrows());
    } catch (const Error& e) {
      std::lock_guard lock(error_mutex);
      const Job& job = jobs[size_t(j)];
      std::string hint = e.hint();
      if (hint.empty() && e.errc() == Errc::format)
        hint = "`roberta inspect` counts each tensor's NaN / Inf values (nonfinite_values)";
      if (!error)
        error = std::make_exception_ptr(
            Error(e.errc(), "packing the " + job.what + " weight as " + weight_format_name(format) + ": " + e.what(),
                  std::move(hint)));
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  packed_ = std::move(layers);
  packed_head_ = std::move(head);
  format_ = format;
}

size_t RobertaModel::packed_bytes() const {
  size_t n = packed_head_.packed_bytes();
  for (const PackedLayer& L : packed_)
    n += L.qkv.packed_bytes() + L.attn_out.packed_bytes() + L.ffn_in.packed_bytes() + L.ffn_out.packed_bytes();
  return n;
}

LayerWeights RobertaModel::layer_weights(size_t l, bool fp32_view) const {
  RC_ASSERT(l < offsets_.layers.size());
  const LayerOffsets& L = offsets_.layers[l];
  const float* P = params();
  const int64_t C = config_.hidden_size, I = config_.intermediate_size;
  using kernels::LinearWeight;
  LayerWeights w;
  if (format_ == WeightFormat::fp32 || fp32_view) {
    require_fp32_weights("layer_weights (fp32 view)");
    w.qkv = LinearWeight::f32(P + L.qkv_w, 3 * C, C);
    w.attn_out = LinearWeight::f32(P + L.attn_out_w, C, C);
    w.ffn_in = LinearWeight::f32(P + L.ffn_in_w, I, C);
    w.ffn_out = LinearWeight::f32(P + L.ffn_out_w, C, I);
  } else {
    const PackedLayer& p = packed_[l];
    w.qkv = LinearWeight::of(p.qkv);
    w.attn_out = LinearWeight::of(p.attn_out);
    w.ffn_in = LinearWeight::of(p.ffn_in);
    w.ffn_out = LinearWeight::of(p.ffn_out);
  }
  w.qkv_b = P + L.qkv_b;
  w.attn_out_b = P + L.attn_out_b;
  w.ln1_gamma = P + L.ln_attn_gamma;
  w.ln1_beta = P + L.ln_attn_beta;
  w.ffn_in_b = P + L.ffn_in_b;
  w.ffn_out_b = P + L.ffn_out_b;
  w.ln2_gamma = P + L.ln_ffn_gamma;
  w.ln2_beta = P + L.ln_ffn_beta;
  return w;
}

kernels::LinearWeight RobertaModel::head_dense_weight(bool fp32_view) const {
  if (format_ == WeightFormat::fp32 || fp32_view) {
    require_fp32_weights("head_dense_weight (fp32 view)");
    return kernels::LinearWeight::f32(params() + offsets_.head_dense_w, config_.hidden_size, config_.hidden_size);
  }
  return kernels::LinearWeight::of(packed_head_);
}

LayerGrads RobertaModel::layer_grads(float* G, size_t l) const {
  const LayerOffsets& L = offsets_.layers[l];
  return {G + L.qkv_w,    G + L.qkv_b,    G + L.attn_out_w, G + L.attn_out_b, G + L.ln_attn_gamma, G + L.ln_attn_beta,
          G + L.ffn_in_w, G + L.ffn_in_b, G + L.ffn_out_w,  G + L.ffn_out_b,  G + L.ln_ffn_gamma,  G + L.ln_ffn_beta};
}

namespace {

// Deterministic normal samples from a counter (splitmix64 + Box-Muller): the same seed
// gives the same weights on every machine and standard library.
using rng::splitmix64;

void fill_normal(float* x, int64_t n, float stddev, uint64_t& state) {
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = (double(splitmix64(state) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    const double u2 = double(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
    const double r = std::sqrt(-2.0 * std::log(u1));
    x[i] = float(stddev * r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n) x[i + 1] = float(stddev * r * std::sin(2.0 * M_PI * u2));
  }
}

}  // namespace

void RobertaModel::init_weights(uint64_t seed, bool head_only) {
  init_weights(seed, [head_only](const ParamEntry& e) { return !head_only || e.is_head; });
}

void RobertaModel::init_weights(uint64_t seed, const std::function<bool(const ParamEntry&)>& which) {
  RC_CHECK(device() == Device::cpu, Errc::unsupported, "init_weights: initialise on the CPU, then to_device");
  uint64_t state = seed ^ 0x5DEECE66Dull;
  for (const ParamEntry& e : layout_.entries()) {
    if (!which(e)) continue;
    float* p = params() + e.offset;
    switch (e.init) {
      case ParamEntry::Init::ones:
        std::fill(p, p + e.numel, 1.0f);
        break;
      case ParamEntry::Init::zeros:
        std::fill(p, p + e.numel, 0.0f);
        break;
      case ParamEntry::Init::normal:
        fill_normal(p, e.numel, config_.initializer_range, state);
        break;
    }
    // nn.Embedding(padding_idx=pad) rows start at zero: the word table, and RoBERTa's
    // position table (BERT's and DistilBERT's have no padding_idx).
    const int64_t C = config_.hidden_size, pad = config_.pad_token_id;
    if (e.role == Role::word_embeddings) std::fill_n(p + pad * C, C, 0.0f);
    if (e.role == Role::position_embeddings && config_.family().position_pad_row &&
        pad < config_.max_position_embeddings)
      std::fill_n(p + pad * C, C, 0.0f);
  }
}

// ---------------------------------------------------------------------------------------
// Batches

void validate_batch(const RobertaConfig& c, const Batch& batch) {
  RC_CHECK(batch.B > 0 && batch.T > 0, Errc::invalid_argument, "empty batch");
  RC_CHECK(batch.T <= c.max_tokens(), Errc::invalid_argument, "sequence length ", batch.T,
           " exceeds the model's limit of ", c.max_tokens(), " tokens\nHINT: truncate with --max-length");
  for (int64_t b = 0; b < batch.B; ++b) {
    const int32_t len = batch.seq_lens[b];
    RC_CHECK(len >= 1 && len <= batch.T, Errc::invalid_argument, "row ", b, ": length ", len, " not in [1, ", batch.T,
             "]");
    for (int64_t t = 0; t < batch.T; ++t) {
      const int32_t id = batch.ids[b * batch.T + t];
      RC_CHECK(id >= 0 && id < c.vocab_size, Errc::invalid_argument, "token id ", id, " outside the vocabulary (",
               c.vocab_size, ")\nHINT: the tokenizer files do not belong to this model");
      if (batch.token_types && c.type_vocab_size > 0) {
        const int32_t tt = batch.token_types[b * batch.T + t];
        RC_CHECK(tt >= 0 && tt < c.type_vocab_size, Errc::invalid_argument, "token type ", tt, " outside [0, ",
                 c.type_vocab_size, ")");
      }
    }
  }
}

uint64_t dropout_site_seed(uint64_t seed, uint64_t site) { return rng::derive(seed, site); }

void family_position_ids(const ExecCtx& ctx, const RobertaConfig& c, int32_t* positions, const Batch& batch) {
  if (c.family().positions == PositionIds::after_padding)
    return kernels::position_ids(ctx, positions, batch.ids, batch.B, batch.T, c.pad_token_id);
  // The position_ids buffer's arange, the padding included (HF's BertEmbeddings).
  const size_t n = size_t(batch.B * batch.T);
  std::vector<int32_t> host;
  int32_t* out = positions;
  if (ctx.device != Device::cpu) {
    host.resize(n);
    out = host.data();
  }
  for (int64_t b = 0; b < batch.B; ++b)
    for (int64_t t = 0; t < batch.T; ++t) out[b * batch.T + t] = int32_t(t);
  if (out != positions) kernels::upload(ctx, positions, host.data(), n * sizeof(int32_t));
}

DeviceBatch::DeviceBatch(const ExecCtx& ctx, int64_t max_B_, int64_t max_T_, bool with_labels)
    : max_B(max_B_), max_T(max_T_) {
  const size_t BT = size_t(max_B * max_T) * sizeof(int32_t), Bb = size_t(max_B) * sizeof(int32_t);
  positions = kernels::alloc(ctx, BT);
  if (ctx.device == Device::cpu) return;  // the CPU reads the caller's arrays in place
  ids = kernels::alloc(ctx, BT);
  seq_lens = kernels::alloc(ctx, Bb);
  token_types = kernels::alloc(ctx, BT);
  if (with_labels) labels = kernels::alloc(ctx, Bb);
}

Batch DeviceBatch::stage(const ExecCtx& ctx, const Batch& host, const int32_t* host_labels,
                         const int32_t** device_labels) {
  RC_ASSERT(host.B <= max_B && host.T <= max_T);
  Batch d = host;
  if (!token_types_used) d.token_types = nullptr;  // a family without token types ignores them
  if (ctx.device != Device::cpu) {
    const size_t BT = size_t(host.B * host.T) * sizeof(int32_t), Bb = size_t(host.B) * sizeof(int32_t);
    kernels::upload(ctx, ids.data(), host.ids, BT);
    kernels::upload(ctx, seq_lens.data(), host.seq_lens, Bb);
    d.ids = ids.as<int32_t>();
    d.seq_lens = seq_lens.as<int32_t>();
    if (host.token_types && d.token_types) {
      kernels::upload(ctx, token_types.data(), host.token_types, BT);
      d.token_types = token_types.as<int32_t>();
    }
    if (host_labels) {
      RC_ASSERT(labels.data());
      kernels::upload(ctx, labels.data(), host_labels, Bb);
      host_labels = labels.as<int32_t>();
    }
  }
  if (device_labels) *device_labels = host_labels;
  return d;
}

}  // namespace rc::model
