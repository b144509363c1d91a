// Shared setup for the live server tests: a temp folder with a model store holding fake
// models, a Server on loopback with ephemeral ports, and call helpers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/fake_backend.h"
#include "serve/http_test_client.h"
#include "serve/http_server.h"

namespace rc::serve::testing {

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("rc-serve-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct LiveServer {
  TempDir tmp;
  std::filesystem::path store;
  std::unique_ptr<Server> server;

  explicit LiveServer(std::function<void(ServerConfig&)> tweak = {}, bool load_default = true) {
    fake_stats().reset();
    store = tmp.path() / "store";
    write_fake_model(store / "sentiment");
    ServerConfig c;
    c.host = "127.0.0.1";
    c.port = 0;
    c.management_port = 0;
    c.registry.model_store = store;
    c.registry.work_dir = tmp.path();
    c.registry.limits.max_batch_delay_ms = 2;
    c.compute_threads = 1;
    if (tweak) tweak(c);
    server = std::make_unique<Server>(c, load_fake);
    server->start();
    if (load_default) {
      ModelSpec spec;
      spec.name = "sentiment";
      spec.path = store / "sentiment";
      server->registry().load(spec);
    }
  }
  std::string url(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(server->port()) + target;
  }
  std::string mgmt(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(server->management_port()) + target;
  }
};

inline HttpResult call(const std::string& method, const std::string& url, const std::string& body = "",
                       const std::string& content_type = "application/json",
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
  HttpCall c;
  c.method = method;
  c.url = url;
  c.body = body;
  if (!content_type.empty()) headers.emplace_back("Content-Type", content_type);
  c.headers = std::move(headers);
  c.timeout = std::chrono::seconds(30);
  return http_call(c);
}

// Asserts the body is the JSON error shape and returns it.
inline nlohmann::json expect_error(const HttpResult& r, int status) {
  EXPECT_EQ(r.status, status) << r.body;
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("code") && j.contains("type") && j.contains("message")) << r.body;
  if (j.is_object() && j.contains("code")) {
    EXPECT_EQ(j["code"], status);
  }
  return j;
}

// The tiny masked-LM asset (assets/pretrained/tweets-tiny-mlm, 2 layers) with roberta-base's
// tokenizer, written to `dir`.
inline std::filesystem::path write_tiny_mlm(const std::filesystem::path& dir) {
  const std::filesystem::path src = RC_SOURCE_DIR;
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"})
    std::filesystem::copy_file(src / "assets/pretrained/tweets-tiny-mlm" / f, dir / f);
  for (const char* f : {"vocab.json", "merges.txt"})
    std::filesystem::copy_file(src / "assets/tokenizer/roberta-base" / f, dir / f);
  return dir;
}

// A Server with the real backends (make_classifier_backend: classifier, masked-LM or token
// classifier by the folder's architectures) on loopback, the model at `model` loaded as
// `name`. fp32 weights, no management port, 1 ms batching delay, unless `tweak` says otherwise.
struct RealModelServer {
  TempDir tmp;
  std::unique_ptr<Server> server;
  explicit RealModelServer(const std::filesystem::path& model, const std::function<void(ServerConfig&)>& tweak = {},
                           const std::string& name = "m") {
    ServerConfig c;
    c.host = "127.0.0.1";
    c.port = 0;
    c.management_port = -1;
    c.compute_threads = 1;
    c.registry.work_dir = tmp.path();
    c.registry.limits.max_batch_delay_ms = 1;
    c.registry.backend.precision = "fp32";  // the server's default is the CPU's best
    if (tweak) tweak(c);
    server = std::make_unique<Server>(c, make_classifier_backend);
    server->start();
    ModelSpec spec;
    spec.name = name;
    spec.path = model;
    server->registry().load(spec);
  }
  std::string url(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(server->port()) + target;
  }
  std::string mgmt(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(server->management_port()) + target;
  }
  HttpResult post(const std::string& target, const nlohmann::json& body) const {
    return call("POST", url(target), body.dump());
  }
};

}  // namespace rc::serve::testing
