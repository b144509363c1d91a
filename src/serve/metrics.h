// Prometheus metrics for GET /metrics, in the text exposition format (version 0.0.4).
// Counters and histograms are keyed by their label set; every update takes one short
// mutex (a few per request, nothing per token), which is cheap next to a forward pass.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace rc::serve {

class Metrics {
 public:
  Metrics();

  // requests by route and status, and the end-to-end latency per route.
  void observe_request(const std::string& route, int status, double seconds);
  void observe_queue(const std::string& model, double seconds);     // per row
  void observe_tokenize(const std::string& model, double seconds);  // per request
  void observe_inference(const std::string& model, double seconds, int batch_rows, int64_t batch_tokens);
  void set_queue_depth(const std::string& model, int64_t rows);
  void set_model_load_seconds(const std::string& model, double seconds);
  void forget_model(const std::string& model);  // on unload: drop its gauges
  void add_connections(int delta);

  std::string render() const;  // the text format

 private:
  struct Histogram {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bucket (not cumulative); last is +Inf
    double sum = 0;
    uint64_t count = 0;
    void observe(double v);
  };
  using Labels = std::string;  // already rendered: route="/ping",status="200"
  Histogram& histogram(std::map<Labels, Histogram>& family, const Labels& labels, const std::vector<double>& bounds);

  mutable std::mutex mu_;
  std::vector<double> latency_bounds_, batch_bounds_, token_bounds_;
  std::map<Labels, uint64_t> requests_;
  std::map<Labels, Histogram> request_seconds_, queue_seconds_, tokenize_seconds_, inference_seconds_, batch_rows_,
      batch_tokens_;
  std::map<Labels, double> queue_depth_, load_seconds_;
  int64_t connections_ = 0;
};

// Escapes a label value for the text format (backslash, quote, newline).
std::string prometheus_escape(const std::string& value);

}  // namespace rc::serve
