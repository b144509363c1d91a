// Writes a download into its blobs/<etag>.incomplete file, hashing it on the way.
//
// libcurl hands a body over in 16 KiB pieces. Through stdio each piece cost two write(2)
// calls (its buffer is 4 KiB whatever setvbuf asks): ~35,000 calls per 256 MiB. Here pieces
// are gathered in a buffer small enough to stay in the CPU's L2 cache (the bytes are hashed,
// copied and written while still hot) and large enough to make the calls ~1,000.
// Memory stays bounded whatever the blob's size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace rc::hub {

class BlobWriter {
 public:
  static constexpr size_t kBuffer = size_t(256) << 10;

  // Opens (creating) `path`; `hash`: keep a SHA-256 of the whole file's contents. A link,
  // FIFO or device at `path` is refused (io, naming it), never followed or written through:
  // in a shared cache another user may have planted one.
  BlobWriter(std::filesystem::path path, bool hash);
  // Writes what is buffered (an error on its way out keeps every byte received, for the
  // next run to resume from), then closes.
  ~BlobWriter();
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;

  // Hashes what an earlier, interrupted run left and returns its size; later appends go
  // after it. Call once, first.
  uint64_t resume_existing();
  // Takes n bytes. false: a write failed (disk full...).
  bool append(const char* p, size_t n);
  // Everything taken is written. false: a write failed.
  bool flush();
  // Starts over: nothing on disk, nothing buffered, hash reset.
  bool truncate();
  // flush() and fsync(2).
  bool sync();
  // Lower-case hex SHA-256 of the contents taken (and resumed); once, at the end.
  std::string sha256_hex();
  // errno of the last failed write (ENOSPC: the disk is full), 0 when none failed.
  int write_errno() const { return write_errno_; }

 private:
  bool write_all(const char* p, size_t n);

  std::filesystem::path path_;
  int fd_ = -1;
  bool hash_;
  struct Sha;
  std::unique_ptr<Sha> sha_;
  std::unique_ptr<char[]> buf_;
  size_t used_ = 0;
  int write_errno_ = 0;
};

}  // namespace rc::hub
