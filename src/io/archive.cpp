// tar.gz create/extract with libarchive (see archive.h). Sizes are counted from the bytes
// actually decompressed, never from headers, so a lying header cannot slip past a limit.
#include "io/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <set>
#include <vector>

#include "core/check.h"
#include "io/atomic_file.h"

namespace rc::io {
namespace {

struct ReadCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteCloser {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct EntryCloser {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

struct OwnedFd {
  int fd = -1;
  explicit OwnedFd(int f) : fd(f) {}
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
};

// Splits a member name into components, refusing anything that could leave the target:
// absolute paths, "..", empty names. "." and empty components ("a//b", trailing "/") are
// dropped. Returns the cleaned relative path.
std::string safe_relative(std::string_view name, bool& ok) {
  ok = false;
  if (name.empty() || name.front() == '/') return {};
  std::string out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part == "..") return {};
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    start = end + 1;
  }
  ok = !out.empty();
  return out;
}

// libarchive hands the compressed bytes to this sink; AtomicFile stores them. An error
// (disk full) cannot cross libarchive's C frames, so it is parked and rethrown after.
struct Sink {
  AtomicFile* file;
  std::exception_ptr error;
};
la_ssize_t write_cb(archive*, void* client, const void* buf, size_t n) {
  auto* sink = static_cast<Sink*>(client);
  try {
    sink->file->write(buf, n);
    return la_ssize_t(n);
  } catch (...) {
    sink->error = std::current_exception();
    return -1;
  }
}

}  // namespace

void create_tar_gz(const std::filesystem::path& output, std::span<const ArchiveEntry> entries) {
  const std::string out_name = output.string();
  std::vector<const ArchiveEntry*> sorted;
  std::set<std::string> names;
  for (const ArchiveEntry& e : entries) {
    bool ok = false;
    const std::string clean = safe_relative(e.name, ok);
    RC_CHECK(ok && clean == e.name, Errc::invalid_argument, "'", out_name, "': archive name '", e.name,
             "' must be relative, '/'-separated, without '.', '..' or empty parts");
    RC_CHECK(names.insert(e.name).second, Errc::invalid_argument, "'", out_name, "': archive name '", e.name,
             "' given twice");
    sorted.push_back(&e);
  }
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });

  AtomicFile file(output);
  Sink sink{&file, nullptr};
  std::unique_ptr<archive, WriteCloser> a(archive_write_new());
  RC_CHECK(a != nullptr, Errc::resource_exhausted, "archive_write_new failed");
  auto why = [&] {
    if (sink.error) std::rethrow_exception(sink.error);
    return std::string(archive_error_string(a.get()) ? archive_error_string(a.get()) : "unknown error");
  };
  auto check = [&](int rc, const char* what) {
    if (rc != ARCHIVE_OK) RC_THROW(Errc::io, "'", out_name, "': ", what, ": ", why());
  };
  check(archive_write_add_filter_gzip(a.get()), "gzip filter");
  // No timestamp in the gzip header: same inputs, same bytes.
  check(archive_write_set_filter_option(a.get(), "gzip", "timestamp", nullptr), "gzip option");
  check(archive_write_set_format_pax_restricted(a.get()), "tar format");
  // Do not pad the compressed stream to a 10 KiB tape block.
  archive_write_set_bytes_in_last_block(a.get(), 1);
  check(archive_write_open(a.get(), &sink, nullptr, write_cb, nullptr), "open");

  std::vector<char> buf(1 << 16);
  for (const ArchiveEntry* e : sorted) {
    const std::string src = e->source.string();
    OwnedFd fd(::open(e->source.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.fd < 0) {
      const int err = errno;
      RC_CHECK(err != ENOENT, Errc::not_found, "cannot open '", src, "' for archive member '", e->name, "'");
      RC_THROW(Errc::io, "cannot open '", src, "': ", std::strerror(err));
    }
    struct stat st {};
    RC_CHECK(::fstat(fd.fd, &st) == 0 && S_ISREG(st.st_mode), Errc::invalid_argument, "'", src, "' (archive member '",
             e->name, "') is not a regular file");
    std::unique_ptr<archive_entry, EntryCloser> ent(archive_entry_new());
    archive_entry_set_pathname(ent.get(), e->name.c_str());
    archive_entry_set_filetype(ent.get(), AE_IFREG);
    archive_entry_set_perm(ent.get(), 0644);
    archive_entry_set_size(ent.get(), st.st_size);
    archive_entry_set_mtime(ent.get(), 0, 0);
    archive_entry_set_uid(ent.get(), 0);
    archive_entry_set_gid(ent.get(), 0);
    check(archive_write_header(a.get(), ent.get()), "write header");
    // Exactly st_size bytes: a file that changes size while we read is an error, not a
    // silently padded or truncated member.
    int64_t left = st.st_size;
    while (left > 0) {
      const ssize_t got = ::read(fd.fd, buf.data(), size_t(std::min<int64_t>(left, int64_t(buf.size()))));
      if (got < 0 && errno == EINTR) continue;
      RC_CHECK(got > 0, Errc::io, "cannot read '", src,
               "': ", got < 0 ? std::strerror(errno) : "file shrank while archiving");
      const la_ssize_t put = archive_write_data(a.get(), buf.data(), size_t(got));
      if (put != got) RC_THROW(Errc::io, "'", out_name, "': writing member '", e->name, "' failed: ", why());
      left -= got;
    }
  }
  check(archive_write_close(a.get()), "close");
  file.commit();
}

namespace {

std::filesystem::path temp_dir_beside(const std::filesystem::path& target) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  // Built with append(): GCC 12 warns falsely (-Wrestrict) on "." + std::string.
  std::string name = ".";
  name.append(target.filename().string()).append(".tmp.").append(std::to_string(::getpid()));
  name.append(".").append(std::to_string(counter.fetch_add(1)));
  return parent / name;
}

// Removes the temp folder on any exit but success.
struct TempDirGuard {
  std::filesystem::path dir;
  bool keep = false;
  ~TempDirGuard() {
    if (!keep) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);  // never follows links; we made none anyway
    }
  }
};

// A libarchive reader for tar (ustar/pax/gnu), gzip or uncompressed: nothing else is ours
// to accept.
std::unique_ptr<archive, ReadCloser> open_tar_reader(const std::filesystem::path& archive_path) {
  std::unique_ptr<archive, ReadCloser> a(archive_read_new());
  RC_CHECK(a != nullptr, Errc::resource_exhausted, "archive_read_new failed");
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_none(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK) {
    const char* err = archive_error_string(a.get());
    RC_THROW(Errc::format, "'", archive_path.string(), "' is not a readable tar.gz: ", err ? err : "unknown error");
  }
  return a;
}

const char* special_kind(mode_t type) {
  return type == AE_IFCHR    ? "character device"
         : type == AE_IFBLK  ? "block device"
         : type == AE_IFIFO  ? "FIFO"
         : type == AE_IFSOCK ? "socket"
         : type == AE_IFLNK  ? "link"
                             : "special file";
}

// One walk over the member headers, shared by both passes of extract_tar_gz so that each
// refuses a corrupt header, one member too many, a name that could leave the target, a
// link, a special file and an over-limit declared size with the same words.
class MemberWalk {
 public:
  MemberWalk(const std::filesystem::path& archive_path, const ExtractLimits& limits)
      : file_(archive_path.string()), limits_(limits), a_(open_tar_reader(archive_path)) {}

  // Reads and checks the next header; false at the end of the archive.
  bool next() {
    const int rc = archive_read_next_header(a_.get(), &entry_);
    if (rc == ARCHIVE_EOF) return false;
    RC_CHECK(rc == ARCHIVE_OK || rc == ARCHIVE_WARN, Errc::format, "'", file_, "': corrupt archive after ", members_,
             " members: ", why());
    RC_CHECK(++members_ <= limits_.max_members, Errc::format, "'", file_, "': more than ", limits_.max_members,
             " members (archive bomb?)");
    const char* raw = archive_entry_pathname(entry_);
    const std::string name = raw ? raw : "";
    where = "'" + file_ + "': member '" + name + "'";
    type = archive_entry_filetype(entry_);
    bool ok = false;
    rel = safe_relative(name, ok);
    // "./" is what `tar -C dir -czf x.tgz .` puts first: the target itself, nothing to do.
    dot_folder =
        !ok && type == AE_IFDIR && !name.empty() && name.front() != '/' && name.find("..") == std::string::npos;
    RC_CHECK(ok || dot_folder, Errc::format, where, " is absolute, empty or contains '..'; refusing to extract");
    RC_CHECK(archive_entry_hardlink(entry_) == nullptr && archive_entry_symlink(entry_) == nullptr, Errc::format, where,
             " is a link; links are refused");
    RC_CHECK(type == AE_IFREG || type == AE_IFDIR, Errc::format, where, " is a ", special_kind(type),
             "; only regular files and folders are extracted");
    declared = 0;
    if (type == AE_IFREG && archive_entry_size_is_set(entry_)) {
      declared = uint64_t(std::max<la_int64_t>(0, archive_entry_size(entry_)));
      RC_CHECK(declared <= limits_.max_member_bytes, Errc::format, where, " is ", declared, " bytes, over the ",
               limits_.max_member_bytes, "-byte limit");
    }
    return true;
  }

  archive* reader() const { return a_.get(); }
  std::string why() const {
    const char* err = archive_error_string(a_.get());
    return err ? err : "unknown error";
  }

  // The member next() last read.
  std::string where;        // "'FILE': member 'NAME'", for errors
  std::string rel;          // its cleaned relative path (empty for a dot folder)
  mode_t type = 0;          // AE_IFREG or AE_IFDIR
  bool dot_folder = false;  // "." or "./": skipped
  uint64_t declared = 0;    // the header's size of a regular file (0 when not given)

 private:
  std::string file_;
  ExtractLimits limits_;
  std::unique_ptr<archive, ReadCloser> a_;
  archive_entry* entry_ = nullptr;
  uint64_t members_ = 0;
};

// The checks that need no data: count, names, links, types, declared sizes.
void prescan_tar_gz(const std::filesystem::path& archive_path, const ExtractLimits& limits) {
  MemberWalk m(archive_path, limits);
  uint64_t declared_total = 0;
  while (m.next()) {
    declared_total += m.declared;
    RC_CHECK(declared_total <= limits.max_total_bytes, Errc::format, m.where, ": archive expands past the ",
             limits.max_total_bytes, "-byte total limit (archive bomb?)");
    // Skipping still decompresses (gzip has no index), but writes nothing.
    RC_CHECK(archive_read_data_skip(m.reader()) == ARCHIVE_OK, Errc::format, m.where, ": corrupt data: ", m.why());
  }
}

}  // namespace

void extract_tar_gz(const std::filesystem::path& archive_path, const std::filesystem::path& target_dir,
                    const ExtractLimits& limits) {
  const std::string file = archive_path.string();
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(target_dir, ec))) {
    RC_CHECK(std::filesystem::is_directory(std::filesystem::symlink_status(target_dir)) &&
                 std::filesystem::is_empty(target_dir),
             Errc::invalid_argument, "cannot extract '", file, "' into '", target_dir.string(),
             "': it exists and is not an empty folder");
  }
  RC_CHECK(std::filesystem::exists(archive_path, ec), Errc::not_found, "cannot open '", file, "': no such file");

  // Pass 1, headers only: the member count, every name, type and declared size are checked
  // before anything is written, so a hostile archive (100k members) is refused in the time
  // it takes to decompress it, not after writing and syncing thousands of files.
  prescan_tar_gz(archive_path, limits);

  // Pass 2 checks every header again (the file may have changed since) and counts the bytes
  // actually decompressed.
  MemberWalk m(archive_path, limits);
  TempDirGuard tmp{temp_dir_beside(target_dir)};
  RC_CHECK(::mkdir(tmp.dir.c_str(), 0755) == 0, Errc::io, "cannot create '", tmp.dir.string(),
           "': ", std::strerror(errno));

  uint64_t total = 0;
  std::vector<char> buf(1 << 16);
  while (m.next()) {
    if (m.dot_folder) continue;
    const std::string& where = m.where;
    const std::filesystem::path dest = tmp.dir / m.rel;

    // Parent folders may be implied by a member's path.
    std::filesystem::create_directories(dest.parent_path(), ec);
    RC_CHECK(!ec, Errc::format, where, ": cannot create its folder: ", ec.message());

    if (m.type == AE_IFDIR) {
      if (::mkdir(dest.c_str(), 0755) != 0) {
        RC_CHECK(errno == EEXIST && std::filesystem::is_directory(std::filesystem::symlink_status(dest)), Errc::format,
                 where, ": cannot create folder: ", std::strerror(errno));
      }
      continue;
    }
    // O_EXCL: a repeated member name is an error, not a silent overwrite. O_NOFOLLOW for
    // good measure, though no link can exist under the temp folder.
    OwnedFd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    RC_CHECK(out.fd >= 0, Errc::format, where, ": cannot create: ", std::strerror(errno),
             errno == EEXIST ? " (the name appears twice)" : "");
    uint64_t member = 0;
    for (;;) {
      const la_ssize_t got = archive_read_data(m.reader(), buf.data(), buf.size());
      if (got == 0) break;
      RC_CHECK(got > 0, Errc::format, where, ": corrupt data: ", m.why());
      member += uint64_t(got);
      total += uint64_t(got);
      RC_CHECK(member <= limits.max_member_bytes, Errc::format, where, " expands past the ", limits.max_member_bytes,
               "-byte member limit (archive bomb?)");
      RC_CHECK(total <= limits.max_total_bytes, Errc::format, where, ": archive expands past the ",
               limits.max_total_bytes, "-byte total limit (archive bomb?)");
      detail::write_all(out.fd, buf.data(), size_t(got), dest);
    }
    RC_CHECK(::fsync(out.fd) == 0, Errc::io, "cannot sync '", dest.string(), "': ", std::strerror(errno));
  }

  // rename(2) replaces an empty folder atomically and fails on a non-empty one.
  if (::rename(tmp.dir.c_str(), target_dir.c_str()) != 0) {
    const int err = errno;
    RC_THROW(Errc::io, "cannot move extracted files to '", target_dir.string(), "': ", std::strerror(err));
  }
  tmp.keep = true;
  fsync_dir(target_dir.parent_path());
}

}  // namespace rc::io
