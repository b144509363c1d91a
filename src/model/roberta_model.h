// RobertaForSequenceClassification on the kernels layer: fp32 master parameters in one flat
// Buffer on the model's device (param_layout.h), a weight format for the encoder's GEMMs
// (fp32 view, or packed bf16 / int8 derived from the master at set_weight_format, or for an
// inference-only load straight from the checkpoint: ParamStorage::packed_inference), the
// inference forward and the training forward + backward. Both run the one encoder layer
// (encoder.h). Activations live in workspaces planned once for the largest batch × length;
// nothing is allocated per layer or per call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "device/buffer.h"
#include "kernels/exec_ctx.h"
#include "kernels/linear.h"
#include "model/batch.h"
#include "model/encoder.h"
#include "model/param_layout.h"
#include "model/roberta_config.h"

namespace rc::model {

// The encoder GEMMs' weights. fp32: views of the fp32 master (training, any device).
// fp32_packed / bf16 / int8 are packed once into the GEMM library's layout (CPU inference only;
// on CUDA the fp32 weights feed bf16 tensor-core GEMMs through ExecCtx::matmul_precision).
// fp32_packed computes what fp32 does, but can be loaded straight from the checkpoint without
// materialising the fp32 master (ParamStorage::packed_inference) and fuses GELU into the GEMM.
enum class WeightFormat { fp32, bf16, int8, fp32_packed };
const char* weight_format_name(WeightFormat f) noexcept;

// How much of the fp32 master a model keeps. packed_inference (load_checkpoint with
// CheckpointLoadOptions::pack): the encoder GEMMs' weights are packed straight from the
// checkpoint and never copied into params() (their ranges stay unfilled, untouched pages of
// one lazily mapped buffer); everything the forward reads as fp32 (embeddings, LayerNorms,
// biases, the classifier's out_proj) is there. Such a model can only run inference in its
// packed format: save, to_device, a format change and the fp32 views refuse (Errc::unsupported).
enum class ParamStorage { full, packed_inference };

class RobertaModel {
 public:
  // On the CPU, parameters zeroed, fp32 format. head: classifier.* (RobertaForSequenceClassification)
  // or lm_head.* (RobertaForMaskedLM, see mlm_head.h).
  explicit RobertaModel(RobertaConfig config, HeadKind head = HeadKind::classifier,
                        ParamStorage storage = ParamStorage::full);
  const RobertaConfig& config() const { return config_; }
  HeadKind head_kind() const { return head_; }
  const ParamLayout& layout() const { return layout_; }
  const ModelOffsets& offsets() const { return offsets_; }
  // The flat fp32 parameters, on device(). For ParamStorage::packed_inference the packed
  // GEMM weights' ranges are not filled (is_packed_only below): read biases, LayerNorms and
  // embeddings through it, never those. The non-const accessor counts as a write: it bumps
  // params_version(), which copies derived from the parameters (the bf16 training step's
  // weights, bf16_weights.h) compare against, so none can be read stale.
  float* params() {
    ++params_version_;
    return params_.f32();
  }
  const float* params() const { return params_.f32(); }
  uint64_t params_version() const { return params_version_; }
  int64_t num_params() const { return layout_.total(); }
  Device device() const { return params_.device(); }
  int device_index() const { return params_.device_index(); }
  ParamStorage storage() const { return storage_; }
  // Errc::unsupported naming `what` for a packed_inference model (anything that needs the
  // fp32 GEMM weights: save, training, another format).
  void require_fp32_weights(const char* what) const;
  // roberta.embeddings.word_embeddings.weight, (vocab, C): in params(), or for a
  // packed_inference model loaded from fp32 safetensors, read in place from the mapped file.
  const float* word_embeddings() const { return wte_external_ ? wte_external_ : params() + offsets_.wte; }
  // packed_inference only: the word embeddings are at `wte` (fp32, aligned), kept valid by
  // `keep_alive` (the mapped checkpoint); their range in params() is never filled.
  void use_external_word_embeddings(const float* wte, std::shared_ptr<const void> keep_alive);
  // Whether the parameter at this layout offset is one of the weights the packed formats
  // pack (each layer's Q/K/V, attention output, FFN in and out; classifier.dense).
  bool is_packed_weight(int64_t offset) const;
  // The parameter's slice (host models only); throws not_found for an unknown name, and
  // unsupported for a packed weight of a packed_inference model.
  std::span<float> param(std::string_view hf_name);
  std::span<const float> param(std::string_view hf_name) const;
  // HF's _init_weights: normal(0, initializer_range) for Linear/Embedding weights, zero
  // biases, LayerNorm 1/0, zero padding rows. head_only: only classifier.* (--init-head).
  void init_weights(uint64_t seed, bool head_only = false);
  // The same for the entries `which` picks (load_checkpoint: the ones a checkpoint lacks).
  void init_weights(uint64_t seed, const std::function<bool(const ParamEntry&)>& which);

  // Moves the parameters to ctx's device (a copy; the weight format returns to fp32).
  void to_device(const kernels::ExecCtx& ctx);
  // num_params() floats between the parameters and host memory, whatever the device.
  void copy_params_to_host(float* dst) const;
  void copy_params_from_host(const float* src);

  // Packs (fp32_packed / bf16 / int8) or drops (fp32) the derived GEMM weights from the current
  // master. Call again after changing the parameters. Packed formats need a CPU model. A
  // packed_inference model has no master to pack from: only its own format is accepted (a no-op).
  void set_weight_format(WeightFormat format);
  // Where pack_from reads a packed weight: its layout offset and (rows, K) shape in, the
  // checkpoint's tensors covering those rows (in order) out.
  using WeightSource =
      std::function<std::vector<kernels::PackedLinear::SourceRows>(int64_t offset, int64_t rows, int64_t K)>;
  // Packs `format` (fp32_packed / bf16 / int8) straight from `source`, on the CPU's threads, one matrix
  // per thread at a time (load_checkpoint for a packed_inference model). `packed`, when
  // given, is called (on the packing thread) once a weight is packed; in_place: it reads its
  // source in place (fp32_packed with `borrow`: PackedLinear::pack), else the source is no
  // longer read. borrow: what keeps the sources valid (the mapped checkpoint), or empty.
  using WeightDone = std::function<void(int64_t offset, int64_t rows, int64_t K, bool in_place)>;
  void pack_from(WeightFormat format, const WeightSource& source, const WeightDone& packed = {},
                 std::shared_ptr<const void> borrow = {});
  WeightFormat weight_format() const { return format_; }
  size_t packed_bytes() const;  // 0 for fp32

  // What layer l's GEMMs read in the current format; fp32_view: the master, whatever the
  // format (training). The head's dense layer likewise (packed bf16 for either packed format).
  LayerWeights layer_weights(size_t l, bool fp32_view = false) const;
  kernels::LinearWeight head_dense_weight(bool fp32_view = false) const;
  LayerGrads layer_grads(float* grads, size_t l) const;

 private:
  // The packing jobs of format (the weights' offsets) and the parallel packing itself.
  void pack_weights(WeightFormat format, const WeightSource& source, const WeightDone& packed,
                    const std::shared_ptr<const void>& borrow);
  struct PackedLayer {
    kernels::PackedLinear qkv, attn_out, ffn_in, ffn_out;
  };
  RobertaConfig config_;
  HeadKind head_;
  ParamLayout layout_;
  ModelOffsets offsets_;
  ParamStorage storage_ = ParamStorage::full;
  const float* wte_external_ = nullptr;
  std::shared_ptr<const void> external_;
  Buffer params_;
  uint64_t params_version_ = 0;
  WeightFormat format_ = WeightFormat::fp32;
  std::vector<PackedLayer> packed_;
  kernels::PackedLinear packed_head_;
};

// Distinct dropout streams per site and step: site k of a step seeded s (training.cpp).
uint64_t dropout_site_seed(uint64_t seed, uint64_t site);

// A batch copied to a device: ids, lengths, token types (and labels) in workspace memory.
struct DeviceBatch {
  Buffer ids, seq_lens, token_types, labels, positions;
  int64_t max_B = 0, max_T = 0;
  bool token_types_used = true;  // false: the family has none, stage() drops them
  DeviceBatch() = default;
  DeviceBatch(const kernels::ExecCtx& ctx, int64_t max_B, int64_t max_T, bool with_labels);
  // The batch with its pointers on ctx's device (the CPU reads the caller's arrays in place;
  // CUDA gets one asynchronous copy of each); labels likewise when asked. `positions` is for
  // the caller's kernels::position_ids.
  Batch stage(const kernels::ExecCtx& ctx, const Batch& host, const int32_t* host_labels,
              const int32_t** device_labels);
};

// The position ids of a batch on ctx's device (positions: B·T, OVERWRITTEN), by the family:
// RoBERTa's from the ids (kernels::position_ids), BERT's and DistilBERT's 0..T-1 in each row.
void family_position_ids(const kernels::ExecCtx& ctx, const RobertaConfig& config, int32_t* positions,
                         const Batch& batch);

// Scratch for forward passes up to (max_B, max_T) on one device. One per concurrent caller.
class InferenceWorkspace {
 public:
  InferenceWorkspace(const RobertaConfig& config, int64_t max_B, int64_t max_T);  // CPU
  InferenceWorkspace(const kernels::ExecCtx& ctx, const RobertaConfig& config, int64_t max_B, int64_t max_T);
  int64_t max_B() const { return max_B_; }
  int64_t max_T() const { return max_T_; }

 private:
  friend struct InferenceAccess;  // inference.cpp: the encoder stack of both inference forwards
  friend void forward_logits(const kernels::ExecCtx&, const RobertaModel&, const Batch&, InferenceWorkspace&, float*);
  friend void forward_hidden_states(const kernels::ExecCtx&, const RobertaModel&, const Batch&, InferenceWorkspace&,
                                    float*);
  int64_t max_B_, max_T_;
  Device device_;
  Buffer x_, qkv_, attn_, tmp_, ffn_, rows_, logits_;
  // The LayerNorms' copy of their output in the next GEMM's input type (bf16, or int8 + row
  // scales) for packed weights: one buffer, since each copy is read before the next is written.
  Buffer gemm_in_, gemm_scale_;
  Buffer ffn_scale_;  // int8 FFN: the per-row scales of the GELU rows' int8 copy (in ffn_)
  DeviceBatch batch_;
};

// Inference embeddings: x(B·T, C) = LayerNorm(wte[ids] + wpe[positions] + tte[types]), no
// dropout. batch on ctx's device; positions (B·T) and scratch (B·T·C) OVERWRITTEN. gemm_in:
// where the LayerNorm also writes x in the first GEMM's input type (kernels/layernorm.h).
void embed_for_inference(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch, int32_t* positions,
                         float* scratch, float* x, const kernels::GemmInput& gemm_in = {});

// logits (B, num_labels), host memory; for a token classifier (B, T, num_labels), one row per
// token, the padding's included. Eval mode: no dropout. Runs the model's weight format on
// ctx's device (the model and the workspace must be there). A sequence classifier's last layer
// runs on the first token only. Same logits for a row whether padded in a batch or alone.
void forward_logits(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch, InferenceWorkspace& ws,
                    float* logits);

// Where dropout applies in training; p = 0 turns a site off (--dropout 0 zeroes all).
struct DropoutConfig {
  float hidden = 0, attention = 0, classifier = 0;
  static DropoutConfig from(const RobertaConfig& config);  // the config's probabilities
};

// What a training row is scored against: integer labels (a sequence classifier with one
// label: one per row; a token classifier or the masked-LM head: one per token, B·T, -100 =
// ignored) or float targets (multi-label 0/1 and regression values: num_labels per row).
// Host memory. Converts from a label array, the single-label case.
struct MnrlConfig;  // mnrl.h
struct Targets {
  const int32_t* labels = nullptr;
  const float* values = nullptr;
  // A bare encoder (HeadKind::encoder_only) trained by MultipleNegativesRankingLoss: the batch's
  // anchor rows and how they are scored (mnrl.h); labels and values unused.
  const MnrlConfig* ranking = nullptr;
  // Cross-entropy heads (single-label and token classification): HF Trainer's
  // label_smoothing_factor ε, the target (1 - ε)·onehot + ε/K (kernels/loss.h). 0: plain.
  float label_smoothing = 0;
  Targets() = default;
  Targets(const int32_t* labels_) : labels(labels_) {}  // NOLINT: implicit on purpose (the common case)
  static Targets of_values(const float* v) {
    Targets t;
    t.values = v;
    return t;
  }
};

// RobertaForSequenceClassification's loss, as transformers picks it from config.problem_type:
// regression → MSE, multi_label_classification → BCE-with-logits, single_label_classification
// → cross-entropy. An unset problem type is inferred as HF does at its first forward, where the
// labels' dtype is not known here: one label → regression, else single-label (a multi-label
// model must say so; the trainer always writes the problem type).
enum class SequenceLoss { cross_entropy, bce_with_logits, mse };
SequenceLoss sequence_loss_of(const RobertaConfig& config);

struct HiddenHead;     // below
class Bf16WeightCopy;  // bf16_weights.h

// Saved activations for one forward + backward up to (max_B, max_T), on one device.
class TrainWorkspace {
 public:
  TrainWorkspace(const RobertaConfig& config, int64_t max_B, int64_t max_T,
                 HeadKind head = HeadKind::classifier);  // CPU
  // head: which head's buffers to plan (the token classifier's are per token).
  TrainWorkspace(const kernels::ExecCtx& ctx, const RobertaConfig& config, int64_t max_B, int64_t max_T,
                 HeadKind head = HeadKind::classifier);
  int64_t max_B() const { return max_B_; }
  int64_t max_T() const { return max_T_; }
  // The classifier head's buffers (training.cpp).
  struct HeadBuffers {
    float *head_in, *head_pre, *head_act, *head_drop, *logits, *probs_out, *losses, *loss, *d_head;
    float* targets;  // (B, K) float targets on the device (multi-label, regression)
    // The token classifier's, per token (null for other heads).
    float *tok_drop, *tok_logits, *tok_probs, *tok_losses, *d_tok_logits;
    int32_t* tok_labels;
  };
  // Called by the backward as soon as encoder layer l's parameter gradients are complete for
  // this call (l = NL-1 down to 0, on the calling thread; for a CUDA context the kernels may
  // still be queued). The data-parallel trainer starts reducing them while the backward goes
  // on. Empty: not called. The model knows nothing of who listens.
  std::function<void(int64_t layer)> on_layer_grads;
  // bf16 GEMMs on the CPU: the encoder weights' bf16 copy (refreshed when stale) that the
  // forward and the dX GEMMs read instead of converting each weight per call; null: none.
  // Set by its owner (train::TrainEngine).
  Bf16WeightCopy* bf16_weights = nullptr;
  // Made for bf16 GEMMs on the CPU (a context with matmul_precision bf16): the encoder GEMMs'
  // inputs are saved in bf16 (each written once, by the op that produces it, and read by both
  // the forward GEMM and the backward's dW GEMM, which round them to bf16 anyway: the same
  // gradients bit for bit) and their fp32 rows are one layer's scratch. Such a workspace runs
  // with bf16 contexts only.
  bool saves_bf16_activations() const { return saves_bf16_; }

 private:
  HeadBuffers head_buffers();
  friend float forward_backward(const kernels::ExecCtx&, const RobertaModel&, const Batch&, Targets,
                                const DropoutConfig&, uint64_t, float, float*, TrainWorkspace&, float*);
  friend float forward_backward_hidden(const kernels::ExecCtx&, const RobertaModel&, const Batch&, const DropoutConfig&,
                                       uint64_t, float*, TrainWorkspace&, HiddenHead&);
  int64_t max_B_, max_T_;
  Device device_;
  bool saves_bf16_ = false;
  // Per layer: inputs of every op the backward needs (llm.c style, one buffer per role).
  // saves_bf16_: layer_in_, attn_ctx_ and ln1_out_ hold one layer (ffn_act_ none), and the
  // GEMM inputs live in the bf16 slots below, one per layer.
  Buffer emb_sum_, emb_mean_, emb_rstd_, layer_in_;
  Buffer qkv_, probs_, attn_ctx_, proj_, attn_sum_, ln1_out_, ln1_mean_, ln1_rstd_;
  Buffer ffn_pre_, ffn_act_, ffn_sum_, ln2_mean_, ln2_rstd_;
  Buffer x_in16_, attn16_, ln1_16_, ffn_act16_;
  Buffer head_in_, head_pre_, head_act_, head_drop_, logits_, probs_out_, losses_, loss_, targets_;
  Buffer tok_drop_, tok_logits_, tok_probs_, tok_losses_, d_tok_logits_, tok_labels_;
  Buffer d_x_, d_x2_, d_qkv_, d_ctx_, d_ffn_, d_head_;
  DeviceBatch batch_;
};

// The training step of a classifier, HF's loss; gradients of (loss · loss_scale) ACCUMULATE
// into grads (the model's layout, on ctx's device). batch and targets are host memory.
//   - sequence classifier: the loss of sequence_loss_of(config), the mean over rows (BCE and
//     MSE: over rows × labels, torch's default); targets.labels (B) for cross-entropy, else
//     targets.values (B·K);
//   - token classifier: the mean cross-entropy over the tokens whose label is not -100
//     (targets.labels, B·T); a batch with none has loss 0 and adds no gradient (HF: NaN).
// logits_out (B·num_labels, host; sequence classifier only) may be null. Always the fp32
// weights. Dropout masks come from `seed` (counter-based: the same seed gives the same masks
// on any thread count and device).
float forward_backward(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch, Targets targets,
                       const DropoutConfig& dropout, uint64_t seed, float loss_scale, float* grads, TrainWorkspace& ws,
                       float* logits_out);

// The seam for heads other than the classifier (RobertaForMaskedLM's lm_head, mlm_head.h):
// the training forward through the embeddings and every encoder layer (activations saved,
// dropout from `seed` as forward_backward), then head.run(x_last, d_x_last, labels) with the
// final hidden states x_last (B·T, C, on ctx's device). The head returns its loss; when it
// asks for a backward it has written ∂(its scaled loss)/∂x_last into d_x_last (B·T, C;
// zeroed before the call) and ACCUMULATED its own parameters' gradients into grads, and the
// encoder backward then accumulates the rest. backward = false makes this an eval-mode
// forward (pass dropout 0). forward_backward is this function with the classifier head.
struct HiddenHead {
  struct Result {
    float loss = 0;
    bool backward = false;
  };
  virtual ~HiddenHead() = default;
  // One label per row on the host, copied to the device with the batch and handed to run();
  // null for a head that reads its own (the masked-LM head's B·T labels, host only).
  virtual const int32_t* row_labels() const { return nullptr; }
  virtual Result run(const float* x_last, float* d_x_last, const int32_t* device_row_labels) = 0;
};
float forward_backward_hidden(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                              const DropoutConfig& dropout, uint64_t seed, float* grads, TrainWorkspace& ws,
                              HiddenHead& head);

}  // namespace rc::model
