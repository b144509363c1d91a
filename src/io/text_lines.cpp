// One line reader for every text input (see text_lines.h).
#include "io/text_lines.h"

#include <cstring>

#include "core/check.h"
#include "core/regular_file.h"

namespace rc::io {
namespace {

// bytes start at line first_line of source.
void refuse_nul(std::string_view bytes, std::string_view source, int64_t first_line) {
  if (const void* nul = std::memchr(bytes.data(), 0, bytes.size())) {
    const size_t at = size_t(static_cast<const char*>(nul) - bytes.data());
    int64_t line = first_line;
    for (size_t i = 0; i < at; ++i) line += bytes[i] == '\n';
    RC_THROW(Errc::format, source, ":", line, ": holds a NUL byte; text inputs must be UTF-8 text",
             "\nHINT: is it UTF-16 or a binary file? convert it to UTF-8 (iconv -t UTF-8)");
  }
}

}  // namespace

std::string_view clean_text_bytes(std::string_view bytes, std::string_view source) {
  if (bytes.size() >= 2 && ((uint8_t(bytes[0]) == 0xFF && uint8_t(bytes[1]) == 0xFE) ||
                            (uint8_t(bytes[0]) == 0xFE && uint8_t(bytes[1]) == 0xFF)))
    RC_THROW(Errc::format, source, ": starts with a UTF-16 byte-order mark; text inputs must be UTF-8",
             "\nHINT: convert it, e.g. iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8");
  if (bytes.size() >= 3 && bytes.compare(0, 3, "\xEF\xBB\xBF") == 0) bytes.remove_prefix(3);
  refuse_nul(bytes, source, 1);
  return bytes;
}

std::vector<std::string> split_text_lines(std::string_view bytes, std::string_view source) {
  bytes = clean_text_bytes(bytes, source);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    const size_t next = end == std::string_view::npos ? bytes.size() : end + 1;
    if (end == std::string_view::npos)
      end = bytes.size();
    else if (end > start && bytes[end - 1] == '\r')
      --end;  // CRLF: the '\r' belongs to the ending
    lines.emplace_back(bytes.substr(start, end - start));
    start = next;
  }
  return lines;
}

std::string read_text_file(const std::filesystem::path& path, uint64_t max_bytes) {
  Fd fd = open_regular_file(path);
  std::string bytes = read_fd_bounded(fd.get(), "'" + path.string() + "'", max_bytes);
  const std::string_view clean = clean_text_bytes(bytes, path.string());
  if (clean.size() != bytes.size()) bytes.erase(0, bytes.size() - clean.size());
  return bytes;
}

std::vector<std::string> read_text_lines(const std::filesystem::path& path, uint64_t max_bytes) {
  Fd fd = open_regular_file(path);
  const std::string bytes = read_fd_bounded(fd.get(), "'" + path.string() + "'", max_bytes);
  return split_text_lines(bytes, path.string());
}

std::vector<std::string> read_text_lines_fd(int fd, std::string_view source, uint64_t max_bytes) {
  const std::string bytes = read_fd_bounded(fd, source, max_bytes);
  return split_text_lines(bytes, source);
}

TextLineStream::TextLineStream(int fd, std::string source, uint64_t max_bytes)
    : fd_(fd), source_(std::move(source)), max_bytes_(max_bytes) {}

bool TextLineStream::fill() {
  if (eof_) return false;
  if (pos_ > 0) {  // keep only the unfinished line
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  char chunk[1 << 16];
  const size_t got = read_some(fd_, chunk, sizeof chunk, source_);
  if (got == 0) {
    eof_ = true;
    return false;
  }
  read_ += got;
  check_stream_bound(read_, max_bytes_, source_);
  buf_.append(chunk, got);
  return true;
}

std::optional<std::string> TextLineStream::next() {
  size_t end;
  for (;;) {
    end = buf_.find('\n', pos_);
    if (end != std::string::npos) break;
    if (!fill()) {
      if (pos_ >= buf_.size()) return std::nullopt;  // a final ending starts no line
      end = buf_.size();
      break;
    }
  }
  const bool ended = end < buf_.size();  // by a line ending, not by the end of the stream
  std::string_view line(buf_.data() + pos_, end - pos_);
  pos_ = ended ? end + 1 : end;
  if (ended && !line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF
  ++line_;
  if (line_ == 1) {
    line = clean_text_bytes(line, source_);           // BOM dropped, UTF-16 named, NUL refused
    if (line.empty() && !ended) return std::nullopt;  // a stream holding only a BOM
  } else {
    refuse_nul(line, source_, line_);
  }
  return std::string(line);
}

}  // namespace rc::io
