// The rendezvous store against clients that are not ranks (red-team issue 27, finding 16): it
// listens on MASTER_ADDR only, a slow client delays nobody else, it cannot be filled, and a
// forged entry is an error naming the store and the rank instead of a gloo "enforce fail".
// The first three tests go through connect_gloo (the API every trainer uses), so they ran
// unchanged against the store before these fixes, and failed there.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "dist/collective.h"
#include "dist/tcp_store.h"
#include "roberta/error.h"
#include "support/ports.h"
#include "two_rank_launch.h"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

using rc::test::free_port;
using rc::test::two_rank_launch;

// A raw TCP connection to ip:port, or -1.
int dial(const char* ip, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(uint16_t(port));
  ::inet_pton(AF_INET, ip, &sa.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) return fd;
  ::close(fd);
  return -1;
}

// Waits until rank 0's store accepts connections on 127.0.0.1:port; returns one of them.
int dial_when_up(int port) {
  for (auto until = Clock::now() + 10s; Clock::now() < until; std::this_thread::sleep_for(20ms))
    if (const int fd = dial("127.0.0.1", port); fd >= 0) return fd;
  ADD_FAILURE() << "rank 0's store never came up on port " << port;
  return -1;
}

// True when the server closed fd within `within` (recv returns 0 or an error).
bool closed_by_server(int fd, std::chrono::milliseconds within) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, int(within.count())) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

std::string u32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

}  // namespace

TEST(TcpStoreHardening, ListensOnMasterAddrOnly) {
  const int port = free_port();
  auto rank0 = std::async(std::launch::async, [port] { return rc::dist::connect_gloo(two_rank_launch(0, port), 20s); });
  const int probe = dial_when_up(port);
  ASSERT_GE(probe, 0);
  ::close(probe);
  // 127.0.0.2 is this machine too (all of 127/8 is loopback) but not MASTER_ADDR: a store on
  // 0.0.0.0 answered there, as it would on every other interface of the host.
  const int other = dial("127.0.0.2", port);
  EXPECT_LT(other, 0) << "the store answered on 127.0.0.2 with MASTER_ADDR=127.0.0.1";
  if (other >= 0) ::close(other);
  auto rank1 = rc::dist::connect_gloo(two_rank_launch(1, port), 20s);
  rank0.get();
}

TEST(TcpStoreHardening, SlowClientsDelayNobody) {
  const int port = free_port();
  auto rank0 = std::async(std::launch::async, [port] { return rc::dist::connect_gloo(two_rank_launch(0, port), 20s); });
  std::vector<int> slow;
  for (int i = 0; i < 4; ++i) {  // each sends one byte of a request and stops: 10 s each, in turn, before
    const int fd = dial_when_up(port);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, "S", 1, MSG_NOSIGNAL), 1);
    slow.push_back(fd);
  }
  std::this_thread::sleep_for(100ms);  // the server has seen them
  const auto t0 = Clock::now();
  std::unique_ptr<rc::dist::Collective> rank1;
  EXPECT_NO_THROW(rank1 = rc::dist::connect_gloo(two_rank_launch(1, port), 20s));
  EXPECT_NO_THROW(rank0.get());
  EXPECT_LT(Clock::now() - t0, 8s) << "the rendezvous waited on the slow clients";
  for (int fd : slow) ::close(fd);
}

TEST(TcpStoreHardening, ForgedRankEntryNamesTheStoreAndTheRank) {
  const int port = free_port();
  auto rank0 = std::async(std::launch::async, [port] { return rc::dist::connect_gloo(two_rank_launch(0, port), 10s); });
  // Not rank 1: a client that writes rank 1's entry before rank 1 arrives.
  rc::dist::TcpStore forger("127.0.0.1", port, 10s);
  forger.set("rc/1", {'x'});
  try {
    rank0.get();
    FAIL() << "rank 0 connected to a forged rank 1";
  } catch (const rc::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.errc(), rc::Errc::format) << msg;
    EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << msg;
    EXPECT_NE(msg.find("entry for rank 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 0 of 2"), std::string::npos) << msg;
  } catch (const std::exception& e) {
    FAIL() << "not an rc::Error: " << e.what();
  }
}

TEST(TcpStoreHardening, KeysAreWrittenOnce) {
  const int port = free_port();
  rc::dist::TcpStoreServer server("127.0.0.1", port);
  rc::dist::TcpStore a("127.0.0.1", port, 2s), b("127.0.0.1", port, 2s);
  a.set("rc/1", {'o', 'k'});
  try {
    b.set("rc/1", {'x'});
    FAIL() << "a key was overwritten";
  } catch (const rc::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << msg;
    EXPECT_NE(msg.find("already set"), std::string::npos) << msg;
  }
  EXPECT_EQ(a.get("rc/1"), (std::vector<char>{'o', 'k'}));
}

TEST(TcpStoreHardening, KeysBytesAndClientsAreBounded) {
  rc::dist::TcpStoreLimits limits;
  limits.max_keys = 3;
  limits.max_value_bytes = 1000;
  limits.max_bytes = 2500;
  limits.max_clients = 3;
  const int port = free_port();
  rc::dist::TcpStoreServer server("127.0.0.1", port, limits);
  rc::dist::TcpStore a("127.0.0.1", port, 2s);
  a.set("k1", std::vector<char>(900, 'v'));
  a.set("k2", std::vector<char>(900, 'v'));
  try {  // 2 x (900 + overhead) held: a third 900 bytes would pass max_bytes
    a.set("k3", std::vector<char>(900, 'v'));
    FAIL() << "the store took more than max_bytes";
  } catch (const rc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("maximum of 2500 bytes"), std::string::npos) << e.what();
  }
  a.set("k3", {});
  try {
    a.set("k4", {});
    FAIL() << "the store took more than max_keys";
  } catch (const rc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("maximum of 3 keys"), std::string::npos) << e.what();
  }
  // A value over max_value_bytes is refused as soon as its length is read: the client is dropped
  // without the server reading (or allocating) the value.
  const int big = dial("127.0.0.1", port);
  ASSERT_GE(big, 0);
  const std::string req = "S" + u32(2) + "k5" + u32(1001);
  ASSERT_EQ(::send(big, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  EXPECT_TRUE(closed_by_server(big, 2s));
  ::close(big);
  // a is one client; two more fit, the fourth is closed on arrival.
  const int c2 = dial("127.0.0.1", port), c3 = dial("127.0.0.1", port);
  ASSERT_GE(c2, 0);
  ASSERT_GE(c3, 0);
  std::this_thread::sleep_for(200ms);  // accepted
  const int c4 = dial("127.0.0.1", port);
  ASSERT_GE(c4, 0);  // the kernel completes the handshake; the server then closes it
  EXPECT_TRUE(closed_by_server(c4, 2s));
  EXPECT_FALSE(closed_by_server(c2, 100ms));
  for (int fd : {c2, c3, c4}) ::close(fd);
  EXPECT_EQ(a.get("k1").size(), 900u);  // the store still answers its clients
}

TEST(TcpStoreHardening, HalfARequestTimesOutAlone) {
  rc::dist::TcpStoreLimits limits;
  limits.request_deadline = 2s;
  const int port = free_port();
  rc::dist::TcpStoreServer server("127.0.0.1", port, limits);
  const int slow = dial("127.0.0.1", port);
  ASSERT_GE(slow, 0);
  const std::string half = "G" + u32(5) + "ab";
  ASSERT_EQ(::send(slow, half.data(), half.size(), MSG_NOSIGNAL), ssize_t(half.size()));
  rc::dist::TcpStore a("127.0.0.1", port, 2s);
  const auto t0 = Clock::now();
  a.set("k", {'v'});  // served while the slow request is pending
  EXPECT_EQ(a.get("k"), std::vector<char>{'v'});
  EXPECT_LT(Clock::now() - t0, 1500ms);
  EXPECT_TRUE(closed_by_server(slow, 4s)) << "a request left half-sent was kept past its deadline";
  ::close(slow);
}

TEST(TcpStoreHardening, ValueSentInPiecesAndReadBackInFull) {
  const int port = free_port();
  rc::dist::TcpStoreServer server("127.0.0.1", port);
  const int raw = dial("127.0.0.1", port);
  ASSERT_GE(raw, 0);
  const std::string value(3 << 20, 'z');  // larger than a socket buffer: sent and answered in parts
  const std::string req = "S" + u32(1) + "v" + u32(uint32_t(value.size())) + value;
  for (size_t at = 0; at < req.size(); at += 100'000) {
    const size_t n = std::min<size_t>(100'000, req.size() - at);
    ASSERT_EQ(::send(raw, req.data() + at, n, MSG_NOSIGNAL), ssize_t(n));
  }
  char ack = 0;
  ASSERT_EQ(::recv(raw, &ack, 1, MSG_WAITALL), 1);
  EXPECT_EQ(ack, 'K');
  ::close(raw);
  rc::dist::TcpStore a("127.0.0.1", port, 5s);
  const std::vector<char> got = a.get("v");
  EXPECT_EQ(std::string(got.begin(), got.end()), value);
}
