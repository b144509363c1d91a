// hf_hub_download and a model-sized snapshot_download (see hub.h). Mirrors
// huggingface_hub/file_download.py: _get_metadata_or_catch_error (HEAD, relative redirects
// only, X-Repo-Commit, X-Linked-Etag/ETag, X-Linked-Size/Content-Length, .no_exist markers),
// the fall back to the cache when the Hub cannot be asked, and _download_to_tmp_and_move
// (.incomplete resumed with Range under a per-blob lock).
#include "hub/hub.h"

#include <cstdlib>
#include <cstring>
#include <memory>

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

// _download_to_tmp_and_move + http_get: GET (resumed with Range) into blob.incomplete,
// checked, then renamed to the blob. Caller holds the blob's lock.
uint64_t download_blob(const HubSettings& s, const std::string& url, bool send_token, uint64_t expected_size,
                       const std::string& etag, const fs::path& blob, const std::string& label) {
  const fs::path incomplete = blob.string() + ".incomplete";
  std::error_code ec;
  fs::create_directories(blob.parent_path(), ec);
  const bool check_sha = is_sha256(etag);
  auto f = std::make_unique<BlobWriter>(incomplete, check_sha);
  // What an earlier, interrupted run left: hashed again so the final check covers it.
  uint64_t have = f->resume_existing();
  if (expected_size && have > expected_size) {  // not ours to resume: start over
    RC_CHECK(f->truncate(), Errc::io, "cannot truncate '", incomplete.string(), "'");
    have = 0;
  }
  net::Progress progress(label, expected_size, have);
  const uint64_t resumed_from = have;
  bool write_failed = false, too_long = false;
  const net::RetryPolicy policy = net::RetryPolicy::from_env();
  for (int attempt = 0;; ++attempt) {
    if (expected_size && have == expected_size) break;  // nothing left (a complete .incomplete)
    net::Request req;
    req.url = url;
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
      if (expected_size && have + n > expected_size) {  // more than announced: stop, do not fill the disk
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
    RC_CHECK(!write_failed, Errc::io, "cannot write '", incomplete.string(), "' (disk full?)\nHINT: free space under ",
             s.cache.string(), " or point HF_HUB_CACHE elsewhere");
    if (too_long) {
      f.reset();
      fs::remove(incomplete, ec);
      RC_THROW(Errc::format, label, ": the server sent more than the ", expected_size,
               " bytes it announced; nothing was cached\nHINT: check HF_ENDPOINT and any proxy in between");
    }
    if (r.status >= 200 && r.status < 300 && r.error.empty()) break;
    if (r.status == 416 && expected_size && have == expected_size) break;
    const bool retry = r.status == 0 ? r.transport_retryable : net::is_retryable_status(r.status);
    if (!retry || attempt + 1 >= policy.attempts) {
      if (r.status == 0)
        RC_THROW(Errc::io, "download of ", label, " failed: ", r.error, "\nHINT: run again: it resumes from ",
                 incomplete.string());
      RC_THROW(Errc::io, "download of ", label, " failed: HTTP ", r.status, " from ", r.url,
               "\nHINT: run again: it resumes from ", incomplete.string());
    }
    log::warn("hub", label, ": ", r.status ? "HTTP " + std::to_string(r.status) : r.error, " at ",
              net::human_bytes(have), "; resuming (", attempt + 1, "/", policy.attempts - 1, ")");
    net::backoff_sleep(policy, attempt);
  }
  if (fsync_blobs()) RC_CHECK(f->sync(), Errc::io, "cannot write '", incomplete.string(), "' (disk full?)");
  const std::string got_sha = check_sha ? f->sha256_hex() : "";
  f.reset();
  progress.finish();
  if (expected_size && have != expected_size) {
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

}  // namespace

fs::path download_file(const HubSettings& s, const std::string& repo, const std::string& rev, const std::string& file,
                       bool optional, std::string* commit_out, uint64_t* bytes) {
  const RepoCache cache(s.cache, repo);
  // A commit hash names immutable content: a cached file needs no question to the Hub.
  if (is_commit_hash(rev)) {
    if (commit_out) *commit_out = rev;
    const fs::path ptr = cache.pointer(rev, file);
    if (fs::exists(ptr)) return ptr;
    if (optional && fs::exists(cache.no_exist(rev, file))) return {};
  }
  auto from_cache = [&](const Head* head) -> fs::path {
    if (auto commit = cache.commit_for(rev)) {
      if (commit_out) *commit_out = *commit;
      const fs::path ptr = cache.pointer(*commit, file);
      if (fs::exists(ptr)) return ptr;
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
    // As huggingface_hub: when the Hub cannot be asked, a cached copy of that revision is used.
    const fs::path p = from_cache(&head);
    t_fell_back = true;
    log::warn("hub", "cannot reach ", s.endpoint, " (", r.status ? "HTTP " + std::to_string(r.status) : r.error,
              "); using the cached ", repo, "/", file);
    return p;
  }
  const bool redirect = r.status >= 300 && r.status < 400;
  if (!(r.status >= 200 && r.status < 300) && !redirect) throw_http(s, r, repo, rev, file);

  const std::string commit = r.header("x-repo-commit");
  const std::string etag =
      normalize_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
  RC_CHECK(is_commit_hash(commit) && !etag.empty() && etag.find('/') == std::string::npos &&
               etag.find("..") == std::string::npos,
           Errc::format, r.url, " did not answer as the Hub does (no X-Repo-Commit or ETag)",
           "\nHINT: check HF_ENDPOINT and any proxy or firewall in between");
  const std::string size_str =
      !r.header("x-linked-size").empty() ? r.header("x-linked-size") : r.header("content-length");
  const uint64_t size = size_str.empty() ? 0 : std::strtoull(size_str.c_str(), nullptr, 10);
  // A redirect to another host is the CDN holding LFS blobs: its signed URL gets no token.
  std::string download_url = url;
  if (redirect && !r.header("location").empty()) download_url = net::resolve_location(r.url, r.header("location"));
  const bool send_token = net::origin_of(download_url) == net::origin_of(url);

  if (commit_out) *commit_out = commit;
  cache.set_ref(rev, commit);
  const fs::path ptr = cache.pointer(commit, file), blob = cache.blob(etag);
  if (fs::exists(ptr)) return ptr;
  if (!fs::exists(blob)) {
    FileLock lock(cache.lock_file(etag));
    if (!fs::exists(blob)) {  // another process may have finished it while we waited
      const uint64_t got = download_blob(s, download_url, send_token, size, etag, blob, repo + "/" + file);
      if (bytes) *bytes += got;
    }
  }
  cache.link(commit, file, etag);
  return ptr;
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
  fs::path config = download_file(s, repo, rev, "config.json", config_optional, &commit, &out.bytes_downloaded);
  RC_CHECK(is_commit_hash(commit), Errc::not_found, "model '", repo, "' at '", rev,
           "' could not be resolved to a commit");
  // The rest at that commit, so that a branch moving mid-download cannot mix two versions.
  // If the first question already failed over to the cache, ask no more.
  if (t_fell_back) s.offline = s.cache_fallback = true;
  auto get = [&](const std::string& file, bool optional) {
    return download_file(s, repo, commit, file, optional, nullptr, &out.bytes_downloaded);
  };
  // A snapshot already holding a usable set (e.g. one huggingface_hub wrote, without
  // .no_exist markers) is not asked about the files it lacks: no network call.
  const RepoCache cache(s.cache, repo);
  auto have = [&](const char* f) { return fs::exists(cache.pointer(commit, f)); };
  if (want == Want::model && !have("model.safetensors") && !have("pytorch_model.bin")) {
    if (get("model.safetensors", true).empty() && get("pytorch_model.bin", true).empty())
      RC_THROW(Errc::not_found, "model '", repo, "' at '", rev, "' has neither model.safetensors nor pytorch_model.bin",
               "\nHINT: sharded checkpoints (*.index.json) are not supported; save it as one file");
  }
  const bool tokenizer_cached = have("tokenizer.json") || (have("vocab.json") && have("merges.txt"));
  for (const char* f : {"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
                        "special_tokens_map.json", "added_tokens.json"})
    if (!(tokenizer_cached && !have(f))) get(f, true);
  RC_CHECK(have("tokenizer.json") || (have("vocab.json") && have("merges.txt")), Errc::not_found, "model '", repo,
           "' at '", rev, "' has no tokenizer (tokenizer.json, or vocab.json + merges.txt)");
  out.commit = commit;
  out.snapshot = RepoCache(s.cache, repo).snapshot(commit);
  out.from_cache_only = net::request_count() == calls_before;
  return out;
}

}  // namespace rc::hub
