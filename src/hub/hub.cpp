// hf_hub_download and a model-sized snapshot_download (see hub.h). Mirrors
// huggingface_hub/file_download.py: _get_metadata_or_catch_error (HEAD, relative redirects
// only, X-Repo-Commit, X-Linked-Etag/ETag, X-Linked-Size/Content-Length, .no_exist markers),
// the fall back to the cache when the Hub cannot be asked, and _download_to_tmp_and_move
// (.incomplete resumed with Range under a per-blob lock).
#include "hub/hub.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "core/check.h"
#include "hub/blob_writer.h"
#include "net/http.h"
#include "net/progress.h"
#include "roberta/log.h"

namespace fs = std::filesystem;

namespace rc::hub {
namespace {

thread_local bool t_fell_back = false;  // the last download_file answered from the cache after a failed HEAD

std::string file_url(const HubSettings& s, const std::string& repo, const std::string& rev, const std::string& file) {
  return s.endpoint + "/" + repo + "/resolve/" + net::url_encode(rev, false) + "/" + net::url_encode(file, true);
}

const char* kTokenHint = "for a private or gated model set HF_TOKEN (or log in once so that $HF_HOME/token exists)";

[[noreturn]] void throw_http(const HubSettings& s, const net::Response& r, const std::string& repo,
                             const std::string& rev, const std::string& file) {
  const std::string code = r.header("x-error-code");
  const std::string status = std::to_string(r.status);
  if (code == "GatedRepo")
    RC_THROW(Errc::not_found, "model '", repo, "' is gated (HTTP ", status, ")\nHINT: accept its terms on ", s.endpoint,
             "/", repo, " and set HF_TOKEN to a token of that account");
  if (code == "RepoNotFound" || ((r.status == 401 || r.status == 404) && code.empty() && file == "config.json"))
    RC_THROW(Errc::not_found, "no model '", repo, "' at ", s.endpoint, " (HTTP ", status, ")\nHINT: check the id; ",
             s.token.empty() ? kTokenHint : "HF_TOKEN is set: does that account have access?");
  if (r.status == 401 || r.status == 403)
    RC_THROW(Errc::not_found, "access to model '", repo, "' denied (HTTP ", status,
             ")\nHINT: ", s.token.empty() ? kTokenHint : "HF_TOKEN is set but has no access to this model");
  if (code == "RevisionNotFound")
    RC_THROW(Errc::not_found, "model '", repo, "' has no revision '", rev,
             "'\nHINT: --revision takes a branch, a tag or a full commit sha");
  if (code == "EntryNotFound" || r.status == 404)
    RC_THROW(Errc::not_found, "model '", repo, "' has no file '", file, "' at revision '", rev, "'");
  RC_THROW(Errc::io, "HTTP ", status, " from ", r.url, " for ", repo, "/", file,
           "\nHINT: the Hub may be down; run again, or use HF_HUB_OFFLINE=1 with a cached copy");
}

struct Head {
  net::Response resp;
  bool unreachable = false;  // transport failure or 5xx after every retry
};

Head head_with_retries(const HubSettings& s, const std::string& url) {
  net::Request req;
  req.method = "HEAD";
  req.url = url;
  req.follow_relative_only = true;
  req.total_timeout_ms = s.etag_timeout_ms;
  req.connect_timeout_ms = std::min(s.etag_timeout_ms, 10000L);
  req.headers.push_back({"Accept-Encoding", "identity"});  // the real size, as huggingface_hub asks
  if (!s.token.empty()) req.headers.push_back({"Authorization", "Bearer " + s.token});
  const net::RetryPolicy policy = net::RetryPolicy::from_env();
  Head h;
  for (int attempt = 0; attempt < policy.attempts; ++attempt) {
    h.resp = net::perform(req);
    const bool retry = h.resp.status == 0 ? h.resp.transport_retryable : net::is_retryable_status(h.resp.status);
    if (!retry) break;
    if (attempt + 1 < policy.attempts) {
      log::warn("hub", "HEAD ", url, ": ", h.resp.status ? "HTTP " + std::to_string(h.resp.status) : h.resp.error,
                "; retrying (", attempt + 1, "/", policy.attempts - 1, ")");
      net::backoff_sleep(policy, attempt);
    }
  }
  h.unreachable = h.resp.status == 0 || net::is_retryable_status(h.resp.status);
  return h;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// RC_HUB_FSYNC=1: fsync each blob before it is renamed into the cache (durable across a power
// loss, at the disk's write speed). Off by default, as in huggingface_hub and curl -o: the
// rename alone makes a blob appear whole to every other process, while the fsync waits for
// the disk: 0.14 to 1.7 s for 262 MiB on the bench machine (its disk writes ~130 MB/s when
// the host is busy), most of the gap that made downloads 0.28x curl.
bool fsync_blobs() {
  const char* v = std::getenv("RC_HUB_FSYNC");
  return v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0 || std::strcmp(v, "TRUE") == 0);
}

bool is_weights(const std::string& file) { return file == "model.safetensors" || file == "pytorch_model.bin"; }

// Free bytes for an unprivileged writer on the file system holding `dir`; nullopt when
// statvfs cannot tell (the download then goes ahead, bounded by its announced size).
std::optional<uint64_t> free_bytes(const fs::path& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return std::nullopt;
  return uint64_t(v.f_bavail) * uint64_t(v.f_frsize);
}

// _download_to_tmp_and_move + http_get: GET (resumed with Range) into blob.incomplete,
// checked, then renamed to the blob. Caller holds the blob's lock. Bounded three ways: by
// size (the announced one, else max_unsized_bytes; room for it checked first), by rate
// (min_rate_bps sustained over min_rate_seconds) and by time (a deadline that grows with
// the size, across every retry).
uint64_t download_blob(const HubSettings& s, const std::string& url, bool send_token, std::optional<uint64_t> announced,
                       const std::string& etag, const fs::path& blob, const std::string& label) {
  using Clock = std::chrono::steady_clock;
  const fs::path incomplete = blob.string() + ".incomplete";
  std::error_code ec;
  fs::create_directories(blob.parent_path(), ec);
  const bool check_sha = is_sha256(etag);
  const uint64_t limit = announced ? *announced : s.max_unsized_bytes;
  const uint64_t expected_size = announced.value_or(0);  // 0 here: not announced (an empty file is announced as 0)
  auto f = std::make_unique<BlobWriter>(incomplete, check_sha);
  // A partial file with nothing in it is worth nothing to the next run: every failure removes it.
  uint64_t have = 0;
  bool keep_partial = false;
  struct DropEmpty {
    const fs::path& path;
    const uint64_t& have;
    const bool& keep;
    std::unique_ptr<BlobWriter>& writer;
    ~DropEmpty() {
      if (keep || have > 0) return;
      writer.reset();
      std::error_code e;
      fs::remove(path, e);
    }
  } drop_empty{incomplete, have, keep_partial, f};
  // What an earlier, interrupted run left: hashed again so the final check covers it.
  have = f->resume_existing();
  if (have > limit) {  // not ours to resume: start over
    RC_CHECK(f->truncate(), Errc::io, "cannot truncate '", incomplete.string(), "'");
    have = 0;
  }
  if (announced) {
    const auto room = free_bytes(blob.parent_path());
    RC_CHECK(!room || *announced - have <= *room, Errc::io, "not enough free space for ", label, ": it needs ",
             net::human_bytes(*announced - have), " and ", s.cache.string(), " has ",
             net::human_bytes(room.value_or(0)),
             " free; nothing was downloaded\nHINT: free space there, or point "
             "HF_HUB_CACHE at a larger disk");
  }
  const auto started = Clock::now();
  // At most 30 days: a huge size over a tiny rate must not overflow the clock's nanoseconds.
  const uint64_t allowed_s = std::min<uint64_t>(
      uint64_t(s.deadline_base_seconds) + (limit - have) / std::max<uint64_t>(1, s.deadline_rate_bps), 30 * 86400);
  const auto allowed = std::chrono::seconds(allowed_s);
  const auto deadline = started + allowed;
  auto past_deadline = [&] {
    const long secs = long(std::chrono::duration_cast<std::chrono::seconds>(allowed).count());
    RC_THROW(Errc::io, "download of ", label, " took longer than the ", secs, " s allowed for ",
             net::human_bytes(limit), " (", s.deadline_base_seconds, " s + the size at ",
             net::human_bytes(s.deadline_rate_bps), "/s)",
             have ? "; run again: it resumes from " + incomplete.string() : std::string(),
             "\nHINT: on a slow link raise RC_HUB_DEADLINE_SECONDS or lower RC_HUB_DEADLINE_RATE");
  };
  net::Progress progress(label, expected_size, have);
  const uint64_t resumed_from = have;
  bool write_failed = false, too_long = false;
  const net::RetryPolicy policy = net::RetryPolicy::from_env();
  for (int attempt = 0;; ++attempt) {
    if (announced && have == expected_size) break;  // nothing left (a complete .incomplete)
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) past_deadline();
    net::Request req;
    req.url = url;
    req.low_speed_limit_bps = s.min_rate_bps;
    req.low_speed_timeout_s = s.min_rate_seconds;
    req.total_timeout_ms = long(left);
    if (send_token && !s.token.empty()) req.headers.push_back({"Authorization", "Bearer " + s.token});
    if (have > 0) req.headers.push_back({"Range", "bytes=" + std::to_string(have) + "-"});
    const uint64_t asked_from = have;
    req.on_answer = [&](long status, const std::map<std::string, std::string>&) {
      if (status == 206 || asked_from == 0) return true;
      // 200 to a Range request: the whole file is coming again.
      if (!f->truncate()) return false;
      have = 0;
      return true;
    };
    const net::Response r = net::perform(req, [&](const char* p, size_t n) {
      if (have + n > limit) {  // more than announced (or allowed): stop, do not fill the disk
        too_long = true;
        return false;
      }
      if (!f->append(p, n)) {
        write_failed = true;
        return false;
      }
      have += n;
      progress.advance(n);
      return true;
    });
    write_failed = !f->flush() || write_failed;  // on disk before a resume or an error
    if (write_failed) {
      const int err = f->write_errno();
      if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
        // A full disk: what was written only takes the room the user needs to recover.
        f.reset();
        fs::remove(incomplete, ec);
        RC_THROW(Errc::io, "cannot write '", incomplete.string(), "': ", std::strerror(err), " after ",
                 net::human_bytes(have), " of ", label, "; the partial download was removed\nHINT: free space under ",
                 s.cache.string(), " or point HF_HUB_CACHE elsewhere");
      }
      RC_THROW(Errc::io, "cannot write '", incomplete.string(), "': ", err ? std::strerror(err) : "write failed",
               "\nHINT: check that ", s.cache.string(), " is writable and has room");
    }
    if (too_long) {
      f.reset();
      fs::remove(incomplete, ec);
      if (announced)
        RC_THROW(Errc::format, label, ": the server sent more than the ", expected_size,
                 " bytes it announced; nothing was cached\nHINT: check HF_ENDPOINT and any proxy in between");
      RC_THROW(Errc::format, label, ": the server announced no size and sent more than ", net::human_bytes(limit),
               ", the most read without one; nothing was cached\nHINT: check HF_ENDPOINT and any proxy in between");
    }
    if (r.status >= 200 && r.status < 300 && r.error.empty()) break;
    if (r.status == 416 && announced && have == expected_size) break;
    if (Clock::now() + std::chrono::milliseconds(100) >= deadline) past_deadline();  // curl's timer ran out
    const bool retry = r.status == 0 ? r.transport_retryable : net::is_retryable_status(r.status);
    if (!retry || attempt + 1 >= policy.attempts) {
      const std::string resume = have ? "\nHINT: run again: it resumes from " + incomplete.string()
                                      : "\nHINT: check HF_ENDPOINT and the network";
      if (r.status == 0) RC_THROW(Errc::io, "download of ", label, " failed: ", r.error, resume);
      RC_THROW(Errc::io, "download of ", label, " failed: HTTP ", r.status, " from ", r.url, resume);
    }
    log::warn("hub", label, ": ", r.status ? "HTTP " + std::to_string(r.status) : r.error, " at ",
              net::human_bytes(have), "; resuming (", attempt + 1, "/", policy.attempts - 1, ")");
    net::backoff_sleep(policy, attempt);
  }
  if (fsync_blobs()) RC_CHECK(f->sync(), Errc::io, "cannot write '", incomplete.string(), "' (disk full?)");
  const std::string got_sha = check_sha ? f->sha256_hex() : "";
  f.reset();
  progress.finish();
  keep_partial = true;  // from here on, the partial is either renamed or removed explicitly
  if (announced && have != expected_size) {
    fs::remove(incomplete, ec);
    RC_THROW(Errc::format, label, ": got ", have, " bytes, the Hub announced ", expected_size,
             "; nothing was cached\nHINT: run again; a proxy may be truncating downloads");
  }
  if (check_sha) {
    const std::string& got = got_sha;
    if (got != lower(etag)) {
      fs::remove(incomplete, ec);
      RC_THROW(Errc::format, label, ": sha256 ", got, " does not match the Hub's ", lower(etag),
               "; nothing was cached\nHINT: run again; if it persists, the server or a proxy is corrupting the file");
    }
  }
  fs::rename(incomplete, blob, ec);
  RC_CHECK(!ec, Errc::io, "cannot move '", incomplete.string(), "' to '", blob.string(), "': ", ec.message());
  return have - resumed_from;
}

[[noreturn]] void throw_not_cached(const HubSettings& s, const std::string& repo, const std::string& rev,
                                   const std::string& file, const Head* head) {
  if (s.cache_fallback)
    RC_THROW(Errc::io, "the Hub could not be reached and '", file, "' of model '", repo, "' at '", rev,
             "' is not cached\nHINT: check the network and HTTPS_PROXY, then run again");
  if (s.offline || !head)
    RC_THROW(Errc::not_found, "HF_HUB_OFFLINE is set and '", file, "' of model '", repo, "' at '", rev,
             "' is not in the cache ", s.cache.string(),
             "\nHINT: run once online (without HF_HUB_OFFLINE) to fill the cache, or set HF_HUB_CACHE to where it is");
  if (head->resp.status == 0)
    RC_THROW(Errc::io, "cannot reach ", s.endpoint, " (", head->resp.error, ") and model '", repo, "' at '", rev,
             "' is not cached\nHINT: check the network and HTTPS_PROXY; for offline use, fill the cache once online "
             "and set HF_HUB_OFFLINE=1");
  RC_THROW(Errc::io, "HTTP ", head->resp.status, " from ", s.endpoint, " and model '", repo, "' at '", rev,
           "' is not cached\nHINT: the Hub may be down; run again later");
}

// What one file of a snapshot resolved to: already in the cache, absent at that commit, or
// downloaded to blobs/<etag> and still to be linked into snapshots/ (fetch links a whole
// snapshot at once, when every file of it is had: a run that fails half-way writes none).
struct Resolved {
  fs::path pointer;  // snapshots/<commit>/<file>; empty: the file does not exist there
  std::string etag;  // non-empty: link pointer -> blobs/<etag> once the rest is had
};

// hf_hub_download for one file. may_fall_back: when the Hub cannot be asked (transport
// failure, 5xx after retries), answer from the cache as huggingface_hub does; fetch allows
// it for its first question only. Every later file is asked at a commit, and is not cached
// (else no question): a failure there is the run's, never "absent".
Resolved resolve_file(const HubSettings& s, const std::string& repo, const std::string& rev, const std::string& file,
                      bool optional, bool may_fall_back, std::string* commit_out, uint64_t* bytes) {
  const RepoCache cache(s.cache, repo);
  // A commit hash names immutable content: a cached file needs no question to the Hub.
  if (is_commit_hash(rev)) {
    if (commit_out) *commit_out = rev;
    if (cache.has_file(rev, file)) return {cache.pointer(rev, file), ""};
    if (optional && fs::exists(cache.no_exist(rev, file))) return {};
  }
  auto from_cache = [&](const Head* head) -> Resolved {
    if (auto commit = cache.commit_for(rev)) {
      if (commit_out) *commit_out = *commit;
      if (cache.has_file(*commit, file)) return {cache.pointer(*commit, file), ""};
      // Python may have written the snapshot without .no_exist markers: an optional file
      // that is not there is simply absent.
      if (optional && fs::is_directory(cache.snapshot(*commit))) return {};
    }
    throw_not_cached(s, repo, rev, file, head);
  };
  if (s.offline) return from_cache(nullptr);

  const std::string url = file_url(s, repo, rev, file);
  const Head head = head_with_retries(s, url);
  const net::Response& r = head.resp;
  if (r.status == 404 && r.header("x-error-code") == "EntryNotFound") {
    const std::string commit = r.header("x-repo-commit");
    if (is_commit_hash(commit)) {
      cache.mark_missing(commit, file);
      cache.set_ref(rev, commit);
      if (commit_out) *commit_out = commit;
    }
    if (optional) return {};
    throw_http(s, r, repo, rev, file);
  }
  if (head.unreachable) {
    const std::string cause = r.status ? "HTTP " + std::to_string(r.status) + " from " + r.url : r.error;
    if (!may_fall_back)
      RC_THROW(Errc::io, "cannot get '", file, "' of model '", repo, "': ", cause,
               "; nothing was cached\nHINT: the Hub may be down or slow; run again later (HF_HUB_ETAG_TIMEOUT sets "
               "how long each question may take)");
    // As huggingface_hub: when the Hub cannot be asked, a cached copy of that revision is used.
    Resolved got = from_cache(&head);
    t_fell_back = true;
    log::warn("hub", "cannot reach ", s.endpoint, " (", cause, "); using the cached snapshot of ", repo, "@", rev);
    return got;
  }
  const bool redirect = r.status >= 300 && r.status < 400;
  if (!(r.status >= 200 && r.status < 300) && !redirect) throw_http(s, r, repo, rev, file);

  const std::string commit = r.header("x-repo-commit");
  const std::string raw_etag = !r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag");
  const std::string etag = normalize_etag(raw_etag);
  RC_CHECK(is_commit_hash(commit) && !raw_etag.empty(), Errc::format, r.url,
           " did not answer as the Hub does (no X-Repo-Commit or ETag)",
           "\nHINT: check HF_ENDPOINT and any proxy or firewall in between");
  // The etag names the blob: only what the Hub sends (a git blob id or an LFS sha256), so
  // that "." cannot name the blobs folder itself nor 5 KB the file system's limit.
  RC_CHECK(is_valid_etag(etag), Errc::format, r.url, " answered with the ETag '", raw_etag.substr(0, 80),
           raw_etag.size() > 80 ? "...' (" + std::to_string(raw_etag.size()) + " characters)" : std::string("'"),
           ", which is neither a git blob id nor a sha256; nothing was cached",
           "\nHINT: check HF_ENDPOINT and any proxy or firewall in between");
  // The size: X-Linked-Size, else (not for a redirect, whose body is not the file)
  // Content-Length. Without one a download is bounded by max_unsized_bytes; weights (LFS
  // blobs, named by their sha256) must announce theirs.
  std::string size_str = r.header("x-linked-size");
  if (size_str.empty() && !redirect) size_str = r.header("content-length");
  std::optional<uint64_t> size;
  if (!size_str.empty() && size_str.size() <= 19 && size_str.find_first_not_of("0123456789") == std::string::npos)
    size = std::strtoull(size_str.c_str(), nullptr, 10);
  RC_CHECK(size || !(is_weights(file) || is_sha256(etag)), Errc::format, r.url, " gave no size for ", repo, "/", file,
           " (X-Linked-Size", size_str.empty() ? "" : " '" + size_str.substr(0, 40) + "'",
           "); weights are downloaded only when their size is known\nHINT: check HF_ENDPOINT and any proxy in between");
  // A redirect to another host is the CDN holding LFS blobs: its signed URL gets no token.
  std::string download_url = url;
  if (redirect && !r.header("location").empty()) {
    download_url = net::resolve_location(r.url, r.header("location"));
    RC_CHECK(net::is_http_url(download_url), Errc::format, r.url, " redirected ", repo, "/", file, " to '",
             r.header("location").substr(0, 200), "', not an http(s) URL; nothing was downloaded",
             "\nHINT: check HF_ENDPOINT and any proxy or firewall in between");
  }
  const bool send_token = net::origin_of(download_url) == net::origin_of(url);

  if (commit_out) *commit_out = commit;
  cache.set_ref(rev, commit);
  const fs::path ptr = cache.pointer(commit, file);
  if (cache.has_file(commit, file)) return {ptr, ""};
  if (!cache.has_blob(etag)) {
    FileLock lock(cache.lock_file(etag));
    if (!cache.has_blob(etag)) {  // another process may have finished it while we waited
      const uint64_t got = download_blob(s, download_url, send_token, size, etag, cache.blob(etag), repo + "/" + file);
      if (bytes) *bytes += got;
    }
  }
  return {ptr, etag};
}

}  // namespace

fs::path download_file(const HubSettings& s, const std::string& repo, const std::string& rev, const std::string& file,
                       bool optional, std::string* commit_out, uint64_t* bytes) {
  std::string commit;
  const Resolved got = resolve_file(s, repo, rev, file, optional, true, &commit, bytes);
  if (commit_out) *commit_out = commit;
  if (!got.etag.empty()) RepoCache(s.cache, repo).link(commit, file, got.etag);
  return got.pointer;
}

FetchResult fetch(const HubSettings& settings, const std::string& repo, const std::string& revision, Want want) {
  RC_CHECK(is_valid_repo_id(repo), Errc::invalid_argument, "'", repo,
           "' is neither a local folder nor a Hugging Face model id\nHINT: give a checkpoint folder that exists, or "
           "an id such as cardiffnlp/twitter-roberta-base-sep2022");
  const std::string rev = revision.empty() ? "main" : revision;
  RC_CHECK(rev.find("..") == std::string::npos && rev[0] != '/', Errc::invalid_argument, "bad revision '", rev, "'");
  HubSettings s = settings;
  FetchResult out;
  const uint64_t calls_before = net::request_count();

  std::string commit;
  t_fell_back = false;
  const bool config_optional = want == Want::tokenizer;
  std::map<std::string, std::string> to_link;  // file -> etag, linked once the whole set is had
  const Resolved config =
      resolve_file(s, repo, rev, "config.json", config_optional, true, &commit, &out.bytes_downloaded);
  RC_CHECK(is_commit_hash(commit), Errc::not_found, "model '", repo, "' at '", rev,
           "' could not be resolved to a commit");
  if (!config.etag.empty()) to_link["config.json"] = config.etag;
  // The rest at that commit, so that a branch moving mid-download cannot mix two versions.
  // If the first question already failed over to the cache, ask no more.
  if (t_fell_back) s.offline = s.cache_fallback = true;
  auto get = [&](const std::string& file, bool optional) {
    const Resolved got = resolve_file(s, repo, commit, file, optional, false, nullptr, &out.bytes_downloaded);
    if (!got.etag.empty()) to_link[file] = got.etag;
    return !got.pointer.empty();
  };
  // A snapshot already holding a usable set (e.g. one huggingface_hub wrote, without
  // .no_exist markers) is not asked about the files it lacks: no network call.
  const RepoCache cache(s.cache, repo);
  auto have = [&](const char* f) { return to_link.count(f) || cache.has_file(commit, f); };
  if (want == Want::model && !have("model.safetensors") && !have("pytorch_model.bin")) {
    if (!get("model.safetensors", true) && !get("pytorch_model.bin", true))
      RC_THROW(Errc::not_found, "model '", repo, "' at '", rev, "' has neither model.safetensors nor pytorch_model.bin",
               "\nHINT: sharded checkpoints (*.index.json) are not supported; save it as one file");
  }
  // tokenizer.json, else the slow tokenizers' files that Tokenizer::from_dir converts:
  // byte-level BPE's vocab.json + merges.txt, BERT's vocab.txt, XLM-R's and CamemBERT's
  // sentencepiece.bpe.model (cardiffnlp/twitter-xlm-roberta-base-sentiment ships only that).
  auto tokenizer_usable = [&] {
    return have("tokenizer.json") || (have("vocab.json") && have("merges.txt")) || have("vocab.txt") ||
           have("sentencepiece.bpe.model");
  };
  const bool tokenizer_cached = tokenizer_usable();
  for (const char* f : {"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
                        "special_tokens_map.json", "added_tokens.json"})
    if (!(tokenizer_cached && !have(f))) get(f, true);
  // Asked only when nothing above is a tokenizer: one request each, in from_dir's order.
  for (const char* f : {"vocab.txt", "sentencepiece.bpe.model"})
    if (!tokenizer_usable()) get(f, true);
  RC_CHECK(tokenizer_usable(), Errc::not_found, "model '", repo, "' at '", rev,
           "' has no tokenizer (tokenizer.json, vocab.json + merges.txt, vocab.txt or sentencepiece.bpe.model)");
  for (const auto& [file, etag] : to_link) cache.link(commit, file, etag);
  out.commit = commit;
  out.snapshot = cache.snapshot(commit);
  out.from_cache_only = net::request_count() == calls_before;
  return out;
}

}  // namespace rc::hub
