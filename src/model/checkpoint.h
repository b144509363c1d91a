// Hugging Face checkpoint folders <-> RobertaModel. Names are HF's, so loading is a
// lookup: every tensor checked by name, shape and dtype; missing and unexpected keys
// reported by name; the "roberta." prefix handled as HF does (a body-only checkpoint
// saved from RobertaModel has no prefix); position_ids / token_type_ids buffers ignored.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/tensor_source.h"
#include "model/roberta_model.h"
#include "roberta/classifier.h"
#include "roberta/tokenizer.h"

namespace rc::model {

struct LoadReport {
  std::filesystem::path weights_file;
  std::string weights_dtype;  // e.g. "F32", "BF16", "F32+BF16"
  std::vector<std::string> missing_keys, unexpected_keys, ignored_keys;
  bool head_initialised = false;
};

struct CheckpointLoadOptions {
  HeadKind head = HeadKind::classifier;  // masked_lm: RobertaForMaskedLM (lm_head.*)
  bool init_head = false;                // allow a checkpoint without this head; it gets HF init
  std::vector<std::string> labels;       // with init_head on a config without id2label
  uint64_t seed = 42;
  // fp32_packed / bf16 / int8: load for inference in that packed format on the CPU (ParamStorage::
  // packed_inference): the encoder GEMMs' weights are packed straight from the mapped file,
  // with no fp32 copy of them; such a model cannot be saved, trained or re-packed. fp32: the
  // full fp32 master (training, fp32 inference, any later set_weight_format).
  WeightFormat pack = WeightFormat::fp32;
};

// The packed format CPU inference runs at `precision` (rc::Classifier, `roberta bench infer`):
// fp32 -> fp32_packed, bf16 -> bf16, int8 -> int8.
WeightFormat packed_weight_format(Precision precision) noexcept;

// The head a checkpoint folder's config.json names (its architectures: head_kind_of).
HeadKind checkpoint_head_kind(const std::filesystem::path& dir);

// Reads DIR/config.json and DIR/model.safetensors (preferred) or DIR/pytorch_model.bin.
std::unique_ptr<RobertaModel> load_checkpoint(const std::filesystem::path& dir, const CheckpointLoadOptions& options,
                                              LoadReport* report = nullptr);

// Writes config.json and model.safetensors (HF names, __metadata__ {"format":"pt"}), each
// atomically. `dtype` is the weights' dtype on disk: f32 (the master, exactly) or bf16 (round
// to nearest even, as torch's .to(torch.bfloat16); half the size, for shipping and serving:
// transformers loads it unchanged); config.json's torch_dtype names it. A masked-LM model is
// saved as transformers saves RobertaForMaskedLM: architectures ["RobertaForMaskedLM"], the
// tied lm_head.decoder.{weight,bias} left out. Tokenizer files are the caller's business
// (copy_tokenizer_files).
void save_checkpoint(const std::filesystem::path& dir, const RobertaModel& model,
                     const std::map<std::string, std::string>& metadata = {}, DType dtype = DType::f32);

// The weights file of a checkpoint folder, as load_checkpoint picks it: model.safetensors,
// else pytorch_model.bin (as transformers does). Throws unsupported for a sharded checkpoint,
// not_found when there is none.
std::unique_ptr<io::TensorSource> open_weights(const std::filesystem::path& dir);

// Refuses (format) a tokenizer with an id the model has no embedding row for: its largest id
// (vocabulary, added tokens, special tokens) must be below config.vocab_size. Checked when a
// folder's tokenizer and checkpoint meet, so such a folder fails at load (exit 3) instead of
// on the first text that uses the token (an invalid_argument that, in the server, also failed
// the requests batched with it). `dir` names the folder.
void check_tokenizer_fits(const Tokenizer& tokenizer, const RobertaConfig& config, const std::filesystem::path& dir);

// Copies vocab.json, merges.txt, tokenizer.json, tokenizer_config.json,
// special_tokens_map.json (those present) from one folder to another, atomically each.
void copy_tokenizer_files(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace rc::model
