// A FIFO at a path a reader is given, with a writer that feeds it `text` if (and only if) a
// reader opens it within `seconds` and while the feeder lives. Code that opens a FIFO blocking
// gets the text and carries on, so a regression test fails instead of hanging; code that
// refuses FIFOs never opens it, and the writer gives up when the feeder goes (three of the
// tests that use it waited out the whole 2 s before: 2.0-2.5 s each, now 0.03-0.7 s).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace rc::test {

class FifoFeeder {
 public:
  FifoFeeder(std::filesystem::path path, std::string text, double seconds = 2.0) : path_(std::move(path)) {
    std::filesystem::remove(path_);
    ok_ = ::mkfifo(path_.c_str(), 0600) == 0;
    if (!ok_) return;
    writer_ = std::thread([p = path_, text = std::move(text), seconds, stop = &stop_] {
      // A reader that opens and closes at once (to refuse the FIFO) makes the write EPIPE:
      // blocked here, SIGPIPE (sent to this thread) cannot end the test process.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      while (!stop->load() && std::chrono::steady_clock::now() < until) {
        // Non-blocking: fails (ENXIO) while no reader has it open.
        const int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
          if (::write(fd, text.data(), text.size()) < 0) {
          }
          ::close(fd);
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~FifoFeeder() {
    stop_.store(true);
    if (writer_.joinable()) writer_.join();
    std::filesystem::remove(path_);
  }
  FifoFeeder(const FifoFeeder&) = delete;
  FifoFeeder& operator=(const FifoFeeder&) = delete;
  bool ok() const { return ok_; }

 private:
  std::filesystem::path path_;
  bool ok_ = false;
  std::atomic<bool> stop_{false};  // declared before writer_, which reads it
  std::thread writer_;
};

}  // namespace rc::test
