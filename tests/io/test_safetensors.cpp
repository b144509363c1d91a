// safetensors: round trips through our writer, a file from an independent (Python)
// writer, the writer's layout (8-aligned header, aligned tensors), convert_to_f32, and one
// test per kind of hostile file (each breaks exactly one rule; bytes built here).
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "io_test_util.h"
#include "support/files.h"
#include "tensor/bf16.h"

namespace fs = std::filesystem;
using rc::DType;
using rc::Errc;
using rc::io::open_safetensors;
using rc::io::TensorToWrite;
using rc::test::expect_error;
using rc::test::io_data;
using rc::test::TempDir;

namespace {

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char((v >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file from a header text and a data section, length field computed.
fs::path write_raw(const TempDir& dir, const std::string& header, const std::string& data,
                   const std::string& name = "t.safetensors") {
  const fs::path p = dir.path() / name;
  rc::io::write_file_atomic(p, le64(header.size()) + header + data);
  return p;
}

using rc::test::bytes_of;

}  // namespace

TEST(Safetensors, RoundTripEveryDtypeAndMetadata) {
  TempDir dir;
  const fs::path p = dir.path() / "all.safetensors";
  // One tensor per dtype with distinct byte patterns; sizes chosen so that a writer that
  // did not align would misalign the 8-byte ones.
  const DType dtypes[] = {DType::boolean, DType::u8,  DType::i8,  DType::f16, DType::bf16,
                          DType::i16,     DType::f32, DType::i32, DType::f64, DType::i64};
  std::vector<std::string> blobs;
  std::vector<TensorToWrite> ts;
  int k = 0;
  for (DType dt : dtypes) {
    const std::vector<int64_t> shape = {3, k % 3 + 1};
    std::string b(size_t(shape[0] * shape[1]) * rc::dtype_size(dt), '\0');
    for (size_t i = 0; i < b.size(); ++i) b[i] = char(dt == DType::boolean ? (i + k) % 2 : i * 13 + size_t(k));
    blobs.push_back(std::move(b));
    std::string name = "t";  // appended: GCC 12 warns falsely (-Wrestrict) on "t" + std::string&&
    name.append(std::to_string(k)).append(".").append(rc::dtype_name(dt));
    ts.push_back({name, dt, shape, nullptr});
    ++k;
  }
  for (size_t i = 0; i < ts.size(); ++i) ts[i].data = blobs[i].data();
  ts.push_back({"empty", DType::f32, {0, 5}, nullptr});
  ts.push_back({"scalar", DType::f32, {}, "\x00\x00\x80\x3f"});
  rc::io::write_safetensors(p, ts, {{"format", "pt"}, {"note", "ünïcode ok"}});
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"all.safetensors"});

  auto src = open_safetensors(p);
  EXPECT_EQ(src->tensors().size(), ts.size());
  EXPECT_EQ(src->metadata().at("format"), "pt");
  EXPECT_EQ(src->metadata().at("note"), "ünïcode ok");
  for (size_t i = 0; i < ts.size(); ++i) {
    const rc::io::TensorInfo* info = src->find(ts[i].name);
    ASSERT_NE(info, nullptr) << ts[i].name;
    EXPECT_EQ(info->dtype, ts[i].dtype) << ts[i].name;
    EXPECT_EQ(info->shape, ts[i].shape) << ts[i].name;
    const size_t n = size_t(info->numel()) * rc::dtype_size(info->dtype);
    const std::string want = n ? std::string(static_cast<const char*>(ts[i].data), n) : std::string();
    EXPECT_EQ(bytes_of(src->data(ts[i].name)), want) << ts[i].name;
  }
  EXPECT_EQ(src->find("missing"), nullptr);
  expect_error(Errc::not_found, {"missing"}, [&] { src->data("missing"); });
}

TEST(Safetensors, WriterLayoutAlignedAndSortedLikeHf) {
  TempDir dir;
  const fs::path p = dir.path() / "layout.safetensors";
  const uint8_t one = 1;
  const uint16_t h = 0x3c00;
  const double d = 2.0;
  const float f = 3.0f;
  std::vector<TensorToWrite> ts = {{"b_byte", DType::u8, {1}, &one},
                                   {"a_half", DType::f16, {1}, &h},
                                   {"z_double", DType::f64, {1}, &d},
                                   {"c_float", DType::f32, {1}, &f},
                                   {"a_double", DType::f64, {1}, &d}};
  rc::io::write_safetensors(p, ts);
  const std::string raw = rc::io::read_file(p);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u) << "header must be padded to 8 bytes";
  const std::string header = raw.substr(8, n);
  EXPECT_EQ(header.find_last_not_of(' ') + 1, header.find(' ', header.rfind('}'))) << "pads with spaces";
  auto j = nlohmann::json::parse(header);
  EXPECT_FALSE(j.contains("__metadata__")) << "no metadata given, none written";
  // Data order: larger dtypes first, then by name.
  std::vector<std::pair<uint64_t, std::string>> order;
  for (auto& [name, e] : j.items()) {
    const uint64_t begin = e["data_offsets"][0];
    order.emplace_back(begin, name);
    DType dt{};
    for (DType c : {DType::u8, DType::f16, DType::f32, DType::f64})
      if (rc::dtype_name(c) == e["dtype"].get<std::string>()) dt = c;
    EXPECT_EQ((8 + n + begin) % rc::dtype_size(dt), 0u) << name << " is not aligned in the file";
  }
  std::sort(order.begin(), order.end());
  std::vector<std::string> names;
  for (auto& o : order) names.push_back(o.second);
  EXPECT_EQ(names, (std::vector<std::string>{"a_double", "z_double", "c_float", "a_half", "b_byte"}));
  EXPECT_EQ(raw.size(), 8 + n + 8 + 8 + 4 + 2 + 1);
}

TEST(Safetensors, ReadsFileFromIndependentPythonWriter) {
  // Written by tools/make_io_fixtures.py's own writer, not ours.
  auto src = open_safetensors(io_data("plain_dict.expected.safetensors"));
  EXPECT_EQ(src->metadata().at("generator"), "tools/make_io_fixtures.py");
  const rc::io::TensorInfo* w = src->find("dense.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::f32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(src->find("bfloat")->dtype, DType::bf16);
  EXPECT_EQ(src->find("mask")->dtype, DType::boolean);
  EXPECT_EQ(src->find("scalar")->shape, std::vector<int64_t>{});
  // Our writer re-writes it to the same tensors.
  TempDir dir;
  std::vector<TensorToWrite> ts;
  for (const auto& t : src->tensors()) ts.push_back({t.name, t.dtype, t.shape, src->data(t.name).data()});
  rc::io::write_safetensors(dir.path() / "copy.safetensors", ts, src->metadata());
  auto copy = open_safetensors(dir.path() / "copy.safetensors");
  ASSERT_EQ(copy->tensors().size(), src->tensors().size());
  for (const auto& t : src->tensors()) EXPECT_EQ(bytes_of(copy->data(t.name)), bytes_of(src->data(t.name))) << t.name;
  EXPECT_EQ(copy->metadata(), src->metadata());
}

TEST(Safetensors, HeaderOrderIsKept) {
  TempDir dir;
  const fs::path p = write_raw(dir,
                               R"({"zz":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                               R"("aa":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                               "xy");
  auto src = open_safetensors(p);
  ASSERT_EQ(src->tensors().size(), 2u);
  EXPECT_EQ(src->tensors()[0].name, "zz");
  EXPECT_EQ(bytes_of(src->data("zz")), "y");
  EXPECT_EQ(bytes_of(src->data("aa")), "x");
}

TEST(SafetensorsConvert, HalfBfloatDoubleToFloat) {
  // Bit patterns with exactly known values: 1, -2, 65504 (max half), 2^-24 (min subnormal).
  const uint16_t f16[] = {0x3c00, 0xc000, 0x7bff, 0x0001};
  const float f16_want[] = {1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24)};
  float out[4];
  rc::io::convert_to_f32(DType::f16, std::as_bytes(std::span(f16)), out, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], f16_want[i]) << i;
  const uint16_t bf16[] = {0x3f80, 0xc040, rc::f32_to_bf16(0.15625f)};
  rc::io::convert_to_f32(DType::bf16, std::as_bytes(std::span(bf16)), out, 3);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.0f);
  EXPECT_EQ(out[2], 0.15625f);
  const double f64[] = {0.1, -1e300};
  rc::io::convert_to_f32(DType::f64, std::as_bytes(std::span(f64)), out, 2);
  EXPECT_EQ(out[0], 0.1f);
  EXPECT_TRUE(std::isinf(out[1]) && out[1] < 0);
  expect_error(Errc::invalid_argument, {"need 24 bytes, got 16"},
               [&] { rc::io::convert_to_f32(DType::f64, std::as_bytes(std::span(f64)), out, 3); });
  const int32_t ints[] = {1};
  expect_error(Errc::unsupported, {"I32"},
               [&] { rc::io::convert_to_f32(DType::i32, std::as_bytes(std::span(ints)), out, 1); });
}

TEST(SafetensorsWrite, FailedWriteKeepsOldFile) {
  TempDir dir;
  const fs::path p = dir.path() / "m.safetensors";
  const float v = 1.0f;
  std::vector<TensorToWrite> ts = {{"w", DType::f32, {1}, &v}};
  rc::io::write_safetensors(p, ts);
  const std::string before = rc::io::read_file(p);
  // Duplicate names are refused before anything is written.
  std::vector<TensorToWrite> dup = {{"w", DType::f32, {1}, &v}, {"w", DType::f32, {1}, &v}};
  expect_error(Errc::invalid_argument, {"'w'", "twice"}, [&] { rc::io::write_safetensors(p, dup); });
  std::vector<TensorToWrite> null_data = {{"w", DType::f32, {2}, nullptr}};
  expect_error(Errc::invalid_argument, {"no data"}, [&] { rc::io::write_safetensors(p, null_data); });
  EXPECT_EQ(rc::io::read_file(p), before);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});
  expect_error(Errc::io, {"nodir"}, [&] { rc::io::write_safetensors(dir.path() / "nodir" / "m.safetensors", ts); });
}

// ---- hostile files: one rule broken per test -------------------------------------------

TEST(SafetensorsHostile, MissingFileIsNotFound) {
  TempDir dir;
  expect_error(Errc::not_found, {"none.safetensors"}, [&] { open_safetensors(dir.path() / "none.safetensors"); });
}

TEST(SafetensorsHostile, TooShortForLength) {
  TempDir dir;
  rc::io::write_file_atomic(dir.path() / "short.safetensors", "\x05\x00\x00");
  expect_error(Errc::format, {"short.safetensors", "too short"},
               [&] { open_safetensors(dir.path() / "short.safetensors"); });
  rc::io::write_file_atomic(dir.path() / "empty.safetensors", "");
  expect_error(Errc::format, {"empty.safetensors"}, [&] { open_safetensors(dir.path() / "empty.safetensors"); });
}

TEST(SafetensorsHostile, HeaderLengthPastEof) {
  TempDir dir;
  const fs::path p = dir.path() / "lie.safetensors";
  rc::io::write_file_atomic(p, le64(1000) + "{}");
  expect_error(Errc::format, {"lie.safetensors", "header length 1000", "past the end"}, [&] { open_safetensors(p); });
  rc::io::write_file_atomic(p, le64(~uint64_t(0)) + "{}");
  expect_error(Errc::format, {"past the end"}, [&] { open_safetensors(p); });
}

TEST(SafetensorsHostile, HeaderOverSizeCap) {
  TempDir dir;
  const fs::path p = dir.path() / "huge.safetensors";
  rc::io::write_file_atomic(p, le64(150'000'000) + "{");
  fs::resize_file(p, 160'000'000);  // sparse: costs no disk
  expect_error(Errc::format, {"exceeds"}, [&] { open_safetensors(p); });
}

TEST(SafetensorsHostile, TruncatedData) {
  TempDir dir;
  const fs::path p = write_raw(dir, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(10, 'x'));
  expect_error(Errc::format, {"'w'", "outside the 10-byte data section"}, [&] { open_safetensors(p); });
}

TEST(SafetensorsHostile, NotJson) {
  TempDir dir;
  expect_error(Errc::format, {"not valid JSON"}, [&] { open_safetensors(write_raw(dir, "{\"w\": nope", "")); });
  expect_error(Errc::format, {"not valid JSON"}, [&] { open_safetensors(write_raw(dir, "{} trailing", "")); });
  expect_error(Errc::format, {"expected an object"}, [&] { open_safetensors(write_raw(dir, "[1, 2]", "")); });
}

TEST(SafetensorsHostile, DeepNesting) {
  TempDir dir;
  const std::string deep = "{\"w\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error(Errc::format, {"nests"}, [&] { open_safetensors(write_raw(dir, deep, "")); });
}

TEST(SafetensorsHostile, OverlappingOffsetsInAnyHeaderOrder) {
  TempDir dir;
  // Header order differs from offset order: the check must sort.
  const fs::path p = write_raw(dir,
                               R"({"c":{"dtype":"U8","shape":[2],"data_offsets":[6,8]},)"
                               R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"U8","shape":[3],"data_offsets":[3,6]}})",
                               std::string(8, 'x'));
  expect_error(Errc::format, {"'a'", "'b'", "overlap"}, [&] { open_safetensors(p); });
}

TEST(SafetensorsHostile, EmptyTensorsDoNotCountAsOverlap) {
  TempDir dir;
  const fs::path p = write_raw(dir,
                               R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                               R"("e":{"dtype":"F32","shape":[0,3],"data_offsets":[2,2]}})",
                               std::string(4, 'x'));
  auto src = open_safetensors(p);
  EXPECT_EQ(src->data("e").size(), 0u);
}

TEST(SafetensorsHostile, ByteLengthDisagreesWithShape) {
  TempDir dir;
  const fs::path p =
      write_raw(dir, R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(16, 'x'));
  expect_error(Errc::format, {"'w'", "12 bytes", "needs 16"}, [&] { open_safetensors(p); });
}

TEST(SafetensorsHostile, UnknownDtype) {
  TempDir dir;
  expect_error(Errc::format, {"'w'", "unknown dtype 'F33'"}, [&] {
    open_safetensors(write_raw(dir, R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", "xxxx"));
  });
  // Known to the spec but not handled: a different error kind.
  expect_error(Errc::unsupported, {"'w'", "U32"}, [&] {
    open_safetensors(write_raw(dir, R"({"w":{"dtype":"U32","shape":[1],"data_offsets":[0,4]}})", "xxxx"));
  });
  expect_error(Errc::format, {"'w'", "dtype"}, [&] {
    open_safetensors(write_raw(dir, R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", "xxxx"));
  });
}

TEST(SafetensorsHostile, ShapeOverflowAndBadEntries) {
  TempDir dir;
  // 2^40 * 2^40 elements overflows int64: must be caught, not wrapped into a small size.
  expect_error(Errc::format, {"'w'", "overflow"}, [&] {
    open_safetensors(
        write_raw(dir, R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,0]}})", ""));
  });
  // 2^62 elements of 4 bytes: count fits, bytes do not.
  expect_error(Errc::format, {"'w'", "overflow"}, [&] {
    open_safetensors(write_raw(dir, R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", ""));
  });
  expect_error(Errc::format, {"'w'", "non-negative"}, [&] {
    open_safetensors(write_raw(dir, R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", ""));
  });
  expect_error(Errc::format, {"'w'", "non-negative"}, [&] {
    open_safetensors(write_raw(dir, R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,0]}})", ""));
  });
  expect_error(Errc::format, {"'w'", "needs dtype, shape and data_offsets"},
               [&] { open_safetensors(write_raw(dir, R"({"w":{"dtype":"F32","shape":[1]}})", "")); });
  expect_error(Errc::format, {"'w'", "data_offsets"}, [&] {
    open_safetensors(write_raw(dir, R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "xxxx"));
  });
  expect_error(Errc::format, {"'w'", "data_offsets"}, [&] {
    open_safetensors(write_raw(dir, R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "xxxx"));
  });
  expect_error(Errc::format, {"'w'", "expected an object"},
               [&] { open_safetensors(write_raw(dir, R"({"w":[1]})", "")); });
}

TEST(SafetensorsHostile, DuplicateNames) {
  TempDir dir;
  expect_error(Errc::format, {"'w'", "twice"}, [&] {
    open_safetensors(write_raw(dir,
                               R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                               R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                               "xy"));
  });
}

TEST(SafetensorsHostile, MetadataMustBeStrings) {
  TempDir dir;
  expect_error(Errc::format, {"__metadata__", "'n'"},
               [&] { open_safetensors(write_raw(dir, R"({"__metadata__":{"n":1}})", "")); });
  expect_error(Errc::format, {"__metadata__"},
               [&] { open_safetensors(write_raw(dir, R"({"__metadata__":["a"]})", "")); });
}

// Random byte flips and truncations of a valid file (fixed seed): every result either
// opens, and then every tensor's bytes are readable, or throws rc::Error.
TEST(SafetensorsHostile, RandomMutationsNeverCrash) {
  const std::string good = rc::io::read_file(io_data("plain_dict.expected.safetensors"));
  TempDir dir;
  const fs::path p = dir.path() / "m.safetensors";
  std::mt19937 rng(1234);
  int opened = 0, refused = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    std::string s = good;
    // Aim most edits at the 8-byte length and the JSON header, where the parsing is.
    const size_t hot = std::min<size_t>(s.size(), 8 + 600);
    for (int e = 0; e < 1 + int(rng() % 3); ++e) {
      if (rng() % 8 == 0)
        s.resize(rng() % s.size());
      else if (!s.empty())
        s[rng() % std::min(hot, s.size())] = char(rng());
    }
    // A fresh file each time: truncating one with data makes ext4 flush it (auto_da_alloc).
    fs::remove(p);
    { std::ofstream(p, std::ios::binary).write(s.data(), std::streamsize(s.size())); }
    try {
      auto src = open_safetensors(p);
      size_t sum = 0;
      for (const auto& t : src->tensors())
        for (std::byte b : src->data(t.name)) sum += size_t(b);
      (void)sum;
      ++opened;
    } catch (const rc::Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(opened + refused, 1000);
}
