// Non-blocking, regular-file-only opens (see regular_file.h).
#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace rc {

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

bool path_present(const std::filesystem::path& path) noexcept {
  std::error_code ec;
  return std::filesystem::exists(path, ec) || ec;
}

Fd open_regular_file(const std::filesystem::path& path, std::string_view what) {
  const std::string name = (what.empty() ? std::string() : std::string(what) + " ") + "'" + path.string() + "'";
  // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; it has no effect on
  // regular files, and is cleared below anyway.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    const int err = errno;
    RC_CHECK(err != ENOENT, Errc::not_found, "cannot open ", name, ": ", std::strerror(err));
    RC_THROW(Errc::io, "cannot open ", name, ": ", std::strerror(err));
  }
  struct stat st {};
  RC_CHECK(::fstat(fd.get(), &st) == 0, Errc::io, "cannot stat ", name, ": ", std::strerror(errno));
  RC_CHECK(S_ISREG(st.st_mode), Errc::format, name, " is ", kind_of(st.st_mode),
           ", not a regular file\nHINT: give the path of a file (a FIFO, device or folder is never read)");
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

size_t read_some(int fd, char* buf, size_t n, std::string_view source) {
  for (;;) {
    const ssize_t got = ::read(fd, buf, n);
    if (got >= 0) return size_t(got);
    RC_CHECK(errno == EINTR, Errc::io, "cannot read ", source, ": ", std::strerror(errno));
  }
}

void check_stream_bound(uint64_t bytes_read, uint64_t max_bytes, std::string_view source) {
  RC_CHECK(bytes_read <= max_bytes, Errc::format, source, " holds more than ", max_bytes,
           " bytes\nHINT: split the input into smaller files");
}

std::string read_fd_bounded(int fd, std::string_view source, uint64_t max_bytes) {
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    RC_CHECK(uint64_t(st.st_size) <= max_bytes, Errc::format, source, " is ", uint64_t(st.st_size),
             " bytes, more than the limit of ", max_bytes);
    out.reserve(size_t(st.st_size));
  }
  char buf[1 << 16];
  while (const size_t got = read_some(fd, buf, sizeof buf, source)) {
    check_stream_bound(out.size() + got, max_bytes, source);
    out.append(buf, got);
  }
  return out;
}

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what,
                              std::string_view hint) {
  const std::string name = (what.empty() ? std::string() : std::string(what) + " ") + "'" + path.string() + "'";
  const Fd fd = open_regular_file(path, what);
  struct stat st {};
  RC_CHECK(::fstat(fd.get(), &st) == 0, Errc::io, "cannot stat ", name, ": ", std::strerror(errno));
  RC_CHECK(uint64_t(st.st_size) <= max_bytes, Errc::format, name, " is ", uint64_t(st.st_size),
           " bytes, more than the ", max_bytes, "-byte limit", hint.empty() ? "" : "\nHINT: ", hint);
  return read_fd_bounded(fd.get(), name, max_bytes);  // the bound again, for a file that grows meanwhile
}

}  // namespace rc
