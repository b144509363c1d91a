// S3 GetObject, PutObject and multipart upload (see s3.h). Errors name the S3 error code
// and say what to check, one line each.
#include "net/s3.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/env.h"
#include "net/aws_credentials.h"
#include "net/http.h"
#include "net/progress.h"
#include "roberta/log.h"

namespace fs = std::filesystem;

namespace rc::net {
namespace {

std::string xml_value(const std::string& xml, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const size_t a = xml.find(open);
  if (a == std::string::npos) return "";
  const size_t b = xml.find(close, a);
  return b == std::string::npos ? "" : xml.substr(a + open.size(), b - a - open.size());
}

struct Target {
  AwsSigning signing;
  std::string base;  // URL of the object, without a query
  std::string source;
};

Target target_for(const S3Location& loc) {
  Target t;
  const AwsCredentials c = resolve_aws_credentials();
  t.signing.region = resolve_aws_region();
  t.signing.access_key = c.access_key;
  t.signing.secret_key = c.secret_key;
  t.signing.session_token = c.session_token;
  t.source = c.source;
  std::string endpoint = !env_or_empty("AWS_ENDPOINT_URL_S3").empty() ? env_or_empty("AWS_ENDPOINT_URL_S3")
                                                                      : env_or_empty("AWS_ENDPOINT_URL");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  const std::string key = url_encode(loc.key, true);
  if (!endpoint.empty())
    t.base = endpoint + "/" + loc.bucket + "/" + key;
  else if (loc.bucket.find('.') == std::string::npos)
    t.base = "https://" + loc.bucket + ".s3." + t.signing.region + ".amazonaws.com/" + key;
  else  // dots break the wildcard certificate of virtual-hosted names
    t.base = "https://s3." + t.signing.region + ".amazonaws.com/" + loc.bucket + "/" + key;
  return t;
}

[[noreturn]] void throw_s3(const Response& r, const std::string& url, const Target& t, const char* action) {
  if (r.status == 0)
    RC_THROW(Errc::io, action, " ", url, " failed: ", r.error,
             "\nHINT: check the network, HTTPS_PROXY and AWS_ENDPOINT_URL");
  const std::string code = xml_value(r.body, "Code"), msg = xml_value(r.body, "Message");
  const std::string what = std::string(action) + " " + url + ": HTTP " + std::to_string(r.status) +
                           (code.empty() ? "" : " " + code) + (msg.empty() ? "" : " (" + msg + ")");
  if (code == "NoSuchKey" || (r.status == 404 && code.empty()))
    RC_THROW(Errc::not_found, what, "\nHINT: no such object; list the prefix with `aws s3 ls` to check the key");
  if (code == "NoSuchBucket") RC_THROW(Errc::not_found, what, "\nHINT: check the bucket name and AWS_ENDPOINT_URL");
  if (code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId" || code == "InvalidToken" ||
      code == "ExpiredToken")
    RC_THROW(Errc::io, what, "\nHINT: the credentials from ", t.source,
             " were refused; check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_PROFILE");
  if (r.status == 403)
    RC_THROW(Errc::io, what, "\nHINT: the identity from ", t.source,
             " lacks permission (s3:GetObject / s3:PutObject on this key)");
  if (r.status == 301 || code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed")
    RC_THROW(Errc::io, what, "\nHINT: the bucket is in region '", r.header("x-amz-bucket-region"),
             "': set AWS_REGION to it");
  RC_THROW(Errc::io, what, "\nHINT: run again; S3 may be throttling or down");
}

Response with_retries(const std::function<Response()>& call, const std::string& what) {
  const RetryPolicy policy = RetryPolicy::from_env();
  Response r;
  for (int attempt = 0; attempt < policy.attempts; ++attempt) {
    r = call();
    const bool retry = r.status == 0 ? r.transport_retryable : is_retryable_status(r.status);
    if (!retry || attempt + 1 == policy.attempts) break;
    log::warn("s3", what, ": ", r.status ? "HTTP " + std::to_string(r.status) : r.error, "; retrying (", attempt + 1,
              "/", policy.attempts - 1, ")");
    backoff_sleep(policy, attempt);
  }
  return r;
}

}  // namespace

bool is_s3_url(const std::string& url) { return url.rfind("s3://", 0) == 0; }

namespace {
// A URL as errors quote it: whole when short, else its start and its length (a 30 KB URL
// echoed back is no help to anyone).
std::string quoted_url(const std::string& url) {
  constexpr size_t kShown = 100;
  if (url.size() <= kShown) return "'" + url + "'";
  return "'" + url.substr(0, kShown) + "...' (" + std::to_string(url.size()) + " bytes)";
}
}  // namespace

S3Location parse_s3_url(const std::string& url) {
  RC_CHECK(is_s3_url(url), Errc::invalid_argument, quoted_url(url), " is not an s3://bucket/key URL");
  RC_CHECK(url.size() <= kMaxS3UrlBytes, Errc::invalid_argument, "the s3:// URL is ", url.size(),
           " bytes, longer than any S3 object's (keys are at most ", kMaxS3KeyBytes, " bytes)");
  const std::string rest = url.substr(5);
  const size_t slash = rest.find('/');
  S3Location loc;
  loc.bucket = rest.substr(0, slash);
  loc.key = slash == std::string::npos ? "" : rest.substr(slash + 1);
  bool ok = loc.bucket.size() >= 3 && loc.bucket.size() <= 63;
  for (char c : loc.bucket)
    ok = ok && (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                c == '-' || c == '.');
  RC_CHECK(ok, Errc::invalid_argument, quoted_url(url), ": bucket name must be 3-63 of [a-z0-9.-]");
  RC_CHECK(!loc.key.empty() && loc.key.back() != '/', Errc::invalid_argument, quoted_url(url),
           " names no object\nHINT: give the full key, e.g. s3://bucket/models/model.tar.gz");
  RC_CHECK(loc.key.size() <= kMaxS3KeyBytes, Errc::invalid_argument, "the S3 key is ", loc.key.size(),
           " bytes, more than the ", kMaxS3KeyBytes, " S3 allows");
  for (char c : loc.key)
    RC_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, Errc::invalid_argument, quoted_url(url),
             ": the key holds a control character");
  for (size_t begin = 0; begin <= loc.key.size();) {
    size_t end = loc.key.find('/', begin);
    if (end == std::string::npos) end = loc.key.size();
    const std::string_view segment(loc.key.data() + begin, end - begin);
    RC_CHECK(!segment.empty() && segment != "." && segment != "..", Errc::invalid_argument, quoted_url(url),
             ": the key has an empty, '.' or '..' segment, which HTTP clients rewrite before sending "
             "(so another key would be fetched)\nHINT: name the object by its plain key, e.g. "
             "s3://bucket/models/model.tar.gz");
    begin = end + 1;
  }
  return loc;
}

namespace {
// How slow and how long a GET of an object may be (issue 27: any download is bounded by
// size, rate and time), as the Hub client's RC_HUB_* settings: a peer that trickles below
// min_rate_bps for min_rate_seconds is cut off, and one above it still ends at a deadline of
// deadline_base_seconds + size / deadline_rate_bps, across every retry.
struct S3Limits {
  long min_rate_bps = 1024;                          // RC_S3_MIN_RATE
  long min_rate_seconds = 60;                        // RC_S3_MIN_RATE_SECONDS
  long deadline_base_seconds = 600;                  // RC_S3_DEADLINE_SECONDS
  uint64_t deadline_rate_bps = uint64_t(256) << 10;  // RC_S3_DEADLINE_RATE

  static S3Limits from_env() {
    constexpr const char* kHint = "see docs/hub.md (S3)";
    S3Limits l;
    l.min_rate_bps = positive_env("RC_S3_MIN_RATE", l.min_rate_bps, kHint);
    l.min_rate_seconds = positive_env("RC_S3_MIN_RATE_SECONDS", l.min_rate_seconds, kHint);
    l.deadline_base_seconds = positive_env("RC_S3_DEADLINE_SECONDS", l.deadline_base_seconds, kHint);
    l.deadline_rate_bps = positive_env("RC_S3_DEADLINE_RATE", l.deadline_rate_bps, kHint);
    return l;
  }
  // At most 30 days: a huge size over a tiny rate must not overflow the clock's nanoseconds.
  uint64_t allowed_seconds(uint64_t size) const {
    constexpr uint64_t kMost = 30 * 86400;
    return std::min(kMost, std::min<uint64_t>(uint64_t(deadline_base_seconds), kMost) + size / deadline_rate_bps);
  }
};
}  // namespace

uint64_t s3_download(const std::string& url, const fs::path& dest, uint64_t max_bytes) {
  using Clock = std::chrono::steady_clock;
  const S3Limits limits = S3Limits::from_env();
  const S3Location loc = parse_s3_url(url);
  const Target t = target_for(loc);
  const fs::path part = dest.string() + ".part";
  std::error_code ec;
  if (!dest.parent_path().empty()) fs::create_directories(dest.parent_path(), ec);
  Response r;
  uint64_t got = 0;
  bool too_big = false, write_failed = false, past_deadline = false;
  // The size the deadline is for: Content-Length once an answer gives it, max_bytes until then
  // (0 when neither is known: the base alone).
  uint64_t size = max_bytes;
  const auto started = Clock::now();
  auto deadline = [&] { return started + std::chrono::seconds(limits.allowed_seconds(size)); };
  r = with_retries(
      [&] {
        got = 0;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline() - Clock::now()).count();
        if (left <= 0) {  // a retry after the time ran out: none
          past_deadline = true;
          Response none;
          none.error = "past the deadline";
          return none;
        }
        // Declared before f so that it outlives the FILE. glibc ignores setvbuf's size when
        // given no buffer (4 KiB: two write(2) per 16 KiB piece from libcurl).
        std::unique_ptr<char[]> buffer(new char[size_t(1) << 20]);
        std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(part.c_str(), "wb"), std::fclose);  // each try starts over
        RC_CHECK(f != nullptr, Errc::io, "cannot write '", part.string(), "'");
        std::setvbuf(f.get(), buffer.get(), _IOFBF, size_t(1) << 20);
        std::unique_ptr<Progress> progress;
        Request req;
        req.url = t.base;
        req.aws = &t.signing;
        req.low_speed_limit_bps = limits.min_rate_bps;
        req.low_speed_timeout_s = limits.min_rate_seconds;
        // libcurl's timer covers a peer silent before its headers; the sink covers the rest,
        // once Content-Length has set the deadline.
        if (max_bytes) req.total_timeout_ms = long(left);
        req.on_answer = [&](long, const std::map<std::string, std::string>& h) {
          const auto it = h.find("content-length");
          const uint64_t announced = it == h.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
          if (max_bytes && announced > max_bytes) {
            too_big = true;
            return false;
          }
          if (it != h.end()) size = announced;
          progress = std::make_unique<Progress>(url, announced);
          return true;
        };
        Response resp = perform(req, [&](const char* p, size_t n) {
          if (max_bytes && got + n > max_bytes) {
            too_big = true;
            return false;
          }
          if (Clock::now() >= deadline()) {
            past_deadline = true;
            return false;
          }
          if (std::fwrite(p, 1, n, f.get()) != n) {
            write_failed = true;
            return false;
          }
          got += n;
          if (progress) progress->advance(n);
          return true;
        });
        if (std::fflush(f.get()) != 0) write_failed = true;
        // libcurl's own timer ran out: the same deadline, so no retry either.
        if (resp.status == 0 && Clock::now() + std::chrono::milliseconds(100) >= deadline()) past_deadline = true;
        if (past_deadline) resp.transport_retryable = false;
        if (progress && resp.error.empty() && resp.status == 200) progress->finish();
        return resp;
      },
      "GET " + url);
  if (too_big || write_failed || past_deadline || r.status != 200 || !r.error.empty()) fs::remove(part, ec);
  RC_CHECK(!too_big, Errc::resource_exhausted, quoted_url(url), " is larger than the ", max_bytes, "-byte limit");
  RC_CHECK(!write_failed, Errc::io, "cannot write '", part.string(), "' (disk full?)");
  RC_CHECK(!past_deadline, Errc::io, "GET ", quoted_url(url), " took longer than the ", limits.allowed_seconds(size),
           " s allowed for ", size ? human_bytes(size) : std::string("an object of unknown size"), " (",
           limits.deadline_base_seconds, " s + the size at ", human_bytes(limits.deadline_rate_bps),
           "/s); the partial download was removed",
           "\nHINT: on a slow link raise RC_S3_DEADLINE_SECONDS or lower RC_S3_DEADLINE_RATE");
  if (r.status == 0 && r.error.find("too slow") != std::string::npos)  // libcurl's low-speed limit
    RC_THROW(Errc::io, "GET ", quoted_url(url), " failed: ", r.error,
             "\nHINT: on a slow link lower RC_S3_MIN_RATE or raise RC_S3_MIN_RATE_SECONDS");
  if (r.status != 200 || !r.error.empty()) throw_s3(r, url, t, "GET");
  fs::rename(part, dest, ec);
  RC_CHECK(!ec, Errc::io, "cannot move '", part.string(), "' to '", dest.string(), "': ", ec.message());
  return got;
}

void s3_upload(const fs::path& file, const std::string& url, const S3UploadOptions& o) {
  const S3Location loc = parse_s3_url(url);
  std::error_code ec;
  const uint64_t size = fs::file_size(file, ec);
  RC_CHECK(!ec, Errc::not_found, "cannot read '", file.string(), "'");
  const Target t = target_for(loc);
  if (size <= o.multipart_threshold) {
    const Response r = with_retries(
        [&] {
          Request req;
          req.method = "PUT";
          req.url = t.base;
          req.aws = &t.signing;
          req.upload_file = file;
          req.upload_size = size;
          return perform(req);
        },
        "PUT " + url);
    if (r.status != 200 || !r.error.empty()) throw_s3(r, url, t, "PUT");
    log::info("s3", "uploaded ", url, " (", human_bytes(size), ")");
    return;
  }
  // S3 allows at most 10,000 parts: grow the part size for very large files.
  const uint64_t part_size = std::max(o.part_size, (size + 9999) / 10000);
  Request init;
  init.method = "POST";
  init.url = t.base + "?uploads=";
  init.aws = &t.signing;
  const Response ir = with_retries([&] { return perform(init); }, "CreateMultipartUpload " + url);
  const std::string upload_id = xml_value(ir.body, "UploadId");
  if (ir.status != 200 || upload_id.empty()) throw_s3(ir, url, t, "CreateMultipartUpload");
  const std::string id_q = "uploadId=" + url_encode(upload_id, false);
  auto abort_upload = [&] {
    Request del;
    del.method = "DELETE";
    del.url = t.base + "?" + id_q;
    del.aws = &t.signing;
    perform(del);  // best effort: a lifecycle rule cleans up what this misses
  };
  try {
    Progress progress(url, size);
    std::string complete = "<CompleteMultipartUpload>";
    const uint64_t parts = (size + part_size - 1) / part_size;
    for (uint64_t n = 1; n <= parts; ++n) {
      const uint64_t off = (n - 1) * part_size, len = std::min(part_size, size - off);
      const Response pr = with_retries(
          [&] {
            Request req;
            req.method = "PUT";
            // Query parameters in canonical (sorted) order: libcurl signs the query as given.
            req.url = t.base + "?partNumber=" + std::to_string(n) + "&" + id_q;
            req.aws = &t.signing;
            req.upload_file = file;
            req.upload_offset = off;
            req.upload_size = len;
            return perform(req);
          },
          "UploadPart " + std::to_string(n) + " of " + url);
      if (pr.status != 200 || pr.header("etag").empty()) throw_s3(pr, url, t, "UploadPart");
      complete +=
          "<Part><PartNumber>" + std::to_string(n) + "</PartNumber><ETag>" + pr.header("etag") + "</ETag></Part>";
      progress.advance(len);
    }
    complete += "</CompleteMultipartUpload>";
    Request fin;
    fin.method = "POST";
    fin.url = t.base + "?" + id_q;
    fin.aws = &t.signing;
    fin.body = complete;
    fin.headers.push_back({"Content-Type", "application/xml"});
    const Response fr = with_retries([&] { return perform(fin); }, "CompleteMultipartUpload " + url);
    // S3 can answer 200 and still fail: the error is then in the body.
    if (fr.status != 200 || fr.body.find("<Error>") != std::string::npos)
      throw_s3(fr, url, t, "CompleteMultipartUpload");
    progress.finish();
    log::info("s3", "uploaded ", url, " (", human_bytes(size), ", ", parts, " parts)");
  } catch (...) {
    abort_upload();
    throw;
  }
}

}  // namespace rc::net
