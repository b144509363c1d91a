#include "net/aws_credentials.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "core/env.h"
#include "core/json_depth.h"
#include "core/regular_file.h"
#include "net/http.h"

namespace fs = std::filesystem;

namespace rc::net {
namespace {

std::string env(const char* name) { return env_or_empty(name); }

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

fs::path home() { return env("HOME").empty() ? fs::path("/root") : fs::path(env("HOME")); }

std::string profile_name() {
  if (!env("AWS_PROFILE").empty()) return env("AWS_PROFILE");
  if (!env("AWS_DEFAULT_PROFILE").empty()) return env("AWS_DEFAULT_PROFILE");
  return "default";
}

// Real AWS config and credentials files are a few KB; a token file one line. The bounds
// keep /dev/zero (or any endless file) out of memory.
constexpr uint64_t kMaxAwsFileBytes = 1 << 20;
constexpr uint64_t kMaxTokenFileBytes = 64 << 10;

// The keys of one [section] of an INI file ({} when the file or section is absent). Read
// with read_regular_file: a FIFO there would block for good, a device never end.
std::map<std::string, std::string> ini_section(const fs::path& file, const std::string& section) {
  std::map<std::string, std::string> out;
  std::string text;
  try {
    text = read_regular_file(file, kMaxAwsFileBytes, "AWS config file", "AWS config files are a few KB");
  } catch (const Error& e) {
    if (e.errc() == Errc::not_found) return out;
    throw;
  }
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = trim(line.substr(1, line.size() - 2)) == section;
      continue;
    }
    const size_t eq = line.find('=');
    if (inside && eq != std::string::npos) out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

fs::path credentials_file() {
  return env("AWS_SHARED_CREDENTIALS_FILE").empty() ? home() / ".aws" / "credentials"
                                                    : fs::path(env("AWS_SHARED_CREDENTIALS_FILE"));
}
fs::path config_file() {
  return env("AWS_CONFIG_FILE").empty() ? home() / ".aws" / "config" : fs::path(env("AWS_CONFIG_FILE"));
}
std::map<std::string, std::string> config_profile() {
  const std::string p = profile_name();
  return ini_section(config_file(), p == "default" ? "default" : "profile " + p);
}

bool from_json(const std::string& body, AwsCredentials& c) {
  if (json_nesting_depth(body) > kMaxJsonDepth) return false;  // not credentials, whatever it is
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("AccessKeyId") || !j.contains("SecretAccessKey") || !j["AccessKeyId"].is_string() ||
      !j["SecretAccessKey"].is_string())
    return false;
  c.access_key = j["AccessKeyId"].get<std::string>();
  c.secret_key = j["SecretAccessKey"].get<std::string>();
  if (j.contains("Token") && j["Token"].is_string()) c.session_token = j["Token"].get<std::string>();
  return true;
}

Request metadata_request(const std::string& method, const std::string& url) {
  Request r;
  r.method = method;
  r.url = url;
  r.follow_redirects = false;
  r.connect_timeout_ms = 1000;  // as the SDKs: off EC2 this must fail fast
  r.total_timeout_ms = 2000;
  return r;
}

bool from_container(AwsCredentials& c) {
  std::string url;
  if (!env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").empty())
    url = "http://169.254.170.2" + env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  else if (!env("AWS_CONTAINER_CREDENTIALS_FULL_URI").empty())
    url = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  else
    return false;
  Request r = metadata_request("GET", url);
  std::string token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (!env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").empty())
    token = trim(read_regular_file(env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), kMaxTokenFileBytes,
                                   "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "a token file holds one line"));
  if (!token.empty()) r.headers.push_back({"Authorization", token});
  const Response resp = perform(r);
  RC_CHECK(resp.status == 200 && from_json(resp.body, c), Errc::not_found, "container credentials from ", url,
           " failed: ", resp.status ? "HTTP " + std::to_string(resp.status) : resp.error,
           "\nHINT: check the task's IAM role (AWS_CONTAINER_CREDENTIALS_* are set)");
  c.source = "container";
  return true;
}

bool from_imds(AwsCredentials& c) {
  std::string v = env("AWS_EC2_METADATA_DISABLED");
  for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (v == "true") return false;
  std::string base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT").empty() ? "http://169.254.169.254"
                                                                      : env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  while (!base.empty() && base.back() == '/') base.pop_back();
  Request tok = metadata_request("PUT", base + "/latest/api/token");
  tok.headers.push_back({"X-aws-ec2-metadata-token-ttl-seconds", "21600"});
  const Response t = perform(tok);
  if (t.status != 200 || t.body.empty()) return false;  // not on EC2 (or IMDSv2 off): not an error
  Request roles = metadata_request("GET", base + "/latest/meta-data/iam/security-credentials/");
  roles.headers.push_back({"X-aws-ec2-metadata-token", t.body});
  const Response rl = perform(roles);
  if (rl.status != 200) return false;
  const std::string role = trim(rl.body.substr(0, rl.body.find('\n')));
  if (role.empty() || role.find('/') != std::string::npos) return false;
  Request cred = metadata_request("GET", base + "/latest/meta-data/iam/security-credentials/" + role);
  cred.headers.push_back({"X-aws-ec2-metadata-token", t.body});
  const Response cr = perform(cred);
  if (cr.status != 200 || !from_json(cr.body, c)) return false;
  c.source = "instance metadata (role " + role + ")";
  return true;
}

}  // namespace

AwsCredentials resolve_aws_credentials() {
  AwsCredentials c;
  if (!env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty()) {
    c.access_key = env("AWS_ACCESS_KEY_ID");
    c.secret_key = env("AWS_SECRET_ACCESS_KEY");
    c.session_token = env("AWS_SESSION_TOKEN");
    c.source = "environment";
    return c;
  }
  const std::string profile = profile_name();
  for (const auto& kv : {ini_section(credentials_file(), profile), config_profile()}) {
    auto id = kv.find("aws_access_key_id"), secret = kv.find("aws_secret_access_key");
    if (id != kv.end() && secret != kv.end()) {
      c.access_key = id->second;
      c.secret_key = secret->second;
      if (auto tok = kv.find("aws_session_token"); tok != kv.end()) c.session_token = tok->second;
      c.source = "profile " + profile;
      return c;
    }
  }
  if (from_container(c) || from_imds(c)) return c;
  RC_THROW(Errc::not_found, "no AWS credentials found (environment, ", credentials_file().string(), " profile ",
           profile, ", container, instance metadata)",
           "\nHINT: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an IAM role");
}

std::string resolve_aws_region() {
  if (!env("AWS_REGION").empty()) return env("AWS_REGION");
  if (!env("AWS_DEFAULT_REGION").empty()) return env("AWS_DEFAULT_REGION");
  const auto cfg = config_profile();
  if (auto it = cfg.find("region"); it != cfg.end() && !it->second.empty()) return it->second;
  return "us-east-1";
}

}  // namespace rc::net
