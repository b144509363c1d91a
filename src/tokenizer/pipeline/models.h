// The vocabulary shared by the models, and the models the converters build directly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/pipeline/components.h"

namespace rc::tokenizer::pipeline {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// token <-> id; a repeated token keeps its last id (HF builds a HashMap), id_to_token each id's own.
class Vocab {
 public:
  void add(std::string token, int32_t id);
  int32_t find(std::string_view token) const;  // -1 when absent
  const std::string* token(int32_t id) const;  // null when absent
  size_t size() const { return to_id_.size(); }
  size_t id_bound() const { return by_id_.size(); }
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> to_id_;
  std::vector<std::string> by_id_;
  std::vector<uint8_t> present_;
  size_t max_token_bytes_ = 0;
};

std::unique_ptr<Model> make_wordpiece(Vocab vocab, std::string unk, std::string prefix, size_t max_chars);
std::unique_ptr<Model> make_unigram(std::vector<std::pair<std::string, double>> pieces, int32_t unk_id,
                                    bool byte_fallback);

}  // namespace rc::tokenizer::pipeline
