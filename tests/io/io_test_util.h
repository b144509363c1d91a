// Helpers shared by the io tests: a self-cleaning temp folder, an "expect this rc::Error"
// check that also prints the message, and fixture paths.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "roberta/error.h"

namespace rc::test {

inline std::filesystem::path io_data(const std::string& name) {
  return std::filesystem::path(RC_TEST_DATA_DIR) / "io" / name;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rc_io_test.XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::vector<std::string> entries() const { return list(path_); }
  // Names directly in `dir`, sorted; hidden ones (temp files) included on purpose.
  static std::vector<std::string> list(const std::filesystem::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

// Runs fn, expects rc::Error with `errc` whose message contains every one of `parts`.
template <class Fn>
void expect_error(rc::Errc errc, std::initializer_list<std::string> parts, Fn&& fn) {
  try {
    fn();
    ADD_FAILURE() << "expected rc::Error(" << rc::errc_name(errc) << "), nothing was thrown";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), errc) << "got " << rc::errc_name(e.errc()) << ": " << e.what();
    const std::string what = e.what();
    for (const std::string& p : parts) EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "message should be one line: " << what;
  }
}

}  // namespace rc::test
