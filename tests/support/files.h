// Small file helpers shared by the tests (one copy: the `duplicates` check found them
// repeated per test file).
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>

namespace rc::test {

// The tiny RoBERTa checkpoint under tests/data (one copy: a unity build compiles several test
// files as one unit, where each file's own copy clashed).
inline const std::filesystem::path kTiny = std::filesystem::path(RC_TEST_DATA_DIR) / "tiny";

// The whole file as bytes ("" when it cannot be opened: the assertion on the content fails).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A tensor's bytes as a string, to compare with EXPECT_EQ.
inline std::string bytes_of(std::span<const std::byte> s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

// Lines [skip, skip + n) of `from` written to `to`, each ended by "\n" (a small dataset
// split cut from a TweetEval file).
inline void head_lines(const std::filesystem::path& from, const std::filesystem::path& to, int n, int skip = 0) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  std::string line;
  for (int i = 0; i < skip + n && std::getline(in, line); ++i)
    if (i >= skip) out << line << '\n';
}

// A fresh output folder `to_run` holding only `from_run`'s checkpoint-N: what --resume
// continues from in the resume tests.
inline void copy_checkpoint(const std::filesystem::path& from_run, const std::filesystem::path& to_run, int step) {
  const std::string name = "checkpoint-" + std::to_string(step);
  std::filesystem::create_directories(to_run);
  std::filesystem::copy(from_run / name, to_run / name, std::filesystem::copy_options::recursive);
}

}  // namespace rc::test
