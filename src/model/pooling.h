// sentence-transformers' Pooling module (sentence_transformers/models/Pooling.py, v5:
// _forward_padded), on the encoder's final hidden states of a right-padded batch, and the
// vector operations an embedding answer applies after it (Normalize.py, Matryoshka truncation).
//   cls          the first counted token (token 0 unless the prompt is excluded: then the
//                first token after it, argmax of the mask, as ST v5 does)
//   mean         Σ h·m / max(Σ m, 1e-9)
//   max          max over counted tokens
//   mean_sqrt_len_tokens  Σ h·m / sqrt(max(Σ m, 1e-9))
//   weightedmean Σ h·m·(t+1) / max(Σ m·(t+1), 1e-9)  (position weights, 1-based over the padded row)
//   lasttoken    h at the last counted token (the row's </s>)
// m is the attention mask (t < seq_len) with the first prompt_tokens positions zeroed when
// include_prompt is false. Several modes concatenate in the order given.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rc::model {

enum class PoolingMode { cls, mean, max, mean_sqrt_len, weighted_mean, last_token };
// sentence-transformers' names: "cls", "mean", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken".
const char* pooling_mode_name(PoolingMode mode) noexcept;
// ST's names, and TEI's --pooling spelling "last-token". Throws rc::Error(invalid_argument) otherwise.
PoolingMode parse_pooling_mode(std::string_view name);

struct PoolingConfig {
  std::vector<PoolingMode> modes{PoolingMode::mean};
  bool include_prompt = true;
  int64_t embedding_dimension = 0;  // the config's word/embedding dimension; 0 when not given
  // 1_Pooling/config.json: ST v5's {"embedding_dimension", "pooling_mode": str | [str],
  // "include_prompt"} or the legacy {"word_embedding_dimension", "pooling_mode_cls_token", ...}
  // booleans (concatenated in the legacy order, mean when none is set: Pooling.py
  // _convert_legacy_pooling_kwargs). Throws rc::Error(format) naming the file.
  static PoolingConfig from_json(std::string_view text, std::string_view source);
  static PoolingConfig from_file(const std::filesystem::path& path);
  int64_t output_dimension(int64_t hidden) const { return int64_t(modes.size()) * hidden; }
  std::string describe() const;  // "mean", "cls+max" (ST's get_pooling_mode_str)
};

// hidden (B, T, C) host memory; seq_lens (B) real tokens per row (>= 1); prompt_tokens (B) or
// null: positions excluded from the mask when !config.include_prompt. out (B, modes·C) OVERWRITTEN.
void pool_hidden_states(const PoolingConfig& config, const float* hidden, const int32_t* seq_lens,
                        const int32_t* prompt_tokens, int64_t B, int64_t T, int64_t C, float* out);

// The one position each row's pooling reads when the pooling is a single cls or lasttoken
// mode (what pool_hidden_states copies: the same seq_lens / prompt_tokens semantics), -1
// for a row it answers with zeros (lasttoken with no counted token); empty for any other
// pooling. With these, only those rows' final hidden states are needed (hidden_states.h:
// forward_selected_states).
std::vector<int32_t> pooled_positions(const PoolingConfig& config, const int32_t* seq_lens,
                                      const int32_t* prompt_tokens, int64_t B);

// torch.nn.functional.normalize(v, p=2, dim=-1, eps=1e-12): v / max(||v||, 1e-12), in place.
void l2_normalize(std::span<float> v);
// Cosine similarity as sentence_transformers.util.cos_sim computes it: the dot product of the
// two L2-normalised vectors (normalize eps 1e-12). Same length.
float cosine_similarity(std::span<const float> a, std::span<const float> b);

}  // namespace rc::model
