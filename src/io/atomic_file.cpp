// Atomic whole-file writes (temp file beside the target, fsync, rename, fsync the folder)
// and whole-file reads. Every failure is rc::Error(io) naming the path and strerror; a
// failed AtomicFile removes its temp file so nothing is left behind.
#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/check.h"
#include "core/regular_file.h"

namespace rc::io {
namespace {

std::string errno_text(int err) {
  std::string text = std::strerror(err);
  if (err == ENOSPC || err == EDQUOT || err == EFBIG)
    text += "\nHINT: free disk space (or raise the quota/file-size limit) and retry";
  return text;
}

// Temp names carry the pid and a per-process counter so two writers of the same
// path (two threads, two processes) never share a temp file.
std::filesystem::path temp_name_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  return tmp;
}

}  // namespace

namespace detail {

void write_all(int fd, const void* data, size_t n, const std::filesystem::path& what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // write() may write less than asked (signals, quotas, pipes); loop until done.
    const ssize_t got = ::write(fd, p, n);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      RC_THROW(Errc::io, "cannot write '", what.string(), "': ", errno_text(err));
    }
    RC_CHECK(got > 0, Errc::io, "cannot write '", what.string(), "': write returned 0");
    p += got;
    n -= size_t(got);
  }
}

}  // namespace detail

void fsync_dir(const std::filesystem::path& dir) {
  const std::filesystem::path d = dir.empty() ? std::filesystem::path(".") : dir;
  const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    RC_THROW(Errc::io, "cannot open folder '", d.string(), "' to sync it: ", std::strerror(err));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a folder (EINVAL); the rename is as durable as they allow.
  RC_CHECK(rc == 0 || err == EINVAL, Errc::io, "cannot sync folder '", d.string(), "': ", std::strerror(err));
}

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)), tmp_(temp_name_for(path_)) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    RC_THROW(Errc::io, "cannot create '", tmp_.string(), "' (temp file for '", path_.string(), "'): ", errno_text(err));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {  // commit() never finished: drop the half-written temp file
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t n) {
  RC_CHECK(fd_ >= 0, Errc::internal, "write to '", path_.string(), "' after commit or failure");
  detail::write_all(fd_, data, n, path_);
}

void AtomicFile::commit() {
  RC_CHECK(fd_ >= 0, Errc::internal, "commit of '", path_.string(), "' twice or after failure");
  // fsync before rename: otherwise a crash can leave the new name pointing at empty data.
  if (::fsync(fd_) != 0) {
    const int err = errno;
    RC_THROW(Errc::io, "cannot sync '", path_.string(), "': ", errno_text(err));
  }
  // close() can report deferred write errors (NFS, quotas); a failed close is a failed write.
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    RC_THROW(Errc::io, "cannot close '", path_.string(), "': ", errno_text(err));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    RC_THROW(Errc::io, "cannot rename '", tmp_.string(), "' to '", path_.string(), "': ", std::strerror(err));
  }
  fsync_dir(path_.parent_path());
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

std::string read_file(const std::filesystem::path& path, uint64_t max_bytes) {
  // Regular files only, opened without blocking (a FIFO or /dev/zero is refused).
  return read_regular_file(path, max_bytes);
}

}  // namespace rc::io
