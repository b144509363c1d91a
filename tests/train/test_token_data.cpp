// Token-classification data (train/token_data.h): the JSONL and CoNLL readers, folders and
// label files, every bad-input error (file, line and field named), and run_ner.py's label
// alignment checked against tools/make_ner_align_golden.py, a transcription of run_ner.py's
// get_label_list / b_to_i_label / tokenize_and_align_labels run on the word_ids of HF's Rust
// tokenizers (tests/data/tokenizer/words.jsonl).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "train/data_order.h"
#include "train/token_data.h"

namespace fs = std::filesystem;
using namespace rc::train;

namespace {

fs::path token_temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("rc_test_token_data_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

std::set<fs::path> listing(const fs::path& dir) {
  std::set<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.insert(e.path());
  return out;
}

// The rc::Error that f throws (its code, message and hint); fails the test when none is thrown.
struct Thrown {
  rc::Errc errc = rc::Errc::internal;
  std::string message;
};
Thrown thrown_by(const std::function<void()>& f) {
  try {
    f();
  } catch (const rc::Error& e) {
    return {e.errc(), std::string(e.what()) + "\nHINT: " + e.hint()};
  }
  ADD_FAILURE() << "no rc::Error thrown";
  return {};
}

// Expects a format error whose message holds every one of `parts`, and that nothing was
// written in the data's folder.
void expect_format_error(const fs::path& dir, const std::function<void()>& f,
                         std::initializer_list<std::string> parts) {
  const auto before = listing(dir);
  const Thrown t = thrown_by(f);
  EXPECT_EQ(t.errc, rc::Errc::format) << t.message;
  for (const std::string& p : parts)
    EXPECT_NE(t.message.find(p), std::string::npos) << "'" << p << "' not in: " << t.message;
  EXPECT_EQ(listing(dir), before);
}

std::vector<nlohmann::json> read_jsonl(const fs::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << file << "\nHINT: /usr/bin/python3 tools/make_ner_align_golden.py";
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

const rc::Tokenizer& roberta() {
  static const auto tok = rc::Tokenizer::from_dir(fs::path(RC_SOURCE_DIR) / "assets/tokenizer/roberta-base");
  return *tok;
}

std::vector<int32_t> row(const std::vector<int32_t>& flat, const TokenizedSplit& t, size_t i) {
  return {flat.begin() + t.offsets[i], flat.begin() + t.offsets[i + 1]};
}

}  // namespace

// ---- alignment against the transcription of run_ner.py ----

TEST(TokenData, AlignmentMatchesRunNerTranscription) {
  const fs::path data = fs::path(RC_TEST_DATA_DIR) / "ner";
  const TaggedDataset ds = load_tagged_dataset(data / "align_train.jsonl");
  const TaggedSplit& train = *ds.find("train");
  const auto expected = read_jsonl(data / "align_expected.jsonl");
  ASSERT_EQ(expected.size(), train.size() + 1);
  const auto label_list = resolve_label_list(ds);
  EXPECT_EQ(label_list, expected[0]["label_list"].get<std::vector<std::string>>());
  EXPECT_EQ(b_to_i_labels(label_list), expected[0]["b_to_i_label"].get<std::vector<int32_t>>());

  // run_ner.py with max_seq_length unset: truncation to the model's 512.
  for (bool all_tokens : {false, true}) {
    const TokenLabelledSplit whole = tokenize_tagged_split(roberta(), train, label_list, 512, all_tokens);
    ASSERT_EQ(whole.size(), int64_t(train.size()));
    int checked = 0, truncated = 0;
    for (size_t i = 0; i < train.size(); ++i) {
      const auto& want = expected[i + 1];
      const char* key = all_tokens ? "labels_all_tokens" : "labels";
      if (want["max_length"].is_null()) {
        EXPECT_EQ(row(whole.tokens.ids, whole.tokens, i), want["input_ids"].get<std::vector<int32_t>>()) << i;
        EXPECT_EQ(row(whole.token_labels, whole.tokens, i), want[key].get<std::vector<int32_t>>()) << i;
        ++checked;
      } else {  // a truncated case: that sentence alone at its max_length
        TaggedSplit one = train;
        one.tokens = {train.tokens[i]};
        one.tags = {train.tags[i]};
        one.lines = {train.lines[i]};
        const TokenLabelledSplit t =
            tokenize_tagged_split(roberta(), one, label_list, want["max_length"].get<int>(), all_tokens);
        EXPECT_EQ(t.tokens.ids, want["input_ids"].get<std::vector<int32_t>>()) << i;
        EXPECT_EQ(t.token_labels, want[key].get<std::vector<int32_t>>()) << i;
        ++truncated;
      }
    }
    EXPECT_GT(checked, 250);
    EXPECT_GT(truncated, 20);
  }
}

TEST(TokenData, AlignmentByHand) {
  // <s> w0 w0 w1 </s> w2 ... : first sub-token labelled, others -100 or B->I, specials -100.
  const std::vector<std::string> labels{"B-PER", "I-PER", "O", "B-MISC"};
  const auto b_to_i = b_to_i_labels(labels);
  EXPECT_EQ(b_to_i, (std::vector<int32_t>{1, 1, 2, 3}));  // B-MISC has no I- twin: itself
  const std::vector<int32_t> word_ids{-1, 0, 0, 1, 2, 2, -1}, word_labels{0, 2, 3};
  EXPECT_EQ(align_word_labels(word_ids, word_labels, b_to_i, false),
            (std::vector<int32_t>{-100, 0, -100, 2, 3, -100, -100}));
  EXPECT_EQ(align_word_labels(word_ids, word_labels, b_to_i, true), (std::vector<int32_t>{-100, 0, 1, 2, 3, 3, -100}));
}

TEST(TokenData, WordIdsAndBatchLabels) {
  const fs::path d = token_temp_dir("batch");
  write_text(d / "train.txt", "EU B-ORG\nrejects O\n\nPeter B-PER\nBlackburn I-PER\nhas O\narrived O\n");
  const TaggedDataset ds = load_tagged_dataset(d);
  const auto labels = resolve_label_list(ds);
  EXPECT_EQ(labels, (std::vector<std::string>{"B-ORG", "B-PER", "I-PER", "O"}));
  const TokenLabelledSplit s = tokenize_tagged_split(roberta(), *ds.find("train"), labels, 0, false);
  ASSERT_EQ(s.size(), 2);
  const std::vector<std::string> words0{"EU", "rejects"};
  EXPECT_EQ(row(s.tokens.ids, s.tokens, 0), roberta().encode_words(words0).ids);
  EXPECT_EQ(row(s.word_ids, s.tokens, 0), roberta().encode_words(words0).word_ids);
  // A batch of rows 1 and 0: ids padded with <pad> by fill_batch, labels with -100 here.
  const std::vector<int64_t> idx{1, 0};
  PaddedBatch batch;
  fill_batch(s.tokens, idx, roberta().pad_id(), batch);
  std::vector<int32_t> batch_labels;
  fill_token_labels(s, idx, batch.T, batch_labels);
  ASSERT_EQ(batch_labels.size(), size_t(batch.B * batch.T));
  const int32_t len0 = s.tokens.lengths[0], len1 = s.tokens.lengths[1];
  ASSERT_LT(len0, len1);
  EXPECT_EQ(std::vector<int32_t>(batch_labels.begin(), batch_labels.begin() + len1), row(s.token_labels, s.tokens, 1));
  EXPECT_EQ(std::vector<int32_t>(batch_labels.begin() + batch.T, batch_labels.begin() + batch.T + len0),
            row(s.token_labels, s.tokens, 0));
  for (int64_t t = len0; t < batch.T; ++t) EXPECT_EQ(batch_labels[size_t(batch.T + t)], -100) << t;
  EXPECT_EQ(batch.ids[size_t(batch.T + len0)], roberta().pad_id());
}

// ---- readers ----

TEST(TokenData, JsonlNamesCustomColumnsCrlfAndBlankLines) {
  const std::string bytes =
      "{\"words\": [\"Hello\", \"Zoë\"], \"tags\": [\"O\", \"B-PER\"]}\r\n\r\n"
      "{\"words\": [], \"tags\": []}\n"
      "{\"words\": [\"x\"], \"tags\": [\"O\"], \"id\": \"7\"}";
  const TaggedSplit s = parse_tagged_jsonl(bytes, {"words", "tags"}, "train.jsonl");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FALSE(s.tags_are_ids);
  EXPECT_EQ(s.tokens[0], (std::vector<std::string>{"Hello", "Zoë"}));
  EXPECT_EQ(s.tags[0], (std::vector<std::string>{"O", "B-PER"}));
  EXPECT_TRUE(s.tokens[1].empty());  // HF keeps an empty sentence: <s> </s>, all -100
  EXPECT_EQ(s.lines, (std::vector<int64_t>{1, 3, 4}));
}

TEST(TokenData, JsonlIntegerTagsNeedTheirNames) {
  const fs::path d = token_temp_dir("ids");
  write_text(d / "train.jsonl", "{\"tokens\": [\"EU\", \"rejects\"], \"ner_tags\": [3, 0]}\n");
  TaggedDataset ds = load_tagged_dataset(d);
  ASSERT_TRUE(ds.find("train")->tags_are_ids);
  EXPECT_EQ(ds.find("train")->tag_ids[0], (std::vector<int64_t>{3, 0}));
  const Thrown none = thrown_by([&] { resolve_label_list(ds); });
  EXPECT_EQ(none.errc, rc::Errc::invalid_argument);
  EXPECT_NE(none.message.find("--labels"), std::string::npos) << none.message;
  // conll2003's ClassLabel names, in id order, given as --labels.
  const auto given = label_names_from_list("O, B-PER,I-PER,B-ORG ,I-ORG,B-LOC,I-LOC,B-MISC,I-MISC");
  const auto labels = resolve_label_list(ds, given);
  EXPECT_EQ(labels[3], "B-ORG");
  EXPECT_EQ(word_label_ids(*ds.find("train"), labels)[0], (std::vector<int32_t>{3, 0}));
  // Or a tner-style label.json beside the data.
  write_text(d / "label.json", "{\"B-ORG\": 1, \"O\": 0}");
  ds = load_tagged_dataset(d);
  EXPECT_EQ(resolve_label_list(ds), (std::vector<std::string>{"O", "B-ORG"}));
  expect_format_error(d, [&] { word_label_ids(*ds.find("train"), resolve_label_list(ds)); },
                      {"train.jsonl:1", "ner_tags[0]", "tag id 3", "outside the label list"});
}

TEST(TokenData, TweetNer7FileWithItsLabelJson) {
  // tner/tweetner7's layout: dataset/2020.train.json rows with a "tags" column of ids and
  // extra fields, dataset/label.json {"name": id}.
  const fs::path d = token_temp_dir("tweetner7");
  write_text(d / "2020.train.json",
             "{\"tokens\": [\"@user\", \"in\", \"Paris\"], \"tags\": [0, 0, 1], \"id\": \"1\", \"date\": "
             "\"2020-01-01\"}\n");
  write_text(d / "label.json", "{\"O\": 0, \"B-location\": 1, \"I-location\": 2}");
  const TaggedDataset ds = load_tagged_dataset(d / "2020.train.json", {"tokens", "tags"});
  ASSERT_NE(ds.find("train"), nullptr);
  const auto labels = resolve_label_list(ds);
  EXPECT_EQ(labels, (std::vector<std::string>{"O", "B-location", "I-location"}));
  EXPECT_EQ(word_label_ids(*ds.find("train"), labels, {"tokens", "tags"})[0], (std::vector<int32_t>{0, 0, 1}));
}

TEST(TokenData, ConllColumnsDocstartAndBlankLines) {
  const std::string bytes =
      "-DOCSTART- -X- -X- O\n\n"
      "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n\n"
      "Peter\tB-PER\r\nBlackburn\tI-PER\n"
      "-DOCSTART- -X- O O\n"
      "  \t \n"
      "BRUSSELS NNP B-NP B-LOC";
  const TaggedSplit s = parse_conll(bytes, "train.txt");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.tokens[0], (std::vector<std::string>{"EU", "rejects"}));
  EXPECT_EQ(s.tags[0], (std::vector<std::string>{"B-ORG", "O"}));
  EXPECT_EQ(s.tokens[1], (std::vector<std::string>{"Peter", "Blackburn"}));
  EXPECT_EQ(s.tags[1], (std::vector<std::string>{"B-PER", "I-PER"}));
  EXPECT_EQ(s.tags[2], (std::vector<std::string>{"B-LOC"}));
  EXPECT_EQ(s.lines, (std::vector<int64_t>{3, 7, 11}));
  EXPECT_EQ(s.line_of(1, 1), 8);
}

TEST(TokenData, FolderSplitsAndLabelList) {
  const fs::path d = token_temp_dir("folder");
  write_text(d / "train.txt", "a B-X\nb I-X\n\nc O\n");
  write_text(d / "validation.jsonl", "{\"tokens\": [\"d\"], \"ner_tags\": [\"B-X\"]}\n");
  write_text(d / "test.conll", "e O\n");
  const TaggedDataset ds = load_tagged_dataset(d);
  EXPECT_EQ(ds.splits.size(), 3u);
  EXPECT_EQ(ds.layout, "mixed");
  ASSERT_NE(ds.find("dev"), nullptr);
  EXPECT_EQ(ds.find("val")->source.filename(), "validation.jsonl");
  EXPECT_EQ(resolve_label_list(ds), (std::vector<std::string>{"B-X", "I-X", "O"}));
  // The train split's tags only (get_label_list(raw_datasets["train"])): a tag seen only in
  // test is an error when test is aligned.
  write_text(d / "test.conll", "e B-Y\n");
  const TaggedDataset ds2 = load_tagged_dataset(d);
  expect_format_error(d, [&] { word_label_ids(*ds2.find("test"), resolve_label_list(ds2)); },
                      {"test.conll:1", "tag 'B-Y'", "not in the label list (B-X, I-X, O)"});
  // A single file is the train split unless named val/test.
  EXPECT_NE(load_tagged_dataset(d / "test.conll").find("test"), nullptr);
  EXPECT_NE(load_tagged_dataset(d / "validation.jsonl").find("val"), nullptr);
  write_text(d / "dev.txt", "f O\n");
  const Thrown two = thrown_by([&] { load_tagged_dataset(d); });
  EXPECT_EQ(two.errc, rc::Errc::invalid_argument);
  EXPECT_NE(two.message.find("two files for split 'val'"), std::string::npos) << two.message;
  const fs::path empty = token_temp_dir("nosplits");
  EXPECT_EQ(thrown_by([&] { load_tagged_dataset(empty); }).errc, rc::Errc::not_found);
  EXPECT_EQ(thrown_by([&] { load_tagged_dataset(empty / "missing.jsonl"); }).errc, rc::Errc::not_found);
  write_text(empty / "train.csv", "tokens,ner_tags\n");
  EXPECT_EQ(thrown_by([&] { load_tagged_dataset(empty / "train.csv"); }).errc, rc::Errc::unsupported);
}

TEST(TokenData, LabelFiles) {
  const fs::path d = token_temp_dir("labels");
  write_text(d / "list.json", "[\"O\", \"B-PER\", \"I-PER\"]");
  EXPECT_EQ(read_label_names(d / "list.json"), (std::vector<std::string>{"O", "B-PER", "I-PER"}));
  write_text(d / "label2id.json", "{\"I-PER\": 2, \"O\": 0, \"B-PER\": 1}");
  EXPECT_EQ(read_label_names(d / "label2id.json"), (std::vector<std::string>{"O", "B-PER", "I-PER"}));
  write_text(d / "config.json",
             "{\"id2label\": {\"1\": \"B-PER\", \"0\": \"O\"}, \"label2id\": {\"O\": 0, \"B-PER\": 1}}");
  EXPECT_EQ(read_label_names(d / "config.json"), (std::vector<std::string>{"O", "B-PER"}));
  // datasets' save_to_disk: Sequence(ClassLabel) in dataset_info.json.
  write_text(d / "dataset_info.json",
             "{\"features\": {\"tokens\": {\"feature\": {\"dtype\": \"string\", \"_type\": \"Value\"}, \"_type\": "
             "\"Sequence\"}, \"ner_tags\": {\"feature\": {\"names\": [\"O\", \"B-LOC\"], \"_type\": \"ClassLabel\"}, "
             "\"_type\": \"Sequence\"}}}");
  EXPECT_EQ(read_label_names(d / "dataset_info.json"), (std::vector<std::string>{"O", "B-LOC"}));
  write_text(d / "labels.txt", "O\r\n\nB-PER\n  I-PER  \n");
  EXPECT_EQ(read_label_names(d / "labels.txt"), (std::vector<std::string>{"O", "B-PER", "I-PER"}));
  write_text(d / "gap.json", "{\"O\": 0, \"B-PER\": 2}");
  expect_format_error(d, [&] { read_label_names(d / "gap.json"); }, {"gap.json", "0..1 each once", "id 2"});
  write_text(d / "dup.txt", "O\nB-PER\nO\n");
  expect_format_error(d, [&] { read_label_names(d / "dup.txt"); }, {"dup.txt", "'O' twice"});
  write_text(d / "empty.txt", "\n\n");
  expect_format_error(d, [&] { read_label_names(d / "empty.txt"); }, {"empty.txt", "names no label"});
  EXPECT_EQ(thrown_by([] { label_names_from_list("O,,B-PER"); }).errc, rc::Errc::invalid_argument);
  EXPECT_EQ(thrown_by([] { label_names_from_list("O,B-PER,O"); }).errc, rc::Errc::invalid_argument);
  EXPECT_EQ(thrown_by([] { label_names_from_list(""); }).errc, rc::Errc::invalid_argument);
}

// ---- every bad input: one line naming the file, the line and the field ----

TEST(TokenData, ErrorTagNotInLabelList) {
  const fs::path d = token_temp_dir("notinlist");
  write_text(d / "train.jsonl",
             "{\"tokens\": [\"a\"], \"ner_tags\": [\"O\"]}\n\n{\"tokens\": [\"b\", \"c\"], \"ner_tags\": [\"O\", "
             "\"B-FOO\"]}\n");
  const TaggedDataset ds = load_tagged_dataset(d);
  const std::vector<std::string> given{"O", "B-PER"};
  expect_format_error(d, [&] { word_label_ids(*ds.find("train"), resolve_label_list(ds, given)); },
                      {"train.jsonl:3", "ner_tags[1]", "tag 'B-FOO'", "(O, B-PER)"});
  // tokenize_tagged_split checks the same before tokenizing.
  expect_format_error(d, [&] { tokenize_tagged_split(roberta(), *ds.find("train"), given, 0, false); },
                      {"train.jsonl:3", "ner_tags[1]"});
  const TaggedSplit conll = parse_conll("a O\n\nb O\nc B-FOO\n", d / "train.txt");
  expect_format_error(d, [&] { word_label_ids(conll, given); }, {"train.txt:4", "last field", "tag 'B-FOO'"});
}

TEST(TokenData, ErrorTagCountDiffersFromTokens) {
  const fs::path d = token_temp_dir("count");
  write_text(d / "train.jsonl",
             "{\"tokens\": [\"a\"], \"ner_tags\": [\"O\"]}\n{\"tokens\": [\"a\", \"b\"], \"ner_tags\": [\"O\"]}\n");
  expect_format_error(d, [&] { load_tagged_dataset(d); }, {"train.jsonl:2", "2 tokens but 1 ner_tags"});
}

TEST(TokenData, ErrorNonStringToken) {
  const fs::path d = token_temp_dir("nonstring");
  write_text(d / "train.jsonl", "{\"tokens\": [\"a\", 5], \"ner_tags\": [\"O\", \"O\"]}\n");
  expect_format_error(d, [&] { load_tagged_dataset(d); }, {"train.jsonl:1", "tokens[1] must be a string", "found 5"});
  write_text(d / "train.jsonl", "{\"tokens\": [\"a\", null], \"ner_tags\": [\"O\", \"O\"]}\n");
  expect_format_error(d, [&] { load_tagged_dataset(d); }, {"train.jsonl:1", "tokens[1]", "found null"});
  write_text(d / "train.jsonl", "{\"tokens\": \"a b\", \"ner_tags\": [\"O\", \"O\"]}\n");
  expect_format_error(d, [&] { load_tagged_dataset(d); }, {"train.jsonl:1", "list field 'tokens'", "found string"});
}

TEST(TokenData, ErrorEmptyFiles) {
  const fs::path d = token_temp_dir("empty");
  write_text(d / "train.jsonl", "\n  \n");
  expect_format_error(d, [&] { load_tagged_dataset(d); }, {"train.jsonl", "has no sentences"});
  fs::remove(d / "train.jsonl");
  write_text(d / "train.txt", "-DOCSTART- -X- -X- O\n\n");
  expect_format_error(d, [&] { load_tagged_dataset(d); }, {"train.txt", "has no sentences"});
  write_text(d / "train.txt", "");
  expect_format_error(d, [&] { load_tagged_dataset(d); }, {"train.txt", "has no sentences"});
}

TEST(TokenData, ErrorMalformedRows) {
  const fs::path d = token_temp_dir("malformed");
  expect_format_error(d, [&] { parse_conll("EU B-ORG\nrejects\n", d / "train.txt"); },
                      {"train.txt:2", "expected a token and its tag", "'rejects'"});
  expect_format_error(d,
                      [&] { parse_tagged_jsonl("{\"tokens\": [\"a\"], \"ner_tags\": [\"O\"]\n", {}, d / "t.jsonl"); },
                      {"t.jsonl:1", "not JSON"});
  expect_format_error(d, [&] { parse_tagged_jsonl("[1, 2]\n", {}, d / "t.jsonl"); }, {"t.jsonl:1", "JSON object"});
  expect_format_error(d, [&] { parse_tagged_jsonl("{\"tokens\": [\"a\"]}\n", {}, d / "t.jsonl"); },
                      {"t.jsonl:1", "'ner_tags'", "--label-column"});
  // A file's tags are all names or all ids.
  expect_format_error(d,
                      [&] {
                        parse_tagged_jsonl(
                            "{\"tokens\": [\"a\"], \"ner_tags\": [\"O\"]}\n{\"tokens\": [\"b\"], \"ner_tags\": [0]}\n",
                            {}, d / "t.jsonl");
                      },
                      {"t.jsonl:2", "ner_tags[0]", "tag name"});
  expect_format_error(d,
                      [&] { parse_tagged_jsonl("{\"tokens\": [\"a\"], \"ner_tags\": [\"\"]}\n", {}, d / "t.jsonl"); },
                      {"t.jsonl:1", "ner_tags[0]", "empty tag"});
}

TEST(TokenData, MaxLengthRefusedWithoutRoomForSpecials) {
  const TaggedSplit s = parse_conll("a O\n", "train.txt");
  const std::vector<std::string> labels{"O"};
  EXPECT_EQ(thrown_by([&] { tokenize_tagged_split(roberta(), s, labels, 1, false); }).errc, rc::Errc::invalid_argument);
  const TokenLabelledSplit two = tokenize_tagged_split(roberta(), s, labels, 2, false);
  EXPECT_EQ(two.token_labels, (std::vector<int32_t>{-100, -100}));
}
