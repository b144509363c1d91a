// serve_load: a closed-loop HTTP load generator for `roberta serve`, and the in-process
// baseline it is compared with.
//
//   serve_load --url http://127.0.0.1:8080/invocations --texts data/tweeteval/sentiment/test_text.txt
//              --concurrency 1,8,64,256 --duration 20          (one command line)
//   serve_load --baseline-model /tmp/rb-base --texts ... --batch-size 32 --duration 20 [--precision bf16]
//
// Load: C connections (keep-alive) on one Asio thread, each sending one text per request
// ({"inputs": text}, texts taken round-robin) as soon as its previous answer arrived.
// Prints one JSON line per concurrency: requests/s, p50/p90/p99 latency (ms), statuses.
// Baseline: rc::Classifier::predict over the same texts in batches, texts/s, in this
// process — the ceiling the server's batching should come close to.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

// Boost 1.74 asio/beast miss <utility> under GCC 12 in C++20 (std::exchange).
#include <utility>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "roberta/classifier.h"
#include "roberta/runtime.h"

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// http://host[:port][/path] (the load generator speaks plain HTTP/1.1 to a local server).
struct Url {
  std::string host, port = "80", target = "/";
};
Url parse_url(const std::string& url) {
  if (url.rfind("http://", 0) != 0) throw std::runtime_error("--url must start with http://, got " + url);
  const std::string rest = url.substr(7);
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  Url u;
  if (slash != std::string::npos) u.target = rest.substr(slash);
  const size_t colon = authority.rfind(':');
  u.host = authority.substr(0, colon);
  if (colon != std::string::npos) u.port = authority.substr(colon + 1);
  if (u.host.empty()) throw std::runtime_error("--url has no host: " + url);
  return u;
}

std::vector<std::string> read_lines(const std::string& path, size_t limit) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> out;
  std::string line;
  while (out.size() < limit && std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  if (out.empty()) throw std::runtime_error(path + " holds no texts");
  return out;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    out.push_back(std::stoi(s.substr(pos, end - pos)));
    pos = end + 1;
  }
  return out;
}

struct Stats {
  std::vector<double> latencies_ms;
  std::map<int, int64_t> statuses;
  int64_t transport_errors = 0;
  int64_t ok_in_window = 0;  // 200s completed before the deadline (steady-state throughput)
};

class Client : public std::enable_shared_from_this<Client> {
 public:
  Client(asio::io_context& ioc, const tcp::endpoint& ep, const Url& url, const std::vector<std::string>& bodies,
         size_t start, Clock::time_point deadline, Stats& stats)
      : stream_(ioc), ep_(ep), url_(url), bodies_(bodies), next_(start), deadline_(deadline), stats_(stats) {}
  void start() { connect(); }

 private:
  void connect() {
    stream_.expires_after(std::chrono::seconds(120));
    stream_.async_connect(ep_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->fail();
      self->send();
    });
  }
  void send() {
    if (Clock::now() >= deadline_) return;
    req_ = {http::verb::post, url_.target, 11};
    req_.set(http::field::host, url_.host);
    req_.set(http::field::content_type, "application/json");
    req_.body() = bodies_[next_++ % bodies_.size()];
    req_.prepare_payload();
    t0_ = Clock::now();
    stream_.expires_after(std::chrono::seconds(120));
    http::async_write(stream_, req_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->fail();
      self->res_ = {};
      http::async_read(self->stream_, self->buffer_, self->res_, [self](beast::error_code ec2, size_t) {
        if (ec2) return self->fail();
        self->stats_.latencies_ms.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - self->t0_).count());
        self->stats_.statuses[int(self->res_.result_int())]++;
        if (Clock::now() <= self->deadline_ && self->res_.result_int() == 200) self->stats_.ok_in_window++;
        if (!self->res_.keep_alive()) {
          beast::error_code ignored;
          self->stream_.socket().close(ignored);
          self->buffer_.clear();
          return self->connect();
        }
        self->send();
      });
    });
  }
  void fail() {
    stats_.transport_errors++;
    beast::error_code ignored;
    stream_.socket().close(ignored);
    buffer_.clear();
    if (Clock::now() < deadline_) connect();
  }

  beast::tcp_stream stream_;
  tcp::endpoint ep_;
  Url url_;
  const std::vector<std::string>& bodies_;
  size_t next_;
  Clock::time_point deadline_, t0_;
  Stats& stats_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
  return v[i];
}

void run_load(const std::string& url_text, const std::vector<std::string>& texts, const std::vector<int>& levels,
              double duration_s) {
  const Url url = parse_url(url_text);
  std::vector<std::string> bodies;
  for (const auto& t : texts)
    bodies.push_back(nlohmann::json{{"inputs", t}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  for (int c : levels) {
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    const tcp::endpoint ep = *resolver.resolve(url.host, url.port).begin();
    Stats stats;
    const auto t0 = Clock::now();
    const auto deadline = t0 + std::chrono::milliseconds(int64_t(duration_s * 1000));
    for (int i = 0; i < c; ++i)
      std::make_shared<Client>(ioc, ep, url, bodies, size_t(i) * 7919, deadline, stats)->start();
    ioc.run();  // clients stop sending at the deadline; in-flight answers still count
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    // Throughput over the timed window only: after the deadline the clients stop sending
    // and the tail drains at falling concurrency.
    nlohmann::json line = {{"concurrency", c},
                           {"seconds", elapsed},
                           {"requests", stats.latencies_ms.size()},
                           {"ok_per_s", double(stats.ok_in_window) / duration_s},
                           {"p50_ms", percentile(stats.latencies_ms, 0.50)},
                           {"p90_ms", percentile(stats.latencies_ms, 0.90)},
                           {"p99_ms", percentile(stats.latencies_ms, 0.99)},
                           {"transport_errors", stats.transport_errors}};
    nlohmann::json st = nlohmann::json::object();
    for (const auto& [code, n] : stats.statuses) st[std::to_string(code)] = n;
    line["statuses"] = st;
    std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
  }
}

void run_baseline(const std::string& model, const std::string& precision, const std::vector<std::string>& texts,
                  int batch, double duration_s, int threads) {
  rc::set_num_threads(threads);
  rc::LoadOptions load;
  load.precision = precision.empty() ? rc::default_precision() : rc::parse_precision(precision);
  auto clf = rc::Classifier::load(model, load);
  // Tokenize once, as the server does before queueing; time only the batched forward
  // passes over consecutive texts (what the batcher sees: arrival order, not sorted).
  std::vector<std::vector<int32_t>> rows;
  for (const auto& t : texts) rows.push_back(clf->tokenizer().encode(t, true, clf->max_length()));
  // Warm-up: one untimed pass over every batch, so shape-keyed caches (oneDNN primitives
  // per GEMM shape) are as warm as in a server that has been running; then time passes over
  // the same batches. Keep --max-texts modest (e.g. 320) or the warm-up takes long.
  for (size_t pos = 0; pos < rows.size(); pos += size_t(batch))
    clf->predict_ids(std::span(rows.data() + pos, std::min<size_t>(size_t(batch), rows.size() - pos)));
  const auto t0 = Clock::now();
  int64_t done = 0;
  size_t pos = 0;
  while (std::chrono::duration<double>(Clock::now() - t0).count() < duration_s) {
    const size_t n = std::min<size_t>(size_t(batch), rows.size() - pos);
    clf->predict_ids(std::span(rows.data() + pos, n));
    done += int64_t(n);
    pos = (pos + n) % rows.size();
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  nlohmann::json line0 = {{"baseline", "in-process predict_ids, arrival order"},
                          {"texts_per_s", double(done) / elapsed}};
  std::printf("%s\n", line0.dump().c_str());
  // The engine's best: predict() sorts the texts by length, so each batch pads little
  // (tokenization included, as in the server).
  const auto t1 = Clock::now();
  done = 0;
  while (std::chrono::duration<double>(Clock::now() - t1).count() < duration_s) {
    clf->predict(texts, batch);
    done += int64_t(texts.size());
  }
  elapsed = std::chrono::duration<double>(Clock::now() - t1).count();
  nlohmann::json line = {{"baseline", "in-process predict (length-sorted batches)"},
                         {"precision", rc::precision_name(load.precision)},
                         {"batch_size", batch},
                         {"threads", rc::num_threads()},
                         {"texts", done},
                         {"seconds", elapsed},
                         {"texts_per_s", double(done) / elapsed}};
  std::printf("%s\n", line.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, texts_path = "data/tweeteval/sentiment/test_text.txt", levels = "1,8,64,256", model, precision;
  double duration = 20;
  int batch = 32, threads = 0;
  size_t max_texts = 2000;
  // One branch a flag: a standalone tool, without the CLI's option library.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--url")
      url = value();
    else if (a == "--texts")
      texts_path = value();
    else if (a == "--concurrency")
      levels = value();
    else if (a == "--duration")
      duration = std::stod(value());
    else if (a == "--baseline-model")
      model = value();
    else if (a == "--precision")
      precision = value();
    else if (a == "--batch-size")
      batch = std::stoi(value());
    else if (a == "--threads")
      threads = std::stoi(value());
    else if (a == "--max-texts")
      max_texts = size_t(std::stoul(value()));
    else {
      std::fprintf(stderr, "unknown argument %s (see the header of bench/load/serve_load.cpp)\n", a.c_str());
      return 2;
    }
  }
  // Errors as one line (alike in shape to cli/main.cpp's handler; its own words and codes).
  try {
    const auto texts = read_lines(texts_path, max_texts);
    if (!model.empty()) run_baseline(model, precision, texts, batch, duration, threads);
    if (!url.empty()) run_load(url, texts, parse_list(levels), duration);
    if (model.empty() && url.empty()) {
      std::fprintf(stderr, "give --url (load) and/or --baseline-model (in-process baseline)\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_load: %s\n", e.what());
    return 1;
  }
  return 0;
}
