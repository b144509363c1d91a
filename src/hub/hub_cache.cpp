#include "hub/hub_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "core/env.h"
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

}  // namespace

HubSettings HubSettings::from_env() {
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
    std::ifstream in(token_file);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      s.token = trim(ss.str());
    }
  }
  s.offline = truthy(env("HF_HUB_OFFLINE")) || truthy(env("TRANSFORMERS_OFFLINE"));
  if (!env("HF_HUB_ETAG_TIMEOUT").empty())
    s.etag_timeout_ms = long(std::atof(env("HF_HUB_ETAG_TIMEOUT").c_str()) * 1000);
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
  std::ifstream in(root_ / "refs" / revision);
  if (!in) return std::nullopt;
  std::string commit;
  std::getline(in, commit);
  commit = trim(commit);
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

void RepoCache::set_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  check_inside(revision, "revision");
  const fs::path ref = root_ / "refs" / revision;
  std::error_code ec;
  if (auto cur = commit_for(revision); cur && *cur == commit) return;
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
  std::ofstream touch(p, std::ios::app);
}

FileLock::FileLock(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  RC_CHECK(fd_ >= 0, Errc::io, "cannot open lock file '", path.string(), "': ", std::strerror(errno));
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
