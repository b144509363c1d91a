// Hugging Face's fill-mask pipeline on a RobertaForMaskedLM checkpoint: for each <mask> in a
// text, the top-k tokens by softmax probability over the vocabulary, with token_str as
// tokenizer.decode([id]) and the filled-in sequence as decode(ids, skip_special_tokens).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "roberta/classifier.h"  // Precision

namespace rc {

struct FillMaskCandidate {
  float score = 0;
  int32_t token = -1;
  std::string token_str, sequence;
};

class FillMasker {
 public:
  // Throws rc::Error when the folder is not a masked-LM checkpoint (no lm_head.*).
  // precision: the encoder's weights as `predict` runs them on the CPU (fp32 packed, bf16, or
  // int8 per-channel weights with per-token activations); the lm_head stays fp32 in each. bf16
  // on a CPU without AVX512-BF16/AMX runs fp32 with a warning, as predict does.
  static std::unique_ptr<FillMasker> load(const std::filesystem::path& dir, Precision precision = Precision::fp32);
  virtual ~FillMasker() = default;
  // One list per <mask> of the text, in order (the pipeline returns a flat list for one
  // mask, a list of lists for several). A text longer than max_length() is truncated after
  // its masks were found. Throws invalid_argument when the text has no <mask>, more than
  // max_masks, or a <mask> past max_length(). Thread-safe.
  // targets (FillMaskPipeline's `targets`): when not empty, only these tokens are candidates,
  // scored by their probability over the whole vocabulary, and top_k is capped at their count.
  // Each is looked up in the vocabulary (byte-level form, "Ġhappy"), else tokenized without
  // special tokens and its first token used (HF's get_target_ids); one giving no token is
  // skipped; duplicates count once. Throws invalid_argument when none is left.
  virtual std::vector<std::vector<FillMaskCandidate>> fill(const std::string& text, int top_k = 5,
                                                           const std::vector<std::string>& targets = {}) const = 0;
  // The pipeline's JSON for texts: per text a list of candidates (one <mask>) or a list of
  // such lists (several); a single text unwrapped when `single`. Throws
  // rc::Error(resource_exhausted) once the answer passes max_bytes (0: no bound).
  std::string fill_json(const std::vector<std::string>& texts, int top_k, bool single, size_t max_bytes = 0,
                        const std::vector<std::string>& targets = {}) const;
  static constexpr size_t max_targets = 4096;  // per call: targets a request controls
  virtual int max_length() const = 0;          // tokens incl. <s> </s>
  virtual Precision precision() const = 0;     // the one it runs (after a bf16 fallback)
  static constexpr int max_masks = 64;
};

}  // namespace rc
