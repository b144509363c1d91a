// TensorBoard event files, written by hand so that no TensorFlow/protobuf is needed.
// File: events.out.tfevents.<unix time>.<host>, a sequence of TFRecords:
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
// (little-endian; masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8). Each data is an
// Event protobuf: wall_time (1, double), step (2, int64), file_version (3, string) for the
// first record, summary (5) { value (1) { tag (1, string), simple_value (2, float) } }.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace rc::train {

uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
uint32_t masked_crc32c(const void* data, size_t n);

// One scalar event's protobuf bytes (exposed for tests).
std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float value);
std::string encode_file_version_event(double wall_time);
// A TFRecord framing of `data`.
std::string frame_record(std::string_view data);

class TensorBoardWriter {
 public:
  // Creates `dir` and a new event file in it; throws rc::Error(io).
  explicit TensorBoardWriter(const std::filesystem::path& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  void add_scalar(std::string_view tag, float value, int64_t step);
  void flush();
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(std::string_view data);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace rc::train
