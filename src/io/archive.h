// tar.gz packaging of exported model folders (`roberta package`, the server's model
// upload), through libarchive. Writing is deterministic and atomic; extraction treats the
// archive as hostile: no absolute paths, no "..", no links, no devices or FIFOs, and
// limits on member size, total size and member count (archive bombs).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace rc::io {

struct ArchiveEntry {
  std::string name;              // path inside the archive: relative, '/'-separated
  std::filesystem::path source;  // regular file to copy in
};

// Writes a gzip-compressed tar (pax) with the entries sorted by name, every member a
// regular file with mode 0644, mtime 0, uid/gid 0 and no owner names, and a gzip header
// without timestamp: the same inputs give the same bytes. Atomic (temp file + rename).
// Throws invalid_argument for bad or duplicate names, not_found/io for sources.
void create_tar_gz(const std::filesystem::path& output, std::span<const ArchiveEntry> entries);

struct ExtractLimits {
  uint64_t max_member_bytes = 4ull << 30;
  uint64_t max_total_bytes = 8ull << 30;
  uint64_t max_members = 10000;
};

// Extracts into `target_dir`, which must not exist (or be an empty folder). Everything is
// written to a temp folder beside it and renamed at the end, so a failure leaves nothing.
// Regular files get mode 0644 and folders 0755 whatever the archive says. Throws
// rc::Error(format) naming the member for any refused entry or exceeded limit.
void extract_tar_gz(const std::filesystem::path& archive, const std::filesystem::path& target_dir,
                    const ExtractLimits& limits = {});

}  // namespace rc::io
