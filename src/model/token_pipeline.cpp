// TokenClassificationPipeline's post-processing (see token_pipeline.h for the source and the
// semantics). Function names follow the pipeline's so the two read side by side.
#include "model/token_pipeline.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/check.h"
#include "core/utf8.h"
#include "tokenizer/byte_level.h"

namespace rc::model {
namespace {

// numpy's pairwise summation of float32 (numpy/_core/src/umath/loops_utils.h.src,
// FLOAT_pairwise_sum): a plain loop below 8 values, 8 accumulators up to 128, halves above.
// np.sum adds it to the identity 0.
float pairwise_sum(const float* a, size_t n) {
  if (n < 8) {
    float res = 0.f;
    for (size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

// postprocess: maxes = np.max(logits, -1); shifted_exp = np.exp(logits - maxes);
// scores = shifted_exp / shifted_exp.sum(-1), all float32.
std::vector<float> softmax_rows(std::span<const float> logits, size_t K) {
  std::vector<float> scores(logits.size());
  for (size_t row = 0; row < logits.size() / K; ++row) {
    const float* z = logits.data() + row * K;
    float* p = scores.data() + row * K;
    float m = z[0];
    for (size_t k = 1; k < K && !std::isnan(m); ++k)  // np.max propagates NaN
      if (std::isnan(z[k]) || z[k] > m) m = z[k];
    for (size_t k = 0; k < K; ++k) p[k] = std::exp(z[k] - m);
    const float sum = 0.f + pairwise_sum(p, K);
    for (size_t k = 0; k < K; ++k) p[k] = p[k] / sum;
  }
  return scores;
}

// np.argmax: the first maximum; a NaN counts as the maximum.
size_t argmax(const float* v, size_t K) {
  size_t best = 0;
  for (size_t k = 0; k < K; ++k) {
    if (std::isnan(v[k])) return k;
    if (v[k] > v[best]) best = k;
  }
  return best;
}

float row_max(const float* v, size_t K) { return v[argmax(v, K)]; }

// np.nanmean of float32 values: NaNs dropped, a float32 sum, divided by the count in float64
// (float32 / intp promotes), rounded back to float32. `sum` is the float32 sum already made.
float nanmean_finish(float sum, int64_t count) { return float(double(sum) / double(count)); }

struct PreEntity {
  std::string word;
  const float* scores;
  int64_t start, end, index;
  bool is_subword;
};

// An entity before grouping: a token (none, simple) or a word (first, average, max).
struct Entity {
  std::string entity;
  float score;
  std::string word;
  int64_t start, end, index;
};

std::string_view slice(std::string_view text, std::span<const size_t> byte_starts, int64_t start, int64_t end) {
  const auto [b, e] = code_point_range_to_bytes(byte_starts, start, end);
  return text.substr(b, e - b);
}

std::vector<PreEntity> gather_pre_entities(const TokenClassifierInput& in, std::span<const float> scores, size_t K,
                                           std::span<const size_t> byte_starts, const Tokenizer& tokenizer) {
  std::vector<PreEntity> pre;
  const int64_t n_cp = int64_t(byte_starts.size()) - 1;
  for (size_t idx = 0; idx < in.ids.size(); ++idx) {
    if (in.special_tokens_mask[idx]) continue;
    const auto [start, end] = in.offsets[idx];
    RC_CHECK(0 <= start && start <= end && end <= n_cp, Errc::invalid_argument, "token ", idx, ": offsets (", start,
             ", ", end, ") outside the text's ", n_cp, " characters");
    PreEntity p{tokenizer.id_to_token(in.ids[idx]), scores.data() + idx * K, start, end, int64_t(idx), false};
    // Fallback heuristic: `start_ind > 0 and " " not in sentence[start_ind - 1 : start_ind + 1]`.
    // ' ' is one byte and never inside a multi-byte sequence, so the lead bytes tell.
    const bool space_before = start > 0 && in.text[byte_starts[size_t(start - 1)]] == ' ';
    const bool space_first = start < n_cp && in.text[byte_starts[size_t(start)]] == ' ';
    p.is_subword = start > 0 && !space_before && !space_first;
    if (in.ids[idx] == tokenizer.unk_id()) {
      p.word = std::string(slice(in.text, byte_starts, start, end));
      p.is_subword = false;
    }
    pre.push_back(std::move(p));
  }
  return pre;
}

Entity aggregate_word(std::span<const PreEntity> group, Aggregation aggregation, std::span<const std::string> id2label,
                      size_t K) {
  std::vector<std::string> tokens;
  for (const PreEntity& p : group) tokens.push_back(p.word);
  Entity e{{}, 0.f, byte_level_tokens_to_string(tokens), group.front().start, group.back().end, group.front().index};
  size_t idx = 0;
  if (aggregation == Aggregation::first) {
    idx = argmax(group.front().scores, K);
    e.score = group.front().scores[idx];
  } else if (aggregation == Aggregation::max) {
    // max(entities, key=lambda e: e["scores"].max()): the first token with the largest max.
    const PreEntity* best = &group.front();
    for (const PreEntity& p : group.subspan(1))
      if (row_max(p.scores, K) > row_max(best->scores, K)) best = &p;
    idx = argmax(best->scores, K);
    e.score = best->scores[idx];
  } else {  // average: np.nanmean(np.stack(scores), axis=0), summed row after row
    std::vector<float> average(K);
    for (size_t k = 0; k < K; ++k) {
      float sum = 0.f;
      int64_t count = 0;
      for (const PreEntity& p : group)
        if (!std::isnan(p.scores[k])) sum += p.scores[k], ++count;
      average[k] = nanmean_finish(sum, count);
    }
    idx = argmax(average.data(), K);
    e.score = average[idx];
  }
  e.entity = id2label[idx];
  return e;
}

std::vector<Entity> aggregate_words(std::span<const PreEntity> pre, Aggregation aggregation,
                                    std::span<const std::string> id2label, size_t K) {
  std::vector<Entity> words;
  size_t group_start = 0;
  for (size_t i = 1; i <= pre.size(); ++i)
    if (i == pre.size() || !pre[i].is_subword) {
      if (i > group_start)
        words.push_back(aggregate_word(pre.subspan(group_start, i - group_start), aggregation, id2label, K));
      group_start = i;
    }
  return words;
}

// get_tag: "B-X" -> (B, X), "I-X" -> (I, X), anything else -> (I, itself).
std::pair<char, std::string_view> get_tag(std::string_view name) {
  if (name.starts_with("B-")) return {'B', name.substr(2)};
  if (name.starts_with("I-")) return {'I', name.substr(2)};
  return {'I', name};
}

EntityGroup group_sub_entities(std::span<const Entity> entities) {
  const std::string& first = entities.front().entity;
  const size_t dash = first.find('-');
  EntityGroup g;
  g.entity_group = dash == std::string::npos ? first : first.substr(dash + 1);  // split("-", 1)[-1]
  std::vector<float> scores;  // np.nanmean: NaNs become 0 in the sum and leave the count
  std::vector<std::string> words;
  int64_t count = 0;
  for (const Entity& e : entities) {
    scores.push_back(std::isnan(e.score) ? 0.f : e.score);
    count += !std::isnan(e.score);
    words.push_back(e.word);
  }
  g.score = nanmean_finish(0.f + pairwise_sum(scores.data(), scores.size()), count);
  g.word = byte_level_tokens_to_string(words);
  g.start = entities.front().start;
  g.end = entities.back().end;
  return g;
}

std::vector<EntityGroup> group_entities(std::span<const Entity> entities) {
  std::vector<EntityGroup> groups;
  size_t group_start = 0;
  for (size_t i = 1; i < entities.size(); ++i) {
    const auto [bi, tag] = get_tag(entities[i].entity);
    const auto [last_bi, last_tag] = get_tag(entities[i - 1].entity);
    if (!(tag == last_tag && bi != 'B')) {
      groups.push_back(group_sub_entities(entities.subspan(group_start, i - group_start)));
      group_start = i;
    }
  }
  if (!entities.empty()) groups.push_back(group_sub_entities(entities.subspan(group_start)));
  return groups;
}

bool ignored(const std::string& label, const std::vector<std::string>& ignore_labels) {
  return std::find(ignore_labels.begin(), ignore_labels.end(), label) != ignore_labels.end();
}

}  // namespace

Aggregation parse_aggregation(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "none") return Aggregation::none;
  if (lower == "simple") return Aggregation::simple;
  if (lower == "first") return Aggregation::first;
  if (lower == "average") return Aggregation::average;
  if (lower == "max") return Aggregation::max;
  RC_THROW(Errc::invalid_argument, "aggregation strategy '", name, "' is not one of none, simple, first, average, max");
}

const char* aggregation_name(Aggregation a) {
  switch (a) {
    case Aggregation::none:
      return "none";
    case Aggregation::simple:
      return "simple";
    case Aggregation::first:
      return "first";
    case Aggregation::average:
      return "average";
    case Aggregation::max:
      return "max";
  }
  return "none";
}

std::vector<size_t> code_point_byte_offsets(std::string_view text) {
  std::vector<size_t> starts;
  starts.reserve(text.size() + 1);
  size_t i = 0;
  while (i < text.size()) {
    int consumed = 0;
    const int len =
        utf8_sequence_length(reinterpret_cast<const unsigned char*>(text.data()) + i, text.size() - i, &consumed);
    RC_CHECK(len > 0, Errc::invalid_argument, "text is not valid UTF-8 at byte ", i);
    starts.push_back(i);
    i += size_t(len);
  }
  starts.push_back(text.size());
  return starts;
}

std::pair<size_t, size_t> code_point_range_to_bytes(std::span<const size_t> byte_starts, int64_t start, int64_t end) {
  const int64_t n = int64_t(byte_starts.size()) - 1;
  RC_CHECK(0 <= start && start <= end && end <= n, Errc::invalid_argument, "character range [", start, ", ", end,
           ") outside a text of ", n, " characters");
  return {byte_starts[size_t(start)], byte_starts[size_t(end)]};
}

std::string byte_level_tokens_to_string(std::span<const std::string> tokens) {
  std::string bytes;
  for (const std::string& token : tokens) {
    std::string mapped;
    bool all_mapped = true;
    const auto* s = reinterpret_cast<const unsigned char*>(token.data());
    for (size_t i = 0; i < token.size() && all_mapped;) {
      int consumed = 0;
      const int len = utf8_sequence_length(s + i, token.size() - i, &consumed);
      const int byte = len > 0 ? tokenizer::codepoint_to_byte(utf8_decode(s + i, len)) : -1;
      if (byte < 0)
        all_mapped = false;
      else
        mapped.push_back(char(byte)), i += size_t(len);
    }
    bytes += all_mapped ? mapped : token;
  }
  return repair_utf8(bytes);
}

TokenClassification token_classification_postprocess(const TokenClassifierInput& in,
                                                     std::span<const std::string> id2label, const Tokenizer& tokenizer,
                                                     Aggregation aggregation,
                                                     const std::vector<std::string>& ignore_labels) {
  const size_t T = in.ids.size(), K = id2label.size();
  RC_CHECK(K > 0, Errc::invalid_argument, "token classification: no labels (id2label is empty)");
  RC_CHECK(in.offsets.size() == T && in.special_tokens_mask.size() == T, Errc::invalid_argument,
           "token classification: ", T, " ids but ", in.offsets.size(), " offsets and ", in.special_tokens_mask.size(),
           " special-token flags");
  RC_CHECK(in.logits.size() == T * K, Errc::invalid_argument, "token classification: ", in.logits.size(),
           " logits for ", T, " tokens x ", K, " labels");
  const std::vector<size_t> byte_starts = code_point_byte_offsets(in.text);
  const std::vector<float> scores = softmax_rows(in.logits, K);
  const std::vector<PreEntity> pre = gather_pre_entities(in, scores, K, byte_starts, tokenizer);

  std::vector<Entity> entities;
  if (aggregation == Aggregation::none || aggregation == Aggregation::simple) {
    for (const PreEntity& p : pre) {
      const size_t idx = argmax(p.scores, K);
      entities.push_back({id2label[idx], p.scores[idx], p.word, p.start, p.end, p.index});
    }
  } else {
    entities = aggregate_words(pre, aggregation, id2label, K);
  }

  TokenClassification out;
  out.aggregation = aggregation;
  if (aggregation == Aggregation::none) {
    for (Entity& e : entities)
      if (!ignored(e.entity, ignore_labels))
        out.tokens.push_back({std::move(e.entity), e.score, e.index, std::move(e.word), e.start, e.end});
    return out;
  }
  for (EntityGroup& g : group_entities(entities))
    if (!ignored(g.entity_group, ignore_labels)) out.groups.push_back(std::move(g));
  return out;
}

nlohmann::ordered_json token_classification_to_json(const TokenClassification& result) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (result.aggregation == Aggregation::none) {
    for (const TokenEntity& t : result.tokens)
      out.push_back({{"entity", t.entity},
                     {"score", double(t.score)},
                     {"index", t.index},
                     {"word", t.word},
                     {"start", t.start},
                     {"end", t.end}});
    return out;
  }
  for (const EntityGroup& g : result.groups)
    out.push_back({{"entity_group", g.entity_group},
                   {"score", double(g.score)},
                   {"word", g.word},
                   {"start", g.start},
                   {"end", g.end}});
  return out;
}

}  // namespace rc::model
