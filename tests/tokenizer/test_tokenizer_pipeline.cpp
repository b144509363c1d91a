// The general tokenizer pipeline against HF's own library: one suite over every tokenizer of
// tests/data/tokenizer/pipeline (goldens by tools/make_pipeline_goldens.mjs; files by
// tools/make_pipeline_fixtures.py), and the slow-file converters (vocab.txt, sentencepiece
// model) against the goldens of the tokenizer.json transformers' converter writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <unistd.h>

#include "golden_cases.h"
#include "roberta/error.h"
#include "roberta/tokenizer.h"

namespace rc::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path pipeline_dir() { return tokenizer_data_dir() / "pipeline"; }

std::vector<int32_t> ints(const json& j) { return j.get<std::vector<int32_t>>(); }

std::string text_of(const json& c) {
  return c.contains("hex") ? from_hex(c["hex"].get<std::string>()) : c["text"].get<std::string>();
}

TruncationSide side_of(const json& c) {
  return c.value("direction", std::string("Right")) == "Left" ? TruncationSide::left : TruncationSide::right;
}

struct PipelineCase {
  std::string name;     // tokenizer.json folder and goldens
  std::string load_as;  // folder loaded: the same, or the slow files converted
  // A folder made for the test: xlmr-slow's sentencepiece model beside a tokenizer_config.json
  // naming this tokenizer_class (CamemBERT's converter on the same model).
  std::string spm_class = {};
};

std::unique_ptr<Tokenizer> load_case(const PipelineCase& p) {
  if (p.spm_class.empty()) return Tokenizer::from_dir(pipeline_dir() / p.load_as);
  const fs::path dir = fs::temp_directory_path() / ("rc_pipe_" + p.load_as + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(pipeline_dir() / "xlmr-slow/sentencepiece.bpe.model", dir / "sentencepiece.bpe.model",
                fs::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json") << json{{"tokenizer_class", p.spm_class}}.dump();
  auto tok = Tokenizer::from_dir(dir);
  fs::remove_all(dir);
  return tok;
}

// Every case of a golden file (tools/make_pipeline_goldens.mjs) against tok; the number that differ.
size_t check_goldens(const Tokenizer& tok_ref, const std::vector<json>& cases, const std::string& label) {
  const Tokenizer* tok = &tok_ref;
  size_t failures = 0;
  auto fail = [&](const json& c, const std::string& what) {
    if (++failures <= 12) ADD_FAILURE() << label << " " << what << " on " << c.dump().substr(0, 400);
  };
  for (const json& c : cases) {
    const std::string kind = c["kind"];
    if (kind == "encode") {
      const std::string text = text_of(c);
      const std::vector<int32_t> ids = ints(c["ids"]);
      if (tok->encode(text) != ids) fail(c, "ids " + ids_str(tok->encode(text)));
      const OffsetsEncoding o = tok->encode_with_offsets(text);
      if (o.ids != ids) fail(c, "offset ids");
      std::vector<std::vector<int32_t>> offsets;
      for (const TokenOffset& t : o.offsets) offsets.push_back({t.start, t.end});
      if (json(offsets) != c["offsets"]) fail(c, "offsets " + json(offsets).dump());
      if (std::vector<int32_t>(o.special_tokens_mask.begin(), o.special_tokens_mask.end()) !=
          ints(c["special_tokens_mask"]))
        fail(c, "special_tokens_mask");
      if (tok->decode(ids, false) != c["decode"].get<std::string>())
        fail(c, "decode '" + tok->decode(ids, false) + "'");
      if (tok->decode(ids, true) != c["decode_skip"].get<std::string>())
        fail(c, "decode_skip '" + tok->decode(ids, true) + "'");
    } else if (kind == "plain") {
      if (tok->encode(c["text"].get<std::string>(), false) != ints(c["ids"])) fail(c, "plain ids");
    } else if (kind == "pair") {
      const int n = c.value("max_length", 0);
      const PairEncoding e =
          tok->encode_pair_with_types(c["text"].get<std::string>(), c["text_pair"].get<std::string>(), n, side_of(c));
      if (e.ids != ints(c["ids"])) fail(c, "pair ids " + ids_str(e.ids));
      if (e.type_ids != ints(c["type_ids"])) fail(c, "type ids " + ids_str(e.type_ids));
      if (tok->encode_pair(c["text"].get<std::string>(), c["text_pair"].get<std::string>(), n, side_of(c)) != e.ids)
        fail(c, "encode_pair differs from encode_pair_with_types");
    } else if (kind == "truncate") {
      const int n = c["max_length"];
      if (tok->encode(c["text"].get<std::string>(), n, side_of(c)) != ints(c["ids"])) fail(c, "truncated ids");
    } else if (kind == "words") {
      const std::vector<std::string> words = c["words"];
      const WordsEncoding w = tok->encode_words(words);
      if (w.ids != ints(c["ids"])) fail(c, "words ids " + ids_str(w.ids));
      if (w.word_ids != ints(c["word_ids"])) fail(c, "word ids " + ids_str(w.word_ids));
    } else if (kind == "vocab") {
      if (tok->vocab_size() != c["vocab_size"].get<int64_t>()) fail(c, "vocab_size");
      for (const json& t : c["tokens"]) {
        if (tok->token_to_id(t[0].get<std::string>()) != t[1].get<int32_t>()) fail(t, "token_to_id");
        if (tok->id_to_token(t[1].get<int32_t>()) != t[0].get<std::string>()) fail(t, "id_to_token");
      }
    }
  }
  return failures;
}

class TokenizerPipeline : public ::testing::TestWithParam<PipelineCase> {};

TEST_P(TokenizerPipeline, MatchesHuggingFace) {
  const PipelineCase& p = GetParam();
  const auto tok = load_case(p);
  const auto cases = read_jsonl(pipeline_dir() / (p.name + ".jsonl"));
  ASSERT_GT(cases.size(), 400u);
  const size_t failures = check_goldens(*tok, cases, p.load_as);
  EXPECT_EQ(failures, 0u) << p.load_as << ": " << failures << " cases differ from HF";
}

// The differential sweep (tools/tokenizer_sweep.sh): every folder <name> (a tokenizer.json, or
// slow files from_dir converts) with its goldens <name>.jsonl under $RC_TOKENIZER_SWEEP_DIR, made outside the
// repository from tokenizers not committed here. Skipped when the variable is unset (the committed fixtures are the
// suite above).
TEST(TokenizerSweep, MatchesHuggingFace) {
  const char* dir = std::getenv("RC_TOKENIZER_SWEEP_DIR");
  if (dir == nullptr || *dir == 0) GTEST_SKIP() << "RC_TOKENIZER_SWEEP_DIR unset";
  std::vector<fs::path> folders;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.is_directory() && fs::is_regular_file(e.path().string() + ".jsonl")) folders.push_back(e.path());
  std::sort(folders.begin(), folders.end());
  ASSERT_FALSE(folders.empty()) << "no <name>/ + <name>.jsonl under " << dir;
  size_t differing = 0;
  for (const fs::path& f : folders) {
    const std::string name = f.filename().string();
    std::unique_ptr<Tokenizer> tok;
    try {
      tok = Tokenizer::from_dir(f);
    } catch (const rc::Error& e) {
      ADD_FAILURE() << name << ": not loaded: " << e.what();
      ++differing;
      continue;
    }
    const size_t failures = check_goldens(*tok, read_jsonl(f.string() + ".jsonl"), name);
    std::printf("sweep %-28s %s (%zu cases differ)\n", name.c_str(), failures ? "DIFFERS" : "same", failures);
    differing += failures > 0;
  }
  EXPECT_EQ(differing, 0u) << differing << " of " << folders.size() << " tokenizers differ from HF";
}

INSTANTIATE_TEST_SUITE_P(
    Goldens, TokenizerPipeline,
    ::testing::Values(PipelineCase{"bert-uncased", "bert-uncased"}, PipelineCase{"bert-uncased", "bert-uncased-slow"},
                      PipelineCase{"bert-cased", "bert-cased"}, PipelineCase{"bert-cased", "bert-cased-slow"},
                      PipelineCase{"xlmr", "xlmr"}, PipelineCase{"xlmr", "xlmr-slow"},
                      PipelineCase{"camembert", "camembert"},
                      PipelineCase{"camembert", "camembert-slow", "CamembertTokenizer"},
                      PipelineCase{"wordlevel", "wordlevel"}, PipelineCase{"bpe-general", "bpe-general"},
                      PipelineCase{"unigram-bytes", "unigram-bytes"}, PipelineCase{"bytelevel-mix", "bytelevel-mix"},
                      PipelineCase{"split-gpt2", "split-gpt2"}, PipelineCase{"wordpiece-mix", "wordpiece-mix"},
                      // What the differential sweep found (tools/make_pipeline_fixtures.py make_regressions).
                      PipelineCase{"unigram-ties", "unigram-ties"},
                      PipelineCase{"bpe-reassigned-ids", "bpe-reassigned-ids"},
                      PipelineCase{"xlmr-bytefallback", "xlmr-bytefallback"},
                      PipelineCase{"xlmr-bytefallback", "xlmr-bytefallback-slow"},
                      PipelineCase{"bytelevel-post-only", "bytelevel-post-only"},
                      // Byte-level vocabularies without most byte symbols, no unk, no prefix
                      // space (tools/make_partial_bytes_tokenizers.mjs): bytes dropped, offsets
                      // counting only the symbols kept, words with no space put before them.
                      PipelineCase{"bl-partial-bytes", "bl-partial-bytes"},
                      PipelineCase{"bl-partial-bytes-notrim", "bl-partial-bytes-notrim"}),
    [](const auto& info) {
      std::string n = info.param.load_as;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// BERT's special ids are its [CLS] [SEP] [PAD] [UNK] [MASK]; XLM-R's its <s> </s> <pad> <unk> <mask>.
TEST(TokenizerPipelineRoles, SpecialIds) {
  for (const char* dir : {"bert-uncased", "bert-uncased-slow"}) {
    const auto tok = Tokenizer::from_dir(pipeline_dir() / dir);
    EXPECT_EQ(tok->bos_id(), tok->token_to_id("[CLS]")) << dir;
    EXPECT_EQ(tok->eos_id(), tok->token_to_id("[SEP]")) << dir;
    EXPECT_EQ(tok->pad_id(), tok->token_to_id("[PAD]")) << dir;
    EXPECT_EQ(tok->unk_id(), tok->token_to_id("[UNK]")) << dir;
    EXPECT_EQ(tok->mask_id(), tok->token_to_id("[MASK]")) << dir;
    EXPECT_EQ(tok->pad_id(), 0) << dir;
    EXPECT_NE(tok->bos_id(), tok->eos_id()) << dir;
  }
  for (const char* dir : {"xlmr", "xlmr-slow"}) {
    const auto tok = Tokenizer::from_dir(pipeline_dir() / dir);
    EXPECT_EQ(tok->bos_id(), 0) << dir;
    EXPECT_EQ(tok->pad_id(), 1) << dir;
    EXPECT_EQ(tok->eos_id(), 2) << dir;
    EXPECT_EQ(tok->unk_id(), 3) << dir;
    EXPECT_EQ(tok->mask_id(), tok->vocab_size() - 1) << dir;
  }
  const auto bert = Tokenizer::from_dir(pipeline_dir() / "bert-uncased");
  const std::vector<std::string> texts = {"a", "hello world again"};
  const EncodedBatch b = bert->encode_batch(texts);
  ASSERT_EQ(b.batch, 2);
  EXPECT_EQ(b.ids[size_t(b.max_len) - 1], bert->pad_id());  // row 0 padded with [PAD]
}

// The interface's promise: encode may run from several threads at once (components are immutable).
TEST(TokenizerPipelineThreads, ConcurrentEncodesMatchSequentialOnes) {
  for (const char* dir : {"bert-uncased", "xlmr", "bpe-general"}) {
    const auto tok = Tokenizer::from_dir(pipeline_dir() / dir);
    std::vector<std::string> texts;
    for (const json& c : read_jsonl(pipeline_dir() / (std::string(dir) + ".jsonl")))
      if (c["kind"] == "encode" && c.contains("text")) texts.push_back(c["text"].get<std::string>());
    std::vector<std::vector<int32_t>> expected;
    for (const std::string& t : texts) expected.push_back(tok->encode(t));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w)
      threads.emplace_back([&, w] {
        for (int round = 0; round < 3; ++round)
          for (size_t i = size_t(w); i < texts.size(); i += 2)
            if (tok->encode_with_offsets(texts[i]).ids != expected[i]) ++mismatches[size_t(w)];
      });
    for (std::thread& t : threads) t.join();
    for (int m : mismatches) EXPECT_EQ(m, 0) << dir;
  }
}

TEST(TokenizerPipelineErrors, MaxLengthIsChecked) {
  const auto tok = Tokenizer::from_dir(pipeline_dir() / "bert-uncased");
  EXPECT_THROW(tok->encode("a b c", true, -1), rc::Error);
  EXPECT_THROW(tok->encode("a b c", true, 1), rc::Error);  // [CLS] and [SEP] need 2
  EXPECT_THROW(tok->encode_pair("a", "b", 2), rc::Error);  // [CLS] A [SEP] B [SEP] needs 3
  EXPECT_EQ(tok->encode("a b c", true, 2).size(), 2u);     // only the specials left
  EXPECT_EQ(tok->encode("a b c", false, 2).size(), 2u);    // no specials: 2 of the words
  EXPECT_EQ(tok->encode_words(std::vector<std::string>{"a", "b", "c"}, 3).ids.size(), 3u);
}

struct Scratch {
  fs::path path;
  explicit Scratch(const std::string& name)
      : path(fs::temp_directory_path() / ("rc_pipe_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() { fs::remove_all(path); }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream(path / file, std::ios::binary) << text;
  }
};

void expect_pipeline_error(const std::function<void()>& f, Errc errc, const std::vector<std::string>& needles) {
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

json bert_doc() {
  std::ifstream in(pipeline_dir() / "bert-uncased/tokenizer.json");
  return json::parse(in);
}

TEST(TokenizerPipelineErrors, UnknownComponentTypesAreRefusedNamingTypeAndFile) {
  const std::vector<std::pair<const char*, const char*>> slots = {{"normalizer", "Frobnicate"},
                                                                  {"pre_tokenizer", "UnicodeScripts2"},
                                                                  {"post_processor", "Weird"},
                                                                  {"decoder", "CTC9"},
                                                                  {"model", "Wordish"}};
  for (const auto& [slot, type] : slots) {
    Scratch d(std::string("unknown_") + slot);
    json doc = bert_doc();
    doc[slot] = {{"type", type}};
    d.write("tokenizer.json", doc.dump());
    expect_pipeline_error([&] { Tokenizer::from_dir(d.path); }, Errc::unsupported, {type, "tokenizer.json", slot});
  }
}

TEST(TokenizerPipelineErrors, BadPatternsAndCharsmapsAreRefused) {
  {
    Scratch d("bad_regex");
    json doc = bert_doc();
    doc["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
    d.write("tokenizer.json", doc.dump());
    expect_pipeline_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"(unclosed", "tokenizer.json"});
  }
  {
    Scratch d("byte_regex");  // \C matches one byte of a character: it would cut text apart
    json doc = bert_doc();
    doc["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\C"}}}, {"behavior", "Isolated"}};
    d.write("tokenizer.json", doc.dump());
    expect_pipeline_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"does not compile"});
  }
  {
    Scratch d("empty_literal");
    json doc = bert_doc();
    doc["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", ""}}}, {"content", "x"}};
    d.write("tokenizer.json", doc.dump());
    expect_pipeline_error([&] { Tokenizer::from_dir(d.path); }, Errc::unsupported, {"empty pattern"});
  }
  {
    Scratch d("long_regex");
    json doc = bert_doc();
    doc["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", std::string(5000, 'a')}}}, {"content", ""}};
    d.write("tokenizer.json", doc.dump());
    expect_pipeline_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"5000 bytes"});
  }
  for (const char* charsmap : {"!!!!", "AAAA", "/////w=="}) {  // not base64; too short; trie past the end
    Scratch d("bad_charsmap");
    json doc = bert_doc();
    doc["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", charsmap}};
    d.write("tokenizer.json", doc.dump());
    expect_pipeline_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"precompiled_charsmap"});
  }
  {
    Scratch d("truncated_spm");
    std::ifstream in(pipeline_dir() / "xlmr-slow/sentencepiece.bpe.model", std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), {}};
    d.write("sentencepiece.bpe.model", bytes.substr(0, bytes.size() / 3));
    expect_pipeline_error([&] { Tokenizer::from_dir(d.path); }, Errc::format, {"sentencepiece.bpe.model"});
  }
}

// An added token's id in the file is not used (tokenizers' serialization.rs adds the tokens
// anew): a huge one sizes nothing, and the token takes the next id past the vocabulary.
TEST(TokenizerPipelineErrors, HugeAddedTokenIdIsIgnoredAsTokenizersDoes) {
  Scratch d("huge_added_id");
  json doc = bert_doc();
  const int32_t next = Tokenizer::from_dir(pipeline_dir() / "bert-uncased")->vocab_size();
  doc["added_tokens"].push_back({{"id", 2147483000}, {"content", "<big>"}, {"special", true}});
  d.write("tokenizer.json", doc.dump());
  const auto tok = Tokenizer::from_dir(d.path);
  EXPECT_EQ(tok->token_to_id("<big>"), next);
  EXPECT_EQ(tok->vocab_size(), next + 1);
  const std::vector<int32_t> ids = tok->encode("a <big>", false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), next);
}

// A backtracking pattern that explodes is stopped by PCRE2's match limit: an error, not a hang.
TEST(TokenizerPipelineErrors, CatastrophicRegexIsBounded) {
  Scratch d("catastrophic");
  json doc = bert_doc();
  doc["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a+)+$"}}}, {"behavior", "Isolated"}};
  d.write("tokenizer.json", doc.dump());
  const auto tok = Tokenizer::from_dir(d.path);
  EXPECT_EQ(tok->encode("aaa"), Tokenizer::from_dir(pipeline_dir() / "bert-uncased")->encode("aaa"));  // short: works
  try {
    tok->encode(std::string(40, 'a') + "!");
    ADD_FAILURE() << "no error";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), Errc::resource_exhausted) << e.what();
  }
}

// The byte-level BPE fast path keeps the files it handles; a post-processor with type ids
// (BertProcessing) goes to the pipeline, which gives them.
TEST(TokenizerPipelineDispatch, RobertaWithBertProcessingGivesTypeIds) {
  const auto fast = Tokenizer::from_dir(roberta_tokenizer_dir());
  const PairEncoding f = fast->encode_pair_with_types("a b", "c d");
  EXPECT_EQ(f.ids, (std::vector<int32_t>{0, 102, 741, 2, 2, 438, 385, 2}));  // tools/hf_tokenize.mjs
  EXPECT_EQ(f.type_ids, std::vector<int32_t>(8, 0));
  Scratch d("roberta_bert_processing");
  std::ifstream in(roberta_tokenizer_dir() / "tokenizer.json");
  json doc = json::parse(in);
  doc["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"</s>", 2}}, {"cls", {"<s>", 0}}};
  d.write("tokenizer.json", doc.dump());
  const auto tok = Tokenizer::from_dir(d.path);
  const PairEncoding e = tok->encode_pair_with_types("a b", "c d");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{0, 102, 741, 2, 438, 385, 2}));  // HF 0.22 on the same file
  EXPECT_EQ(e.type_ids, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1}));
  for (const std::string text : {"Hello world", "emoji 😀 and <mask> too", "  spaces  "})
    EXPECT_EQ(tok->encode(text), fast->encode(text)) << text;
}

}  // namespace
}  // namespace rc::test
