// Loading and saving Hugging Face checkpoint folders. The name mapping mirrors
// transformers' from_pretrained, with each family's names (model/families/; RoBERTa's below):
//   - keys without the base model's prefix ("roberta.", "bert.", "distilbert.": saved from
//     RobertaModel / BertModel / DistilBertModel) get it added;
//   - legacy LayerNorm "gamma"/"beta" names mean "weight"/"bias";
//   - buffers (position_ids, token_type_ids) are ignored;
//   - lm_head.decoder.{weight,bias} are ties (to the word embeddings and lm_head.bias), not
//     weights of their own: ignored, as transformers does;
//   - anything else unknown (lm_head.* for a classifier, pooler.*) is reported as unused, as
//     HF warns. A RobertaForMaskedLM load (HeadKind::masked_lm) reads lm_head.* instead of
//     classifier.*.
#include "model/checkpoint.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/check.h"
#include "core/regular_file.h"
#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "tensor/bf16.h"
#include "tokenizer/tokenizer_files.h"
#include "roberta/log.h"

namespace rc::model {
namespace fs = std::filesystem;

namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_float_dtype(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16 || d == DType::f64; }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The model name a checkpoint key stands for, or "" for buffers and ties that carry no
// weights of their own. `base`: a layout holding every base-model name of the family (the
// sequence classifier's: the pooler too), for the prefix a bare base-model save lacks.
std::string canonical_name(std::string name, const EncoderFamily& family, const ParamLayout& base) {
  if (ends_with(name, "LayerNorm.gamma")) name = name.substr(0, name.size() - 5) + "weight";
  if (ends_with(name, "LayerNorm.beta")) name = name.substr(0, name.size() - 4) + "bias";
  if (ends_with(name, "embeddings.position_ids") || ends_with(name, "embeddings.token_type_ids")) return "";
  for (const std::string& ignored : family.ignored_keys)
    if (name == ignored) return "";
  if (!starts_with(name, family.base_prefix)) {
    const std::string prefixed = family.base_prefix + name;
    if (const ParamEntry* e = base.find(prefixed); e && !e->is_head) return prefixed;
  }
  return name;
}

std::string join_some(const std::vector<std::string>& names, size_t max = 8) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

}  // namespace

std::unique_ptr<io::TensorSource> open_weights(const fs::path& dir) {
  const fs::path st = dir / "model.safetensors", bin = dir / "pytorch_model.bin";
  if (path_present(st)) return io::open_safetensors(st);  // preferred, as transformers does
  if (path_present(bin)) return io::open_pytorch_bin(bin);
  RC_CHECK(!path_present(dir / "model.safetensors.index.json") && !path_present(dir / "pytorch_model.bin.index.json"),
           Errc::unsupported, dir.string(), ": sharded checkpoints are not supported yet",
           "\nHINT: re-save with save_pretrained(max_shard_size=\"10GB\") to get one weights file");
  RC_THROW(Errc::not_found, dir.string(), ": no model.safetensors or pytorch_model.bin",
           "\nHINT: pass a Hugging Face checkpoint folder (config.json + weights + tokenizer files)");
}

WeightFormat packed_weight_format(Precision precision) noexcept {
  switch (precision) {
    case Precision::bf16:
      return WeightFormat::bf16;
    case Precision::int8:
      return WeightFormat::int8;
    case Precision::fp32:
      break;
  }
  return WeightFormat::fp32_packed;
}

HeadKind checkpoint_head_kind(const fs::path& dir) {
  return head_kind_of(RobertaConfig::from_file(dir / "config.json").architectures);
}

std::unique_ptr<RobertaModel> load_checkpoint(const fs::path& dir, const CheckpointLoadOptions& options,
                                              LoadReport* report) {
  std::error_code ec;
  RC_CHECK(fs::is_directory(dir, ec), Errc::not_found, dir.string(), ": not a folder",
           "\nHINT: pass the checkpoint folder (with config.json), not a file");
  RobertaConfig config = RobertaConfig::from_file(dir / "config.json");
  const EncoderFamily& family = config.family();
  const ParamLayout base_names = ParamLayout::build(config, HeadKind::classifier);
  std::shared_ptr<io::TensorSource> source = open_weights(dir);
  const std::string file = source->path().filename().string();

  // Map checkpoint keys to model names first: a head-less checkpoint must be known
  // before the label count (and so the layout) is fixed.
  std::map<std::string, const io::TensorInfo*> by_name;
  LoadReport rep;
  rep.weights_file = source->path();
  std::set<std::string> dtypes;
  for (const io::TensorInfo& t : source->tensors()) {
    const std::string name = canonical_name(t.name, family, base_names);
    if (name.empty()) {
      rep.ignored_keys.push_back(t.name);
      continue;
    }
    RC_CHECK(!by_name.count(name), Errc::format, file, ": tensors '", by_name[name]->name, "' and '", t.name,
             "' both stand for '", name, "'");
    by_name[name] = &t;
  }
  const bool mlm = options.head == HeadKind::masked_lm, tokens = options.head == HeadKind::token_classifier;
  // A bare base model (RobertaModel, BertModel, ...): no head; its pooler, when saved, unused.
  const bool bare = options.head == HeadKind::encoder_only;
  for (auto it = by_name.begin(); bare && it != by_name.end();) {
    if (starts_with(it->first, std::string(family.base_prefix) + "pooler.") || starts_with(it->first, "pooler.")) {
      rep.ignored_keys.push_back(it->second->name);
      it = by_name.erase(it);
    } else {
      ++it;
    }
  }
  const std::string head_out =
      bare ? std::string() : family.tensor_name(tokens ? Role::token_out_weight : Role::sequence_out_weight);
  const std::string mlm_bias = family.tensor_name(Role::mlm_bias);
  const std::string arch = head_architecture(options.head, family);
  const bool has_head = !bare && by_name.count(mlm ? mlm_bias : head_out) > 0;
  if (bare) {
  } else if (mlm) {
    RC_CHECK(has_head || options.init_head, Errc::format, file, ": no masked-LM head (", mlm_bias, ")",
             "\nHINT: train one with `roberta pretrain --model DIR` (it initialises a missing lm_head)");
  } else if (!has_head) {
    RC_CHECK(options.init_head, Errc::format, file, ": no ", tokens ? "token-" : "", "classification head (", head_out,
             ") for ", arch, ": this checkpoint has another head or none (", family.class_name("Model"), " / ",
             family.class_name("ForMaskedLM"), ")",
             "\nHINT: pass --init-head to start a freshly initialised head, as Hugging Face does");
    if (!options.labels.empty()) config.id2label = options.labels;
  } else {
    // The head's size wins over a config that disagrees with it only by raising an error.
    const io::TensorInfo* out = by_name[head_out];
    RC_CHECK(out->shape.size() == 2 && out->shape[0] == config.num_labels(), Errc::format, file, ": tensor '", head_out,
             "': got ", shape_str(out->shape), ", expected [", config.num_labels(), ", ", config.hidden_size,
             "] (config.json has ", config.num_labels(), " labels)");
  }

  const bool packed = options.pack != WeightFormat::fp32;
  auto model = std::make_unique<RobertaModel>(config, options.head,
                                              packed ? ParamStorage::packed_inference : ParamStorage::full);
  // packed: where each GEMM weight is read from when packing (its offset in the layout): the
  // mapped tensor itself, or params() for one converted there (f64) or initialised (head).
  std::map<int64_t, kernels::PackedLinear::SourceRows> pack_sources;
  std::map<int64_t, std::string> mapped_names;                       // the tensor behind each pack source read in place
  const bool mapped = source->path().extension() == ".safetensors";  // io: safetensors are mmap'ed
  std::vector<bool> loaded(model->layout().entries().size(), false);
  std::set<std::string> used;
  for (size_t i = 0; i < model->layout().entries().size(); ++i) {
    const ParamEntry& e = model->layout().entries()[i];
    auto it = by_name.find(e.name);
    if (it == by_name.end()) continue;
    const io::TensorInfo& t = *it->second;
    RC_CHECK(t.shape == e.shape, Errc::format, file, ": tensor '", t.name, "': got ", shape_str(t.shape), ", expected ",
             shape_str(e.shape));
    RC_CHECK(is_float_dtype(t.dtype), Errc::format, file, ": tensor '", t.name, "': dtype ", dtype_name(t.dtype),
             " is not a floating type");
    const int64_t rows = e.shape.empty() ? 1 : e.shape[0];
    const void* bytes = source->data(t.name).data();
    if (packed && model->is_packed_weight(e.offset) && t.dtype != DType::f64) {
      pack_sources[e.offset] = {bytes, t.dtype, rows};
      mapped_names[e.offset] = t.name;
    } else if (packed && !mlm && e.offset == model->offsets().wte && t.dtype == DType::f32 && mapped &&
               reinterpret_cast<uintptr_t>(bytes) % alignof(float) == 0) {
      // 150 MB for roberta-base of which a request reads a few rows: read in place from the
      // mapping, which the model keeps. Safe against the file being replaced (rename, as our
      // writers and huggingface_hub do); rewriting it in place under a running process is not.
      model->use_external_word_embeddings(static_cast<const float*>(bytes), source);
    } else {
      io::convert_to_f32(t.dtype, source->data(t.name), model->params() + e.offset, e.numel);
      if (packed && model->is_packed_weight(e.offset))
        pack_sources[e.offset] = {model->params() + e.offset, DType::f32, rows};
    }
    dtypes.insert(std::string(dtype_name(t.dtype)));
    loaded[i] = true;
    used.insert(e.name);
  }
  for (size_t i = 0; i < loaded.size(); ++i) {
    const ParamEntry& e = model->layout().entries()[i];
    if (!loaded[i]) rep.missing_keys.push_back(e.name);
  }
  for (const auto& [name, info] : by_name)
    if (!used.count(name)) rep.unexpected_keys.push_back(info->name);

  std::vector<std::string> missing_body;
  for (size_t i = 0; i < loaded.size(); ++i)
    if (!loaded[i] && !model->layout().entries()[i].may_be_missing)
      missing_body.push_back(model->layout().entries()[i].name);
  RC_CHECK(missing_body.empty(), Errc::format, file, ": missing tensors: ", join_some(missing_body),
           "\nHINT: the weights do not match config.json (num_hidden_layers, model type?)");
  if (!rep.missing_keys.empty()) {
    // HF's _init_weights on what the checkpoint lacks (the head; BERT's pooler), nothing else.
    const std::set<std::string> missing(rep.missing_keys.begin(), rep.missing_keys.end());
    model->init_weights(options.seed, [&](const ParamEntry& e) { return missing.count(e.name) > 0; });
    rep.head_initialised = true;
    log::warn("model", "Some weights of ", arch, " were not initialized from the model ", "checkpoint at ",
              dir.string(), " and are newly initialized: ", join_some(rep.missing_keys),
              ". You should probably TRAIN this model on a down-stream task to be able to use it for predictions ",
              "and inference.");
  }
  if (!rep.unexpected_keys.empty())
    log::warn("model", "Some weights of the model checkpoint at ", dir.string(), " were not used when initializing ",
              arch, ": ", join_some(rep.unexpected_keys),
              ". This IS expected if you are initializing it from a model with another head (e.g. a ",
              mlm ? "sequence classifier" : family.class_name("ForMaskedLM") + " pretrained model", ").");
  if (packed) {
    for (const ParamEntry& e : model->layout().entries())
      if (model->is_packed_weight(e.offset) && !pack_sources.count(e.offset))  // initialised above
        pack_sources[e.offset] = {model->params() + e.offset, DType::f32, e.shape[0]};
    // A packed GEMM weight may span several checkpoint tensors (Q, K and V make W_qkv).
    model->pack_from(
        options.pack,
        [&](int64_t offset, int64_t rows, int64_t K) {
          std::vector<kernels::PackedLinear::SourceRows> parts;
          for (int64_t at = offset, got = 0; got < rows;) {
            auto it = pack_sources.find(at);
            RC_CHECK(it != pack_sources.end(), Errc::internal, "load_checkpoint: no source for the weight at ", at);
            parts.push_back(it->second);
            got += it->second.rows;
            at += it->second.rows * K;
          }
          return parts;
        },
        [&](int64_t offset, int64_t rows, int64_t K, bool in_place) {
          // Packed: its file pages leave this process's resident set (peak RSS ~ packed weights);
          // read in place (fp32 where the GEMM reads W's own rows): they stay.
          if (in_place) return;
          for (int64_t at = offset, end = offset + rows * K; at < end;) {
            const auto it = mapped_names.find(at);
            if (it != mapped_names.end()) source->release(it->second);
            at += pack_sources.at(at).rows * K;
          }
        },
        // fp32 weights may be read in place from the mapping (kernels: PackedLinear::pack's
        // borrow), which the model then keeps, as it keeps the word embeddings above.
        mapped ? std::shared_ptr<const void>(source) : nullptr);
  }
  for (const std::string& d : dtypes) rep.weights_dtype += (rep.weights_dtype.empty() ? "" : "+") + d;
  if (report) *report = std::move(rep);
  return model;
}

void save_checkpoint(const fs::path& dir, const RobertaModel& model, const std::map<std::string, std::string>& metadata,
                     DType dtype) {
  model.require_fp32_weights("save_checkpoint");
  RC_CHECK(dtype == DType::f32 || dtype == DType::bf16, Errc::invalid_argument,
           "save_checkpoint: weights are saved as F32 or BF16, not ", dtype_name(dtype));
  std::error_code ec;
  fs::create_directories(dir, ec);
  RC_CHECK(!ec, Errc::io, dir.string(), ": cannot create folder (", ec.message(), ")");
  // A model on a device is written from a host copy of its parameters.
  std::vector<float> host;
  const float* P = model.params();
  if (model.device() != Device::cpu) {
    host.resize(size_t(model.num_params()));
    model.copy_params_to_host(host.data());
    P = host.data();
  }
  std::vector<uint16_t> halves;  // the bf16 copy, when asked for
  if (dtype == DType::bf16) {
    halves.resize(size_t(model.num_params()));
    for (size_t i = 0; i < halves.size(); ++i) halves[i] = f32_to_bf16(P[i]);
  }
  std::vector<io::TensorToWrite> tensors;
  for (const ParamEntry& e : model.layout().entries())
    tensors.push_back({e.name, dtype, e.shape,
                       dtype == DType::bf16 ? static_cast<const void*>(halves.data() + e.offset) : P + e.offset});
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = "pt";  // what transformers' save_pretrained writes
  io::write_safetensors(dir / "model.safetensors", tensors, meta);
  RobertaConfig config = model.config();
  if (model.head_kind() != HeadKind::classifier) {
    config.architectures = {head_architecture(model.head_kind(), config.family())};
    config.problem_type.clear();  // a sequence classifier's setting (HF leaves it null otherwise)
  } else {
    if (head_kind_of(config.architectures) != HeadKind::classifier)
      config.architectures = {head_architecture(HeadKind::classifier, config.family())};
    // One label without a problem type is HF's regression: left unset, as transformers reads it.
    if (config.problem_type.empty() && config.num_labels() > 1) config.problem_type = "single_label_classification";
  }
  // torch_dtype names what the file holds, whatever the source checkpoint's config said.
  config.torch_dtype = dtype == DType::bf16 ? "bfloat16" : "float32";
  io::write_file_atomic(dir / "config.json", config.to_json());
}

void check_tokenizer_fits(const Tokenizer& tokenizer, const RobertaConfig& config, const fs::path& dir) {
  // vocab_size(): one past the largest vocabulary or added-token id; the role ids may come
  // from elsewhere (tokenizer.json's "padding"), so they are looked at too.
  const int32_t roles[] = {tokenizer.bos_id(), tokenizer.eos_id(), tokenizer.pad_id(), tokenizer.unk_id(),
                           tokenizer.mask_id()};
  int64_t max_id = tokenizer.vocab_size() - 1;
  for (int32_t id : roles) max_id = std::max<int64_t>(max_id, id);
  if (max_id < config.vocab_size) return;
  const std::string token = max_id < INT32_MAX ? tokenizer.id_to_token(int32_t(max_id)) : std::string();
  RC_THROW(Errc::format, dir.string(), ": the tokenizer has token id ", max_id,
           token.empty() ? std::string() : " ('" + token.substr(0, 64) + "')", " but config.json's vocab_size is ",
           config.vocab_size, " (ids 0..", config.vocab_size - 1, ")",
           "\nHINT: the tokenizer does not belong to this checkpoint; use the tokenizer files saved with the model");
}

void copy_tokenizer_files(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (fs::equivalent(from, to, ec)) return;  // false (not a throw) when either is missing
  // Every file Tokenizer::from_dir reads, for every family: a BERT folder may carry only
  // vocab.txt, an XLM-R or CamemBERT one only sentencepiece.bpe.model (transformers' slow
  // tokenizers save those names, and the fast ones save them beside tokenizer.json).
  for (const char* name : {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json",
                           "special_tokens_map.json", "added_tokens.json", "vocab.txt", "sentencepiece.bpe.model"}) {
    const fs::path src = from / name;
    if (path_present(src)) io::write_file_atomic(to / name, io::read_file(src, tokenizer::kMaxTokenizerFileBytes));
  }
}

}  // namespace rc::model
