// `roberta pretrain` reads its texts as `train` reads its data (io/text_lines.h): NUL bytes,
// UTF-16 and binary files are refused with the file and line named, in the same words, and a
// UTF-8 byte-order mark is dropped (red-team issue 27, finding 17: pretrain had a line reader
// of its own that trained on all of them).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "io/text_lines.h"
#include "roberta/error.h"
#include "roberta/pretrain.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

struct DataTempDir {
  fs::path path = fs::temp_directory_path() / ("rc_pretrain_data_" + std::to_string(::getpid()));
  DataTempDir() { fs::create_directories(path); }
  ~DataTempDir() { fs::remove_all(path); }
};

// A literal with its NUL bytes (std::string from a char* stops at the first).
template <size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

fs::path put(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

PretrainOptions data_options(const fs::path& data, const fs::path& out) {
  PretrainOptions o;
  o.model_dir = fs::path(RC_TEST_DATA_DIR) / "tiny";
  o.data = data;
  o.output_dir = out;
  o.max_steps = 1;
  o.batch_size = 2;
  o.max_length = 16;
  o.validation_split_percentage = 0;
  o.progress = 0;
  return o;
}

// The error pretrain gives for `data`; empty when it trained.
Error pretrain_error(const fs::path& data, const fs::path& out) {
  try {
    pretrain(data_options(data, out));
  } catch (const Error& e) {
    return e;
  }
  return Error(Errc::internal, "");
}

}  // namespace

TEST(PretrainData, RefusesWhatTrainRefusesInTheSameWords) {
  DataTempDir tmp;
  std::string binary(4096, '\0');
  std::mt19937 rng(7);
  for (char& c : binary) c = char(rng());
  binary[100] = '\0';  // random bytes hold NULs; this one for certain
  const struct {
    const char* name;
    std::string bytes;
    std::string where;  // file:line in the message
  } cases[] = {
      {"nul.txt", bytes("a text\nanother \0 text\n"), "nul.txt:2"},
      {"utf16.txt", bytes("\xFF\xFEh\0i\0\n\0"), "utf16.txt"},
      {"binary.txt", binary, "binary.txt:"},
      {"nul.jsonl", bytes("{\"text\": \"a\"}\n{\"text\": \"b\"}\0\n"), "nul.jsonl:2"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path data = put(tmp.path / c.name, c.bytes);
    const Error e = pretrain_error(data, tmp.path / ("out" + std::to_string(n++)));
    EXPECT_EQ(e.errc(), Errc::format) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.where), std::string::npos) << e.what();
    try {  // train's reader, on the same file: the same message
      io::read_text_lines(data);
      ADD_FAILURE() << "train's reader took " << c.name;
    } catch (const Error& t) {
      const std::string a = e.what(), b = t.what();
      EXPECT_EQ(a.substr(0, a.rfind(" (")), b.substr(0, b.rfind(" ("))) << "pretrain and train word it differently";
      EXPECT_EQ(e.hint(), t.hint());
    }
  }
}

TEST(PretrainData, Utf8ByteOrderMarkIsNotText) {
  DataTempDir tmp;
  // A file holding only a BOM and blanks has no texts; with the BOM kept as text, pretrain
  // trained on the three bytes EF BB BF.
  const fs::path data = put(tmp.path / "bom.txt", "\xEF\xBB\xBF   \n\n");
  const Error e = pretrain_error(data, tmp.path / "out");
  EXPECT_EQ(e.errc(), Errc::invalid_argument) << e.what();
  EXPECT_NE(std::string(e.what()).find("no texts"), std::string::npos) << e.what();
}
