#include "hub/hub_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

#include "core/check.h"
#include "core/env.h"
#include "core/regular_file.h"
#include "io/atomic_file.h"

namespace fs = std::filesystem;

namespace rc::hub {
namespace {

std::string env(const char* name) { return env_or_empty(name); }

bool truthy(const std::string& v) {
  std::string s;
  for (char c : v) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s == "1" || s == "ON" || s == "YES" || s == "TRUE";
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

const char* kTamperedHint =
    "\nHINT: someone else may write to this cache; remove it, and keep HF_HUB_CACHE writable by you alone";

// A token is ~40 characters and a ref 40: these bounds only keep /dev/zero out of memory.
constexpr uint64_t kMaxTokenFileBytes = 64 << 10;
constexpr uint64_t kMaxRefFileBytes = 4 << 10;

// The contents of a file named by the environment or found in the cache, or nullopt when
// it does not exist: never a FIFO (open would wait for a writer), a device (/dev/zero never
// ends) or a folder, and never more than max_bytes.
std::optional<std::string> read_small_file(const fs::path& path, uint64_t max_bytes, const char* what) {
  try {
    return read_regular_file(path, max_bytes, what, "a token or a ref is one short line");
  } catch (const Error& e) {
    if (e.errc() == Errc::not_found) return std::nullopt;
    throw;
  }
}

}  // namespace

HubSettings HubSettings::from_env() {
  constexpr const char* kSettingHint = "see docs/hub.md";
  HubSettings s;
  s.endpoint = env("HF_ENDPOINT").empty() ? "https://huggingface.co" : env("HF_ENDPOINT");
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  fs::path home;
  if (!env("HF_HOME").empty())
    home = env("HF_HOME");
  else if (!env("XDG_CACHE_HOME").empty())
    home = fs::path(env("XDG_CACHE_HOME")) / "huggingface";
  else
    home = fs::path(env("HOME").empty() ? "/root" : env("HOME")) / ".cache" / "huggingface";
  if (!env("HF_HUB_CACHE").empty())
    s.cache = env("HF_HUB_CACHE");
  else if (!env("HUGGINGFACE_HUB_CACHE").empty())
    s.cache = env("HUGGINGFACE_HUB_CACHE");  // legacy name
  else
    s.cache = home / "hub";
  s.token = trim(env("HF_TOKEN"));
  if (s.token.empty()) s.token = trim(env("HUGGING_FACE_HUB_TOKEN"));  // legacy name
  if (s.token.empty()) {
    const fs::path token_file = env("HF_TOKEN_PATH").empty() ? home / "token" : fs::path(env("HF_TOKEN_PATH"));
    if (auto text = read_small_file(token_file, kMaxTokenFileBytes, "HF token file")) s.token = trim(*text);
  }
  s.offline = truthy(env("HF_HUB_OFFLINE")) || truthy(env("TRANSFORMERS_OFFLINE"));
  // As huggingface_hub (`_as_int(...) or DEFAULT_ETAG_TIMEOUT`): 0 or garbage is the default,
  // never "no limit" (libcurl's 0), and an hour at most.
  if (const double secs = std::atof(env("HF_HUB_ETAG_TIMEOUT").c_str()); secs > 0)
    s.etag_timeout_ms = long(std::min(secs, 3600.0) * 1000);
  s.min_rate_bps = positive_env("RC_HUB_MIN_RATE", s.min_rate_bps, kSettingHint);
  s.min_rate_seconds = positive_env("RC_HUB_MIN_RATE_SECONDS", s.min_rate_seconds, kSettingHint);
  s.deadline_base_seconds = positive_env("RC_HUB_DEADLINE_SECONDS", s.deadline_base_seconds, kSettingHint);
  s.deadline_rate_bps = positive_env("RC_HUB_DEADLINE_RATE", s.deadline_rate_bps, kSettingHint);
  s.max_unsized_bytes = positive_env("RC_HUB_MAX_UNSIZED_BYTES", s.max_unsized_bytes, kSettingHint);
  return s;
}

bool is_valid_repo_id(const std::string& id) {
  if (id.empty() || id.size() > 96) return false;
  if (id.find("--") != std::string::npos || id.find("..") != std::string::npos) return false;
  int slashes = 0;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (c == '/') {
      if (++slashes > 1 || i == 0 || i + 1 == id.size()) return false;
      continue;
    }
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  // Each part must start and end with a word character (the \b of huggingface_hub's regex).
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  size_t start = 0;
  while (start <= id.size()) {
    size_t end = id.find('/', start);
    if (end == std::string::npos) end = id.size();
    if (end == start || !word(id[start]) || !word(id[end - 1])) return false;
    start = end + 1;
  }
  return true;
}

static bool all_hex(const std::string& s, size_t n, bool lower_only) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f') ||
          (!lower_only && c >= 'A' && c <= 'F')))
      return false;
  return true;
}
bool is_commit_hash(const std::string& r) { return all_hex(r, 40, true); }
bool is_sha256(const std::string& e) { return all_hex(e, 64, false); }
bool is_valid_etag(const std::string& e) { return all_hex(e, 40, true) || all_hex(e, 64, true); }

std::string normalize_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  while (!etag.empty() && etag.front() == '"') etag.erase(etag.begin());
  while (!etag.empty() && etag.back() == '"') etag.pop_back();
  return etag;
}

RepoCache::RepoCache(const fs::path& cache, const std::string& repo_id) : cache_(cache) {
  folder_ = "models--";
  for (char c : repo_id) folder_ += c == '/' ? std::string("--") : std::string(1, c);
  root_ = cache_ / folder_;
}

static void check_inside(const std::string& name, const std::string& what) {
  // A repo's file names come from the user or the server: keep them inside the snapshot.
  RC_CHECK(!name.empty() && name[0] != '/' && name.find("..") == std::string::npos, Errc::invalid_argument, "refusing ",
           what, " name '", name, "'");
}

fs::path RepoCache::pointer(const std::string& commit, const std::string& file) const {
  check_inside(commit, "revision");
  check_inside(file, "file");
  return snapshot(commit) / file;
}

fs::path RepoCache::no_exist(const std::string& commit, const std::string& file) const {
  check_inside(commit, "revision");
  check_inside(file, "file");
  return root_ / ".no_exist" / commit / file;
}

fs::path RepoCache::lock_file(const std::string& etag) const { return cache_ / ".locks" / folder_ / (etag + ".lock"); }

std::optional<std::string> RepoCache::commit_for(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  if (revision.find("..") != std::string::npos) return std::nullopt;
  const auto text = read_small_file(root_ / "refs" / revision, kMaxRefFileBytes, "cache ref");
  if (!text) return std::nullopt;
  const std::string commit = trim(text->substr(0, text->find('\n')));
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

bool RepoCache::has_blob(const std::string& etag) const {
  const fs::path p = blob(etag);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  if (st.type() == fs::file_type::not_found) return false;
  RC_CHECK(!ec, Errc::io, "cannot look at '", p.string(), "': ", ec.message());
  RC_CHECK(st.type() == fs::file_type::regular, Errc::io, "refusing '", p.string(),
           "': ", st.type() == fs::file_type::symlink ? "it is a symbolic link" : "it is not a regular file",
           ", where a downloaded blob belongs", kTamperedHint);
  return true;
}

bool RepoCache::has_file(const std::string& commit, const std::string& file) const {
  const fs::path p = pointer(commit, file);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  if (st.type() == fs::file_type::not_found) return false;
  RC_CHECK(!ec, Errc::io, "cannot look at '", p.string(), "': ", ec.message());
  if (st.type() == fs::file_type::regular) return true;
  RC_CHECK(st.type() == fs::file_type::symlink, Errc::io, "refusing '", p.string(),
           "': it is neither a file nor a link into the cache's blobs", kTamperedHint);
  // huggingface_hub links relatively (or absolutely where it must): either way the target,
  // resolved, is a regular file directly in this repo's blobs folder.
  const fs::path target = fs::canonical(p, ec);
  if (ec) return false;  // dangling: the blob is gone, download it again
  const fs::path blobs = fs::canonical(root_ / "blobs", ec);
  RC_CHECK(!ec && target.parent_path() == blobs && fs::is_regular_file(target, ec), Errc::io, "refusing '", p.string(),
           "': it links to '", target.string(), "', outside the model's blobs folder", kTamperedHint);
  return true;
}

void RepoCache::set_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  check_inside(revision, "revision");
  const fs::path ref = root_ / "refs" / revision;
  std::error_code ec;
  try {
    if (auto cur = commit_for(revision); cur && *cur == commit) return;
  } catch (const Error&) {  // a FIFO or device planted as the ref: replaced below
  }
  fs::create_directories(ref.parent_path(), ec);
  io::write_file_atomic(ref, commit);  // huggingface_hub writes the bare hash, no newline
}

void RepoCache::link(const std::string& commit, const std::string& file, const std::string& etag) const {
  const fs::path ptr = pointer(commit, file);
  std::error_code ec;
  fs::create_directories(ptr.parent_path(), ec);
  // Relative, as huggingface_hub's _create_symlink (os.path.relpath): the cache can move.
  const fs::path target = fs::absolute(blob(etag))
                              .lexically_normal()
                              .lexically_relative(fs::absolute(ptr.parent_path()).lexically_normal());
  static std::atomic<unsigned> counter{0};
  const fs::path tmp =
      ptr.parent_path() / (".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)));
  fs::create_symlink(target, tmp, ec);
  RC_CHECK(!ec, Errc::io, "cannot create symlink '", tmp.string(), "': ", ec.message());
  fs::rename(tmp, ptr, ec);
  if (ec) {
    fs::remove(tmp);
    RC_THROW(Errc::io, "cannot create '", ptr.string(), "': ", ec.message());
  }
}

void RepoCache::mark_missing(const std::string& commit, const std::string& file) const {
  const fs::path p = no_exist(commit, file);
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  // An empty marker; a link or FIFO planted there is left alone (the marker only saves a
  // question), never followed or waited on.
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
  if (fd >= 0) ::close(fd);
}

FileLock::FileLock(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
  RC_CHECK(fd_ >= 0, Errc::io, "cannot open lock file '", path.string(),
           "': ", errno == ELOOP ? "it is a symbolic link" : std::strerror(errno), kTamperedHint);
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd_);
    RC_THROW(Errc::io, "cannot lock '", path.string(), "': ", std::strerror(err));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace rc::hub
