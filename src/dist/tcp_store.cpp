// TCP rendezvous store (tcp_store.h). Wire format, both ways little-endian u32 lengths:
//   request  'S' klen key dlen data  -> reply 'K' (stored) or 'E' len reason (refused)
//   request  'G' klen key            -> reply 'N' (absent) or 'Y' dlen data
// The server reads each client's request into its own buffer as bytes arrive (poll(), non-
// blocking sockets) and answers it the same way, so no client waits on another. Sizes are
// checked as soon as a request declares them, before anything is allocated for it.
#include "dist/tcp_store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/check.h"

namespace rc::dist {
namespace {

// What a client assumes of the server it talks to: the default limits.
constexpr uint32_t kMaxKey = TcpStoreLimits{}.max_key_bytes, kMaxValue = TcpStoreLimits{}.max_value_bytes;
// Charged per entry on top of its key and value: the map node and the value's control block,
// so a flood of empty values is bounded by max_bytes too, not only by max_keys.
constexpr size_t kEntryOverhead = 128;
using Clock = std::chrono::steady_clock;

// Reads/writes exactly n bytes before the deadline; false on EOF, error or timeout.
bool read_all(int fd, void* p, size_t n, Clock::time_point deadline) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pf{fd, POLLIN, 0};
    const int pr = ::poll(&pf, 1, int(std::min<long long>(left, 1000)));
    if (pr < 0 && errno != EINTR) return false;
    if (pr <= 0) continue;
    const ssize_t r = ::recv(fd, c, n, 0);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    c += r;
    n -= size_t(r);
  }
  return true;
}

bool write_all(int fd, const void* p, size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t r = ::send(fd, c, n, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    c += r;
    n -= size_t(r);
  }
  return true;
}

bool write_blob(int fd, const char* data, uint32_t n) {
  return write_all(fd, &n, 4) && (n == 0 || write_all(fd, data, n));
}

bool read_blob(int fd, std::vector<char>& out, uint32_t max, Clock::time_point deadline) {
  uint32_t n = 0;
  if (!read_all(fd, &n, 4, deadline) || n > max) return false;
  out.resize(n);
  return n == 0 || read_all(fd, out.data(), n, deadline);
}

}  // namespace

std::string resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  RC_CHECK(rc == 0 && res, Errc::invalid_argument, "cannot resolve MASTER_ADDR '", host, "': ", gai_strerror(rc),
           "\nHINT: set MASTER_ADDR to rank 0's address or host name");
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
  ::freeaddrinfo(res);
  return buf;
}

std::string local_address_towards(const std::string& addr, int port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  RC_CHECK(fd >= 0, Errc::io, "socket: ", std::strerror(errno));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(uint16_t(port));
  ::inet_pton(AF_INET, resolve_ipv4(addr).c_str(), &sa.sin_addr);
  sockaddr_in me{};
  socklen_t len = sizeof me;
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0;
  const int err = errno;
  ::close(fd);
  RC_CHECK(ok, Errc::io, "no route to MASTER_ADDR ", addr, ": ", std::strerror(err));
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &me.sin_addr, buf, sizeof buf);
  return buf;
}

// ------------------------------------------------------------------------------ server

namespace {

uint32_t load_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string u32_bytes(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

// The size of the request that starts `in`, as far as `in` tells: `known` once both lengths are
// read. nullopt: not our protocol, or a length over the limits.
struct RequestSize {
  size_t bytes;
  bool known;
};
std::optional<RequestSize> request_size(std::string_view in, const TcpStoreLimits& limits) {
  if (in.size() < 5) return RequestSize{5, false};
  if (in[0] != 'S' && in[0] != 'G') return std::nullopt;
  const uint32_t klen = load_u32(in.data() + 1);
  if (klen > limits.max_key_bytes) return std::nullopt;
  if (in[0] == 'G') return RequestSize{5 + size_t(klen), true};
  if (in.size() < 9 + size_t(klen)) return RequestSize{9 + size_t(klen), false};
  const uint32_t dlen = load_u32(in.data() + 5 + klen);
  if (dlen > limits.max_value_bytes) return std::nullopt;
  return RequestSize{9 + size_t(klen) + dlen, true};
}

// The reply to a set that is refused.
std::string refusal(const std::string& why) { return "E" + u32_bytes(uint32_t(why.size())) + why; }

int bind_listener(const std::string& ip, int port, int* err) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(uint16_t(port));
  ::inet_pton(AF_INET, ip.c_str(), &sa.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 128) != 0) {
    *err = errno;
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

struct TcpStoreServer::Client {
  int fd = -1;
  std::string in;                                      // the request being received
  size_t reserved = 0;                                 // receiving_bytes_ charged for it, once its size is known
  std::string out_head;                                // the reply being sent: a header ...
  std::shared_ptr<const std::vector<char>> out_value;  // ... and the stored value, not copied
  size_t out_sent = 0;
  size_t discard = 0;          // bytes of a refused request still to read and forget ...
  std::string refusal;         // ... before this reply is sent
  Clock::time_point deadline;  // the request's while one is under way, else the idle limit
  size_t out_size() const { return out_head.size() + (out_value ? out_value->size() : 0); }
  bool sending() const { return out_sent < out_size(); }
};

TcpStoreServer::TcpStoreServer(const std::string& host, int port, const TcpStoreLimits& limits) : limits_(limits) {
  std::string ip = resolve_ipv4(host);
  int err = 0;
  listen_fd_ = bind_listener(ip, port, &err);
  if (listen_fd_ < 0 && err == EADDRNOTAVAIL) {  // not this machine's address: NAT or a service IP
    ip = local_address_towards(host, port);
    listen_fd_ = bind_listener(ip, port, &err);
  }
  RC_CHECK(listen_fd_ >= 0, Errc::io, "rank 0 cannot listen on ", ip, ":", port, " (MASTER_ADDR ", host,
           ") for the rendezvous store: ", std::strerror(err),
           "\nHINT: choose a free MASTER_PORT (or RC_STORE_PORT; under torchrun the store uses MASTER_PORT+1) and a "
           "MASTER_ADDR of rank 0's host");
  address_ = ip + ":" + std::to_string(port);
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
}

bool TcpStoreServer::handle_request(Client& c) {
  const uint32_t klen = load_u32(c.in.data() + 1);
  std::string key = c.in.substr(5, klen);
  c.out_head.clear();
  c.out_value.reset();
  c.out_sent = 0;
  auto refuse = [&](const std::string& why) { c.out_head = refusal(why); };
  if (c.in[0] == 'S') {
    const size_t cost = key.size() + (c.in.size() - 9 - klen) + kEntryOverhead;
    if (kv_.count(key)) {
      refuse("the key is already set (keys are written once)");
    } else if (kv_.size() >= limits_.max_keys) {
      refuse("the store holds its maximum of " + std::to_string(limits_.max_keys) + " keys");
    } else if (held_bytes_ + cost > limits_.max_bytes) {
      refuse("the store holds its maximum of " + std::to_string(limits_.max_bytes) + " bytes");
    } else {
      held_bytes_ += cost;
      kv_.emplace(std::move(key), std::make_shared<const std::vector<char>>(c.in.begin() + 9 + klen, c.in.end()));
      c.out_head = "K";
    }
  } else {
    auto it = kv_.find(key);
    if (it == kv_.end()) {
      c.out_head = "N";
    } else {
      c.out_head = "Y" + u32_bytes(uint32_t(it->second->size()));
      c.out_value = it->second;
    }
  }
  receiving_bytes_ -= c.reserved;
  c.reserved = 0;
  c.in.clear();
  c.in.shrink_to_fit();  // a finished request's buffer is not kept per client
  return true;
}

bool TcpStoreServer::step(Client& c) {
  if (c.sending()) {
    while (c.sending()) {
      const char* p;
      size_t n;
      if (c.out_sent < c.out_head.size()) {
        p = c.out_head.data() + c.out_sent;
        n = c.out_head.size() - c.out_sent;
      } else {
        const size_t off = c.out_sent - c.out_head.size();
        p = c.out_value->data() + off;
        n = c.out_value->size() - off;
      }
      const ssize_t r = ::send(c.fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c.out_sent += size_t(r);
    }
    c.out_head.clear();
    c.out_value.reset();
    c.out_sent = 0;
    c.deadline = Clock::now() + limits_.idle_limit;  // answered: idle until the next request
    return true;
  }
  char chunk[1 << 16];
  if (c.discard > 0) {  // a request refused as soon as its size was known: read, not kept
    const ssize_t r = ::recv(c.fd, chunk, std::min(c.discard, sizeof chunk), MSG_DONTWAIT);
    if (r == 0) return false;
    if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c.discard -= size_t(r);
    if (c.discard > 0) return true;
    c.out_head = std::move(c.refusal);
    c.refusal.clear();
    return step(c);
  }
  const std::optional<RequestSize> size = request_size(c.in, limits_);
  if (!size) return false;
  const size_t want = std::min(size->bytes - c.in.size(), sizeof chunk);
  const ssize_t r = ::recv(c.fd, chunk, want, MSG_DONTWAIT);
  if (r == 0) return false;  // the client left
  if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  if (c.in.empty()) c.deadline = Clock::now() + limits_.request_deadline;
  c.in.append(chunk, size_t(r));
  for (;;) {  // the lengths read so far may tell more of the size
    const std::optional<RequestSize> s = request_size(c.in, limits_);
    if (!s) return false;  // not our protocol, or a key or value over the limits
    if (s->known && c.reserved == 0) {
      if (limits_.max_bytes - std::min(limits_.max_bytes, held_bytes_ + receiving_bytes_) < s->bytes) {
        c.discard = s->bytes - c.in.size();
        c.refusal = refusal("the store holds its maximum of " + std::to_string(limits_.max_bytes) + " bytes");
        c.in.clear();
        c.in.shrink_to_fit();
        if (c.discard > 0) return true;
        c.out_head = std::move(c.refusal);
        c.refusal.clear();
        return step(c);
      }
      receiving_bytes_ += s->bytes;
      c.reserved = s->bytes;
      c.in.reserve(s->bytes);  // exactly what was charged, not a doubling string's spare
    }
    if (c.in.size() < s->bytes) return true;  // wait for more
    if (s->known) break;
  }
  return handle_request(c) && step(c);  // try to answer at once
}

void TcpStoreServer::serve() {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<pollfd> fds;
  auto drop = [&](size_t i) {
    ::close(clients[i]->fd);
    receiving_bytes_ -= clients[i]->reserved;
    clients.erase(clients.begin() + std::ptrdiff_t(i));
  };
  Clock::time_point accept_paused_until{};
  while (!stop_.load()) {
    const auto now = Clock::now();
    fds.assign(1, pollfd{listen_fd_, short(now >= accept_paused_until ? POLLIN : 0), 0});
    for (const auto& c : clients) fds.push_back({c->fd, short(c->sending() ? POLLOUT : POLLIN), 0});
    if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) break;
    // Clients first, by the index poll() saw them at; then deadlines; then new arrivals.
    for (size_t i = clients.size(); i-- > 0;)
      if (fds[i + 1].revents != 0 && !step(*clients[i])) drop(i);
    const auto after = Clock::now();
    for (size_t i = clients.size(); i-- > 0;)
      if (after > clients[i]->deadline) drop(i);  // a slow or silent client is only its own problem
    if (!(fds[0].revents & POLLIN)) continue;
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
          accept_paused_until = after + std::chrono::milliseconds(100);  // poll() would spin on it
        break;
      }
      if (clients.size() >= limits_.max_clients) {
        ::close(fd);
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Client>();
      c->fd = fd;
      c->deadline = after + limits_.idle_limit;
      clients.push_back(std::move(c));
    }
  }
  for (const auto& c : clients) ::close(c->fd);
}

// ------------------------------------------------------------------------------ client

TcpStore::TcpStore(const std::string& addr, int port, std::chrono::milliseconds timeout)
    : where_(addr + ":" + std::to_string(port)), timeout_(timeout) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(uint16_t(port));
  ::inet_pton(AF_INET, resolve_ipv4(addr).c_str(), &sa.sin_addr);
  const auto deadline = Clock::now() + timeout;
  int last_err = 0;
  while (Clock::now() < deadline) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    RC_CHECK(fd_ >= 0, Errc::io, "socket: ", std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      const int one = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return;
    }
    last_err = errno;
    ::close(fd_);
    fd_ = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  RC_THROW(Errc::resource_exhausted, "rendezvous: rank 0 at ", where_, " did not answer within ",
           timeout.count() / 1000, " s (", std::strerror(last_err),
           ")\nHINT: check MASTER_ADDR/MASTER_PORT, that rank 0 started, and firewalls; rank 0 listens on the address "
           "MASTER_ADDR resolves to on its own host (a name that resolves to 127.x there serves that host only); "
           "--dist-timeout sets the wait");
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  RC_CHECK(key.size() <= kMaxKey && data.size() <= kMaxValue, Errc::invalid_argument, "rendezvous store at ", where_,
           ": '", key, "' is too large to store (", data.size(), " bytes; at most ", kMaxValue, ")");
  char ack = 0;
  const auto deadline = Clock::now() + timeout_;
  const bool ok = write_all(fd_, "S", 1) && write_blob(fd_, key.data(), uint32_t(key.size())) &&
                  write_blob(fd_, data.data(), uint32_t(data.size())) && read_all(fd_, &ack, 1, deadline);
  std::vector<char> why;
  if (ok && ack == 'E' && read_blob(fd_, why, 1024, deadline))
    RC_THROW(
        Errc::resource_exhausted, "rendezvous store at ", where_, " refused '", key,
        "': ", std::string(why.begin(), why.end()),
        "\nHINT: is another job (or a stray client) using this MASTER_ADDR:MASTER_PORT? give each job its own port");
  RC_CHECK(ok && ack == 'K', Errc::resource_exhausted, "rendezvous store at ", where_,
           " went away (rank 0 died, or it dropped this client as too slow)", "\nHINT: see rank 0's log");
}

bool TcpStore::try_get(const std::string& key, std::vector<char>* out) {
  char found = 0;
  const auto deadline = Clock::now() + timeout_;
  bool ok =
      write_all(fd_, "G", 1) && write_blob(fd_, key.data(), uint32_t(key.size())) && read_all(fd_, &found, 1, deadline);
  if (ok && found == 'Y') ok = read_blob(fd_, *out, kMaxValue, deadline);
  RC_CHECK(ok && (found == 'Y' || found == 'N'), Errc::resource_exhausted, "rendezvous store at ", where_,
           " went away (rank 0 died, or it dropped this client as too slow)", "\nHINT: see rank 0's log");
  return found == 'Y';
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key});
  std::vector<char> v;
  try_get(key, &v);
  return v;
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<char> scratch;
  for (const auto& k : keys) {
    while (!try_get(k, &scratch)) {
      RC_CHECK(Clock::now() < deadline, Errc::resource_exhausted, "rendezvous store at ", where_, ": '", k,
               "' did not appear within ", timeout.count() / 1000, " s: a rank did not start or died",
               "\nHINT: start every rank (WORLD_SIZE of them); --dist-timeout sets the wait");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace rc::dist
