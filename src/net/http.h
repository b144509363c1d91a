// The one HTTP client, on libcurl: remote models (Hugging Face Hub and S3), `roberta invoke`
// and the server's tests. TLS verification on unless a request turns it off (only `invoke
// --insecure` does, for self-signed test servers); CA bundle from SSL_CERT_FILE / CURL_CA_BUNDLE /
// REQUESTS_CA_BUNDLE, else the system's; proxies from https_proxy / HTTPS_PROXY /
// http_proxy / NO_PROXY (libcurl reads those itself). Redirects are followed here, not by
// libcurl, so that the Authorization header is dropped as soon as the host changes (the
// Hub redirects LFS files to a CDN that must not see the user's token).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace rc::net {

// SigV4 signing by libcurl (CURLOPT_AWS_SIGV4).
struct AwsSigning {
  std::string region, service = "s3";
  std::string access_key, secret_key, session_token;
};

struct Request {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                   // small request bodies (JSON, XML)
  std::filesystem::path upload_file;  // or: stream [upload_offset, +upload_size) of a file
  uint64_t upload_offset = 0, upload_size = 0;
  const AwsSigning* aws = nullptr;
  bool follow_redirects = true;
  bool follow_relative_only = false;  // huggingface_hub's HEAD: absolute redirects are read, not followed
  long connect_timeout_ms = 10000;
  long low_speed_limit_bps = 1;   // abort when under this many bytes/s ...
  long low_speed_timeout_s = 60;  // ... for this long (a stalled or trickling peer)
  long total_timeout_ms = 0;      // 0: none (the caller bounds large downloads itself)
  bool verify_tls = true;         // false: no certificate or host name check (invoke --insecure)
  // Called once with the status and headers of a 2xx answer before its first body byte
  // reaches the sink (e.g. 200 instead of 206: the server ignored Range). false aborts.
  std::function<bool(long status, const std::map<std::string, std::string>& headers)> on_answer;
};

struct Response {
  long status = 0;                             // 0: no complete HTTP answer (see error)
  std::map<std::string, std::string> headers;  // lower-case names, of the last answer
  std::string body;                            // when no sink took it (capped, see max_body)
  bool body_truncated = false;                 // the answer had more than max_body bytes
  std::string url;                             // the URL that answered last
  std::string error;                           // transport failure, "" when an answer came
  bool transport_retryable = false;            // dropped connection, timeout, refused
  uint64_t sink_bytes = 0;                     // bytes handed to the sink
  std::string header(const std::string& lower_name) const;
};

// Receives the body of a 2xx answer as it streams in (bounded memory). Return false to abort.
using Sink = std::function<bool(const char* data, size_t n)>;

// One exchange (plus redirects). Never throws on HTTP statuses or transport failures: the
// caller decides (retry, fall back to a cache, error). Bodies without a sink are kept up to
// max_body bytes (error pages, JSON, XML).
Response perform(const Request& req, const Sink& sink = {}, size_t max_body = size_t(1) << 20);

// scheme://host[:port] of an absolute URL ("" when it is not one).
std::string origin_of(const std::string& url);
// Whether url is an absolute http:// or https:// URL (any case), the only ones requested.
bool is_http_url(const std::string& url);
// Whether a Location is a relative reference (RFC 3986 4.2: no scheme, no "//" authority).
// "http:/host/x" is not: it has a scheme, and URL parsers read the host from it.
bool is_relative_reference(const std::string& location);
// Location resolved against the URL it came from (RFC 3986).
std::string resolve_location(const std::string& base, const std::string& location);
// Percent-encodes everything but unreserved characters; '/' kept when keep_slash.
std::string url_encode(const std::string& s, bool keep_slash);

// Retry policy for 5xx, 429 and dropped connections: attempts and the first backoff
// (doubled each time). RC_NET_RETRIES and RC_NET_BACKOFF_MS override (tests shorten them).
struct RetryPolicy {
  int attempts = 5;
  long first_backoff_ms = 500;
  static RetryPolicy from_env();
};
bool is_retryable_status(long status);
// HTTP exchanges attempted by this process (each redirect hop counts): lets tests prove
// that a warm cache or HF_HUB_OFFLINE=1 made no call.
uint64_t request_count();
void backoff_sleep(const RetryPolicy& p, int attempt);  // attempt 0, 1, ...

}  // namespace rc::net
