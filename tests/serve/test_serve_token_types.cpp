// Token types through the server's batcher: a BERT pair model (tests/data/tiny_families/
// bert-seq-pair) behind the real classifier backend. A job's token_types ride beside its ids,
// are padded with 0 and reach the model (run_with_types): HF's logits. Single texts batched
// with typed pairs run as type 0.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <nlohmann/json.hpp>

#include "roberta/classifier.h"
#include "serve/batcher.h"
#include "serve/serve_fixture.h"
#include "support/bert_pair_case.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;

namespace {

std::shared_ptr<InferenceBackend> load_backend(const rc::test::BertPairCase& c) {
  BackendOptions o;
  o.precision = "fp32";
  return make_classifier_backend(c.dir, o);
}

// A job and the promise its completion keeps (30 s bound on the wait).
struct Waiter {
  std::promise<void> done;
  std::shared_ptr<Job> job;
  Waiter(std::vector<std::vector<int32_t>> rows, std::vector<std::vector<int32_t>> types) {
    job = std::make_shared<Job>(std::move(rows), [this](Job&) { done.set_value(); });
    job->token_types = std::move(types);
  }
  void wait() { ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready); }
};

double max_logit_diff(const rc::Prediction& p, const float* want, int64_t K) {
  double d = 0;
  for (int64_t k = 0; k < K; ++k) d = std::max(d, double(std::fabs(p.logits[size_t(k)] - want[k])));
  return d;
}

TEST(ServeTokenTypes, BatcherCarriesTokenTypesToTheModel) {
  const rc::test::BertPairCase c;
  ASSERT_TRUE(c.has_type_one());
  auto backend = load_backend(c);
  std::vector<std::vector<int32_t>> rows, types;
  for (int64_t b = 0; b < c.B; ++b) {
    const std::string& pair = c.text_pairs[size_t(b)];
    const rc::PairEncoding e =
        backend->tokenize_input_with_types(c.texts[size_t(b)], &pair, backend->max_length(), rc::TruncationSide::right);
    EXPECT_EQ(e.ids, c.row_ids(b)) << "pair " << b;
    EXPECT_EQ(e.type_ids, c.row_types(b)) << "pair " << b;
    rows.push_back(e.ids);
    types.push_back(e.type_ids);
  }
  // A single text beside the pairs, in the same batch (the delay lets both jobs queue first).
  const std::string single = "hello world";
  const rc::PairEncoding one = backend->tokenize_input_with_types(single, nullptr, 0, rc::TruncationSide::right);
  EXPECT_EQ(one.type_ids, std::vector<int32_t>(one.ids.size(), 0));
  auto direct = rc::Classifier::load(c.dir, rc::LoadOptions{});
  const auto want_single = direct->predict(std::vector<std::string>{single});

  Scheduler scheduler(1, 1, nullptr);
  BatchLimits limits;
  limits.max_batch_delay_ms = 200;
  auto queue = scheduler.add_model("bert", backend, limits);
  Waiter pairs(rows, types), alone({one.ids}, {});
  scheduler.submit(queue, pairs.job);
  scheduler.submit(queue, alone.job);
  pairs.wait();
  alone.wait();
  ASSERT_FALSE(pairs.job->error);
  ASSERT_FALSE(alone.job->error);
  for (int64_t b = 0; b < c.B; ++b)
    EXPECT_LE(max_logit_diff(pairs.job->results[size_t(b)], c.logits.data() + b * c.K, c.K), 1e-4) << "pair " << b;
  EXPECT_LE(max_logit_diff(alone.job->results[0], want_single[0].logits.data(), c.K), 1e-5);

  // The same pairs without their types answer differently: the types made the match.
  Waiter untyped(rows, {});
  scheduler.submit(queue, untyped.job);
  untyped.wait();
  double diff = 0;
  for (int64_t b = 0; b < c.B; ++b)
    diff = std::max(diff, max_logit_diff(untyped.job->results[size_t(b)], c.logits.data() + b * c.K, c.K));
  EXPECT_GT(diff, 1e-3);  // measured 9.8e-3 (tests/model/test_family_pairs.cpp)

  // Types that do not fit their rows are refused at submit, before anything runs.
  types.back().push_back(0);
  Waiter bad(rows, types);
  EXPECT_THROW(scheduler.submit(queue, bad.job), rc::Error);
  scheduler.stop();
}

// A backend that reads no token types (the default run_with_types) runs all-zero types and
// refuses a type-1 row rather than answering it as type 0.
TEST(ServeTokenTypes, DefaultBackendRefusesTypeOne) {
  const FakeBackend fake({"neg", "pos"}, 16, 0);
  const std::vector<std::vector<int32_t>> rows = {{0, 5, 2}};
  EXPECT_EQ(fake.run_with_types(rows, std::vector<std::vector<int32_t>>{{0, 0, 0}}).size(), 1u);
  EXPECT_THROW(fake.run_with_types(rows, std::vector<std::vector<int32_t>>{{0, 1, 1}}), rc::Error);
}

// The HTTP routes carry a pair's token types to the batcher (Router::tokenize_inputs): a BERT
// pair on TEI's /predict (raw_scores), on /invocations and on KServe v2 answers HF's logits; the
// same pair sent without its second text's type 1 would not (BatcherCarriesTokenTypesToTheModel).
TEST(ServeTokenTypes, RoutesPassBertPairsTokenTypesToTheModel) {
  const rc::test::BertPairCase c;
  RealModelServer server(c.dir);
  json batch = json::array();
  for (int64_t b = 0; b < c.B; ++b) batch.push_back(json::array({c.texts[size_t(b)], c.text_pairs[size_t(b)]}));
  auto tei = call("POST", server.url("/predict"), json{{"inputs", batch}, {"raw_scores", true}}.dump());
  ASSERT_EQ(tei.status, 200) << tei.body;
  const json answers = json::parse(tei.body);
  ASSERT_EQ(int64_t(answers.size()), c.B) << tei.body;
  // TEI's raw_scores answer: per input, every label with its logit, best first.
  const auto labels = rc::Classifier::load(c.dir, rc::LoadOptions{})->labels();
  for (int64_t b = 0; b < c.B; ++b) {
    ASSERT_EQ(int64_t(answers[size_t(b)].size()), c.K) << tei.body;
    for (const auto& item : answers[size_t(b)]) {
      const auto at = std::find(labels.begin(), labels.end(), item.at("label").get<std::string>());
      ASSERT_NE(at, labels.end()) << item;
      EXPECT_NEAR(item.at("score").get<double>(), c.logits[size_t(b * c.K + (at - labels.begin()))], 1e-4)
          << "pair " << b << " label " << *at;
    }
  }
  // /invocations with {"text", "text_pair"}: the softmax of HF's logits.
  auto inv = call("POST", server.url("/invocations"),
                  json{{"inputs", {{"text", c.texts[0]}, {"text_pair", c.text_pairs[0]}}}}.dump());
  ASSERT_EQ(inv.status, 200) << inv.body;
  double z = 0, top = -1e30;
  for (int64_t k = 0; k < c.K; ++k) top = std::max(top, double(c.logits[size_t(k)]));
  for (int64_t k = 0; k < c.K; ++k) z += std::exp(double(c.logits[size_t(k)]) - top);
  EXPECT_NEAR(json::parse(inv.body).at(0).at("score").get<double>(), 1.0 / z, 1e-4) << inv.body;
  auto single = call("POST", server.url("/predict"), json{{"inputs", c.texts[0]}, {"raw_scores", true}}.dump());
  EXPECT_EQ(single.status, 200) << single.body;
}

}  // namespace
