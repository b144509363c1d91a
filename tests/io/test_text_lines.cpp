// The one text line reader (io/text_lines.h) and non-blocking regular-file opens
// (core/regular_file.h): line endings, BOMs, NULs, invalid UTF-8, FIFOs, devices, folders,
// size bounds. Issue #10 findings 4, 9, 10 and 11.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <optional>

#include "io/atomic_file.h"
#include "core/regular_file.h"
#include "io/tensor_source.h"
#include "io/text_lines.h"
#include "io/io_test_util.h"

namespace fs = std::filesystem;
using rc::Errc;
using rc::io::read_text_lines;
using rc::io::split_text_lines;
using rc::test::expect_error;
using rc::test::TempDir;
using Lines = std::vector<std::string>;

TEST(TextLines, LfAndCrlfEndLinesTheSameWay) {
  EXPECT_EQ(split_text_lines("a \nb\n", "t"), (Lines{"a ", "b"}));
  EXPECT_EQ(split_text_lines("a \r\nb\r\n", "t"), (Lines{"a ", "b"}));
  EXPECT_EQ(split_text_lines("a\r\nb", "t"), (Lines{"a", "b"}));        // no final ending
  EXPECT_EQ(split_text_lines("a\n\nb\n", "t"), (Lines{"a", "", "b"}));  // blank line kept
  EXPECT_EQ(split_text_lines("\r\n", "t"), (Lines{""}));
  EXPECT_EQ(split_text_lines("", "t"), (Lines{}));
  EXPECT_EQ(split_text_lines("a\rb\n", "t"), (Lines{"a\rb"}));  // a lone CR is text
  // Trailing spaces are text (TweetEval lines end with one, and it changes the ids).
  EXPECT_EQ(split_text_lines("x  \r\n", "t"), (Lines{"x  "}));
}

TEST(TextLines, Utf8BomIsDroppedAsUtf8SigDoes) {
  EXPECT_EQ(split_text_lines("\xEF\xBB\xBF"
                             "0\tnegative\r\n1\tpositive\r\n",
                             "t"),
            (Lines{"0\tnegative", "1\tpositive"}));
  // Only a leading one: a BOM inside a text is a character (U+FEFF) and stays.
  EXPECT_EQ(split_text_lines("a\n\xEF\xBB\xBF"
                             "b\n",
                             "t"),
            (Lines{"a",
                   "\xEF\xBB\xBF"
                   "b"}));
  EXPECT_EQ(rc::io::clean_text_bytes("\xEF\xBB\xBFtext,label\n", "t"), "text,label\n");
}

TEST(TextLines, NulAndUtf16AreRefusedNamingFileAndLine) {
  expect_error(Errc::format, {"data.txt:2:", "NUL"},
               [] { split_text_lines(std::string("ok\nb\0d\n", 7), "data.txt"); });
  expect_error(Errc::format, {"u16.txt", "UTF-16"},
               [] { split_text_lines(std::string("\xFF\xFEh\0i\0", 6), "u16.txt"); });
}

TEST(TextLines, InvalidUtf8IsKeptForTheTokenizerToReplace) {
  // Kept byte for byte: the tokenizer turns each bad sequence into U+FFFD (errors="replace")
  // for every command alike.
  EXPECT_EQ(split_text_lines("caf\xE9\n\xC3\n", "t"), (Lines{"caf\xE9", "\xC3"}));
}

TEST(TextLines, FileReaderUsesTheSameRules) {
  TempDir dir;
  rc::io::write_file_atomic(dir.path() / "crlf.txt", "\xEF\xBB\xBFhello \r\nworld\r\n");
  EXPECT_EQ(read_text_lines(dir.path() / "crlf.txt"), (Lines{"hello ", "world"}));
  EXPECT_EQ(rc::io::read_text_file(dir.path() / "crlf.txt"), "hello \r\nworld\r\n");
  expect_error(Errc::format, {"more than the limit of 4"}, [&] { read_text_lines(dir.path() / "crlf.txt", 4); });
  expect_error(Errc::not_found, {"missing.txt"}, [&] { read_text_lines(dir.path() / "missing.txt"); });
}

namespace {

// Every line TextLineStream gives for `bytes` written to a pipe (the writer closed first).
Lines stream_lines(const std::string& bytes, const std::string& source = "stdin") {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  auto writer = std::async(std::launch::async, [&] {
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::write(fds[1], bytes.data() + off, bytes.size() - off);
      if (n <= 0) break;
      off += size_t(n);
    }
    ::close(fds[1]);
  });
  Lines out;
  try {
    rc::io::TextLineStream in(fds[0], source);
    while (auto line = in.next()) out.push_back(*line);
  } catch (...) {
    writer.get();
    ::close(fds[0]);
    throw;
  }
  writer.get();
  ::close(fds[0]);
  return out;
}

}  // namespace

TEST(TextLineStream, SplitsAndCleansExactlyAsTheWholeFileReader) {
  const std::string cases[] = {"a \nb\n",
                               "a \r\nb\r\n",
                               "a\r\nb",
                               "a\n\nb\n",
                               "\r\n",
                               "",
                               "a\rb\n",
                               "x  \r\n",
                               "a\r",
                               "\xEF\xBB\xBF",
                               "\xEF\xBB\xBF"
                               "0\tneg\r\n1\tpos\r\n",
                               "abc\xFF\xFE\n"};
  for (const std::string& c : cases) EXPECT_EQ(stream_lines(c), split_text_lines(c, "t")) << "input: " << c;
  // Lines longer than one read (64 KiB) arrive whole.
  const std::string big(200000, 'x');
  EXPECT_EQ(stream_lines(big + "\n" + big), (Lines{big, big}));
}

TEST(TextLineStream, NulAndUtf16AreRefusedNamingTheLine) {
  expect_error(Errc::format, {"stdin:3:", "NUL"}, [] { stream_lines(std::string("a\nb\nc\0d\n", 8)); });
  expect_error(Errc::format, {"stdin", "UTF-16"}, [] { stream_lines(std::string("\xFF\xFEh\0i\0\n\0", 8)); });
}

TEST(TextLineStream, HandsOutALineBeforeTheStreamEnds) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "first\n", 6), 6);  // the writer stays open: interactive stdin
  rc::io::TextLineStream in(fds[0], "stdin");
  auto got = std::async(std::launch::async, [&] { return in.next(); });
  ASSERT_EQ(got.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "next() waited for the end";
  EXPECT_EQ(got.get(), std::optional<std::string>("first"));
  ::close(fds[1]);
  EXPECT_EQ(in.next(), std::nullopt);
  ::close(fds[0]);
}

TEST(TextLineStream, SizeIsBounded) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "0123456789\n0123456789\n", 22), 22);
  ::close(fds[1]);
  rc::io::TextLineStream in(fds[0], "stdin", 16);
  expect_error(Errc::format, {"stdin holds more than 16 bytes"}, [&] {
    while (in.next()) {
    }
  });
  ::close(fds[0]);
}

TEST(RegularFile, FoldersAndDevicesAreRefused) {
  TempDir dir;
  expect_error(Errc::format, {"is a folder"}, [&] { read_text_lines(dir.path()); });
  expect_error(Errc::format, {"/dev/zero", "character device"}, [] { read_text_lines("/dev/zero"); });
  // A stream is bounded instead: /dev/zero as stdin ends at the limit, not at 3.5 GB.
  rc::Fd zero(::open("/dev/zero", O_RDONLY));
  ASSERT_GE(zero.get(), 0);
  expect_error(Errc::format, {"stdin", "more than 65536"},
               [&] { rc::io::read_text_lines_fd(zero.get(), "stdin", 65536); });
}

// Runs fn on another thread and fails (instead of hanging the test run) if it blocks.
// On a block, opening the FIFO's other end releases the reader so the test run goes on.
template <class Fn>
void expect_prompt_error(const fs::path& fifo, Errc errc, std::initializer_list<std::string> parts, Fn fn) {
  auto done = std::async(std::launch::async, [&] { expect_error(errc, parts, fn); });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on a FIFO (finding 4)";
    rc::Fd writer(::open(fifo.c_str(), O_RDWR | O_NONBLOCK));
    done.wait();
    return;
  }
  done.get();
}

TEST(RegularFile, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const fs::path fifo = dir.path() / "model.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_prompt_error(fifo, Errc::format, {"FIFO"}, [&] { rc::io::open_safetensors(fifo); });
  expect_prompt_error(fifo, Errc::format, {"FIFO"}, [&] { rc::io::read_file(fifo); });
  expect_prompt_error(fifo, Errc::format, {"FIFO"}, [&] { read_text_lines(fifo); });
}
