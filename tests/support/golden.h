// Reading tests/data/tiny/golden.safetensors (made by tools/make_golden.py; see
// tests/data/README.md). Must match tools/make_golden.py FIXTURE_VERSION "1".
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "io/tensor_source.h"

namespace rc::test {

inline std::string tiny_dir() { return RC_TEST_DATA_DIR "/tiny"; }

// A golden file of tests/data/tiny (fixture_version 1) and the generator that writes it.
class Golden {
 public:
  explicit Golden(const std::string& file = "golden.safetensors", const std::string& generator = "tools/make_golden.py")
      : src_(io::open_safetensors(tiny_dir() + "/" + file)) {
    auto it = src_->metadata().find("fixture_version");
    if (it == src_->metadata().end() || it->second != "1")
      ADD_FAILURE() << file << " fixture_version mismatch\n---> HINT: re-run /usr/bin/python3 " << generator;
  }
  bool has(const std::string& name) const { return src_->find(name) != nullptr; }
  const io::TensorInfo& info(const std::string& name) const {
    const io::TensorInfo* t = src_->find(name);
    if (!t) throw std::runtime_error("golden has no tensor " + name);
    return *t;
  }
  std::vector<float> f32(const std::string& name) const {
    const io::TensorInfo& t = info(name);
    std::vector<float> out(size_t(t.numel()));
    io::convert_to_f32(t.dtype, src_->data(name), out.data(), t.numel());
    return out;
  }
  std::vector<int32_t> i32(const std::string& name) const {
    const io::TensorInfo& t = info(name);
    auto bytes = src_->data(name);
    std::vector<int32_t> out(size_t(t.numel()));
    if (t.dtype == DType::i64) {
      const auto* p = reinterpret_cast<const int64_t*>(bytes.data());
      for (size_t i = 0; i < out.size(); ++i) out[i] = int32_t(p[i]);
    } else if (t.dtype == DType::i32) {
      const auto* p = reinterpret_cast<const int32_t*>(bytes.data());
      out.assign(p, p + out.size());
    } else {
      throw std::runtime_error("golden tensor " + name + " is not integer");
    }
    return out;
  }
  std::string meta(const std::string& key) const {
    auto it = src_->metadata().find(key);
    return it == src_->metadata().end() ? std::string() : it->second;
  }

 private:
  std::unique_ptr<io::TensorSource> src_;
};

// Row lengths from a 0/1 attention mask (B, T).
inline std::vector<int32_t> lengths_from_mask(const std::vector<int32_t>& mask, int64_t B, int64_t T) {
  std::vector<int32_t> lens(size_t(B), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) lens[b] += mask[b * T + t];
  return lens;
}

}  // namespace rc::test
