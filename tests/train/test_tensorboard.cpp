// TensorBoard event files: CRC32C test vector, and a written file read back record by record
// (both CRCs checked, protobuf fields decoded).
#include <gtest/gtest.h>

#include <filesystem>

#include "roberta/error.h"
#include "train/tensorboard.h"

using namespace rc::train;
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
  EXPECT_THROW(read_event_file(p), rc::Error);
  fs::remove(p);
}
