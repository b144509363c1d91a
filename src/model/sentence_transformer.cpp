// sentence-transformers folders and the embedding engine (sentence_transformer.h). The module
// semantics are copied from sentence-transformers: SentenceTransformer.py (_load_sbert_model,
// encode, _get_prompt_length), models/Transformer.py (tokenize: do_lower_case, max_seq_length),
// models/Dense.py, models/Normalize.py, and models/Pooling.py (pooling.h).
#include "model/sentence_transformer.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/regular_file.h"
#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "device/cpu_isa.h"
#include "kernels/exec_ctx.h"
#include "model/checkpoint.h"
#include "model/hidden_states.h"
#include "roberta/log.h"

namespace rc::model {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kMaxConfigBytes = 1 << 20;
constexpr int64_t kMaxDenseFeatures = 1 << 16;

json read_json(const fs::path& path) {
  json j = json::parse(read_regular_file(path, kMaxConfigBytes), nullptr, false);
  RC_CHECK(!j.is_discarded(), Errc::format, path.string(), ": not valid JSON");
  return j;
}

// The class name after the last '.', e.g. "sentence_transformers.models.Pooling" -> "Pooling".
std::string module_kind(const std::string& type) {
  const size_t dot = type.rfind('.');
  return dot == std::string::npos ? type : type.substr(dot + 1);
}

DenseLayer::Activation parse_activation(const std::string& name, const fs::path& file) {
  // Dense.save writes fullname(activation): "torch.nn.modules.activation.Tanh",
  // "torch.nn.modules.linear.Identity", ...
  const std::string kind = module_kind(name);
  if (kind == "Identity") return DenseLayer::Activation::identity;
  if (kind == "Tanh") return DenseLayer::Activation::tanh;
  if (kind == "ReLU") return DenseLayer::Activation::relu;
  if (kind == "Sigmoid") return DenseLayer::Activation::sigmoid;
  if (kind == "GELU") return DenseLayer::Activation::gelu;
  RC_THROW(Errc::unsupported, file.string(), ": activation_function '", name,
           "' is not supported\nHINT: Identity, Tanh, ReLU, Sigmoid and GELU are");
}

// parse_activation's inverse: util.fullname of the torch.nn module.
const char* activation_fullname(DenseLayer::Activation a) {
  switch (a) {
    case DenseLayer::Activation::identity:
      return "torch.nn.modules.linear.Identity";
    case DenseLayer::Activation::tanh:
      return "torch.nn.modules.activation.Tanh";
    case DenseLayer::Activation::relu:
      return "torch.nn.modules.activation.ReLU";
    case DenseLayer::Activation::sigmoid:
      return "torch.nn.modules.activation.Sigmoid";
    case DenseLayer::Activation::gelu:
      return "torch.nn.modules.activation.GELU";
  }
  return "torch.nn.modules.activation.Tanh";
}

}  // namespace

// Dense.save (models/Dense.py): config.json = get_config_dict() {in_features, out_features,
// bias, activation_function: fullname(activation)}, then save_torch_weights: the module's
// state_dict (linear.weight, linear.bias) as model.safetensors.
void DenseLayer::save(const fs::path& folder) const {
  fs::create_directories(folder);
  const json config{{"in_features", in_features},
                    {"out_features", out_features},
                    {"bias", !bias.empty()},
                    {"activation_function", activation_fullname(activation)}};
  io::write_file_atomic(folder / "config.json", config.dump(4) + "\n");
  std::vector<io::TensorToWrite> tensors{{"linear.weight", DType::f32, {out_features, in_features}, weight.data()}};
  if (!bias.empty()) tensors.push_back({"linear.bias", DType::f32, {out_features}, bias.data()});
  io::write_safetensors(folder / "model.safetensors", tensors, {{"format", "pt"}});
}

DenseLayer DenseLayer::load(const fs::path& folder) {
  const fs::path cfg_path = folder / "config.json";
  const json c = read_json(cfg_path);
  RC_CHECK(c.is_object() && c.contains("in_features") && c["in_features"].is_number_integer() &&
               c.contains("out_features") && c["out_features"].is_number_integer(),
           Errc::format, cfg_path.string(), ": expected {\"in_features\": int, \"out_features\": int, ...}");
  DenseLayer d;
  d.in_features = c["in_features"].get<int64_t>();
  d.out_features = c["out_features"].get<int64_t>();
  RC_CHECK(d.in_features > 0 && d.in_features <= kMaxDenseFeatures && d.out_features > 0 &&
               d.out_features <= kMaxDenseFeatures,
           Errc::format, cfg_path.string(), ": in_features / out_features outside 1..", kMaxDenseFeatures);
  const bool bias = !c.contains("bias") || (c["bias"].is_boolean() && c["bias"].get<bool>());
  if (c.contains("activation_function") && c["activation_function"].is_string())
    d.activation = parse_activation(c["activation_function"].get<std::string>(), cfg_path);
  const auto source = open_weights(folder);
  auto read = [&](const char* name, std::vector<int64_t> shape, std::vector<float>& out) {
    const io::TensorInfo* t = source->find(name);
    RC_CHECK(t != nullptr, Errc::format, source->path().string(), ": no tensor '", name, "'");
    RC_CHECK(t->shape == shape, Errc::format, source->path().string(), ": tensor '", name,
             "' does not have the shape config.json gives");
    RC_CHECK(t->dtype == DType::f32 || t->dtype == DType::bf16 || t->dtype == DType::f16 || t->dtype == DType::f64,
             Errc::format, source->path().string(), ": tensor '", name, "' is not floating point");
    out.resize(size_t(t->numel()));
    io::convert_to_f32(t->dtype, source->data(name), out.data(), t->numel());
  };
  read("linear.weight", {d.out_features, d.in_features}, d.weight);
  if (bias) read("linear.bias", {d.out_features}, d.bias);
  return d;
}

void DenseLayer::forward(const float* x, int64_t rows, float* y) const {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out_features; ++o) {
      const float* w = weight.data() + o * in_features;
      double s = bias.empty() ? 0.0 : double(bias[size_t(o)]);
      for (int64_t i = 0; i < in_features; ++i) s += double(w[i]) * double(x[r * in_features + i]);
      double v = s;
      switch (activation) {
        case Activation::identity:
          break;
        case Activation::tanh:
          v = std::tanh(s);
          break;
        case Activation::relu:
          v = std::max(s, 0.0);
          break;
        case Activation::sigmoid:
          v = 1.0 / (1.0 + std::exp(-s));
          break;
        case Activation::gelu:  // nn.GELU(): the exact erf form
          v = 0.5 * s * (1.0 + std::erf(s / std::sqrt(2.0)));
          break;
      }
      y[r * out_features + o] = float(v);
    }
}

bool is_sentence_transformer(const fs::path& dir) { return path_present(dir / "modules.json"); }

SentenceTransformerConfig SentenceTransformerConfig::load(const fs::path& dir, std::string_view pooling_override) {
  SentenceTransformerConfig c;
  c.transformer = dir;
  c.similarity_fn_name = "cosine";
  if (!is_sentence_transformer(dir)) {
    RC_CHECK(!pooling_override.empty(), Errc::invalid_argument, dir.string(),
             ": not a sentence-transformers folder (no modules.json), so the pooling is not known",
             "\nHINT: pass --pooling cls|mean|max|lasttoken (as TEI's --pooling)");
    c.pooling.modes = {parse_pooling_mode(pooling_override)};
    return c;
  }
  c.has_modules = true;
  const fs::path modules_path = dir / "modules.json";
  const json modules = read_json(modules_path);
  RC_CHECK(modules.is_array() && !modules.empty() && modules.size() <= 16, Errc::format, modules_path.string(),
           ": expected a list of 1..16 modules");
  bool seen_transformer = false, seen_pooling = false;
  for (const json& m : modules) {
    RC_CHECK(m.is_object() && m.contains("type") && m["type"].is_string(), Errc::format, modules_path.string(),
             ": each module needs a \"type\"");
    const std::string kind = module_kind(m["type"].get<std::string>());
    const std::string rel = m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
    RC_CHECK(rel.find("..") == std::string::npos && (rel.empty() || rel.front() != '/'), Errc::format,
             modules_path.string(), ": module path '", rel, "' leaves the folder");
    const fs::path folder = rel.empty() ? dir : dir / rel;
    if (kind == "Transformer") {
      RC_CHECK(!seen_transformer, Errc::unsupported, modules_path.string(), ": more than one Transformer module");
      seen_transformer = true;
      c.transformer = folder;
      const fs::path sb = folder / "sentence_bert_config.json";
      if (path_present(sb)) {
        const json s = read_json(sb);
        if (s.contains("max_seq_length") && s["max_seq_length"].is_number_integer())
          c.max_seq_length = std::max<int64_t>(0, s["max_seq_length"].get<int64_t>());
        if (s.contains("do_lower_case") && s["do_lower_case"].is_boolean())
          c.do_lower_case = s["do_lower_case"].get<bool>();
      }
    } else if (kind == "Pooling") {
      RC_CHECK(seen_transformer && !seen_pooling, Errc::unsupported, modules_path.string(),
               ": a Pooling module must follow the one Transformer module");
      seen_pooling = true;
      c.pooling = PoolingConfig::from_file(folder / "config.json");
    } else if (kind == "Dense") {
      RC_CHECK(seen_pooling && !c.normalize, Errc::unsupported, modules_path.string(),
               ": a Dense module must follow the Pooling module (and precede Normalize)");
      RC_CHECK(c.dense.size() < 4, Errc::unsupported, modules_path.string(), ": more than 4 Dense modules");
      c.dense.push_back(DenseLayer::load(folder));
    } else if (kind == "Normalize") {
      c.normalize = true;
    } else {
      RC_THROW(Errc::unsupported, modules_path.string(), ": module type '", m["type"].get<std::string>(),
               "' is not supported", "\nHINT: Transformer, Pooling, Dense and Normalize are");
    }
  }
  RC_CHECK(seen_transformer, Errc::format, modules_path.string(), ": no Transformer module");
  if (!pooling_override.empty()) c.pooling.modes = {parse_pooling_mode(pooling_override)};
  RC_CHECK(seen_pooling || !pooling_override.empty(), Errc::unsupported, modules_path.string(),
           ": no Pooling module\nHINT: pass --pooling");
  const fs::path st = dir / "config_sentence_transformers.json";
  if (path_present(st)) {
    const json s = read_json(st);
    RC_CHECK(s.is_object(), Errc::format, st.string(), ": not a JSON object");
    if (s.contains("prompts") && s["prompts"].is_object())
      for (const auto& [name, text] : s["prompts"].items()) {
        RC_CHECK(text.is_string(), Errc::format, st.string(), ": prompt '", name, "' is not a string");
        c.prompts[name] = text.get<std::string>();
      }
    if (s.contains("default_prompt_name") && s["default_prompt_name"].is_string()) {
      c.default_prompt_name = s["default_prompt_name"].get<std::string>();
      RC_CHECK(c.prompts.count(c.default_prompt_name), Errc::format, st.string(), ": default_prompt_name '",
               c.default_prompt_name, "' is not one of the prompts");
    }
    if (s.contains("similarity_fn_name") && s["similarity_fn_name"].is_string())
      c.similarity_fn_name = s["similarity_fn_name"].get<std::string>();
  }
  return c;
}

void truncate_embedding(std::vector<float>& v, int64_t dimensions, bool normalize) {
  if (dimensions > 0) {
    RC_CHECK(dimensions <= int64_t(v.size()), Errc::invalid_argument, "dimensions ", dimensions,
             " is more than the embedding's ", v.size());
    v.resize(size_t(dimensions));
  }
  if (normalize) l2_normalize(v);
}

std::vector<std::vector<float>> Embedder::encode_texts(std::span<const std::string> texts, std::string_view prompt_name,
                                                       int batch_size, int normalize) const {
  RC_CHECK(batch_size > 0, Errc::invalid_argument, "--batch-size must be positive, got ", batch_size);
  const std::string prompt = prompt_text(prompt_name);
  const int32_t covered = prompt_tokens(prompt);
  std::vector<std::vector<int32_t>> rows(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) rows[i] = encode(texts[i], prompt, max_length());
  const std::vector<size_t> order = length_sorted_order(rows.size(), [&](size_t i) { return rows[i].size(); });
  std::vector<std::vector<float>> out(rows.size());
  std::vector<std::vector<int32_t>> chunk;
  for (size_t start = 0; start < order.size(); start += size_t(batch_size)) {
    const size_t end = std::min(order.size(), start + size_t(batch_size));
    chunk.clear();
    for (size_t i = start; i < end; ++i) chunk.push_back(rows[order[i]]);
    const std::vector<int32_t> prompts(chunk.size(), covered);
    std::vector<std::vector<float>> got = embed_ids(chunk, prompts);
    for (size_t i = start; i < end; ++i) out[order[i]] = std::move(got[i - start]);
  }
  const bool norm = normalize < 0 ? config().normalize : normalize > 0;
  if (norm)
    for (auto& v : out) l2_normalize(v);
  return out;
}

namespace {

class RobertaEmbedder final : public Embedder {
 public:
  RobertaEmbedder(const fs::path& dir, const EmbedderOptions& options)
      : config_(SentenceTransformerConfig::load(dir, options.pooling)) {
    const fs::path& folder = config_.transformer;
    tokenizer_ = Tokenizer::from_dir(folder);
    precision_ = options.precision;
    ctx_ = kernels::exec_ctx_for(options.device);
    CheckpointLoadOptions lo;
    lo.head = HeadKind::encoder_only;
    if (ctx_.device == Device::cpu) {
      if (precision_ == Precision::bf16 && !cpu_has_bf16()) {
        log::warn("model", "this CPU has no fast bf16 (AVX512-BF16/AMX); running fp32 instead");
        precision_ = Precision::fp32;
      }
      lo.pack = packed_weight_format(precision_);
    }
    LoadReport report;
    model_ = load_checkpoint(folder, lo, &report);
    const RobertaConfig& c = model_->config();
    check_tokenizer_fits(*tokenizer_, c, folder);
    // Transformer.py: max_seq_length, else the model's limit; --max-length lowers it.
    max_length_ = int(c.max_tokens());
    if (config_.max_seq_length > 0) max_length_ = int(std::min<int64_t>(config_.max_seq_length, c.max_tokens()));
    if (options.max_length > 0) {
      RC_CHECK(options.max_length <= c.max_tokens() && options.max_length >= 2, Errc::invalid_argument, "--max-length ",
               options.max_length, " is outside [2, ", c.max_tokens(), "], the model's limit");
      max_length_ = options.max_length;
    }
    if (ctx_.device == Device::cuda) {
      RC_CHECK(precision_ != Precision::int8, Errc::unsupported,
               "--precision int8 runs on the CPU only\nHINT: use --precision bf16 or fp32 with --device cuda");
      if (precision_ == Precision::bf16) ctx_.matmul_precision = kernels::MatmulPrecision::bf16;
      model_->to_device(ctx_);
    }
    // Pooling's embedding_dimension must be the encoder's, and each Dense must take what
    // comes before it.
    const int64_t C = c.hidden_size;
    RC_CHECK(config_.pooling.embedding_dimension == 0 || config_.pooling.embedding_dimension == C, Errc::format,
             dir.string(), ": the Pooling module's embedding dimension ", config_.pooling.embedding_dimension,
             " is not the encoder's hidden_size ", C);
    dimension_ = config_.pooling.output_dimension(C);
    for (const DenseLayer& d : config_.dense) {
      RC_CHECK(d.in_features == dimension_, Errc::format, dir.string(), ": a Dense module takes ", d.in_features,
               " features but gets ", dimension_);
      dimension_ = d.out_features;
    }
  }

  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const SentenceTransformerConfig& config() const override { return config_; }
  int max_length() const override { return max_length_; }
  int64_t hidden_size() const override { return model_->config().hidden_size; }
  int64_t dimension() const override { return dimension_; }
  Precision precision() const override { return precision_; }
  std::string describe() const override {
    const RobertaConfig& c = model_->config();
    std::string s = std::string(config_.has_modules ? "SentenceTransformer" : "RobertaModel") +
                    " layers=" + std::to_string(c.num_hidden_layers) + " hidden=" + std::to_string(c.hidden_size) +
                    " pooling=" + config_.pooling.describe() + " dense=" + std::to_string(config_.dense.size()) +
                    " normalize=" + (config_.normalize ? "true" : "false") +
                    " dimension=" + std::to_string(dimension_) + " precision=" + precision_name(precision_) +
                    " max_length=" + std::to_string(max_length_);
    return s;
  }

  std::string prompt_text(std::string_view name) const override {
    const std::string key(name.empty() ? std::string_view(config_.default_prompt_name) : name);
    if (key.empty()) return "";
    const auto it = config_.prompts.find(key);
    if (it == config_.prompts.end()) {
      std::string known;
      for (const auto& [n, _] : config_.prompts) known += (known.empty() ? "" : ", ") + n;
      RC_THROW(Errc::invalid_argument, "prompt_name '", key.substr(0, 64), "' is not a key of the prompts (",
               known.empty() ? "this model has none" : known, ")");
    }
    return it->second;
  }
  int prompt_tokens(std::string_view prompt) const override {
    if (prompt.empty()) return 0;
    const auto ids = encode(prompt, "", 0, TruncationSide::right);
    return int(ids.size()) - 1;  // _get_prompt_length: "remove the EOS token"
  }
  std::vector<int32_t> encode(std::string_view text, std::string_view prompt, int max_length,
                              TruncationSide side) const override {
    std::string s;
    s.reserve(prompt.size() + text.size());
    s.append(prompt);
    s.append(text);
    if (config_.do_lower_case)
      for (char& ch : s)
        if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
    return tokenizer_->encode(s, max_length, side);
  }

  std::vector<std::vector<float>> embed_ids(std::span<const std::vector<int32_t>> rows,
                                            std::span<const int32_t> prompt_tokens) const override {
    if (rows.empty()) return {};
    RC_CHECK(prompt_tokens.empty() || prompt_tokens.size() == rows.size(), Errc::invalid_argument,
             "embed_ids: ", prompt_tokens.size(), " prompt lengths for ", rows.size(), " rows");
    const RobertaConfig& c = model_->config();
    const int64_t B = int64_t(rows.size()), C = c.hidden_size;
    int64_t T = 0;
    for (const auto& r : rows) {
      RC_CHECK(!r.empty() && int64_t(r.size()) <= max_length_, Errc::invalid_argument, "a row has ", r.size(),
               " tokens; expected 1..", max_length_);
      T = std::max<int64_t>(T, int64_t(r.size()));
    }
    std::vector<int32_t> ids(size_t(B * T), c.pad_token_id), lens(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      std::copy(rows[b].begin(), rows[b].end(), ids.begin() + b * T);
      lens[b] = int32_t(rows[b].size());
    }
    const int32_t* covered = prompt_tokens.empty() ? nullptr : prompt_tokens.data();
    const Batch batch{B, T, ids.data(), lens.data(), nullptr};
    std::vector<float> pooled(size_t(B * config_.pooling.output_dimension(C)));
    if (std::vector<int32_t> at = pooled_positions(config_.pooling, lens.data(), covered, B); !at.empty()) {
      // CLS / last-token pooling reads one row per sequence: the last layer runs on it alone,
      // as the classifier's does on <s> (a row pooled to zeros runs on its <s>, then is zeroed).
      std::vector<int32_t> positions(at.size());
      for (size_t b = 0; b < at.size(); ++b) positions[b] = std::max(at[b], 0);
      run(
          [&](HiddenStatesWorkspace& ws) {
            forward_selected_states(ctx_, *model_, batch, ws, positions, pooled.data());
          },
          B, T);
      for (size_t b = 0; b < at.size(); ++b)
        if (at[b] < 0) std::fill_n(pooled.data() + b * size_t(C), C, 0.0f);
    } else {
      std::vector<float> hidden(size_t(B * T * C));
      run([&](HiddenStatesWorkspace& ws) { forward_hidden_states(ctx_, *model_, batch, ws, hidden.data()); }, B, T);
      pool_hidden_states(config_.pooling, hidden.data(), lens.data(), covered, B, T, C, pooled.data());
    }
    int64_t D = config_.pooling.output_dimension(C);
    for (const DenseLayer& d : config_.dense) {
      std::vector<float> next(size_t(B * d.out_features));
      d.forward(pooled.data(), B, next.data());
      pooled = std::move(next);
      D = d.out_features;
    }
    std::vector<std::vector<float>> out(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      out[b].assign(pooled.begin() + b * D, pooled.begin() + (b + 1) * D);
      // Weights, not ids, can make these NaN or Inf (a diverged run); JSON cannot carry them.
      // (-inf is also what max pooling gives a row with no counted token, as ST does.)
      for (float v : out[b])
        RC_CHECK(std::isfinite(v), Errc::format, "the model's embeddings are not finite (NaN or Inf)",
                 "\nHINT: the checkpoint's weights hold NaN or Inf values; `roberta inspect` counts them per tensor");
    }
    return out;
  }

  std::vector<float> token_embeddings(const std::vector<int32_t>& row) const override {
    RC_CHECK(!row.empty() && int64_t(row.size()) <= max_length_, Errc::invalid_argument, "a row has ", row.size(),
             " tokens; expected 1..", max_length_);
    const int64_t T = int64_t(row.size());
    const int32_t len = int32_t(T);
    std::vector<float> hidden(size_t(T * hidden_size()));
    const Batch batch{1, T, row.data(), &len, nullptr};
    run([&](HiddenStatesWorkspace& ws) { forward_hidden_states(ctx_, *model_, batch, ws, hidden.data()); }, 1, T);
    for (float v : hidden)
      RC_CHECK(std::isfinite(v), Errc::format, "the model's hidden states are not finite (NaN or Inf)");
    return hidden;
  }

 private:
  // forward(ws) on a pooled workspace of at least B x T.
  template <class Forward>
  void run(Forward&& forward, int64_t B, int64_t T) const {
    std::unique_ptr<HiddenStatesWorkspace> ws;
    {
      std::lock_guard lock(pool_mutex_);
      for (auto it = pool_.begin(); it != pool_.end(); ++it)
        if ((*it)->max_B() >= B && (*it)->max_T() >= T) {
          ws = std::move(*it);
          pool_.erase(it);
          break;
        }
      if (!ws && !pool_.empty()) pool_.pop_back();  // too small: let it go rather than hoard memory
    }
    if (!ws)
      ws = std::make_unique<HiddenStatesWorkspace>(ctx_, model_->config(), std::max<int64_t>(B, 32),
                                                   std::min<int64_t>(std::max<int64_t>(T, 128), max_length_));
    forward(*ws);
    std::lock_guard lock(pool_mutex_);
    pool_.push_back(std::move(ws));
  }

  SentenceTransformerConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<RobertaModel> model_;
  Precision precision_ = Precision::fp32;
  kernels::ExecCtx ctx_;
  int max_length_ = 0;
  int64_t dimension_ = 0;
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<HiddenStatesWorkspace>> pool_;
};

}  // namespace

std::unique_ptr<Embedder> Embedder::load(const fs::path& dir, const EmbedderOptions& options) {
  std::error_code ec;
  RC_CHECK(fs::is_directory(dir, ec), Errc::not_found, dir.string(), ": not a folder",
           "\nHINT: pass a sentence-transformers or Hugging Face model folder");
  return std::make_unique<RobertaEmbedder>(dir, options);
}

}  // namespace rc::model
