#include "hub/blob_writer.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace rc::hub {

struct BlobWriter::Sha {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  Sha() { reset(); }
  ~Sha() { EVP_MD_CTX_free(ctx); }
  void reset() { EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr); }
  void update(const void* p, size_t n) { EVP_DigestUpdate(ctx, p, n); }
  std::string hex() {
    unsigned char md[32];
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx, md, &len);
    static const char* d = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
      out += d[md[i] >> 4];
      out += d[md[i] & 15];
    }
    return out;
  }
};

BlobWriter::BlobWriter(std::filesystem::path path, bool hash)
    : path_(std::move(path)), hash_(hash), sha_(std::make_unique<Sha>()), buf_(new char[kBuffer]) {
  // O_NOFOLLOW: a symlink planted as blobs/<etag>.incomplete would otherwise have the
  // download truncate and overwrite whatever it points at. O_NONBLOCK: a FIFO opens at once
  // (to be refused below) instead of waiting for a writer.
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
  RC_CHECK(fd_ >= 0 || errno != ELOOP, Errc::io, "refusing '", path_.string(),
           "': it is a symbolic link, where a partial download belongs\nHINT: someone else may write to this cache; "
           "remove the link, and keep HF_HUB_CACHE writable by you alone");
  RC_CHECK(fd_ >= 0, Errc::io, "cannot write '", path_.string(), "': ", std::strerror(errno),
           "\nHINT: check HF_HUB_CACHE is writable");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    RC_THROW(Errc::io, "refusing '", path_.string(), "': it is not a regular file, where a partial download belongs",
             "\nHINT: someone else may write to this cache; remove it, and keep HF_HUB_CACHE writable by you alone");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

BlobWriter::~BlobWriter() {
  if (fd_ < 0) return;
  flush();
  ::close(fd_);
}

uint64_t BlobWriter::resume_existing() {
  uint64_t have = 0;
  for (;;) {
    const ssize_t n = ::pread(fd_, buf_.get(), kBuffer, off_t(have));
    if (n < 0 && errno == EINTR) continue;
    RC_CHECK(n >= 0, Errc::io, "cannot read '", path_.string(), "': ", std::strerror(errno));
    if (n == 0) break;
    if (hash_) sha_->update(buf_.get(), size_t(n));
    have += uint64_t(n);
  }
  RC_CHECK(::lseek(fd_, off_t(have), SEEK_SET) == off_t(have), Errc::io, "cannot seek in '", path_.string(), "'");
  return have;
}

bool BlobWriter::append(const char* p, size_t n) {
  if (hash_) sha_->update(p, n);
  if (used_ + n > kBuffer && !flush()) return false;
  if (n >= kBuffer) return write_all(p, n);
  std::memcpy(buf_.get() + used_, p, n);
  used_ += n;
  return true;
}

bool BlobWriter::flush() {
  const bool ok = write_all(buf_.get(), used_);
  used_ = 0;
  return ok;
}

bool BlobWriter::truncate() {
  used_ = 0;
  sha_->reset();
  return ::ftruncate(fd_, 0) == 0 && ::lseek(fd_, 0, SEEK_SET) == 0;
}

bool BlobWriter::sync() { return flush() && ::fsync(fd_) == 0; }

std::string BlobWriter::sha256_hex() { return sha_->hex(); }

bool BlobWriter::write_all(const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      write_errno_ = w < 0 ? errno : ENOSPC;  // write(2) returning 0 for n > 0: no room
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
}

}  // namespace rc::hub
