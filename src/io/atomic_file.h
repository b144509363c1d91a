// Atomic whole-file writes: write to "<path>.tmp.<pid>.<n>" in the same folder, fsync it,
// rename over the target, fsync the folder. A crash or a full disk leaves either the old
// file or the new one, never a torn one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace rc::io {

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);
// The whole file (core/regular_file.h: regular files only); throws not_found / io, and format
// past max_bytes. A reader of a file with a known kind passes the bound of that kind.
std::string read_file(const std::filesystem::path& path, uint64_t max_bytes = UINT64_MAX);

// For writers that stream: open(), write() any number of times, commit() renames;
// the destructor removes the temp file if commit() was never reached.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* data, size_t n);
  void commit();

 private:
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
};

// fsync a directory so a rename inside it is durable.
void fsync_dir(const std::filesystem::path& dir);

namespace detail {
// write(2) until all n bytes are out (partial writes, EINTR); throws rc::Error(io) naming
// `what` with strerror (ENOSPC gets a hint). Exposed so tests can aim it at /dev/full.
void write_all(int fd, const void* data, size_t n, const std::filesystem::path& what);
}  // namespace detail

}  // namespace rc::io
