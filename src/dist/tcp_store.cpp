// TCP rendezvous store (tcp_store.h). Wire format, both ways little-endian u32 lengths:
//   request  'S' klen key dlen data  -> reply 'K'
//   request  'G' klen key            -> reply 'N' (absent) or 'Y' dlen data
// Keys and values are bounded (kMaxKey, kMaxValue): a stray client cannot make the server
// allocate without limit.
#include "dist/tcp_store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace rc::dist {
namespace {

constexpr uint32_t kMaxKey = 4096, kMaxValue = 64u << 20;
constexpr size_t kMaxStoreBytes = size_t(256) << 20, kMaxClients = 4096;  // whole store
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

TcpStoreServer::TcpStoreServer(int port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  RC_CHECK(listen_fd_ >= 0, Errc::io, "socket: ", std::strerror(errno));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(uint16_t(port));
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(listen_fd_, 128) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    RC_THROW(Errc::io, "rank 0 cannot listen on port ", port, " for the rendezvous store", ": ", std::strerror(err),
             "\nHINT: choose a free MASTER_PORT (or RC_STORE_PORT; under torchrun the store uses MASTER_PORT+1)");
  }
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
}

void TcpStoreServer::serve() {
  std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
  while (!stop_.load()) {
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int c = ::accept(listen_fd_, nullptr, nullptr);
      if (c >= 0 && fds.size() > kMaxClients) {
        ::close(c);
      } else if (c >= 0) {
        fds.push_back({c, POLLIN, 0});
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const int fd = fds[i].fd;
      const auto deadline = Clock::now() + std::chrono::seconds(10);  // one request, once started
      char op = 0;
      std::vector<char> key, value;
      bool ok = read_all(fd, &op, 1, deadline) && read_blob(fd, key, kMaxKey, deadline);
      if (ok && op == 'S') {
        ok = read_blob(fd, value, kMaxValue, deadline) && bytes_ + key.size() + value.size() <= kMaxStoreBytes;
        if (ok) {
          bytes_ += key.size() + value.size();
          kv_[std::string(key.begin(), key.end())] = std::move(value);
        }
        ok = ok && write_all(fd, "K", 1);
      } else if (ok && op == 'G') {
        auto it = kv_.find(std::string(key.begin(), key.end()));
        if (it == kv_.end()) {
          ok = write_all(fd, "N", 1);
        } else {
          ok = write_all(fd, "Y", 1) && write_blob(fd, it->second.data(), uint32_t(it->second.size()));
        }
      } else {
        ok = false;
      }
      if (!ok) {  // closed, timed out or spoke another protocol: drop the client
        ::close(fd);
        fds.erase(fds.begin() + std::ptrdiff_t(i));
        --i;
      }
    }
  }
  for (size_t i = 1; i < fds.size(); ++i) ::close(fds[i].fd);
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
           ")\nHINT: check MASTER_ADDR/MASTER_PORT, that rank 0 started, and firewalls; --dist-timeout sets the wait");
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  RC_CHECK(key.size() <= kMaxKey && data.size() <= kMaxValue, Errc::invalid_argument, "rendezvous value too large");
  char ack = 0;
  const bool ok = write_all(fd_, "S", 1) && write_blob(fd_, key.data(), uint32_t(key.size())) &&
                  write_blob(fd_, data.data(), uint32_t(data.size())) &&
                  read_all(fd_, &ack, 1, Clock::now() + timeout_) && ack == 'K';
  RC_CHECK(ok, Errc::resource_exhausted, "rendezvous store at ", where_, " went away (rank 0 died?)",
           "\nHINT: see rank 0's log");
}

bool TcpStore::try_get(const std::string& key, std::vector<char>* out) {
  char found = 0;
  const auto deadline = Clock::now() + timeout_;
  bool ok =
      write_all(fd_, "G", 1) && write_blob(fd_, key.data(), uint32_t(key.size())) && read_all(fd_, &found, 1, deadline);
  if (ok && found == 'Y') ok = read_blob(fd_, *out, kMaxValue, deadline);
  RC_CHECK(ok && (found == 'Y' || found == 'N'), Errc::resource_exhausted, "rendezvous store at ", where_,
           " went away (rank 0 died?)", "\nHINT: see rank 0's log");
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
      RC_CHECK(Clock::now() < deadline, Errc::resource_exhausted, "rendezvous: '", k, "' did not appear within ",
               timeout.count() / 1000, " s: a rank did not start or died",
               "\nHINT: start every rank (WORLD_SIZE of them); --dist-timeout sets the wait");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace rc::dist
