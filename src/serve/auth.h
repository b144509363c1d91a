// Who may call what. One check at the server's dispatch, before any route runs, so a
// route added later is protected by default: only the few public routes below answer
// without a key.
//
//   - Inference port: with an inference key (--api-key, $API_KEY as TEI reads it,
//     $ROBERTA_API_KEY, or key_file.json's "inference" key) every route but the health
//     probes needs "Authorization: Bearer <key>".
//   - Management port: with a management key (--auth-token, $RC_AUTH_TOKEN, or
//     key_file.json's "management" key) every route but the health probes needs it.
//   - Model administration (POST /models, DELETE/PUT /models/...) changes what the server
//     runs: it lives on the management port. The inference port takes it only in SageMaker's
//     multi-model mode, whose contract puts it there (the platform is the container's only
//     client), with the management key when one is set; elsewhere it answers 403.
//
// The scheme is case-insensitive (RFC 7235: "bearer" works), keys are compared in
// constant time, and no key is ever logged or echoed.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace rc::serve {

struct AuthKey {
  std::string key;                                               // empty: no key, the routes it guards are open
  std::optional<std::chrono::system_clock::time_point> expires;  // key_file.json's "expiration time"
  bool empty() const { return key.empty(); }
};

struct AuthConfig {
  AuthKey inference;             // guards the inference port
  AuthKey management;            // guards the management port and model admin everywhere
  bool inference_admin = false;  // model admin on the inference port: SageMaker multi-model mode only
};

// TorchServe's key_file.json: {"management": {"key": ..., "expiration time": ...},
// "inference": {"key": ...}, "API": {"key": ...}}. The "API" key (TorchServe's token
// rotation API) has no use here and is ignored. Throws rc::Error(format) naming the file.
struct KeyFile {
  AuthKey inference, management;
};
KeyFile read_key_file(const std::filesystem::path& path);
KeyFile parse_key_file(std::string_view json_text, std::string_view source);

// The health probes that never need a key: /ping, /health, /v2/health/live,
// /v2/health/ready (path without query; a trailing '/' is ignored).
bool is_public_route(std::string_view path);
// Routes that change which models run: POST /models, and any non-GET on /models/<...>
// except the /models/<name>/invoke inference route.
bool is_model_admin_route(std::string_view method, std::string_view path);

// "Bearer <key>" with the scheme in any case and one or more spaces, compared with `key`
// in constant time (CRYPTO_memcmp over equal lengths; a length mismatch is compared
// against the key itself so the timing does not depend on where the bytes differ).
bool bearer_matches(std::string_view authorization_header, const AuthKey& key,
                    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// The keys in effect: `configured` (--api-key, --key-file), with --auth-token as the
// management key when the key file gave none.
AuthConfig effective_auth(AuthConfig configured, const std::string& auth_token, bool inference_admin);

// The decision for one request. status 0: allowed; else 401 or 403 with a message that
// never contains a key.
struct AuthDecision {
  int status = 0;
  std::string message;
};
AuthDecision authorize(const AuthConfig& config, bool management_port, std::string_view method, std::string_view path,
                       std::string_view authorization_header);

}  // namespace rc::serve
