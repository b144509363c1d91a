// Request authorization (see auth.h).
#include "serve/auth.h"

#include <openssl/crypto.h>

#include <cctype>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_depth.h"
#include "io/atomic_file.h"

namespace rc::serve {
namespace {

std::string_view trim_slashes(std::string_view path) {
  if (const size_t q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return path;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// "2024-02-16T21:12:24.801167Z" (what TorchServe writes): UTC, fraction ignored.
std::optional<std::chrono::system_clock::time_point> parse_utc(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return std::nullopt;
  // system_clock counts nanoseconds: it ends in 2262. Later dates mean "never".
  if (tm.tm_year + 1900 >= 2262) return std::chrono::system_clock::time_point::max();
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

AuthKey key_from(const nlohmann::json& j, const char* name, std::string_view source) {
  AuthKey k;
  auto it = j.find(name);
  if (it == j.end()) return k;
  RC_CHECK(it->is_object() && it->contains("key") && (*it)["key"].is_string(), Errc::format, source, ": \"", name,
           "\" must be an object with a string \"key\"");
  k.key = (*it)["key"].get<std::string>();
  RC_CHECK(!k.key.empty(), Errc::format, source, ": \"", name, "\" has an empty key");
  if (auto e = it->find("expiration time"); e != it->end() && e->is_string()) {
    k.expires = parse_utc(e->get<std::string>());
    RC_CHECK(k.expires.has_value(), Errc::format, source, ": \"", name,
             "\" has an unreadable \"expiration time\" (expected 2024-02-16T21:12:24Z)");
  }
  return k;
}

}  // namespace

KeyFile parse_key_file(std::string_view json_text, std::string_view source) {
  check_json_depth(json_text, source);
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  RC_CHECK(j.is_object(), Errc::format, source,
           ": not a JSON object (TorchServe's key_file.json is "
           "{\"management\": {\"key\": ...}, \"inference\": {\"key\": ...}})");
  KeyFile k;
  k.inference = key_from(j, "inference", source);
  k.management = key_from(j, "management", source);
  RC_CHECK(!k.inference.empty() || !k.management.empty(), Errc::format, source,
           ": holds neither an \"inference\" nor a \"management\" key");
  return k;
}

KeyFile read_key_file(const std::filesystem::path& path) { return parse_key_file(io::read_file(path), path.string()); }

bool is_public_route(std::string_view path) {
  path = trim_slashes(path);
  return path == "/ping" || path == "/health" || path == "/v2/health/live" || path == "/v2/health/ready";
}

bool is_model_admin_route(std::string_view method, std::string_view path) {
  path = trim_slashes(path);
  if (method == "GET" || method == "HEAD") return false;
  if (path == "/models") return method == "POST";
  if (path.rfind("/models/", 0) != 0) return false;
  // /models/<name>/invoke is SageMaker's multi-model inference route, not admin.
  const std::string_view rest = path.substr(8);
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos && rest.substr(slash) == "/invoke")
    return false;
  return true;
}

bool bearer_matches(std::string_view header, const AuthKey& key, std::chrono::system_clock::time_point now) {
  if (key.empty()) return false;
  if (header.size() < 7 || !iequals(header.substr(0, 6), "bearer") || header[6] != ' ') return false;
  std::string_view got = header.substr(7);
  while (!got.empty() && got.front() == ' ') got.remove_prefix(1);
  while (!got.empty() && (got.back() == ' ' || got.back() == '\t')) got.remove_suffix(1);
  const std::string& want = key.key;
  // Same number of bytes compared whatever was sent: a wrong length compares the key with
  // itself and fails on the length test, so timing reveals neither bytes nor where they differ.
  const bool same_length = got.size() == want.size();
  const char* p = same_length ? got.data() : want.data();
  const bool bytes_equal = CRYPTO_memcmp(p, want.data(), want.size()) == 0;
  if (!(same_length & bytes_equal)) return false;
  return !key.expires || now < *key.expires;
}

AuthConfig effective_auth(AuthConfig a, const std::string& auth_token, bool inference_admin) {
  if (a.management.empty()) a.management.key = auth_token;
  a.inference_admin = inference_admin;
  return a;
}

AuthDecision authorize(const AuthConfig& config, bool management_port, std::string_view method, std::string_view path,
                       std::string_view authorization) {
  if (is_public_route(path)) return {};
  if (!management_port && is_model_admin_route(method, path)) {
    // Outside SageMaker's multi-model contract model admin lives on the management port only,
    // whatever key is sent: loopback is no guard (any local process, a browser's request).
    if (!config.inference_admin)
      return {403,
              "model administration is on the management port (--management-port, 127.0.0.1:8081 by default); the "
              "inference port takes it only in SageMaker multi-model mode (SAGEMAKER_MULTI_MODEL=true)"};
    // One Authorization header carries one key: model admin is decided by the management
    // key alone when there is one.
    if (!config.management.empty()) {
      if (bearer_matches(authorization, config.management)) return {};
      return {401, "model administration needs 'Authorization: Bearer <key>' with the server's management key"};
    }
  }
  const AuthKey& port_key = management_port ? config.management : config.inference;
  if (port_key.empty() || bearer_matches(authorization, port_key)) return {};
  const std::string which = management_port ? "management" : "inference";
  const bool expired = port_key.expires && bearer_matches(authorization, AuthKey{port_key.key, std::nullopt});
  return {401, expired ? "the " + which + " key has expired; issue a new key_file.json"
                       : "this route needs 'Authorization: Bearer <key>' with the server's " + which + " key"};
}

}  // namespace rc::serve
