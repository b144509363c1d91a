#include "model/pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/regular_file.h"

namespace rc::model {

const char* pooling_mode_name(PoolingMode mode) noexcept {
  switch (mode) {
    case PoolingMode::cls:
      return "cls";
    case PoolingMode::mean:
      return "mean";
    case PoolingMode::max:
      return "max";
    case PoolingMode::mean_sqrt_len:
      return "mean_sqrt_len_tokens";
    case PoolingMode::weighted_mean:
      return "weightedmean";
    case PoolingMode::last_token:
      return "lasttoken";
  }
  return "?";
}

PoolingMode parse_pooling_mode(std::string_view name) {
  for (PoolingMode m : {PoolingMode::cls, PoolingMode::mean, PoolingMode::max, PoolingMode::mean_sqrt_len,
                        PoolingMode::weighted_mean, PoolingMode::last_token})
    if (name == pooling_mode_name(m)) return m;
  if (name == "last-token" || name == "last_token") return PoolingMode::last_token;  // TEI's --pooling spelling
  RC_THROW(Errc::invalid_argument, "unknown pooling mode '", name,
           "'\nHINT: use cls, mean, max, mean_sqrt_len_tokens, weightedmean or lasttoken");
}

PoolingConfig PoolingConfig::from_json(std::string_view text, std::string_view source) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  RC_CHECK(j.is_object(), Errc::format, source, ": not a JSON object");
  PoolingConfig c;
  auto flag = [&](const char* key) {
    if (!j.contains(key) || j[key].is_null()) return false;
    RC_CHECK(j[key].is_boolean(), Errc::format, source, ": '", key, "' must be true or false");
    return j[key].get<bool>();
  };
  for (const char* key : {"embedding_dimension", "word_embedding_dimension"})
    if (j.contains(key) && j[key].is_number_integer()) c.embedding_dimension = j[key].get<int64_t>();
  if (j.contains("include_prompt")) c.include_prompt = flag("include_prompt");
  if (j.contains("pooling_mode") && !j["pooling_mode"].is_null()) {
    const auto& p = j["pooling_mode"];
    std::vector<std::string> names;
    if (p.is_string()) {
      names.push_back(p.get<std::string>());
    } else {
      RC_CHECK(p.is_array() && !p.empty() && p.size() <= 6, Errc::format, source,
               ": 'pooling_mode' must be a mode name or a list of 1 to 6 of them");
      for (const auto& n : p) {
        RC_CHECK(n.is_string(), Errc::format, source, ": 'pooling_mode' lists a non-string");
        names.push_back(n.get<std::string>());
      }
    }
    c.modes.clear();
    for (const std::string& n : names) {
      try {
        // Pooling.__init__ lower-cases a single string mode.
        std::string lower = n;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
        c.modes.push_back(parse_pooling_mode(lower));
      } catch (const Error& e) {
        RC_THROW(Errc::format, source, ": ", e.what());
      }
    }
    return c;
  }
  // The legacy booleans, in _LEGACY_POOLING_MODE_KWARGS' order (the concatenation order).
  const std::pair<const char*, PoolingMode> legacy[] = {
      {"pooling_mode_cls_token", PoolingMode::cls},
      {"pooling_mode_max_tokens", PoolingMode::max},
      {"pooling_mode_mean_tokens", PoolingMode::mean},
      {"pooling_mode_mean_sqrt_len_tokens", PoolingMode::mean_sqrt_len},
      {"pooling_mode_weightedmean_tokens", PoolingMode::weighted_mean},
      {"pooling_mode_lasttoken", PoolingMode::last_token},
  };
  std::vector<PoolingMode> modes;
  for (const auto& [key, mode] : legacy)
    if (flag(key)) modes.push_back(mode);
  if (!modes.empty()) c.modes = modes;  // none set: ("mean",)
  return c;
}

PoolingConfig PoolingConfig::from_file(const std::filesystem::path& path) {
  return from_json(read_regular_file(path, 1 << 20), path.string());
}

std::string PoolingConfig::describe() const {
  std::string s;
  for (PoolingMode m : modes) s += (s.empty() ? "" : "+") + std::string(pooling_mode_name(m));
  return s;
}

namespace {

// Counted positions of row b: [first, len). first > 0 only for an excluded prompt.
struct Counted {
  int64_t first, len;
};
Counted counted(const PoolingConfig& config, const int32_t* seq_lens, const int32_t* prompt_tokens, int64_t b,
                int64_t T) {
  const int64_t len = std::clamp<int64_t>(seq_lens[b], 0, T);
  const int64_t first =
      !config.include_prompt && prompt_tokens ? std::clamp<int64_t>(prompt_tokens[b], 0, len) : int64_t(0);
  return {first, len};
}

// argmax of the mask: the first counted position, 0 when none is counted.
int64_t cls_position(Counted c) { return c.first < c.len ? c.first : 0; }

}  // namespace

std::vector<int32_t> pooled_positions(const PoolingConfig& config, const int32_t* seq_lens,
                                      const int32_t* prompt_tokens, int64_t B) {
  if (config.modes.size() != 1 || (config.modes[0] != PoolingMode::cls && config.modes[0] != PoolingMode::last_token))
    return {};
  std::vector<int32_t> out(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const Counted c = counted(config, seq_lens, prompt_tokens, b, seq_lens[b]);
    if (config.modes[0] == PoolingMode::cls)
      out[size_t(b)] = int32_t(cls_position(c));
    else
      out[size_t(b)] = c.first < c.len ? int32_t(c.len - 1) : -1;
  }
  return out;
}

void pool_hidden_states(const PoolingConfig& config, const float* hidden, const int32_t* seq_lens,
                        const int32_t* prompt_tokens, int64_t B, int64_t T, int64_t C, float* out) {
  const int64_t D = config.output_dimension(C);
  std::vector<double> acc(static_cast<size_t>(C));
#pragma omp parallel for firstprivate(acc) if (B * T * C > (1 << 16))
  for (int64_t b = 0; b < B; ++b) {
    const float* h = hidden + b * T * C;
    const auto [first, len] = counted(config, seq_lens, prompt_tokens, b, T);
    float* o = out + b * D;
    for (PoolingMode mode : config.modes) {
      switch (mode) {
        case PoolingMode::cls: {
          const int64_t t = cls_position({first, len});
          std::copy(h + t * C, h + (t + 1) * C, o);
          break;
        }
        case PoolingMode::last_token: {
          // The last counted position (the mask multiplies it: zeros when none is counted).
          if (first < len)
            std::copy(h + (len - 1) * C, h + len * C, o);
          else
            std::fill(o, o + C, 0.0f);
          break;
        }
        case PoolingMode::max: {
          // masked_fill(-inf) then max: -inf when no position is counted.
          std::fill(o, o + C, -std::numeric_limits<float>::infinity());
          for (int64_t t = first; t < len; ++t)
            for (int64_t i = 0; i < C; ++i) o[i] = std::max(o[i], h[t * C + i]);
          break;
        }
        case PoolingMode::mean:
        case PoolingMode::mean_sqrt_len:
        case PoolingMode::weighted_mean: {
          const bool weighted = mode == PoolingMode::weighted_mean;
          std::fill(acc.begin(), acc.end(), 0.0);
          double weight = 0;
          for (int64_t t = first; t < len; ++t) {
            const double w = weighted ? double(t + 1) : 1.0;
            weight += w;
            for (int64_t i = 0; i < C; ++i) acc[size_t(i)] += w * double(h[t * C + i]);
          }
          double denom = std::max(weight, 1e-9);
          if (mode == PoolingMode::mean_sqrt_len) denom = std::sqrt(denom);
          for (int64_t i = 0; i < C; ++i) o[i] = float(acc[size_t(i)] / denom);
          break;
        }
      }
      o += C;
    }
  }
}

void l2_normalize(std::span<float> v) {
  double ss = 0;
  for (float x : v) ss += double(x) * double(x);
  const double n = std::max(std::sqrt(ss), 1e-12);
  for (float& x : v) x = float(double(x) / n);
}

float cosine_similarity(std::span<const float> a, std::span<const float> b) {
  RC_CHECK(a.size() == b.size(), Errc::invalid_argument, "cosine_similarity: lengths ", a.size(), " and ", b.size());
  double aa = 0, bb = 0, ab = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
    ab += double(a[i]) * b[i];
  }
  return float(ab / (std::max(std::sqrt(aa), 1e-12) * std::max(std::sqrt(bb), 1e-12)));
}

}  // namespace rc::model
