// Loopback ports for live tests (mock servers, rendezvous stores, the roberta binary).
#pragma once

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

namespace rc::test {

// True when a TCP socket can bind `port` on every interface right now.
inline bool port_is_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A port P such that P and P + 1 are both free right now (a rank's store under torchrun sits
// on MASTER_PORT + 1). Taken from below the kernel's ephemeral range: a port the kernel handed
// out by bind(0) is one that outgoing connections (torchrun's own clients, other tests) can
// take the next moment, and P + 1 is exactly where connect() looks first. CI once failed on
// that: rank 0's store found MASTER_PORT + 1 taken by a client socket. Each process starts
// from its own pid-derived offset so parallel tests rarely probe the same ports.
inline int free_port() {
  int low = 32768;
  {
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    int lo = 0, hi = 0;
    if (range >> lo >> hi && lo > 0) low = lo;
  }
  const int first = low > 12000 ? 10000 : 1024, span = (low > 12000 ? low : 65000) - first - 2;
  static std::atomic<int> next{static_cast<int>(::getpid()) * 37};
  for (int tries = 0; tries < 4096; ++tries) {
    const int p = first + (next.fetch_add(2) % span + span) % span;
    if (port_is_free(p) && port_is_free(p + 1)) return p;
  }
  return first;  // every probe failed: the caller's bind reports it
}

}  // namespace rc::test
