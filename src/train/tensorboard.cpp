// TFRecord + Event protobuf encoding (see tensorboard.h).
#include "train/tensorboard.h"

#include <unistd.h>

#include <chrono>
#include <cstring>

#include "core/check.h"

namespace rc::train {

namespace {
struct Crc32cTable {
  uint32_t t[256];
  Crc32cTable() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // Castagnoli, reflected
      t[i] = c;
    }
  }
};
const Crc32cTable kTable;

void put_varint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s += char(uint8_t(v) | 0x80);
    v >>= 7;
  }
  s += char(uint8_t(v));
}
void put_tag(std::string& s, uint32_t field, uint32_t wire) { put_varint(s, (uint64_t(field) << 3) | wire); }
template <class T>
void put_fixed(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian host (x86-64, aarch64)
  s.append(b, sizeof(T));
}
void put_bytes(std::string& s, uint32_t field, std::string_view bytes) {
  put_tag(s, field, 2);
  put_varint(s, bytes.size());
  s.append(bytes);
}
}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kTable.t[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  std::string v;  // Summary.Value
  put_bytes(v, 1, tag);
  put_tag(v, 2, 5);
  put_fixed(v, value);
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e;
  put_tag(e, 1, 1);
  put_fixed(e, wall_time);
  put_tag(e, 2, 0);
  put_varint(e, uint64_t(step));
  put_bytes(e, 5, summary);
  return e;
}

std::string encode_file_version_event(double wall_time) {
  std::string e;
  put_tag(e, 1, 1);
  put_fixed(e, wall_time);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string frame_record(std::string_view data) {
  std::string r;
  const uint64_t len = data.size();
  put_fixed(r, len);
  put_fixed(r, masked_crc32c(&len, sizeof len));
  r.append(data);
  put_fixed(r, masked_crc32c(data.data(), data.size()));
  return r;
}

static double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  RC_CHECK(!ec, Errc::io, "cannot create TensorBoard folder ", dir.string(), ": ", ec.message());
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  path_ = dir / ("events.out.tfevents." + std::to_string(int64_t(now_seconds())) + "." + host);
  file_ = std::fopen(path_.c_str(), "wb");
  RC_CHECK(file_, Errc::io, "cannot create ", path_.string(), ": ", std::strerror(errno));
  write_record(encode_file_version_event(now_seconds()));
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::write_record(std::string_view data) {
  const std::string r = frame_record(data);
  RC_CHECK(std::fwrite(r.data(), 1, r.size(), file_) == r.size(), Errc::io, "write to ", path_.string(),
           " failed: ", std::strerror(errno));
}

void TensorBoardWriter::add_scalar(std::string_view tag, float value, int64_t step) {
  write_record(encode_scalar_event(now_seconds(), step, tag, value));
}

void TensorBoardWriter::flush() {
  if (file_) std::fflush(file_);
}

}  // namespace rc::train
