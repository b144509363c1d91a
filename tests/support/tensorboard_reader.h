// Test-only reader of the TensorBoard event files that train/tensorboard.h writes: splits the
// TFRecords (both CRCs checked) and decodes the Event fields we write. The product never reads
// event files, so this lives with the tests (issue 17).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "train/tensorboard.h"

namespace rc::test {

struct ScalarEvent {
  int64_t step = 0;
  double wall_time = 0;
  std::string tag, file_version;
  float value = 0;
  bool has_value = false;
};

namespace tb_detail {

[[noreturn]] inline void fail(const std::string& where, const std::string& what) {
  throw std::runtime_error(where + ": " + what);
}

// Protobuf wire format, just enough for Event { wall_time, step, file_version, summary }.
struct ProtoReader {
  const uint8_t* p;
  const uint8_t* end;
  std::string where;
  ProtoReader(std::string_view s, std::string w)
      : p(reinterpret_cast<const uint8_t*>(s.data())), end(p + s.size()), where(std::move(w)) {}
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) fail(where, "truncated varint");
      const uint8_t b = *p++;
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail(where, "varint too long");
  }
  template <class T>
  T fixed() {
    if (end - p < ptrdiff_t(sizeof(T))) fail(where, "truncated fixed field");
    T v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (uint64_t(end - p) < n) fail(where, "truncated bytes field");
    std::string_view s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
  void skip(uint32_t wire) {
    switch (wire) {
      case 0:
        varint();
        break;
      case 1:
        fixed<uint64_t>();
        break;
      case 2:
        bytes();
        break;
      case 5:
        fixed<uint32_t>();
        break;
      default:
        fail(where, "unknown wire type " + std::to_string(wire));
    }
  }
};

}  // namespace tb_detail

// The data of every TFRecord in the file, in order; throws on a bad CRC or a truncation.
inline std::vector<std::string> read_event_records(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) tb_detail::fail(path.string(), "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const std::string where = path.string() + " at " + std::to_string(pos);
    if (bytes.size() - pos < 12) tb_detail::fail(where, "truncated record header");
    uint64_t len;
    uint32_t len_crc, data_crc;
    std::memcpy(&len, bytes.data() + pos, 8);
    std::memcpy(&len_crc, bytes.data() + pos + 8, 4);
    if (len_crc != rc::train::masked_crc32c(&len, 8)) tb_detail::fail(where, "bad length CRC");
    if (bytes.size() - pos - 12 < len + 4) tb_detail::fail(where, "truncated record");
    std::string data = bytes.substr(pos + 12, len);
    std::memcpy(&data_crc, bytes.data() + pos + 12 + len, 4);
    if (data_crc != rc::train::masked_crc32c(data.data(), data.size())) tb_detail::fail(where, "bad data CRC");
    out.push_back(std::move(data));
    pos += 12 + len + 4;
  }
  return out;
}

// Every event of the file, decoded.
inline std::vector<ScalarEvent> read_event_file(const std::filesystem::path& path) {
  std::vector<ScalarEvent> out;
  for (const std::string& data : read_event_records(path)) {
    ScalarEvent ev;
    tb_detail::ProtoReader r(data, path.string());
    while (r.p < r.end) {
      const uint64_t key = r.varint();
      const uint32_t field = uint32_t(key >> 3), wire = uint32_t(key & 7);
      if (field == 1 && wire == 1) {
        ev.wall_time = r.fixed<double>();
      } else if (field == 2 && wire == 0) {
        ev.step = int64_t(r.varint());
      } else if (field == 3 && wire == 2) {
        ev.file_version = std::string(r.bytes());
      } else if (field == 5 && wire == 2) {
        tb_detail::ProtoReader s(r.bytes(), path.string());
        while (s.p < s.end) {
          const uint64_t k2 = s.varint();
          if ((k2 >> 3) == 1 && (k2 & 7) == 2) {
            tb_detail::ProtoReader v(s.bytes(), path.string());
            while (v.p < v.end) {
              const uint64_t k3 = v.varint();
              if ((k3 >> 3) == 1 && (k3 & 7) == 2) {
                ev.tag = std::string(v.bytes());
              } else if ((k3 >> 3) == 2 && (k3 & 7) == 5) {
                ev.value = v.fixed<float>();
                ev.has_value = true;
              } else {
                v.skip(uint32_t(k3 & 7));
              }
            }
          } else {
            s.skip(uint32_t(k2 & 7));
          }
        }
      } else {
        r.skip(wire);
      }
    }
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace rc::test
