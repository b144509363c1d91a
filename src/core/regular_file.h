// Opening files that come from users without ever blocking on them. open(2) on a FIFO
// waits for a writer forever, and a character device (/dev/zero) never ends, so every
// reader of user-named files goes through open_regular_file(): it opens with O_NONBLOCK
// (a FIFO then opens at once), refuses anything that is not a regular file by what
// fstat(2) says about the descriptor itself (no check-then-open race), and clears
// O_NONBLOCK again for the reads. In core, not io: the tokenizer (which sees only core)
// reads users' files too, and every reader goes through this one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace rc {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Opens `path` read-only. Throws not_found when absent, io when unreadable, and format
// ("... is a FIFO, not a regular file") for folders, FIFOs, sockets and devices.
// `what` names the file's role in the message ("config", "--input"); may be empty.
Fd open_regular_file(const std::filesystem::path& path, std::string_view what = "");

// One read(2) of at most `n` bytes into `buf`, retried on EINTR; 0 at the end. A failure
// throws io ("cannot read SOURCE: ..."). The one read loop of read_fd_bounded and
// TextLineStream.
size_t read_some(int fd, char* buf, size_t n, std::string_view source);

// Throws format ("SOURCE holds more than MAX bytes", with a hint) when a stream read so far
// has passed its bound.
void check_stream_bound(uint64_t bytes_read, uint64_t max_bytes, std::string_view source);

// Reads a descriptor to its end, refusing (format) more than max_bytes: a stream (stdin,
// a pipe) has no size to check up front. `source` names it in errors.
std::string read_fd_bounded(int fd, std::string_view source, uint64_t max_bytes);

// The whole of a user-named regular file (open_regular_file), refused (format: "WHAT 'path'
// is N bytes, more than the M-byte limit") from fstat's size before a byte is read or
// parsed: a parser holds several times its input (nlohmann::json: ~20x for an array of
// small numbers), so a file must be bounded before it is read. `hint` goes with that error.
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what = "",
                              std::string_view hint = "");

// The bound of a small JSON metadata file read whole (config.json, tokenizer_config.json,
// special_tokens_map.json, a package's settings.json): real ones are a few KB, 65,536 labels in
// id2label + label2id stay under 4 MB, and nlohmann's DOM holds ~20x its input.
inline constexpr uint64_t kMaxSmallJsonFileBytes = uint64_t(16) << 20;

// Whether something is at `path`, also true when it cannot be looked at (a symlink loop,
// EACCES): the reader that opens it then reports why (exit 3), where fs::exists would throw
// a filesystem_error or another file would be read in its place.
bool path_present(const std::filesystem::path& path) noexcept;

}  // namespace rc
