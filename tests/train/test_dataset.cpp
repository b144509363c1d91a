// Dataset loaders and label mapping: TweetEval layout (trailing spaces kept), CSV/TSV
// quoting, JSON Lines int/string labels, and the bad-input errors (one test each).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "roberta/error.h"
#include "train/dataset.h"
#include "train/label_mapping.h"

namespace fs = std::filesystem;
using namespace rc::train;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("rc_test_dataset_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

rc::Errc errc_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const rc::Error& e) {
    return e.errc();
  }
  ADD_FAILURE() << "no rc::Error thrown";
  return rc::Errc::internal;
}

}  // namespace

TEST(Dataset, BundledTweetEvalSentiment) {
  const Dataset ds = load_dataset(fs::path(RC_SOURCE_DIR) / "data/tweeteval/sentiment");
  EXPECT_EQ(ds.layout, "tweeteval");
  ASSERT_NE(ds.find("train"), nullptr);
  ASSERT_NE(ds.find("val"), nullptr);
  ASSERT_NE(ds.find("validation"), nullptr);
  ASSERT_NE(ds.find("test"), nullptr);
  EXPECT_EQ(ds.find("train")->size(), 45615u);
  EXPECT_EQ(ds.find("val")->size(), 2000u);
  EXPECT_EQ(ds.find("test")->size(), 12284u);
  EXPECT_EQ(ds.label_names, (std::vector<std::string>{"negative", "neutral", "positive"}));
  // TweetEval lines end with a space that the reference pipeline keeps.
  const std::string& first = ds.find("train")->texts[0];
  EXPECT_EQ(first.back(), ' ') << first;
  EXPECT_EQ(first.front(), '"');
  auto ids = map_labels(*ds.find("val"), ds.label_names, ds.label_names);
  EXPECT_EQ(ids.size(), 2000u);
}

TEST(Dataset, TweetEvalKeepsEverythingButTheNewline) {
  auto d = temp_dir("te");
  write(d / "train_text.txt", "a b \n\"quoted\", x\t\nlast");
  write(d / "train_labels.txt", "0\n2\n1\n");
  write(d / "mapping.txt", "0\tneg\n1\tneu\n2\tpos\n");
  const Dataset ds = load_dataset(d);
  const TextSplit& s = *ds.find("train");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.texts[0], "a b ");
  EXPECT_EQ(s.texts[1], "\"quoted\", x\t");
  EXPECT_EQ(s.texts[2], "last");
  EXPECT_EQ(*s.labels[1].id, 2);
  EXPECT_EQ(ds.label_names, (std::vector<std::string>{"neg", "neu", "pos"}));
  // Model with the same names in another order: ids follow the names.
  auto ids = map_labels(s, ds.label_names, {"pos", "neu", "neg"});
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 0, 1}));
  // Placeholder-named model: ids used directly.
  ids = map_labels(s, ds.label_names, {"LABEL_0", "LABEL_1", "LABEL_2"});
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 2, 1}));
  fs::remove_all(d);
}

TEST(Dataset, CsvQuotingAndColumns) {
  const std::string csv =
      "id,sentence,sentiment\n"
      "1,\"hello, world\",positive\n"
      "2,\"she said \"\"hi\"\"\nnext line\",negative\r\n"
      "3,plain,positive\n";
  TextSplit s = parse_delimited(csv, ',', DataColumns{"sentence", "sentiment"}, "x.csv");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.texts[0], "hello, world");
  EXPECT_EQ(s.texts[1], "she said \"hi\"\nnext line");
  EXPECT_EQ(s.labels[1].name, "negative");
  EXPECT_FALSE(s.labels[1].id.has_value());
  auto ids = map_labels(s, {}, {"negative", "positive"});
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0, 1}));
  EXPECT_EQ(errc_of([] {
              parse_delimited("a,b\n1,2\n", ',', DataColumns{"text", "b"}, "y.csv");
            }),
            rc::Errc::invalid_argument);
}

TEST(Dataset, TsvAndJsonlFolder) {
  auto d = temp_dir("folder");
  write(d / "train.tsv", "text\tlabel\nfirst one\t1\nsecond\t0\n");
  write(d / "validation.jsonl", "{\"text\": \"a\", \"label\": \"LABEL_1\"}\n\n{\"text\": \"b\", \"label\": 0}\n");
  const Dataset ds = load_dataset(d);
  ASSERT_NE(ds.find("train"), nullptr);
  ASSERT_NE(ds.find("val"), nullptr);
  EXPECT_EQ(ds.find("train")->texts[0], "first one");
  EXPECT_EQ(*ds.find("train")->labels[0].id, 1);
  EXPECT_EQ(ds.find("val")->labels[0].name, "LABEL_1");
  EXPECT_EQ(*ds.find("val")->labels[1].id, 0);
  auto ids = map_labels(*ds.find("val"), {}, {"LABEL_0", "LABEL_1"});
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0}));
  fs::remove_all(d);
}

TEST(DatasetBadInput, EmptyDataset) {
  auto d = temp_dir("empty");
  write(d / "train_text.txt", "");
  write(d / "train_labels.txt", "");
  // Bad input (exit 3), not a usage error (issue #10 finding 13).
  EXPECT_EQ(errc_of([&] { load_dataset(d); }), rc::Errc::format);
  EXPECT_EQ(errc_of([] { parse_jsonl("\n\n", {}, "e.jsonl"); }), rc::Errc::format);
  EXPECT_EQ(errc_of([] { parse_delimited("text,label\n", ',', {}, "e.csv"); }), rc::Errc::format);
  fs::remove_all(d);
}

TEST(DatasetBadInput, MissingLabelFile) {
  auto d = temp_dir("nolabels");
  write(d / "train_text.txt", "a\nb\n");
  try {
    load_dataset(d);
    FAIL() << "expected an error";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::not_found);
    EXPECT_NE(std::string(e.what()).find("train_labels.txt"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

TEST(DatasetBadInput, TextAndLabelFilesOfDifferentLengths) {
  auto d = temp_dir("mismatch");
  write(d / "train_text.txt", "a\nb\nc\n");
  write(d / "train_labels.txt", "0\n1\n");
  try {
    load_dataset(d);
    FAIL() << "expected an error";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::format);
    EXPECT_NE(std::string(e.what()).find("3 lines"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

TEST(DatasetBadInput, UnknownLabel) {
  TextSplit s = parse_jsonl("{\"text\":\"a\",\"label\":\"angry\"}\n", {}, "u.jsonl");
  try {
    map_labels(s, {}, {"negative", "neutral", "positive"});
    FAIL() << "expected an error";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::format);  // bad input: exit 3 (finding 13)
    EXPECT_NE(std::string(e.what()).find("angry"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--labels"), std::string::npos) << e.hint();
  }
  TextSplit s2 = parse_jsonl("{\"text\":\"a\",\"label\":3}\n", {}, "u.jsonl");
  EXPECT_EQ(errc_of([&] { map_labels(s2, {}, {"a", "b", "c"}); }), rc::Errc::format);
}

// Issue #10 findings 9 and 10: one line reader for every data file. A TweetEval folder
// saved with CRLF and BOMs reads exactly like the LF original, and a bad label names the
// labels file, not the text file.
TEST(DatasetTextLines, CrlfAndBomReadLikeTheOriginal) {
  auto lf = temp_dir("lf"), crlf = temp_dir("crlf");
  write(lf / "mapping.txt", "0\tnegative\n1\tpositive\n");
  write(lf / "train_text.txt", "good day \nbad day \n");
  write(lf / "train_labels.txt", "1\n0\n");
  write(crlf / "mapping.txt",
        "\xEF\xBB\xBF"
        "0\tnegative\r\n1\tpositive\r\n");
  write(crlf / "train_text.txt",
        "\xEF\xBB\xBF"
        "good day \r\nbad day \r\n");
  write(crlf / "train_labels.txt",
        "\xEF\xBB\xBF"
        "1\r\n0\r\n");
  const Dataset a = load_dataset(lf), b = load_dataset(crlf);
  EXPECT_EQ(a.find("train")->texts, b.find("train")->texts);
  EXPECT_EQ(b.find("train")->texts[0], "good day ");  // the trailing space is text
  EXPECT_EQ(*b.find("train")->labels[0].id, 1);
  EXPECT_EQ(a.label_names, b.label_names);
  EXPECT_EQ(b.label_names, (std::vector<std::string>{"negative", "positive"}));
  // JSON Lines and CSV with CRLF and a BOM too.
  const TextSplit j = parse_jsonl("\xEF\xBB\xBF{\"text\": \"x \", \"label\": 1}\r\n", {}, "j.jsonl");
  EXPECT_EQ(j.texts, (std::vector<std::string>{"x "}));
  const TextSplit c = parse_delimited("\xEF\xBB\xBFtext,label\r\nx ,1\r\n", ',', {}, "c.csv");
  EXPECT_EQ(c.texts, (std::vector<std::string>{"x "}));
  fs::remove_all(lf);
  fs::remove_all(crlf);
}

TEST(DatasetTextLines, LabelErrorsNameTheLabelsFile) {
  auto d = temp_dir("labels");
  write(d / "train_text.txt", "a\nb\n");
  write(d / "train_labels.txt", "0\n7\n");
  const Dataset ds = load_dataset(d);
  try {
    map_labels(*ds.find("train"), {}, {"x", "y"});
    FAIL() << "expected an error";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::format);
    EXPECT_NE(std::string(e.what()).find("train_labels.txt"), std::string::npos) << e.what();
  }
  write(d / "train_text.txt", std::string("a\nb\0c\n", 7));
  EXPECT_EQ(errc_of([&] { load_dataset(d); }), rc::Errc::format);  // NUL: refused, one way everywhere
  fs::remove_all(d);
}
