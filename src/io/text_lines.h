// The one reader for line-oriented text that users hand us: TweetEval *_text.txt and
// *_labels.txt, mapping.txt, JSON Lines datasets, `predict/tokenize --input`, stdin.
// Every one of them splits and cleans lines the same way, so a text reaches the tokenizer
// with the same bytes whichever command read it:
//   - "\n" and "\r\n" end a line (a file saved on Windows gives the same texts as on
//     Linux); a lone "\r" inside a line is text. A final line ending does not start
//     another line.
//   - A leading UTF-8 byte-order mark is dropped, as Python's "utf-8-sig" codec does.
//   - Invalid UTF-8 is kept byte for byte: the tokenizer replaces each bad sequence with
//     U+FFFD, as Python's errors="replace" does, in every command alike.
//   - A NUL byte is refused (format error naming file:line): no text file holds one, and
//     a UTF-16 file (a UTF-16 byte-order mark is named in the hint) is full of them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rc::io {

// Files larger than this are refused before being read: 2 GiB of text is far more than
// any dataset split or prediction batch this project handles in memory.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t(2) << 30;

// Drops a leading UTF-8 BOM and refuses NUL bytes / UTF-16 (see above). For parsers that
// need the whole text (CSV records may span lines).
std::string_view clean_text_bytes(std::string_view bytes, std::string_view source);

// Splits cleaned bytes into lines (see above). `source` names the input in errors.
std::vector<std::string> split_text_lines(std::string_view bytes, std::string_view source);

// A regular file (never a FIFO, device or folder: core/regular_file.h) of at most
// max_bytes, read and split.
std::vector<std::string> read_text_lines(const std::filesystem::path& path, uint64_t max_bytes = kMaxTextFileBytes);
// The whole file as bytes, cleaned (BOM dropped, NUL refused), for CSV and the like.
std::string read_text_file(const std::filesystem::path& path, uint64_t max_bytes = kMaxTextFileBytes);
// A stream (stdin, a pipe) read to its end, at most max_bytes, and split.
std::vector<std::string> read_text_lines_fd(int fd, std::string_view source, uint64_t max_bytes = kMaxTextFileBytes);

// A stream read line by line with the same rules, each line handed out as soon as it ends:
// for interactive commands (`roberta fill-mask` reading stdin) that answer a line before
// the next one is typed. At most max_bytes in all.
class TextLineStream {
 public:
  TextLineStream(int fd, std::string source, uint64_t max_bytes = kMaxTextFileBytes);
  // The next line, its ending removed; nullopt at the end of the stream.
  std::optional<std::string> next();

 private:
  bool fill();  // reads more into buf_; false at the end of the stream
  int fd_;
  std::string source_;
  uint64_t max_bytes_, read_ = 0;
  std::string buf_;
  size_t pos_ = 0;
  int64_t line_ = 0;
  bool eof_ = false;
};

}  // namespace rc::io
