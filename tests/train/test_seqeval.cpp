// seqeval default mode against tools/seqeval_ref.py (a plain-Python restatement of seqeval
// 1.2.2's code): tests/data/task_metrics/seqeval_cases.json holds each case's tags and the
// expected entities and report. Same double operations in the same order, so the numbers
// agree to the last bit; EXPECT_DOUBLE_EQ (4 ulp) leaves room for nothing else.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "roberta/error.h"
#include "train/seqeval.h"

using namespace rc::train;

namespace {

nlohmann::json load_seqeval_cases() {
  std::ifstream in(std::string(RC_TEST_DATA_DIR) + "/task_metrics/seqeval_cases.json");
  EXPECT_TRUE(in.good()) << "HINT: regenerate with python3 tools/seqeval_ref.py";
  return nlohmann::json::parse(in);
}

std::vector<TagSequence> sentences_of(const nlohmann::json& j) { return j.get<std::vector<TagSequence>>(); }

std::vector<SeqevalEntity> entities_of(const nlohmann::json& j) {
  std::vector<SeqevalEntity> out;
  for (const auto& e : j) out.push_back({e[0].get<std::string>(), e[1].get<int64_t>(), e[2].get<int64_t>()});
  return out;
}

}  // namespace

TEST(Seqeval, MatchesReferenceTranscription) {
  const nlohmann::json cases = load_seqeval_cases();
  ASSERT_GE(cases["cases"].size(), 12u);
  for (const auto& c : cases["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto gold = sentences_of(c["gold"]), pred = sentences_of(c["pred"]);
    const auto& want = c["expected"];
    EXPECT_EQ(seqeval_entities(gold), entities_of(want["entities_gold"]));
    EXPECT_EQ(seqeval_entities(pred), entities_of(want["entities_pred"]));

    const SeqevalReport got = seqeval_report(gold, pred);
    ASSERT_EQ(got.per_type.size(), want["per_type"].size());
    size_t i = 0;
    for (const auto& [name, row] : want["per_type"].items()) {  // nlohmann::json sorts keys as std::map does
      const EntityTypeScores& t = got.per_type[i++];
      EXPECT_EQ(t.type, name);
      EXPECT_DOUBLE_EQ(t.precision, row["precision"].get<double>()) << name;
      EXPECT_DOUBLE_EQ(t.recall, row["recall"].get<double>()) << name;
      EXPECT_DOUBLE_EQ(t.f1, row["f1"].get<double>()) << name;
      EXPECT_EQ(t.support, row["number"].get<int64_t>()) << name;
      EXPECT_EQ(t.predicted, row["predicted"].get<int64_t>()) << name;
      EXPECT_EQ(t.correct, row["correct"].get<int64_t>()) << name;
    }
    EXPECT_DOUBLE_EQ(got.precision, want["overall_precision"].get<double>());
    EXPECT_DOUBLE_EQ(got.recall, want["overall_recall"].get<double>());
    EXPECT_DOUBLE_EQ(got.f1, want["overall_f1"].get<double>());
    EXPECT_DOUBLE_EQ(got.accuracy, want["overall_accuracy"].get<double>());
    EXPECT_EQ(got.support, want["support"].get<int64_t>());
    EXPECT_EQ(got.predicted, want["predicted"].get<int64_t>());
    EXPECT_EQ(got.correct, want["correct"].get<int64_t>());
  }
}

TEST(Seqeval, TypesSortInCodePointOrder) {
  // Python's sorted() on str: "LOC" < "_" < "loc" < "ÖRT" (U+00D6); UTF-8 bytes sort the same.
  const std::vector<TagSequence> tags{{"B-ÖRT", "B-loc", "B-_x", "B-LOC"}};
  const SeqevalReport r = seqeval_report(tags, tags);
  ASSERT_EQ(r.per_type.size(), 4u);
  EXPECT_EQ(r.per_type[0].type, "LOC");
  EXPECT_EQ(r.per_type[1].type, "_x");
  EXPECT_EQ(r.per_type[2].type, "loc");
  EXPECT_EQ(r.per_type[3].type, "ÖRT");
}

TEST(Seqeval, JsonHasEvaluatesKeysInOrder) {
  const std::vector<TagSequence> gold{{"B-PER", "I-PER", "O", "B-LOC"}}, pred{{"B-PER", "I-PER", "O", "O"}};
  const nlohmann::ordered_json j = seqeval_to_json(seqeval_report(gold, pred));
  EXPECT_EQ(j.dump(),
            R"({"LOC":{"precision":0.0,"recall":0.0,"f1":0.0,"number":1},)"
            R"("PER":{"precision":1.0,"recall":1.0,"f1":1.0,"number":1},)"
            R"("overall_precision":1.0,"overall_recall":0.5,"overall_f1":0.6666666666666666,"overall_accuracy":0.75})");
}

TEST(Seqeval, RefusesMismatchedShapesAndEmptyTags) {
  const std::vector<TagSequence> two{{"O"}, {"O"}}, one{{"O"}}, longer{{"O", "O"}};
  EXPECT_THROW(seqeval_report(two, one), rc::Error);
  EXPECT_THROW(seqeval_report(one, longer), rc::Error);
  const std::vector<TagSequence> empty_tag{{"B-PER", ""}};
  EXPECT_THROW(seqeval_report(empty_tag, empty_tag), rc::Error);
}

TEST(Seqeval, NerSequencesDropIgnoredPositionsAndTakeTheFirstMaximum) {
  const std::vector<std::string> id2label{"O", "B-PER", "I-PER"};
  // 2 rows x 4 positions x 3 labels. Row 0: <s> (-100), a B-PER word, its second sub-token
  // (-100), O. Row 1: a tie between O and B-PER (the first maximum, O, wins), then padding.
  const std::vector<float> logits{9, 0, 0, /**/ 0, 5, 1, /**/ 0, 0, 7, /**/ 0, 3, 1,
                                  2, 2, 1, /**/ 0, 0, 0, /**/ 0, 0, 0, /**/ 0, 0, 0};
  const std::vector<int32_t> labels{-100, 1, -100, 0, 1, -100, -100, -100};
  const NerSequences s = ner_tag_sequences(logits, labels, 2, 4, id2label);
  EXPECT_EQ(s.gold, (std::vector<TagSequence>{{"B-PER", "O"}, {"B-PER"}}));
  EXPECT_EQ(s.predicted, (std::vector<TagSequence>{{"B-PER", "B-PER"}, {"O"}}));
  const std::vector<int32_t> bad{-100, 3, -100, 0, 1, -100, -100, -100};
  EXPECT_THROW(ner_tag_sequences(logits, bad, 2, 4, id2label), rc::Error);
  EXPECT_THROW(ner_tag_sequences(logits, labels, 2, 3, id2label), rc::Error);
}
