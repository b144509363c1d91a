// Loading tokenizer folders: every bad file is one rc::Error naming the file, with a hint;
// tokenizer_config.json / special_tokens_map.json flags are honoured.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <unistd.h>

#include "golden_cases.h"
#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "tokenizer/byte_level.h"

namespace rc::test {
namespace {

namespace fs = std::filesystem;

// A scratch folder removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("rc_tok_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream(path / file, std::ios::binary) << text;
  }
  void copy(const std::string& file) const {
    fs::copy_file(roberta_tokenizer_dir() / file, path / file, fs::copy_options::overwrite_existing);
  }
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Runs f, expects an rc::Error of kind errc whose message contains every needle.
void expect_error(const std::function<void()>& f, Errc errc, std::vector<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), errc) << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
    EXPECT_FALSE(e.hint().empty()) << "no hint for: " << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
  }
}

TEST(TokenizerFiles, MissingFolder) {
  expect_error([] { Tokenizer::from_dir("/nonexistent/rc_tok_dir"); }, Errc::not_found, {"/nonexistent/rc_tok_dir"});
}

TEST(TokenizerFiles, FolderWithoutTokenizerFiles) {
  TempDir d("empty");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::not_found, {d.path.string(), "tokenizer.json"});
}

TEST(TokenizerFiles, MissingMergesTxt) {
  TempDir d("nomerges");
  d.copy("vocab.json");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::not_found, {"merges.txt is missing"});
  expect_error([&] { Tokenizer::from_files(d.path / "vocab.json", d.path / "merges.txt"); }, Errc::not_found,
               {(d.path / "merges.txt").string()});
}

TEST(TokenizerFiles, MalformedTokenizerJson) {
  TempDir d("badjson");
  const std::string full = read_text(roberta_tokenizer_dir() / "tokenizer.json");
  d.write("tokenizer.json", full.substr(0, full.size() / 2));  // truncated download
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format,
               {(d.path / "tokenizer.json").string(), "not valid JSON"});
}

TEST(TokenizerFiles, MalformedVocabJson) {
  TempDir d("badvocab");
  d.write("vocab.json", "{\"a\": 0, \"b\": ");
  d.copy("merges.txt");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"vocab.json", "not valid JSON"});
  d.write("vocab.json", "{\"a\": \"zero\"}");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"vocab.json", "'a'"});
}

// model.vocab (and vocab.json) are read entry by entry while parsing, not through the JSON
// DOM: the same answers and errors as a DOM read, wherever the entries sit.
TEST(TokenizerFiles, VocabReadWhileParsingKeepsTheDomRules) {
  TempDir j("vocab_stream");
  auto write = [&](const std::string& vocab, const std::string& extra = "") {
    j.write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": )" + vocab +
                                  R"(, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"})" + extra + "}");
  };
  write(R"({"a": 0, "b": 1, "a": 2, "c": 1})");  // a repeated token: the last id wins, as in a DOM
  auto t = Tokenizer::from_dir(j.path);
  EXPECT_EQ(t->token_to_id("a"), 2);
  EXPECT_EQ(t->token_to_id("b"), 1);
  for (const std::string bad : {R"({"a": 0, "b": [1]})", R"({"a": 0, "b": {"c": 1}})", R"({"a": -1})",
                                R"({"a": 0, "b": "1"})", R"({"a": 0, "b": 1.5})", R"({"a": 3000000000})"})
    expect_error(
        [&] {
          write(bad);
          Tokenizer::from_dir(j.path);
        },
        Errc::format, {"tokenizer.json", "model.vocab"});
  write("[0, 1]");
  expect_error([&] { Tokenizer::from_dir(j.path); }, Errc::format, {"model.vocab", "must be a JSON object"});
  // Objects named "vocab" elsewhere are ordinary JSON (here an unknown key, ignored).
  write(R"({"a": 0, "b": 1})", R"(, "other": {"vocab": {"x": "not an id"}}, "x": [{"model": {"vocab": 7}}])");
  t = Tokenizer::from_dir(j.path);
  EXPECT_EQ(t->token_to_id("b"), 1);
  EXPECT_EQ(t->token_to_id("x"), -1);

  TempDir v("vocab_stream_json");
  v.write("merges.txt", "#version: 0.2\n");
  v.write("vocab.json", R"({"a": 0, "b": 5, "b": 1})");
  EXPECT_EQ(Tokenizer::from_dir(v.path)->token_to_id("b"), 1);
  v.write("vocab.json", R"({"a": 0, "b": [1]})");
  expect_error([&] { Tokenizer::from_dir(v.path); }, Errc::format, {"vocab.json", "'b'", "an array"});
  v.write("vocab.json", R"({"a": 1, "b": 0})");
  EXPECT_EQ(Tokenizer::from_dir(v.path)->token_to_id("a"), 1);
}

TEST(TokenizerFiles, MergesReferencingUnknownTokens) {
  TempDir d("unkmerge");
  d.copy("vocab.json");
  d.write("merges.txt", "#version: 0.2\nĠ t\nzzq qqz\n");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format,
               {"merges.txt", "line 3", "'zzq'", "not in the vocabulary"});
  d.write("merges.txt", "#version: 0.2\nĠ t x\n");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"merges.txt", "line 2"});
}

// Found by fuzz_vocab_merges: ids index a table, so a tiny file with one huge id asked for
// a 144 GB allocation (std::bad_alloc or the OOM killer). Sparse ids are refused first.
TEST(TokenizerFiles, HugeIdsAreRefusedBeforeAnythingIsSized) {
  TempDir d("hugeid");
  d.write("vocab.json", R"({"a": 2000000000, "b": 1})");
  d.write("merges.txt", "#version: 0.2\n");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"vocab.json", "2000000000", "dense"});

  d.write("vocab.json", R"({"a": 0, "b": 1})");
  d.write("tokenizer_config.json", R"({"added_tokens_decoder": {"2000000000": {"content": "<x>"}}})");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"tokenizer_config.json", "2000000000", "dense"});

  TempDir j("hugeid_json");
  j.write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "ByteLevel"}, "added_tokens": [{"id": 2000000000, "content": "<x>"}]})");
  expect_error([&] { Tokenizer::from_dir(j.path); }, Errc::format, {"tokenizer.json", "2000000000", "dense"});
  // Dense ids with a gap for added tokens still load on the byte-level path (which takes only a
  // vocabulary with all 256 byte symbols).
  nlohmann::json bytes = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) bytes[tokenizer::byte_to_token_string(uint8_t(b))] = b;
  j.write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": )" + bytes.dump() + R"(, "merges": []},
      "pre_tokenizer": {"type": "ByteLevel"}, "added_tokens": [{"id": 260, "content": "<x>"}]})");
  EXPECT_EQ(Tokenizer::from_dir(j.path)->token_to_id("<x>"), 260);
}

// Hostile-input findings (files): each file is bounded before it is read or parsed (a 100 MB
// tokenizer.json of small numbers took 2.1 GB). The files are grown sparsely (NULs past the
// real text): unbounded, they were read whole and failed as JSON; now their size is refused.
TEST(TokenizerFiles, OversizedFilesAreRefusedBeforeParsing) {
  const uintmax_t file_cap = uintmax_t(64) << 20, config_cap = uintmax_t(16) << 20;
  auto expect_refused = [](const fs::path& dir, const fs::path& file, uintmax_t cap) {
    fs::resize_file(file, cap + 1);
    expect_error([&] { Tokenizer::from_dir(dir); }, Errc::format,
                 {file.string(), std::to_string(cap + 1) + " bytes", std::to_string(cap)});
  };
  TempDir j("oversized_json");
  j.copy("tokenizer.json");
  expect_refused(j.path, j.path / "tokenizer.json", file_cap);

  TempDir v("oversized_vocab");
  v.copy("vocab.json");
  v.copy("merges.txt");
  expect_refused(v.path, v.path / "vocab.json", file_cap);
  v.copy("vocab.json");
  expect_refused(v.path, v.path / "merges.txt", file_cap);
  v.copy("merges.txt");
  v.write("tokenizer_config.json", "{}");
  expect_refused(v.path, v.path / "tokenizer_config.json", config_cap);
  v.write("tokenizer_config.json", "{}");
  v.write("special_tokens_map.json", "{}");
  expect_refused(v.path, v.path / "special_tokens_map.json", config_cap);
}

// A deeply nested value where a merge belongs used to reach the error message's dump(),
// which recursed once per level and crashed (docs/security.md, L3); it is refused before
// parsing, as is any tokenizer file nesting past 100 levels.
TEST(TokenizerFiles, DeeplyNestedJsonIsRefusedBeforeParsing) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  TempDir t("deep_merges");
  t.write("tokenizer.json",
          R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [)" + deep + "]}}");
  expect_error([&] { Tokenizer::from_dir(t.path); }, Errc::format,
               {(t.path / "tokenizer.json").string(), "nested deeper than 100 levels"});
  TempDir c("deep_config");
  c.write("vocab.json", R"({"a": 0, "b": 1})");
  c.write("merges.txt", "#version: 0.2\n");
  c.write("tokenizer_config.json", R"({"model_max_length": )" + deep + "}");
  expect_error([&] { Tokenizer::from_dir(c.path); }, Errc::format, {"tokenizer_config.json", "nested deeper"});
}

// added_tokens_decoder's keys are ids in decimal: anything else is named, not half-read.
TEST(TokenizerFiles, AddedTokensDecoderKeysMustBeIds) {
  TempDir d("addedkeys");
  d.write("vocab.json", R"({"a": 0, "b": 1})");
  d.write("merges.txt", "#version: 0.2\n");
  for (const char* key : {"2abc", " 2", "-2", "", "2147483648", "0x2", "+2"}) {
    d.write("tokenizer_config.json",
            std::string(R"({"added_tokens_decoder": {")") + key + R"(": {"content": "<x>"}}})");
    expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format,
                 {"tokenizer_config.json", "added_tokens_decoder key '" + std::string(key) + "'", "not a token id"});
  }
  d.write("tokenizer_config.json", R"({"added_tokens_decoder": {"2": {"content": "<x>"}}})");
  EXPECT_EQ(Tokenizer::from_dir(d.path)->token_to_id("<x>"), 2);
}

TEST(TokenizerFiles, TokenizerJsonMergesReferencingUnknownTokens) {
  TempDir d("unkmergejson");
  auto j = nlohmann::json::parse(read_text(roberta_tokenizer_dir() / "tokenizer.json"));
  j["model"]["merges"][7] = "Ġ nosuchtoken";
  d.write("tokenizer.json", j.dump());
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"tokenizer.json", "index 7", "'nosuchtoken'"});
}

TEST(TokenizerFiles, UnsupportedModel) {
  TempDir d("wordpiece");
  // WordPiece and Unigram go to the pipeline now (test_tokenizer_pipeline.cpp); a type neither knows:
  d.write("tokenizer.json", R"({"model": {"type": "WordPieceX", "vocab": {}}})");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::unsupported, {"tokenizer.json", "WordPieceX"});
}

TEST(TokenizerFiles, PairMergesFormatInTokenizerJson) {
  // tokenizers >= 0.20 may write merges as ["a", "b"] pairs.
  TempDir d("pairmerges");
  auto j = nlohmann::json::parse(read_text(roberta_tokenizer_dir() / "tokenizer.json"));
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& m : j["model"]["merges"]) {
    const std::string s = m;
    pairs.push_back({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  j["model"]["merges"] = pairs;
  d.write("tokenizer.json", j.dump());
  auto tok = Tokenizer::from_dir(d.path);
  auto ref = Tokenizer::from_dir(roberta_tokenizer_dir());
  for (const auto& c : read_jsonl(tokenizer_data_dir() / "roberta-base.jsonl"))
    ASSERT_EQ(tok->encode(c["text"].get<std::string>()), c["ids"].get<std::vector<int32_t>>());
}

TEST(TokenizerFiles, ConfigFlagsAreHonoured) {
  TempDir d("config");
  d.copy("vocab.json");
  d.copy("merges.txt");
  auto plain = Tokenizer::from_dir(d.path);
  const int32_t a = plain->token_to_id("a"), sp = plain->token_to_id("Ġ"), mask = plain->mask_id();
  // Default (RoBERTa): <mask> has lstrip.
  EXPECT_EQ(plain->encode("a <mask>", false), (std::vector<int32_t>{a, mask}));
  // special_tokens_map.json turns lstrip off: the space stays a token of its own.
  d.write(
      "special_tokens_map.json",
      R"({"mask_token": {"content": "<mask>", "lstrip": false, "rstrip": false, "single_word": false, "normalized": false}})");
  auto no_lstrip = Tokenizer::from_dir(d.path);
  EXPECT_EQ(no_lstrip->encode("a <mask>", false), (std::vector<int32_t>{a, sp, mask}));
  // A malformed config is an error naming it.
  d.write("tokenizer_config.json", "{not json");
  expect_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"tokenizer_config.json"});
}

}  // namespace
}  // namespace rc::test
