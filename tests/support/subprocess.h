// A child process for live tests (mock servers, the roberta binary): started with
// posix_spawnp, stopped with SIGTERM then SIGKILL, reaped. Loopback only.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/emulator.h"  // emulator
#include "support/files.h"     // slurp
#include "support/ports.h"     // free_port

extern char** environ;

namespace rc::test {

class Subprocess {
 public:
  Subprocess() = default;
  // argv[0] is looked up on PATH. stdout/stderr go to `log` when given.
  explicit Subprocess(const std::vector<std::string>& argv, const std::string& log = "") { start(argv, log); }
  ~Subprocess() { stop(); }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  bool start(const std::vector<std::string>& argv, const std::string& log = "") {
    // One of our binaries (it lives in the build folder) runs through the emulator in a
    // cross-build's test run (emulator.h); host programs (python3, node, nginx) do not.
    std::vector<std::string> full;
#ifdef RC_BINARY_DIR
    if (!emulator().empty() && !argv.empty() && argv[0].rfind(std::string(RC_BINARY_DIR) + "/", 0) == 0)
      full.push_back(emulator());
#endif
    full.insert(full.end(), argv.begin(), argv.end());
    std::vector<char*> args;
    for (const auto& a : full) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (!log.empty()) {
      posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_adddup2(&fa, 1, 2);
    }
    const int rc = posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) pid_ = -1;
    return pid_ > 0;
  }
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Waits for a file written (atomically) by a child; "" on timeout.
inline std::string wait_for_file(const std::filesystem::path& p, double seconds = 20) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    std::ifstream in(p);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      if (!ss.str().empty()) return ss.str();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "";
}

inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace rc::test
