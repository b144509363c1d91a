// The rendezvous store behind gloo's connectFullMesh, over TCP at MASTER_ADDR:MASTER_PORT —
// what torchrun's TCPStore is to PyTorch (gloo itself ships only file, Redis and hash stores).
// Rank 0 serves a key-value map from a thread; every rank (0 included) is a client. Keys are
// written once and read by polling until they appear or the timeout passes, so a rank that
// never arrives ends the rendezvous with an error instead of a hang. The server is closed once
// every rank is connected.
//
// The port is unauthenticated (as torchrun's), so the server assumes nothing of its clients:
//   - it listens on MASTER_ADDR's interface only (127.0.0.1 stays on loopback), not 0.0.0.0;
//   - it multiplexes its clients with poll(): each has its own deadline, so a client that
//     sends half a request (or reads no reply) delays nobody but itself;
//   - keys, values, the number of keys, the bytes held and received, and the number of
//     clients are bounded (TcpStoreLimits), and a key once set cannot be overwritten.
#pragma once

#include <gloo/rendezvous/store.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace rc::dist {

// Resolves host (IPv4) and returns the dotted address; throws Errc::invalid_argument.
std::string resolve_ipv4(const std::string& host);
// The local IPv4 address this machine uses to reach addr (a UDP connect, no packet sent): the
// address other ranks can reach us at, right in network namespaces and multi-homed hosts.
std::string local_address_towards(const std::string& addr, int port);

struct TcpStoreLimits {
  uint32_t max_key_bytes = 4096;
  uint32_t max_value_bytes = 16u << 20;  // gloo stores world_size x 136 bytes per rank
  size_t max_keys = 65536;
  size_t max_bytes = size_t(256) << 20;  // held plus being received, all clients together
  size_t max_clients = 4096;             // connected at once; more are closed on arrival
  // A request must be read and answered within this, from its first byte.
  std::chrono::milliseconds request_deadline{10'000};
  // A client that sends nothing for this long is dropped (ranks poll every few milliseconds).
  std::chrono::milliseconds idle_limit{600'000};
};

// The limits for a rendezvous that waits up to `timeout`: a rank may be silent between two
// store calls for as long as its own setup takes (NCCL's init, bounded by the same timeout).
inline TcpStoreLimits rendezvous_store_limits(std::chrono::milliseconds timeout) {
  TcpStoreLimits limits;
  limits.idle_limit = std::max(limits.idle_limit, 2 * timeout);
  return limits;
}

class TcpStoreServer {
 public:
  // Listens on host's address (MASTER_ADDR, resolved) at port. When that address is not one of
  // this machine's (a NAT or service address), on the local address that routes to it.
  // Throws Errc::io when the port is taken.
  TcpStoreServer(const std::string& host, int port, const TcpStoreLimits& limits = {});
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  const std::string& address() const { return address_; }  // "ip:port" it listens on

 private:
  struct Client;
  void serve();
  bool step(Client& c);  // reads/answers what poll() reported; false: drop the client
  bool handle_request(Client& c);

  TcpStoreLimits limits_;
  int listen_fd_ = -1;
  std::string address_;
  std::atomic<bool> stop_{false};
  std::map<std::string, std::shared_ptr<const std::vector<char>>> kv_;
  size_t held_bytes_ = 0;       // keys + values + per-entry overhead in kv_
  size_t receiving_bytes_ = 0;  // declared sizes of the requests being received
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

  const std::string& where() const { return where_; }  // "addr:port", for error messages

 private:
  bool try_get(const std::string& key, std::vector<char>* out);
  int fd_ = -1;
  std::string where_;
  std::chrono::milliseconds timeout_;
};

}  // namespace rc::dist
