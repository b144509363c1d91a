// Reading the tokenizer golden files (tests/data/tokenizer/*.jsonl, made with HF's Rust
// tokenizers: see README.md there and tools/make_tokenizer_goldens.mjs).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rc::test {

inline std::filesystem::path tokenizer_data_dir() { return std::filesystem::path(RC_TEST_DATA_DIR) / "tokenizer"; }
inline std::filesystem::path roberta_tokenizer_dir() {
  return std::filesystem::path(RC_SOURCE_DIR) / "assets/tokenizer/roberta-base";
}

inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << "cannot open " << file
                         << "\nHINT: regenerate with `cd tools && npm install && node make_tokenizer_goldens.mjs`";
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

}  // namespace rc::test
