// The Hugging Face cache, laid out exactly as huggingface_hub lays it out, so that Python
// and roberta.cpp share it both ways:
//   $HF_HUB_CACHE/models--org--name/blobs/<etag>            file contents
//                                  /refs/<revision>         the commit a branch/tag pointed to
//                                  /snapshots/<commit>/<f>  relative symlink -> ../../blobs/<etag>
//                                  /.no_exist/<commit>/<f>  "this file does not exist" marker
//   $HF_HUB_CACHE/.locks/models--org--name/<etag>.lock      flock(2), as Python's filelock
// Settings come from the same variables as huggingface_hub's constants.py.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace rc::hub {

struct HubSettings {
  std::string endpoint;          // HF_ENDPOINT, default https://huggingface.co (no trailing /)
  std::filesystem::path cache;   // HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
  std::string token;             // HF_TOKEN, else the file $HF_TOKEN_PATH / $HF_HOME/token
  bool offline = false;          // HF_HUB_OFFLINE=1 (also TRANSFORMERS_OFFLINE): no HTTP at all
  long etag_timeout_ms = 10000;  // HF_HUB_ETAG_TIMEOUT (seconds), the metadata request's limit
  bool cache_fallback = false;   // internal: offline because the Hub could not be reached
  // Bounds on every file download (docs/hub.md), so that no server can hold a run for good:
  long min_rate_bps = 1024;                          // RC_HUB_MIN_RATE: abort below this many bytes/s
  long min_rate_seconds = 60;                        // RC_HUB_MIN_RATE_SECONDS: ... sustained this long
  long deadline_base_seconds = 600;                  // RC_HUB_DEADLINE_SECONDS: a file gets this long
  uint64_t deadline_rate_bps = uint64_t(256) << 10;  // RC_HUB_DEADLINE_RATE: plus its size at this rate
  // RC_HUB_MAX_UNSIZED_BYTES: a file the Hub gives no size for is read up to this; weights
  // (LFS blobs) must have one.
  uint64_t max_unsized_bytes = uint64_t(64) << 20;
  // Throws rc::Error (format) naming the file when the token file (HF_TOKEN_PATH or
  // $HF_HOME/token) is a FIFO, a device or a folder, or is too large to be a token.
  static HubSettings from_env();
};

// huggingface_hub's validate_repo_id: [org/]name of [A-Za-z0-9_.-], no "--" or "..", <= 96.
bool is_valid_repo_id(const std::string& repo_id);
bool is_commit_hash(const std::string& revision);  // 40 lower-case hex digits
bool is_sha256(const std::string& etag);           // 64 hex digits: an LFS blob's etag
std::string normalize_etag(std::string etag);      // drops W/ and the quotes
// What the Hub sends as a (normalized) etag, and so what may name a blob: a git blob id (40
// lower-case hex digits) or an LFS sha256 (64). Anything else ("." or a 5 KB string) would
// name a folder or a path the file system refuses.
bool is_valid_etag(const std::string& etag);

class RepoCache {
 public:
  RepoCache(const std::filesystem::path& cache, const std::string& repo_id);
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob(const std::string& etag) const { return root_ / "blobs" / etag; }
  std::filesystem::path snapshot(const std::string& commit) const { return root_ / "snapshots" / commit; }
  std::filesystem::path pointer(const std::string& commit, const std::string& file) const;
  std::filesystem::path no_exist(const std::string& commit, const std::string& file) const;
  std::filesystem::path lock_file(const std::string& etag) const;
  // The commit a revision stands for, from refs/ (a commit hash stands for itself). Throws
  // (format, naming it) when refs/<revision> is a FIFO, a device or a folder.
  std::optional<std::string> commit_for(const std::string& revision) const;
  // Whether the cache holds blobs/<etag> as a regular file. Throws (io, naming it) for a
  // link or anything else there: a shared cache's blob must be the file itself.
  bool has_blob(const std::string& etag) const;
  // Whether snapshots/<commit>/<file> is there: a link into this repo's blobs/ (or a regular
  // file, as huggingface_hub writes where links are not supported). A link that leads
  // elsewhere is refused (io, naming it); a dangling one counts as absent.
  bool has_file(const std::string& commit, const std::string& file) const;
  // Records refs/<revision> = commit (atomically) unless revision is that commit.
  void set_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<file> -> relative symlink to blobs/<etag> (replaced atomically).
  void link(const std::string& commit, const std::string& file, const std::string& etag) const;
  void mark_missing(const std::string& commit, const std::string& file) const;

 private:
  std::filesystem::path cache_, root_;
  std::string folder_;
};

// An exclusive flock(2) held for its lifetime: huggingface_hub (filelock) takes the same.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace rc::hub
