// gloo collectives over our TCP rendezvous (src/dist), two ranks as two threads on loopback:
// sums, max, broadcast, and a peer that goes away ends the survivor's call with an error
// within the timeout instead of a hang.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "dist/collective.h"
#include "dist/tcp_store.h"
#include "roberta/error.h"
#include "support/ports.h"
#include "two_rank_launch.h"

using namespace std::chrono_literals;

namespace {

using rc::test::free_port;
using rc::test::two_rank_launch;

}  // namespace

TEST(GlooCollective, SumMaxBroadcast) {
  const int port = free_port();
  auto run = [port](int rank) {
    auto c = rc::dist::connect_gloo(two_rank_launch(rank, port), 20s);
    std::vector<float> f(10'000'001);  // odd size, > one gloo segment
    for (size_t i = 0; i < f.size(); ++i) f[i] = float(rank + 1) * float(i % 7);
    c->allreduce_sum(f.data(), int64_t(f.size()));
    double d[2] = {0.5 * (rank + 1), double(rank)};
    c->allreduce_sum(d, 2);
    uint64_t u[2] = {uint64_t(rank) * 10, ~uint64_t(rank)};
    c->allreduce_max(u, 2);
    std::vector<char> b(1000, char(rank == 0 ? 'x' : 'y'));
    c->broadcast(b.data(), int64_t(b.size()), 0);
    bool ok = true;
    for (size_t i = 0; i < f.size(); ++i) ok = ok && f[i] == 3.0f * float(i % 7);
    ok = ok && d[0] == 1.5 && d[1] == 1.0 && u[0] == 10 && u[1] == ~uint64_t(0) && b[999] == 'x';
    c->barrier();
    return ok;
  };
  auto r1 = std::async(std::launch::async, run, 1);
  EXPECT_TRUE(run(0));
  EXPECT_TRUE(r1.get());
}

TEST(GlooCollective, DeadPeerEndsTheCallWithAnError) {
  const int port = free_port();
  auto peer = std::async(std::launch::async, [port] {
    auto c = rc::dist::connect_gloo(two_rank_launch(1, port), 20s);
    // leaves without joining the all-reduce: its sockets close
  });
  auto c = rc::dist::connect_gloo(two_rank_launch(0, port), 20s);
  peer.get();
  std::vector<float> f(1000, 1.0f);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    c->allreduce_sum(f.data(), int64_t(f.size()));
    FAIL() << "all-reduce with a departed peer returned";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::resource_exhausted);
    EXPECT_NE(std::string(e.what()).find("rank 0 of 2"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
}

TEST(GlooCollective, MissingRankTimesOutTheRendezvous) {
  const int port = free_port();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(rc::dist::connect_gloo(two_rank_launch(0, port), 2s), rc::Error);  // rank 1 never comes
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 15s);
}

TEST(TcpStore, SetGetAndBoundedWait) {
  const int port = free_port();
  rc::dist::TcpStoreServer server("127.0.0.1", port);
  rc::dist::TcpStore a("127.0.0.1", port, 2s), b("127.0.0.1", port, 2s);
  a.set("k", {'h', 'i'});
  EXPECT_EQ(b.get("k"), (std::vector<char>{'h', 'i'}));
  EXPECT_THROW(b.wait({"never"}, 300ms), rc::Error);
}
