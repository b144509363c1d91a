// The pipeline's fast encode path (plain strings, no alignments: PipelineOptions::fast_path)
// against its general path on the same tokenizer.json, over a fuzz-ish corpus: tweets, hard
// Unicode (accents, CJK, full-width, ligatures, combining marks, zero-width and control
// characters, Arabic, emoji sequences, runs of spaces), special tokens written in text, invalid
// UTF-8, and random strings of those characters. The general path is itself checked against HF's
// Rust tokenizers (test_tokenizer_pipeline.cpp's goldens, which now run the fast path too).
// Tokenizers: every fixture of tests/data/tokenizer/pipeline, and the representative 30k
// WordPiece / 32k Unigram ones of tools/make_bench_tokenizers.py when they have been made
// (build/bench-tokenizers).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "golden_cases.h"
#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "tokenizer/pipeline/pipeline_tokenizer.h"

namespace rc::test {
namespace {

namespace fs = std::filesystem;
namespace pl = rc::tokenizer::pipeline;

std::vector<fs::path> tokenizer_dirs() {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(tokenizer_data_dir() / "pipeline"))
    if (e.is_directory() && fs::exists(e.path() / "tokenizer.json")) dirs.push_back(e.path());
  for (const char* name : {"bert-30k", "xlmr-32k"}) {
    const fs::path d = fs::path(RC_SOURCE_DIR) / "build/bench-tokenizers" / name;
    if (fs::exists(d / "tokenizer.json")) dirs.push_back(d);
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::unique_ptr<Tokenizer> load(const fs::path& dir, bool fast) {
  pl::PipelineOptions options;
  options.fast_path = fast;
  return pl::make_pipeline_tokenizer(pl::read_tokenizer_document(dir / "tokenizer.json"),
                                     (dir / "tokenizer.json").string(), pl::read_roles(dir), options);
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += char(0xE0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xF0 | (cp >> 18)), s += char(0x80 | ((cp >> 12) & 0x3F)), s += char(0x80 | ((cp >> 6) & 0x3F)),
        s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

std::vector<std::string> corpus() {
  std::vector<std::string> texts = {
      "",
      " ",
      "     many   spaces  between   ",
      "Hello, World! It's 2024... #NLP @user https://t.co/x?y=1",
      "Café résumé naïve Ångström Øre ĳ ﬁnance ﬂow",
      "e\u0301 a\u0308 \u0301\u0302 alone",
      "İstanbul ΣΑΣ ß straße ǅ",
      "中文字符和日本語のテキスト 한국어",
      "ｆｕｌｌ　ｗｉｄｔｈ ＡＢＣ １２３",
      "a\u200Bb\u200Dc\uFEFFd\u2060e",
      std::string("ctl\x01\x02\x7F x\0y", 14),
      "\t tab\nnew\r\nline\rcr \u0085 nel \u00A0nbsp \u2003em \u3000ideo",
      "مرحبا بالعالم שלום עולם",
      "👩\u200D👩\u200D👧\u200D👦 🇫🇷🇯🇵 👍🏽 ❤\uFE0F 1\uFE0F\u20E3",
      "[CLS] x [SEP] [MASK] [UNK] <s>x</s> <mask> <unk> <pad>",
      "##abc ## #",
      "\u2581 \u2581\u2581x\u2581",
      "\uFFFD replacement",
      "\xFF\xFE invalid \xC3 bytes \xE2\x82",
      std::string(300, 'a'),
      std::string(120, 'x') + " " + std::string(101, 'y'),
      "ค่ะ नमस्ते दुनिया Привет мир Γειά σου",
      "x\u0903y\u20E3z",
  };
  {
    std::ifstream in(fs::path(RC_SOURCE_DIR) / "data/tweeteval/sentiment/test_text.txt");
    std::string line;
    for (int i = 0; i < 200 && std::getline(in, line); ++i) texts.push_back(line);
  }
  // Random strings of these characters and words (fixed seed).
  const std::vector<uint32_t> chars = {
      'a',    'Z',    'q',    '0',     '7',     ' ',     ' ',    ' ',    '.',    ',',    '!',    '\'',   '#',
      '@',    '-',    '_',    '\t',    '\n',    '\r',    0x00,   0x07,   0x7F,   0x85,   0xA0,   0xE9,   0xC5,
      0x130,  0xDF,   0x3A3,  0x301,   0x308,   0x903,   0x20E3, 0xFB01, 0x132,  0xFF21, 0xFF41, 0x3000, 0x4E2D,
      0x6587, 0x3042, 0xAC00, 0x645,   0x5D0,   0xE01,   0xE48,  0x915,  0x93F,  0x200B, 0x200D, 0xFEFF, 0x2060,
      0x2003, 0x2581, 0xFFFD, 0x1F600, 0x1F3FD, 0x1F1EB, 0x2764, 0xFE0F, 0x1F469};
  const std::vector<std::string> words = {"the", "Tweet", "don't", "[MASK]", "<mask>", "</s>", "##ing", "  "};
  std::mt19937 rng(30);
  for (int i = 0; i < 600; ++i) {
    std::string t;
    const int n = int(rng() % 40);
    for (int k = 0; k < n; ++k) {
      if (rng() % 8 == 0)
        t += words[rng() % words.size()];
      else
        t += utf8(chars[rng() % chars.size()]);
    }
    texts.push_back(std::move(t));
  }
  return texts;
}

TEST(TokenizerFastPath, TakenForCommonChainsOnly) {
  const fs::path dir = tokenizer_data_dir() / "pipeline";
  for (const char* name : {"bert-uncased", "bert-cased", "xlmr", "camembert", "unigram-bytes"})
    EXPECT_TRUE(pl::fast_paths(*load(dir / name, true)).single) << name;
  // encode_with_offsets: BERT's chain (ASCII-aligned normalizer, BertPreTokenizer, template
  // without trim_offsets) and SentencePiece's (Precompiled, Strip, Replace, Metaspace,
  // Unigram, NFKC); not Sequence pre-tokenizers nor byte-level ones.
  for (const char* name : {"bert-uncased", "bert-cased", "xlmr", "camembert", "xlmr-bytefallback", "unigram-bytes"})
    EXPECT_TRUE(pl::fast_paths(*load(dir / name, true)).offsets) << name;
  for (const char* name : {"wordpiece-mix", "bytelevel-mix"})
    EXPECT_FALSE(pl::fast_paths(*load(dir / name, true)).offsets) << name;
  EXPECT_FALSE(pl::fast_paths(*load(dir / "bert-uncased", false)).offsets);
  // Sequence pre-tokenizers have no plain form: the general path.
  EXPECT_FALSE(pl::fast_paths(*load(dir / "wordpiece-mix", true)).single);
  EXPECT_FALSE(pl::fast_paths(*load(dir / "bert-uncased", false)).single);
  // From the slow files (vocab.txt, sentencepiece model) too.
  EXPECT_TRUE(pl::fast_paths(*Tokenizer::from_dir(dir / "bert-uncased-slow")).single);
  // Words and pairs: [CLS] A [SEP] B [SEP] (types 0 and 1), <s> A </s></s> B </s>.
  for (const char* name : {"bert-uncased", "xlmr"}) {
    const pl::FastPaths f = pl::fast_paths(*load(dir / name, true));
    EXPECT_TRUE(f.words && f.pair) << name;
  }
}

TEST(TokenizerFastPath, AgreesWithGeneralPathOnFuzzCorpus) {
  const std::vector<std::string> texts = corpus();
  int fast_dirs = 0, pair_dirs = 0, words_dirs = 0;
  for (const fs::path& dir : tokenizer_dirs()) {
    SCOPED_TRACE(dir.string());
    const auto fast = load(dir, true), general = load(dir, false);
    ASSERT_FALSE(pl::fast_paths(*general).single);
    const pl::FastPaths paths = pl::fast_paths(*fast);
    fast_dirs += paths.single;
    pair_dirs += paths.pair;
    words_dirs += paths.words;
    const int n_special = int(general->encode("", true, 0).size());
    int failures = 0;
    for (const std::string& t : texts) {
      if (failures > 5) break;
      const std::vector<int32_t> want = general->encode(t, true, 0);
      const std::vector<int32_t> got = fast->encode(t, true, 0);
      if (got != want) ++failures;
      EXPECT_EQ(ids_str(got), ids_str(want)) << "text: " << t;
      EXPECT_EQ(fast->encode(t, false, 0), general->encode(t, false, 0)) << t;
      for (int budget : {1, 5}) {
        const int max_length = n_special + budget;
        EXPECT_EQ(fast->encode(t, true, max_length), general->encode(t, true, max_length)) << t;
        EXPECT_EQ(fast->encode(t, max_length, TruncationSide::left),
                  general->encode(t, max_length, TruncationSide::left))
            << t;
        EXPECT_EQ(fast->encode(t, false, budget), general->encode(t, false, budget)) << t;
      }
    }
    // Pairs (each text with the next) and words (each text cut at spaces).
    const int n_pair = int(general->encode_pair("", "", 0).size());
    for (size_t i = 0; i + 1 < texts.size(); i += 5) {
      const std::string &t = texts[i], &u = texts[i + 1];
      for (int max_length : {0, n_pair + 5})
        for (TruncationSide side : {TruncationSide::right, TruncationSide::left}) {
          const PairEncoding want = general->encode_pair_with_types(t, u, max_length, side);
          const PairEncoding got = fast->encode_pair_with_types(t, u, max_length, side);
          EXPECT_EQ(got.ids, want.ids) << t << " | " << u << " | " << max_length;
          EXPECT_EQ(got.type_ids, want.type_ids) << t << " | " << u << " | " << max_length;
        }
      std::vector<std::string> words;
      for (size_t at = 0; at <= t.size();) {
        const size_t space = std::min(t.find(' ', at), t.size());
        words.push_back(t.substr(at, space - at));
        at = space + 1;
      }
      for (int max_length : {0, n_special + 4}) {
        const WordsEncoding want = general->encode_words(words, max_length);
        const WordsEncoding got = fast->encode_words(words, max_length);
        EXPECT_EQ(got.ids, want.ids) << t << " | " << max_length;
        EXPECT_EQ(got.word_ids, want.word_ids) << t << " | " << max_length;
      }
    }
    const std::vector<std::string> batch(texts.begin(), texts.begin() + 64);
    const EncodedBatch a = fast->encode_batch(batch, 0), b = general->encode_batch(batch, 0);
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.lengths, b.lengths);
    // Bad max_length: the same errors.
    EXPECT_THROW(fast->encode("a b", true, -1), rc::Error);
    if (n_special > 1) {
      EXPECT_THROW(fast->encode("a b", true, n_special - 1), rc::Error);
    }
  }
  // The comparisons above ran the fast paths.
  EXPECT_GE(fast_dirs, 5);
  EXPECT_GE(pair_dirs, 4);
  EXPECT_GE(words_dirs, 4);
}

// ASCII texts, where encode_with_offsets' fast path applies: every control character, runs of
// whitespace of each kind, punctuation, case, added tokens written in the text, long words.
std::vector<std::string> ascii_corpus() {
  std::vector<std::string> texts = {"",
                                    " ",
                                    "a",
                                    "Hello, World!",
                                    "  lead and trail  ",
                                    "a\x01b\x7f c\td\ve\ff",
                                    "[MASK]x[CLS] [SEP]",
                                    "x [MASK] y",
                                    std::string(150, 'A') + " b",
                                    "don't stop -- it's 3.14 (or $5)!",
                                    "##ing ## # UNK [UNK]"};
  {
    std::ifstream in(fs::path(RC_SOURCE_DIR) / "data/tweeteval/sentiment/test_text.txt");
    std::string line;
    for (int i = 0; i < 400 && std::getline(in, line);)
      if (std::all_of(line.begin(), line.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
        texts.push_back(line), ++i;
  }
  const std::vector<std::string> words = {"the",
                                          "Tweet",
                                          "don't",
                                          "[MASK]",
                                          "[CLS]",
                                          "<mask>",
                                          "##ing",
                                          "  ",
                                          "license",
                                          "GNU",
                                          "<ent>",
                                          "free",
                                          std::string(105, 'z')};
  std::mt19937 rng(31);
  for (int i = 0; i < 800; ++i) {
    std::string t;
    const int n = int(rng() % 30);
    for (int k = 0; k < n; ++k) {
      if (rng() % 5 == 0)
        t += words[rng() % words.size()];
      else
        t += char(rng() % 128);
    }
    texts.push_back(std::move(t));
  }
  return texts;
}

// A BERT tokenizer.json with added tokens of every kind (normalized or not, lstrip, rstrip,
// single_word) and a Sequence normalizer (Strip, BertNormalizer, NFKC, StripAccents).
nlohmann::json bert_with_added_tokens() {
  std::ifstream in(tokenizer_data_dir() / "pipeline/bert-cased/tokenizer.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  int next = int(doc["model"]["vocab"].size());
  auto add = [&](const char* content, bool normalized, bool lstrip, bool rstrip, bool single_word) {
    doc["added_tokens"].push_back({{"id", next++},
                                   {"content", content},
                                   {"normalized", normalized},
                                   {"lstrip", lstrip},
                                   {"rstrip", rstrip},
                                   {"single_word", single_word},
                                   {"special", false}});
  };
  add("license", true, false, false, true);
  add("GNU", false, false, false, false);
  add("<ent>", false, true, true, false);
  add("free", true, true, false, false);
  add("ing", true, false, true, false);
  doc["normalizer"] = {{"type", "Sequence"},
                       {"normalizers",
                        {{{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
                         doc["normalizer"],
                         {{"type", "NFKC"}},
                         {{"type", "StripAccents"}}}}};
  return doc;
}

TEST(TokenizerFastPath, OffsetsAgreeWithGeneralPathOnFuzzCorpus) {
  std::vector<std::string> texts = ascii_corpus();
  const std::vector<std::string> unicode = corpus();
  texts.insert(texts.end(), unicode.begin(), unicode.end());  // BertNormalizer's normalize_aligned
  struct Case {
    std::string name;
    std::unique_ptr<Tokenizer> fast, general;
  };
  std::vector<Case> cases;
  for (const fs::path& dir : tokenizer_dirs()) cases.push_back({dir.string(), load(dir, true), load(dir, false)});
  {
    pl::PipelineOptions general;
    general.fast_path = false;
    cases.push_back({"bert-with-added-tokens", pl::make_pipeline_tokenizer(bert_with_added_tokens(), "inline"),
                     pl::make_pipeline_tokenizer(bert_with_added_tokens(), "inline", {}, general)});
  }
  int offsets_cases = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(pl::fast_paths(*c.general).offsets);
    offsets_cases += pl::fast_paths(*c.fast).offsets;
    const int n_special = int(c.general->encode("", true, 0).size());
    int failures = 0;
    for (const std::string& t : texts) {
      if (failures > 5) break;
      for (int max_length : {0, n_special + 1, n_special + 6}) {
        const OffsetsEncoding want = c.general->encode_with_offsets(t, max_length);
        const OffsetsEncoding got = c.fast->encode_with_offsets(t, max_length);
        const bool same =
            got.ids == want.ids && got.offsets == want.offsets && got.special_tokens_mask == want.special_tokens_mask;
        failures += !same;
        EXPECT_TRUE(same) << "text: '" << t << "' max_length " << max_length << " ids " << ids_str(got.ids) << " vs "
                          << ids_str(want.ids);
      }
    }
    EXPECT_THROW(c.fast->encode_with_offsets("a b", -1), rc::Error);
    if (n_special > 1) {
      EXPECT_THROW(c.fast->encode_with_offsets("a b", n_special - 1), rc::Error);
    }
  }
  // BERT cased and uncased (tokenizer.json, and in-memory with added tokens), XLM-R, CamemBERT
  // and XLM-R with byte_fallback ran the fast path.
  EXPECT_GE(offsets_cases, 6);
}

// Texts the nmt_nfkc charsmap rewrites, alone and next to what it keeps: controls it removes
// (at the start, after a ligature it expands, before a combining mark), whitespace it maps to a
// space, compatibility characters it expands into several (ligatures, ellipsis, squared
// words, circled numbers, fractions), half-width kana whose sound mark it composes, CR LF,
// full-width forms, and runs of spaces the Replace step merges.
std::vector<std::string> charsmap_corpus() {
  std::vector<std::string> texts = {
      "\x01"
      "abc",
      "\x01\x02 x",
      "\x01\uFB01 x",
      "\uFB01\x01x",
      "x\uFB01\x01\x01y",
      "a\x7F\u0301b",
      "\uFB03\u2026\u3349\u2460\u00BD end",
      "\uFF76\uFF9E\uFF8A\uFF9F \uFF76\uFF9E",
      "line\r\nnext\r\rlast\n",
      "\u3000\u3000x\u00A0\u00A0y\u2002z",
      "a  b   c    d\t\te",
      "  lead trail   ",
      "\u2581x \u2581 \u2581\u2581",
      "\u00AD soft\u00ADhyphen \u200B zero",
      "\u212B\u2126\u1E9B\u0323 \u0344",
      "\uFF21\uFF22\uFF23\uFF0C\uFF01 \uFF11\uFF12",
      "\u1100\u1161\u11A8 \uAC00\u11A8",
      "\U0001F468\u200D\U0001F469\u200D\U0001F467 \u0915\u094D\u0937\u093F",
      "\u0645\u0631\u062D\u0628\u0627 \uFEFB \uFDFA",
      "\u00C5ngstr\u00F6m \u0041\u030A",
      "\x01",
      "\uFB01",
      "\u2026",
      "\t",
  };
  // Random strings over those characters (fixed seed).
  const std::vector<std::string> parts = {
      "a",      "Z",      " ",      " ",          "  ",     "\x01",   "\x7F",   "\t",     "\r",     "\n",     "\r\n",
      "\uFB01", "\u2026", "\u3349", "\u2460",     "\uFF76", "\uFF9E", "\u3000", "\u00A0", "\u0301", "\u200D", "\u00AD",
      "\uFF21", "\u2581", "\u4E2D", "\U0001F600", "\uFE0F", "\u0645", "\u0915", "\u094D", "\u00E9"};
  std::mt19937 rng(32);
  for (int i = 0; i < 1500; ++i) {
    std::string t;
    const int n = int(rng() % 16);
    for (int k = 0; k < n; ++k) t += parts[rng() % parts.size()];
    texts.push_back(std::move(t));
  }
  return texts;
}

// XLM-R's tokenizer.json with its Metaspace pre-tokenizer (prepend_scheme, split) and its
// normalizer changed.
nlohmann::json xlmr_variant(const char* prepend_scheme, bool split, const nlohmann::json* normalizer) {
  std::ifstream in(tokenizer_data_dir() / "pipeline/xlmr/tokenizer.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["pre_tokenizer"]["prepend_scheme"] = prepend_scheme;
  doc["pre_tokenizer"]["split"] = split;
  if (normalizer) doc["normalizer"] = *normalizer;
  return doc;
}

// SentencePiece-style chains (Precompiled and the usual normalizers, Metaspace, Unigram) on
// encode_with_offsets' fast path: the same ids, offsets and masks as the general path (itself
// held to HF's goldens) on the fuzz corpus and the charsmap's rewrites, for XLM-R, CamemBERT,
// byte_fallback, the 32k bench tokenizer when made, and XLM-R with Metaspace's other options
// and other normalizers; every text is served by the fast path (a silent fallback to the
// general path fails).
TEST(TokenizerFastPath, SentencePieceOffsetsAgreeWithGeneralPath) {
  std::vector<std::string> texts = charsmap_corpus();
  for (const std::string& t : corpus()) texts.push_back(t);
  for (const std::string& t : ascii_corpus()) texts.push_back(t);
  struct Case {
    std::string name;
    std::unique_ptr<Tokenizer> fast, general;
  };
  std::vector<Case> cases;
  const fs::path dir = tokenizer_data_dir() / "pipeline";
  for (const char* name : {"xlmr", "camembert", "xlmr-bytefallback", "unigram-bytes"})
    cases.push_back({name, load(dir / name, true), load(dir / name, false)});
  if (const fs::path big = fs::path(RC_SOURCE_DIR) / "build/bench-tokenizers/xlmr-32k";
      fs::exists(big / "tokenizer.json"))
    cases.push_back({"xlmr-32k", load(big, true), load(big, false)});
  pl::PipelineOptions general;
  general.fast_path = false;
  auto variant = [&](const std::string& name, const nlohmann::json& doc) {
    cases.push_back(
        {name, pl::make_pipeline_tokenizer(doc, name), pl::make_pipeline_tokenizer(doc, name, {}, general)});
  };
  std::ifstream in(dir / "xlmr/tokenizer.json");
  const nlohmann::json xlmr = nlohmann::json::parse(in);
  const nlohmann::json precompiled = xlmr["normalizer"]["normalizers"][0];
  const nlohmann::json precompiled_only = {{"type", "Sequence"}, {"normalizers", {precompiled}}};
  const nlohmann::json with_prepend = {{"type", "Sequence"},
                                       {"normalizers",
                                        {{{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
                                         precompiled,
                                         {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}},
                                         {{"type", "Prepend"}, {"prepend", "\u2581"}}}}};
  const nlohmann::json none = nullptr;
  auto of = [](const char* type) { return nlohmann::json{{"type", type}}; };
  const nlohmann::json forms = {
      {"type", "Sequence"}, {"normalizers", {of("NFKD"), of("StripAccents"), of("Lowercase"), precompiled, of("NFC")}}};
  const nlohmann::json nfkc_lower = {{"type", "Sequence"}, {"normalizers", {of("NFKC"), of("Lowercase")}}};
  variant("first-split", xlmr_variant("first", true, nullptr));
  variant("never-split", xlmr_variant("never", true, nullptr));
  variant("always-nosplit", xlmr_variant("always", false, nullptr));
  variant("first-nosplit-precompiled-only", xlmr_variant("first", false, &precompiled_only));
  variant("always-split-prepend", xlmr_variant("always", true, &with_prepend));
  variant("always-split-no-normalizer", xlmr_variant("always", true, &none));
  variant("always-split-forms", xlmr_variant("always", true, &forms));
  variant("first-split-nfkc-lowercase", xlmr_variant("first", true, &nfkc_lower));
  const nlohmann::json nfd = of("NFD");
  variant("never-nosplit-nfd", xlmr_variant("never", false, &nfd));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(pl::fast_paths(*c.fast).offsets);
    const int n_special = int(c.general->encode("", true, 0).size());
    int failures = 0, general_served = 0;
    for (const std::string& t : texts) {
      if (failures > 5) break;
      for (int max_length : {0, n_special + 1, n_special + 4}) {
        const OffsetsEncoding want = c.general->encode_with_offsets(t, max_length);
        const OffsetsEncoding got = c.fast->encode_with_offsets(t, max_length);
        const bool same =
            got.ids == want.ids && got.offsets == want.offsets && got.special_tokens_mask == want.special_tokens_mask;
        failures += !same;
        EXPECT_TRUE(same) << "text: '" << t << "' max_length " << max_length << " ids " << ids_str(got.ids) << " vs "
                          << ids_str(want.ids);
      }
      if (!pl::offsets_fast_path_serves(*c.fast, t)) {
        if (++general_served <= 5) ADD_FAILURE() << "general path served '" << t << "'";
      }
    }
    EXPECT_EQ(general_served, 0);
  }
}

}  // namespace
}  // namespace rc::test
