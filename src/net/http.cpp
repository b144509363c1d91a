// libcurl client (see http.h). One easy handle per thread, reset between requests, so
// connections to the same host are reused (one TLS handshake for a whole snapshot).
#include "net/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/check.h"
#include "core/regular_file.h"

namespace rc::net {
namespace {

std::once_flag g_init;
std::atomic<uint64_t> g_requests{0};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim_field(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

const char* env_nonempty(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

struct Exchange {
  Response* resp;
  const Sink* sink;
  size_t max_body;
  const Request* req;
  bool answered = false;
  bool aborted_by_sink = false;
  FILE* upload = nullptr;
  uint64_t upload_left = 0;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new answer (after a 100 Continue or a redirect)
    ex->resp->headers.clear();
    const size_t sp = line.find(' ');
    ex->resp->status = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string::npos)
    ex->resp->headers[lower(trim_field(line.substr(0, colon)))] = trim_field(line.substr(colon + 1));
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t bytes = size * n;
  const long st = ex->resp->status;
  if (ex->sink && *ex->sink && st >= 200 && st < 300) {
    if (!ex->answered) {
      ex->answered = true;
      if (ex->req->on_answer && !ex->req->on_answer(st, ex->resp->headers)) {
        ex->aborted_by_sink = true;
        return 0;
      }
    }
    if (!(*ex->sink)(data, bytes)) {
      ex->aborted_by_sink = true;
      return 0;  // CURLE_WRITE_ERROR
    }
    ex->resp->sink_bytes += bytes;
    return bytes;
  }
  const size_t room = ex->max_body > ex->resp->body.size() ? ex->max_body - ex->resp->body.size() : 0;
  ex->resp->body.append(data, std::min(room, bytes));
  if (room < bytes) ex->resp->body_truncated = true;
  return bytes;
}

size_t on_read(char* buf, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t want = static_cast<size_t>(std::min<uint64_t>(size * n, ex->upload_left));
  if (want == 0) return 0;
  const size_t got = std::fread(buf, 1, want, ex->upload);
  if (got == 0) return CURL_READFUNC_ABORT;  // the file shrank under us
  ex->upload_left -= got;
  return got;
}

bool retryable_code(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

CURL* thread_handle() {
  struct Holder {
    CURL* h = nullptr;
    ~Holder() {
      if (h) curl_easy_cleanup(h);
    }
  };
  thread_local Holder holder;
  if (!holder.h)
    holder.h = curl_easy_init();
  else
    curl_easy_reset(holder.h);
  RC_CHECK(holder.h != nullptr, Errc::internal, "curl_easy_init failed");
  return holder.h;
}

// One hop: no redirect following.
void perform_once(const Request& req, const std::string& url, bool send_auth, const Sink& sink, size_t max_body,
                  Response& resp) {
  CURL* h = thread_handle();
  resp = Response{};
  resp.url = url;
  Exchange ex{&resp, &sink, max_body, &req};
  g_requests.fetch_add(1, std::memory_order_relaxed);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, req.connect_timeout_ms);
  if (req.total_timeout_ms > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req.total_timeout_ms);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, std::max(1L, req.low_speed_limit_bps));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, req.low_speed_timeout_s);
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "roberta.cpp (libcurl)");
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, req.verify_tls ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, req.verify_tls ? 2L : 0L);
  for (const char* name : {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"})
    if (const char* v = env_nonempty(name)) {
      curl_easy_setopt(h, CURLOPT_CAINFO, v);
      break;
    }
  if (const char* v = env_nonempty("SSL_CERT_DIR")) curl_easy_setopt(h, CURLOPT_CAPATH, v);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);

  // No 100-continue round trip; but not when signing: libcurl 7.88 would sign the empty
  // "Expect:" it never sends, and S3 would refuse the signature.
  curl_slist* headers = req.aws ? nullptr : curl_slist_append(nullptr, "Expect:");
  for (const auto& [k, v] : req.headers) {
    if (!send_auth && lower(k) == "authorization") continue;
    headers = curl_slist_append(headers, (k + ": " + v).c_str());
  }
  if (req.aws && send_auth) {
    const std::string sig = "aws:amz:" + req.aws->region + ":" + req.aws->service;
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sig.c_str());  // copied by libcurl
    curl_easy_setopt(h, CURLOPT_USERNAME, req.aws->access_key.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, req.aws->secret_key.c_str());
    // libcurl 7.88 signs whatever x-amz-content-sha256 says; S3 requires the header.
    headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!req.aws->session_token.empty())
      headers = curl_slist_append(headers, ("x-amz-security-token: " + req.aws->session_token).c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

  if (req.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (!req.upload_file.empty()) {
    ex.upload = std::fopen(req.upload_file.c_str(), "rb");
    if (!ex.upload || (req.upload_offset && std::fseek(ex.upload, long(req.upload_offset), SEEK_SET) != 0)) {
      curl_slist_free_all(headers);
      if (ex.upload) std::fclose(ex.upload);
      RC_THROW(Errc::io, "cannot read '", req.upload_file.string(), "'");
    }
    ex.upload_left = req.upload_size;
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(h, CURLOPT_READDATA, &ex);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.upload_size));
    if (req.method != "PUT") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  } else if (req.method != "GET" || !req.body.empty()) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    if (req.method != "GET") {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    }
  }

  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  const CURLcode rc = curl_easy_perform(h);
  if (ex.upload) std::fclose(ex.upload);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    resp.status = 0;  // an answer cut short is no answer: callers retry or report the transport error
    if (ex.aborted_by_sink) {
      resp.error = "aborted while writing the download";
    } else {
      resp.error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
      resp.transport_retryable = retryable_code(rc);
    }
    return;
  }
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  resp.status = code;
}

}  // namespace

std::string Response::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::string origin_of(const std::string& url) {
  CURLU* u = curl_url();
  std::string out;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char *scheme = nullptr, *host = nullptr, *port = nullptr;
    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    if (scheme && host) out = lower(scheme) + "://" + lower(host) + ":" + (port ? port : "");
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(u);
  return out;
}

bool is_http_url(const std::string& url) {
  const std::string l = lower(url.substr(0, 8));
  return l.rfind("http://", 0) == 0 || l.rfind("https://", 0) == 0;
}

bool is_relative_reference(const std::string& loc) {
  // Backslashes count as slashes for WHATWG parsers ("/\\host", "\\\\host"): never relative.
  if (loc.rfind("//", 0) == 0 || loc.find('\\') != std::string::npos) return false;
  for (char c : loc) {  // a scheme is the letters, digits, + - . before the first ':'
    if (c == ':') return false;
    if (c == '/' || c == '?' || c == '#') return true;
  }
  return true;
}

std::string resolve_location(const std::string& base, const std::string& location) {
  CURLU* u = curl_url();
  std::string out;
  if (curl_url_set(u, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
      curl_url_set(u, CURLUPART_URL, location.c_str(), 0) == CURLUE_OK) {  // relative: resolved against base
    char* s = nullptr;
    if (curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK) out = s;
    curl_free(s);
  }
  curl_url_cleanup(u);
  return out;
}

std::string url_encode(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

Response perform(const Request& req, const Sink& sink, size_t max_body) {
  std::call_once(g_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  // OpenSSL fopen()s the CA bundle at the first TLS handshake: a FIFO there would hang it
  // for good, a device feed it forever. Checked here (the same precedence as below), with an
  // error naming the variable.
  for (const char* name : {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"})
    if (const char* v = env_nonempty(name)) {
      open_regular_file(v, name);
      break;
    }
  const std::string first_origin = origin_of(req.url);
  std::string url = req.url;
  Response resp;
  const bool may_follow = req.follow_redirects && (req.method == "GET" || req.method == "HEAD");
  for (int hop = 0; hop <= 10; ++hop) {
    // The token goes only to the host the user asked for (as requests' rebuild_auth does).
    const bool same_host = origin_of(url) == first_origin;
    perform_once(req, url, same_host, sink, max_body, resp);
    const bool redirect =
        resp.status == 301 || resp.status == 302 || resp.status == 303 || resp.status == 307 || resp.status == 308;
    if (!redirect || !may_follow) return resp;
    const std::string loc = resp.header("location");
    if (loc.empty()) return resp;
    const std::string next = resolve_location(url, loc);
    // Relative only: by its spelling, and where it leads (the same origin) as well.
    if (req.follow_relative_only && (!is_relative_reference(loc) || origin_of(next) != origin_of(url))) return resp;
    if (next.empty() || !is_http_url(next)) {
      resp.status = 0;  // no answer to use: a redirect that is not followed is a failure, not a retry
      resp.error = "redirect to '" + loc.substr(0, 200) + "' refused: only http:// and https:// URLs are followed";
      return resp;
    }
    url = next;
  }
  resp.status = 0;
  resp.error = "more than 10 redirects (a redirect loop?)";
  return resp;
}

bool is_retryable_status(long status) { return status == 429 || status >= 500; }

uint64_t request_count() { return g_requests.load(); }

RetryPolicy RetryPolicy::from_env() {
  RetryPolicy p;
  if (const char* v = env_nonempty("RC_NET_RETRIES")) p.attempts = std::max(1, std::atoi(v));
  if (const char* v = env_nonempty("RC_NET_BACKOFF_MS")) p.first_backoff_ms = std::max(0, std::atoi(v));
  return p;
}

void backoff_sleep(const RetryPolicy& p, int attempt) {
  long ms = p.first_backoff_ms;
  for (int i = 0; i < attempt && ms < 8000; ++i) ms *= 2;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 8000L)));
}

}  // namespace rc::net
