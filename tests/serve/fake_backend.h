// A fake model for the server's tests: a folder holding fake_model.json
// {"labels": [...], "max_length": N, "delay_ms": D}. Tokens are whitespace-separated words
// (id 3 + hash % 997, <s>=0, </s>=2); a text containing the word "bad" is "negative"
// (logits [2*count("bad"), 1]), anything else "positive". Batches sleep delay_ms and can be
// held (FakeStats::hold) so tests can have requests in flight on purpose.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "serve/backend.h"

namespace rc::serve::testing {

struct FakeStats {
  std::mutex mu;
  std::vector<int> batch_sizes;
  std::atomic<int> runs{0};
  std::atomic<bool> hold{false};  // run() waits while set (bounded: 20 s)
  std::atomic<int> running{0};    // batches inside run() now
  std::atomic<int> peak{0};       // most batches inside run() at once since reset()
  void reset() {
    std::lock_guard lock(mu);
    batch_sizes.clear();
    runs = 0;
    hold = false;
    peak = 0;
  }
};
inline FakeStats& fake_stats() {
  static FakeStats stats;
  return stats;
}

inline int32_t fake_word_id(const std::string& word) { return 3 + int32_t(std::hash<std::string>{}(word) % 997); }

class FakeBackend final : public InferenceBackend {
 public:
  FakeBackend(std::vector<std::string> labels, int max_length, int delay_ms)
      : labels_(std::move(labels)), max_length_(max_length), delay_ms_(delay_ms) {}

  std::vector<int32_t> tokenize(std::string_view text, int max_length) const override {
    std::vector<int32_t> ids{0};
    std::istringstream in{std::string(text)};
    std::string word;
    while (in >> word) ids.push_back(fake_word_id(word));
    ids.push_back(2);
    if (max_length > 0 && int(ids.size()) > max_length) {
      ids.resize(size_t(max_length));
      ids.back() = 2;
    }
    return ids;
  }
  // Pairs as RoBERTa lays them out, <s> a </s></s> b </s>, truncated longest_first-style
  // (the longer text loses tokens first) so the server's pair path can be checked end to end.
  std::vector<int32_t> tokenize_input(std::string_view text, const std::string* text_pair, int max_length,
                                      TruncationSide side) const override {
    auto words = [](std::string_view t) {
      std::vector<int32_t> ids;
      std::istringstream in{std::string(t)};
      std::string word;
      while (in >> word) ids.push_back(fake_word_id(word));
      return ids;
    };
    auto cut = [side](std::vector<int32_t>& v, size_t n) {
      if (v.size() <= n) return;
      if (side == TruncationSide::left)
        v.erase(v.begin(), v.end() - std::ptrdiff_t(n));
      else
        v.resize(n);
    };
    std::vector<int32_t> a = words(text), b = text_pair ? words(*text_pair) : std::vector<int32_t>{};
    const size_t specials = text_pair ? 4 : 2;
    if (max_length > 0) {
      if (size_t(max_length) < specials) throw Error(Errc::invalid_argument, "max_length too small");
      const size_t budget = size_t(max_length) - specials;
      while (a.size() + b.size() > budget) {
        if (a.size() >= b.size())
          cut(a, a.size() - 1);
        else
          cut(b, b.size() - 1);
      }
    }
    std::vector<int32_t> ids{0};
    ids.insert(ids.end(), a.begin(), a.end());
    ids.push_back(2);
    if (text_pair) {
      ids.push_back(2);
      ids.insert(ids.end(), b.begin(), b.end());
      ids.push_back(2);
    }
    return ids;
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    std::string out;
    for (int32_t id : ids) {
      if (skip_special_tokens && is_special(id)) continue;
      out += (out.empty() ? "" : " ") + token_text(id);
    }
    return out;
  }
  std::string dtype() const override { return "float32"; }
  std::vector<Prediction> run(std::span<const std::vector<int32_t>> rows) const override {
    FakeStats& stats = fake_stats();
    const int now_running = stats.running.fetch_add(1) + 1;
    for (int p = stats.peak.load(); now_running > p && !stats.peak.compare_exchange_weak(p, now_running);) {
    }
    for (int i = 0; i < 2000 && stats.hold.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    {
      std::lock_guard lock(stats.mu);
      stats.batch_sizes.push_back(int(rows.size()));
    }
    stats.runs.fetch_add(1);
    std::vector<Prediction> out;
    const int32_t bad = fake_word_id("bad");
    for (const auto& row : rows) {
      if (std::find(row.begin(), row.end(), fake_word_id("explode")) != row.end()) {
        stats.running.fetch_sub(1);
        throw std::runtime_error("fake model exploded");
      }
      Prediction p;
      p.logits.assign(labels_.size(), 0.f);
      p.logits[0] = 2.f * float(std::count(row.begin(), row.end(), bad));
      if (labels_.size() > 1) p.logits[1] = 1.f;
      float mx = *std::max_element(p.logits.begin(), p.logits.end()), sum = 0;
      for (float l : p.logits) sum += std::exp(l - mx);
      for (float l : p.logits) p.scores.push_back(std::exp(l - mx) / sum);
      p.label_id = int(std::max_element(p.logits.begin(), p.logits.end()) - p.logits.begin());
      p.label = labels_[size_t(p.label_id)];
      p.score = p.scores[size_t(p.label_id)];
      out.push_back(std::move(p));
    }
    stats.running.fetch_sub(1);
    return out;
  }
  std::string token_text(int32_t id) const override {
    return id == 0 ? "<s>" : id == 2 ? "</s>" : "w" + std::to_string(id);
  }
  bool is_special(int32_t id) const override { return id < 3; }
  const std::vector<std::string>& labels() const override { return labels_; }
  int max_length() const override { return max_length_; }
  std::string describe() const override { return "fake"; }

 private:
  std::vector<std::string> labels_;
  int max_length_, delay_ms_;
};

// Writes a fake model folder (plus a config.json, so `roberta package` takes it).
inline void write_fake_model(const std::filesystem::path& dir, int max_length = 16, int delay_ms = 0,
                             std::vector<std::string> labels = {"negative", "positive"}) {
  std::filesystem::create_directories(dir);
  nlohmann::json j = {{"labels", labels}, {"max_length", max_length}, {"delay_ms", delay_ms}};
  std::ofstream(dir / "fake_model.json") << j.dump();
  nlohmann::json config = {{"model_type", "roberta"}, {"id2label", nlohmann::json::object()}};
  for (size_t i = 0; i < labels.size(); ++i) config["id2label"][std::to_string(i)] = labels[i];
  std::ofstream(dir / "config.json") << config.dump();
}

inline std::shared_ptr<InferenceBackend> load_fake(const std::filesystem::path& dir, const BackendOptions& options) {
  std::ifstream in(dir / "fake_model.json");
  if (!in) throw Error(Errc::not_found, "no fake_model.json in " + dir.string());
  nlohmann::json j = nlohmann::json::parse(in);
  int max_length = j.value("max_length", 16);
  if (options.max_length > 0) max_length = std::min(max_length, options.max_length);
  return std::make_shared<FakeBackend>(j.value("labels", std::vector<std::string>{"negative", "positive"}), max_length,
                                       j.value("delay_ms", 0));
}

}  // namespace rc::serve::testing
