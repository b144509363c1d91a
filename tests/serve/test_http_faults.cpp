// Live server on loopback under faults and load: batching under concurrency, a full queue
// (429 at once), the request timeout (504), clients that disconnect mid-request, slowloris
// and a thousand idle connections, malformed requests mixed into load, unloading a model
// with requests in flight, and the graceful drain. Every loop is bounded.
#include <gtest/gtest.h>

#include <utility>
#include <boost/asio.hpp>
#include <atomic>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// Polls cond every 10 ms for at most `limit`.
bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds limit = 10s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

struct HoldGuard {  // releases a held fake model even when an assertion fails
  HoldGuard() { fake_stats().hold = true; }
  ~HoldGuard() { fake_stats().hold = false; }
};

std::string raw_request(const std::string& body, const std::string& target = "/invocations") {
  return "POST " + target +
         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

double elapsed_seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST(HttpFaults, ConcurrentRequestsAreBatched) {
  LiveServer s;
  write_fake_model(s.store / "slow", 16, /*delay_ms=*/30);
  ASSERT_EQ(call("POST", s.mgmt("/models?url=slow&model_name=slow"), "", "").status, 200);
  fake_stats().reset();
  std::vector<std::future<int>> results;
  for (int i = 0; i < 16; ++i)
    results.push_back(std::async(std::launch::async, [&s, i] {
      return call("POST", s.url("/predictions/slow"), json{{"inputs", i % 2 ? "bad" : "good"}}.dump()).status;
    }));
  for (auto& r : results) EXPECT_EQ(r.get(), 200);
  std::lock_guard lock(fake_stats().mu);
  const auto& sizes = fake_stats().batch_sizes;
  int total = 0, biggest = 0;
  for (int b : sizes) total += b, biggest = std::max(biggest, b);
  EXPECT_EQ(total, 16);
  // 16 clients against a 30 ms model: while one batch runs the others queue up.
  EXPECT_GT(biggest, 1) << "batches: " << sizes.size();
  EXPECT_LT(sizes.size(), 16u);
}

TEST(HttpFaults, FullQueueIs429AtOnce) {
  LiveServer s([](ServerConfig& c) { c.registry.limits.queue_size = 4; });
  HoldGuard hold;
  auto first = std::async(std::launch::async,
                          [&] { return call("POST", s.url("/invocations"), R"({"inputs": ["a","b","c"]})").status; });
  ASSERT_TRUE(wait_for([] { return fake_stats().running.load() == 1; }));  // picked up and held
  auto second = std::async(std::launch::async,
                           [&] { return call("POST", s.url("/invocations"), R"({"inputs": ["a","b","c"]})").status; });
  ASSERT_TRUE(wait_for([&] {
    return call("GET", s.url("/metrics")).body.find("rc_queue_depth{model=\"sentiment:1.0\"} 3") != std::string::npos;
  }));
  const auto t0 = std::chrono::steady_clock::now();
  auto third = call("POST", s.url("/invocations"), R"({"inputs": ["a","b"]})");
  expect_error(third, 429);
  EXPECT_LT(elapsed_seconds(t0), 1.0);  // refused at once, not after waiting
  fake_stats().hold = false;
  EXPECT_EQ(first.get(), 200);
  EXPECT_EQ(second.get(), 200);
}

TEST(HttpFaults, RequestTimeoutIs504) {
  LiveServer s([](ServerConfig& c) { c.request_timeout = 300ms; });
  HoldGuard hold;
  const auto t0 = std::chrono::steady_clock::now();
  expect_error(call("POST", s.url("/invocations"), R"({"inputs": "x"})"), 504);
  EXPECT_LT(elapsed_seconds(t0), 5.0);
  fake_stats().hold = false;
  EXPECT_EQ(call("POST", s.url("/invocations"), R"({"inputs": "x"})").status, 200);
}

TEST(HttpFaults, ClientDisconnectsMidRequest) {
  LiveServer s;
  asio::io_context ioc;
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.server->port()));
  {
    HoldGuard hold;
    for (int i = 0; i < 5; ++i) {  // a full request, then gone before the answer
      tcp::socket sock(ioc);
      sock.connect(ep);
      asio::write(sock, asio::buffer(raw_request(R"({"inputs": "bye"})")));
    }
    ASSERT_TRUE(wait_for([] { return fake_stats().running.load() == 1; }));
    {  // half a request, then gone
      tcp::socket sock(ioc);
      sock.connect(ep);
      const std::string half = raw_request(R"({"inputs": "a longer body"})");
      asio::write(sock, asio::buffer(half.substr(0, half.size() - 5)));
    }
  }
  EXPECT_EQ(call("POST", s.url("/invocations"), R"({"inputs": "still here"})").status, 200);
  EXPECT_EQ(call("GET", s.url("/ping")).status, 200);
}

TEST(HttpFaults, SlowlorisAndManyIdleConnectionsDoNotBlockOthers) {
  LiveServer s([](ServerConfig& c) { c.read_timeout = 1500ms; });
  asio::io_context ioc;
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.server->port()));
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 1000; ++i) {
    idle.emplace_back(ioc);
    idle.back().connect(ep);
    if (i % 10 == 0) asio::write(idle.back(), asio::buffer(std::string("POST /invocations HTTP/1.1\r\nHost:")));
  }
  // A slowloris client: one header byte every 100 ms.
  tcp::socket slow(ioc);
  slow.connect(ep);
  std::atomic<bool> cut{false};
  std::thread trickler([&] {
    const std::string head =
        "POST /invocations HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    for (char c : head) {
      boost::system::error_code ec;
      asio::write(slow, asio::buffer(&c, 1), ec);
      if (ec) {
        cut = true;
        return;
      }
      std::this_thread::sleep_for(100ms);
    }
  });
  // Meanwhile ordinary clients are served promptly.
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(call("POST", s.url("/invocations"), R"({"inputs": "hi"})").status, 200);
  EXPECT_LT(elapsed_seconds(t0), 2.0);
  trickler.join();
  // The server hung up on the trickler after its read timeout (1.5 s < 7 s of trickling).
  EXPECT_TRUE(cut.load());
  std::vector<char> buf(16);
  boost::system::error_code ec;
  slow.read_some(asio::buffer(buf), ec);
  EXPECT_TRUE(ec) << "slowloris connection should have been closed";
}

TEST(HttpFaults, MalformedRequestsDuringLoad) {
  LiveServer s;
  std::atomic<int> ok{0}, bad{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&, t] {
      asio::io_context ioc;
      const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.server->port()));
      for (int i = 0; i < 40; ++i) {
        const int kind = (t * 40 + i) % 5;  // every 5th request is malformed, in 3 ways
        if (kind == 1) {
          auto r = call("POST", s.url("/invocations"), R"({"inputs": ["ok", )");
          (r.status == 400 ? bad : wrong)++;
        } else if (kind == 3) {
          tcp::socket sock(ioc);
          sock.connect(ep);
          asio::write(sock, asio::buffer(std::string("GARBAGE\x01\x02 / HTTP/9.9\r\n\r\n")));
          std::string reply(256, '\0');
          boost::system::error_code ec;
          const size_t n = sock.read_some(asio::buffer(reply), ec);
          (n > 12 && reply.substr(9, 3) == "400" ? bad : wrong)++;
        } else {
          auto r = call("POST", s.url("/invocations"), json{{"inputs", {"good", "bad"}}}.dump());
          (r.status == 200 ? ok : wrong)++;
        }
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(bad.load(), 64);
  EXPECT_EQ(ok.load(), 96);
  EXPECT_EQ(call("GET", s.url("/ping")).status, 200);
}

TEST(HttpFaults, UnloadWithRequestsInFlight) {
  LiveServer s;
  write_fake_model(s.store / "v2");
  ASSERT_EQ(call("POST", s.mgmt("/models?url=v2&model_name=sentiment&model_version=2.0"), "", "").status, 200);
  HoldGuard hold;
  std::vector<std::future<int>> v1, v2;
  for (int i = 0; i < 3; ++i)
    v1.push_back(std::async(std::launch::async, [&] {
      return call("POST", s.url("/predictions/sentiment/1.0"), R"({"inputs": "a"})").status;
    }));
  for (int i = 0; i < 2; ++i)
    v2.push_back(std::async(std::launch::async, [&] {
      return call("POST", s.url("/predictions/sentiment/2.0"), R"({"inputs": "b"})").status;
    }));
  ASSERT_TRUE(wait_for([] { return fake_stats().running.load() == 1; }));
  std::this_thread::sleep_for(50ms);  // let the other requests reach the queues
  auto del = call("DELETE", s.mgmt("/models/sentiment/1.0"), "", "");
  EXPECT_EQ(del.status, 200) << del.body;
  expect_error(call("POST", s.url("/predictions/sentiment/1.0"), R"({"inputs": "a"})"), 404);
  fake_stats().hold = false;
  for (auto& f : v1) EXPECT_EQ(f.get(), 200);  // accepted before the unload: still answered
  for (auto& f : v2) EXPECT_EQ(f.get(), 200);  // the other version never noticed
  EXPECT_EQ(call("POST", s.url("/predictions/sentiment"), R"({"inputs": "b"})").status, 200);
}

TEST(HttpFaults, ShutdownDrainsInFlightRequests) {
  LiveServer s;
  std::future<int> in_flight;
  {
    HoldGuard hold;
    in_flight = std::async(std::launch::async,
                           [&] { return call("POST", s.url("/invocations"), R"({"inputs": "x"})").status; });
    ASSERT_TRUE(wait_for([] { return fake_stats().running.load() == 1; }));
    s.server->shutdown();
    // New connections are refused once the listener closed.
    ASSERT_TRUE(wait_for([&] {
      try {
        call("GET", s.url("/ping"));
        return false;
      } catch (const rc::Error&) {
        return true;
      }
    }));
  }
  EXPECT_EQ(in_flight.get(), 200);
  s.server->wait();
}
