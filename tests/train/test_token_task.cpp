// Token classification (NER) through the training loop (issue 29): `fit` with the token task
// trains a RobertaForTokenClassification from JSONL or CoNLL data, reports seqeval's metrics,
// saves what transformers reads (architectures, no problem_type), `evaluate` agrees with the
// run, and the TokenClassifier answers as the pipeline does: every entity's [start, end) is the
// text its word stands for. Bad data is refused naming file and line, before anything is written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/check.h"
#include "model/token_classifier.h"
#include "roberta/trainer.h"
#include "support/files.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace rc;

namespace {

using rc::test::kTiny;

class TokenTask : public ::testing::Test {
 protected:
  fs::path root;
  void SetUp() override {
    root = fs::temp_directory_path() / ("rc_token_task_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root / "data");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root);
  }
  // Sentences where a name is a person and a city a place: learnable in a few dozen steps.
  void ner_set(bool conll) {
    std::mt19937 rng(7);
    const std::vector<std::string> names = {"Ann", "Bob", "Carl"}, places = {"Paris", "Rome"},
                                   other = {"went", "to", "saw", "the", "city", "today"};
    for (const char* split : {"train", "val", "test"}) {
      std::string s;
      const int n = std::string(split) == "train" ? 80 : 20;
      for (int i = 0; i < n; ++i) {
        std::vector<std::string> toks, tags;
        for (int w = 0; w < 3 + int(rng() % 5); ++w) {
          const unsigned r = rng() % 10;
          if (r < 2) {
            toks.push_back(names[rng() % names.size()]);
            tags.push_back("B-PER");
          } else if (r < 4) {
            toks.push_back(places[rng() % places.size()]);
            tags.push_back("B-LOC");
          } else {
            toks.push_back(other[rng() % other.size()]);
            tags.push_back("O");
          }
        }
        if (conll) {
          for (size_t k = 0; k < toks.size(); ++k) s += toks[k] + " " + tags[k] + "\n";
          s += "\n";
        } else {
          s += json{{"tokens", toks}, {"ner_tags", tags}}.dump() + "\n";
        }
      }
      std::ofstream(root / "data" / (std::string(split) + (conll ? ".conll" : ".jsonl"))) << s;
    }
  }
  TrainOptions options() {
    TrainOptions o;
    o.model_dir = kTiny;
    o.data = root / "data";
    o.output_dir = root / "out";
    o.task = "token-classification";
    o.max_steps = 40;
    o.batch_size = 8;
    o.lr = 3e-3;
    o.eval_every = 20;
    o.progress = 0;
    return o;
  }
};

}  // namespace

TEST_F(TokenTask, TrainsEvaluatesAndTagsAsThePipeline) {
  ner_set(false);
  const TrainSummary s = fit(options());
  const json cfg = json::parse(std::ifstream(root / "out/config.json"));
  EXPECT_EQ(cfg["architectures"][0], "RobertaForTokenClassification");
  EXPECT_FALSE(cfg.contains("problem_type"));  // transformers leaves it unset for this head
  EXPECT_EQ(cfg["id2label"]["0"], "B-LOC");    // run_ner.py's sorted label list
  const json args = json::parse(std::ifstream(root / "out/training_args.json"));
  EXPECT_EQ(args["metric_for_best_model"], "f1");
  ASSERT_TRUE(s.test);
  double f1 = -1;
  for (const auto& [k, v] : s.test->metrics)
    if (k == "f1") f1 = v;
  EXPECT_GT(f1, 0.8);  // the rule is learnable in 40 steps; an untrained head scores ~0
  EXPECT_EQ(s.test->labels, (std::vector<std::string>{"LOC", "PER"}));  // per entity type

  EvalOptions eo;
  eo.model_dir = root / "out";
  eo.data = root / "data";
  const EvalResult e = evaluate(eo);
  ASSERT_EQ(e.metrics.size(), s.test->metrics.size());
  for (size_t i = 0; i < e.metrics.size(); ++i) EXPECT_DOUBLE_EQ(e.metrics[i].second, s.test->metrics[i].second);
  EXPECT_DOUBLE_EQ(e.loss, s.test->loss);

  auto tagger = model::TokenClassifier::load(root / "out");
  const std::vector<std::string> texts = {"Ann went to Rome today", "the city  saw Bob", "Paris"};
  for (auto agg : {model::Aggregation::none, model::Aggregation::simple, model::Aggregation::first}) {
    const auto out = tagger->predict(texts, agg, 2);
    ASSERT_EQ(out.size(), texts.size());
    size_t found = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      for (const auto& t : out[i].tokens) {
        std::string word = t.word;
        if (word.rfind("\xC4\xA0", 0) == 0) word = word.substr(2);  // the byte-level 'Ġ'
        EXPECT_EQ(texts[i].substr(size_t(t.start), size_t(t.end - t.start)), word) << texts[i];
        EXPECT_GT(t.index, 0);
      }
      for (const auto& g : out[i].groups) {
        std::string word = g.word;
        if (!word.empty() && word[0] == ' ') word = word.substr(1);
        EXPECT_EQ(texts[i].substr(size_t(g.start), size_t(g.end - g.start)), word) << texts[i];
      }
      found += out[i].tokens.size() + out[i].groups.size();
    }
    EXPECT_GE(found, 3u) << model::aggregation_name(agg);  // Rome, Bob, Paris at least
  }
}

TEST_F(TokenTask, ConllFilesTrainToo) {
  ner_set(true);
  TrainOptions o = options();
  o.max_steps = 8;
  const TrainSummary s = fit(o);
  ASSERT_TRUE(s.test);
  EXPECT_EQ(s.test->problem_type, "token_classification");
  EXPECT_EQ(s.test->num_examples, 20);
}

TEST_F(TokenTask, BadTagsWriteNothing) {
  std::ofstream(root / "data/train.jsonl") << "{\"tokens\": [\"a\", \"b\"], \"ner_tags\": [\"O\", \"B-PER\"]}\n"
                                           << "{\"tokens\": [\"c\", \"d\"], \"ner_tags\": [\"O\"]}\n";
  try {
    fit(options());
    ADD_FAILURE() << "a tag list shorter than its tokens was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.jsonl:2"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(!fs::exists(root / "out") || fs::is_empty(root / "out"));
}
