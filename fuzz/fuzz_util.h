// Shared pieces of the libFuzzer targets (see docs/security.md, "Fuzzing").
//
// Every target feeds outside bytes to one parser and checks the project's promise for bad
// input: an rc::Error (or HttpError) with a message, never a crash, a sanitizer report, a
// hang or another exception type. A std::exception that is not rc::Error escaping a parser
// is a finding too: the CLI would map it to exit 1 ("other") instead of 3 ("bad input"),
// and the server to a 500 instead of a 400.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "roberta/error.h"

namespace rc::fuzz {

// Runs fn; rc::Error is the expected answer to bad input. Anything else aborts, so libFuzzer
// records the input as a crash.
template <class Fn>
bool expect_rc_error(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const rc::Error&) {
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FUZZ FINDING: %s escaped the parser: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

// A folder of this process for files the parsers read by path: on tmpfs where there is one
// (file parsers open, mmap and fsync; tmpfs makes that cheap), removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    if (const char* t = std::getenv("RC_FUZZ_TMP")) base = t;
    std::filesystem::path d = base / ("rc-fuzz-" + std::to_string(::getpid()));
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// Splits a fuzz input into the files of a multi-file format at a marker line. Seeds are
// written this way by fuzz/make_seeds.py; the marker is in the targets' dictionaries.
inline constexpr std::string_view kFileSeparator = "\n==rc-fuzz-file==\n";
inline std::vector<std::string_view> split_files(std::string_view in, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = in.find(kFileSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(in.substr(0, at));
    in.remove_prefix(at + kFileSeparator.size());
  }
  parts.push_back(in);
  return parts;
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A check on the parser's result that must hold for every input it accepts.
#define RC_FUZZ_REQUIRE(cond)                                                                         \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      std::fprintf(stderr, "FUZZ FINDING: %s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                                   \
    }                                                                                                 \
  } while (0)

}  // namespace rc::fuzz
