// The rendezvous store behind gloo's connectFullMesh, over TCP at MASTER_ADDR:MASTER_PORT —
// what torchrun's TCPStore is to PyTorch (gloo itself ships only file, Redis and hash stores).
// Rank 0 serves a key-value map from a thread; every rank (0 included) is a client. Keys are
// written once and read by polling until they appear or the timeout passes, so a rank that
// never arrives ends the rendezvous with an error instead of a hang. The server holds at most
// 256 MiB and 4,096 clients, and is closed once every rank is connected.
#pragma once

#include <gloo/rendezvous/store.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace rc::dist {

// Resolves host (IPv4) and returns the dotted address; throws Errc::invalid_argument.
std::string resolve_ipv4(const std::string& host);
// The local IPv4 address this machine uses to reach addr (a UDP connect, no packet sent): the
// address other ranks can reach us at, right in network namespaces and multi-homed hosts.
std::string local_address_towards(const std::string& addr, int port);

class TcpStoreServer {
 public:
  explicit TcpStoreServer(int port);  // binds 0.0.0.0:port; throws Errc::io when it is taken
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

 private:
  void serve();
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::map<std::string, std::vector<char>> kv_;
  size_t bytes_ = 0;  // keys + values held: bounded, as is the number of clients
  std::thread thread_;
};

class TcpStore : public gloo::rendezvous::Store {
 public:
  // Connects to addr:port, retrying until `timeout` (rank 0's server may start later).
  TcpStore(const std::string& addr, int port, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;  // waits for the key
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  bool try_get(const std::string& key, std::vector<char>* out);
  int fd_ = -1;
  std::string where_;
  std::chrono::milliseconds timeout_;
};

}  // namespace rc::dist
