// The mock Hub (tests/hub/mock_hub.py) started per test suite on loopback, plus helpers
// to switch its faults on and read its request log. Needs only net (the net tests use it as
// a plain HTTP server too).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "net/http.h"
#include "support/subprocess.h"

namespace rc::test {

class MockHub {
 public:
  bool start(const std::filesystem::path& dir) {
    port_file_ = dir / "ports.json";
    std::filesystem::remove(port_file_);
    proc_.start({"python3", std::string(RC_SOURCE_DIR) + "/tests/hub/mock_hub.py", "--data",
                 std::string(RC_TEST_DATA_DIR) + "/tiny", "--port-file", port_file_.string()},
                (dir / "mock_hub.log").string());
    const std::string text = wait_for_file(port_file_);
    if (text.empty()) return false;
    info_ = nlohmann::json::parse(text);
    return true;
  }
  void stop() { proc_.stop(); }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(info_["hub"].get<int>()); }
  std::string commit() const { return info_["commit"]; }
  std::string sha256() const { return info_["sha256"]; }
  void control(const nlohmann::json& j) const {
    net::Request r;
    r.method = "POST";
    r.url = endpoint() + "/_control";
    r.body = j.dump();
    ASSERT_EQ(net::perform(r).status, 200);
  }
  nlohmann::json log() const {
    net::Request r;
    r.url = endpoint() + "/_log";
    return nlohmann::json::parse(net::perform(r, {}, size_t(64) << 20).body);
  }
  // Requests in the log matching port ("hub"/"storage") and method.
  static int count(const nlohmann::json& log, const std::string& port, const std::string& method) {
    int n = 0;
    for (const auto& e : log) n += e["port"] == port && e["method"] == method;
    return n;
  }

 private:
  Subprocess proc_;
  std::filesystem::path port_file_;
  nlohmann::json info_;
};

}  // namespace rc::test
