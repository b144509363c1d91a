// TensorBoard event files: CRC32C test vector, and a written file read back record by record
// (both CRCs checked, protobuf fields decoded).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "support/tensorboard_reader.h"
#include "train/tensorboard.h"

using namespace rc::train;
using rc::test::read_event_file;
namespace fs = std::filesystem;

TEST(TensorBoard, Crc32cKnownVector) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value (RFC 3720)
  const uint8_t zeros[32] = {};
  EXPECT_EQ(crc32c(zeros, 32), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(TensorBoard, WritesReadableEvents) {
  const fs::path dir = fs::temp_directory_path() / ("rc_tb_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path file;
  {
    TensorBoardWriter w(dir);
    w.add_scalar("train/loss", 1.25f, 10);
    w.add_scalar("eval/macro_recall", 0.5f, 20);
    w.add_scalar("train/loss", -3.5e-7f, 300000);
    file = w.path();
  }
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u);
  const auto ev = read_event_file(file);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].file_version, "brain.Event:2");
  EXPECT_GT(ev[0].wall_time, 1.6e9);
  EXPECT_EQ(ev[1].tag, "train/loss");
  EXPECT_EQ(ev[1].step, 10);
  EXPECT_TRUE(ev[1].has_value);
  EXPECT_EQ(ev[1].value, 1.25f);
  EXPECT_EQ(ev[2].tag, "eval/macro_recall");
  EXPECT_EQ(ev[3].step, 300000);
  EXPECT_EQ(ev[3].value, -3.5e-7f);
  fs::remove_all(dir);
}

TEST(TensorBoard, CorruptionIsDetected) {
  std::string rec = frame_record(encode_scalar_event(1.0, 1, "x", 2.0f));
  const fs::path p = fs::temp_directory_path() / ("rc_tb_bad_" + std::to_string(::getpid()));
  rec[rec.size() - 6] ^= 1;  // flip a bit in the data
  {
    std::FILE* f = std::fopen(p.c_str(), "wb");
    std::fwrite(rec.data(), 1, rec.size(), f);
    std::fclose(f);
  }
  EXPECT_THROW(read_event_file(p), std::runtime_error);
  fs::remove(p);
}

// Every record decoded by protoc against the Event schema's field numbers and types
// (tests/data/tensorboard/event_subset.proto): a wrong tag, wire type or nesting shows up as
// a numbered unknown field or a decode error. Skips where protoc is not installed.
TEST(TensorBoard, RecordsDecodeWithProtocAgainstTheEventSchema) {
  if (std::system("command -v protoc > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "protoc not installed (protobuf-compiler)";
  const fs::path dir = fs::temp_directory_path() / ("rc_tb_protoc_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path file;
  {
    TensorBoardWriter w(dir);
    w.add_scalar("train/loss", 1.25f, 10);
    w.add_scalar("eval/macro_recall", -0.5f, 300000);
    file = w.path();
  }
  const auto records = rc::test::read_event_records(file);
  ASSERT_EQ(records.size(), 3u);
  const std::string proto_dir = std::string(RC_TEST_DATA_DIR) + "/tensorboard";
  std::vector<std::string> decoded;
  for (size_t i = 0; i < records.size(); ++i) {
    const fs::path in = dir / ("record" + std::to_string(i)), out = dir / ("record" + std::to_string(i) + ".txt");
    {
      std::ofstream f(in, std::ios::binary);
      f.write(records[i].data(), std::streamsize(records[i].size()));
    }
    const std::string cmd = "protoc --decode=tensorflow.Event -I '" + proto_dir + "' event_subset.proto < '" +
                            in.string() + "' > '" + out.string() + "' 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(out);
    decoded.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  for (const auto& text : decoded) {
    EXPECT_NE(text.find("wall_time: "), std::string::npos) << text;
    for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
      const size_t first = text.find_first_not_of(' ', at);
      ASSERT_TRUE(first == std::string::npos || !std::isdigit(static_cast<unsigned char>(text[first])))
          << "field unknown to the Event schema:\n"
          << text;
      if (text.find('\n', at) == std::string::npos) break;
    }
  }
  EXPECT_NE(decoded[0].find("file_version: \"brain.Event:2\""), std::string::npos) << decoded[0];
  EXPECT_NE(decoded[1].find("step: 10\nsummary {\n  value {\n    tag: \"train/loss\"\n    simple_value: 1.25\n  }\n}"),
            std::string::npos)
      << decoded[1];
  EXPECT_NE(
      decoded[2].find("step: 300000\nsummary {\n  value {\n    tag: \"eval/macro_recall\"\n    simple_value: -0.5\n"),
      std::string::npos)
      << decoded[2];
  fs::remove_all(dir);
}
