// rc::Tokenizer against Hugging Face's ids: the 2,058 roberta-base goldens and the extra
// cases of tools/make_tokenizer_goldens.mjs (specials in text, truncation, invalid UTF-8,
// decode), from both tokenizer.json and vocab.json + merges.txt; plus truncation, batch
// padding, special ids and concurrent encoding.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <thread>

#include <unistd.h>

#include "golden_cases.h"
#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "tokenizer/utf8.h"

namespace rc::test {
namespace {

namespace fs = std::filesystem;

enum class Source { tokenizer_json, vocab_merges_files, vocab_merges_dir };

const char* source_name(Source s) {
  switch (s) {
    case Source::tokenizer_json:
      return "tokenizer_json";
    case Source::vocab_merges_files:
      return "vocab_merges_files";
    case Source::vocab_merges_dir:
      return "vocab_merges_dir";
  }
  return "?";
}

std::unique_ptr<Tokenizer> load_source(Source s) {
  const fs::path dir = roberta_tokenizer_dir();
  switch (s) {
    case Source::tokenizer_json:
      return Tokenizer::from_dir(dir);
    case Source::vocab_merges_files:
      return Tokenizer::from_files(dir / "vocab.json", dir / "merges.txt");
    case Source::vocab_merges_dir: {
      // A folder with only vocab.json + merges.txt: from_dir's fallback path.
      const fs::path tmp = fs::temp_directory_path() / ("rc_tok_vm_" + std::to_string(::getpid()));
      fs::create_directories(tmp);
      fs::copy_file(dir / "vocab.json", tmp / "vocab.json", fs::copy_options::overwrite_existing);
      fs::copy_file(dir / "merges.txt", tmp / "merges.txt", fs::copy_options::overwrite_existing);
      auto tok = Tokenizer::from_dir(tmp);
      fs::remove_all(tmp);
      return tok;
    }
  }
  return nullptr;
}

class TokenizerGolden : public ::testing::TestWithParam<Source> {};

TEST_P(TokenizerGolden, RobertaBaseJsonl) {
  auto tok = load_source(GetParam());
  const auto cases = read_jsonl(tokenizer_data_dir() / "roberta-base.jsonl");
  ASSERT_EQ(cases.size(), 2058u);
  int mismatches = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const auto got = tok->encode(text);
    if (got != want && ++mismatches <= 5)
      ADD_FAILURE() << "text " << nlohmann::json(text).dump() << "\n  got  " << ids_str(got) << "\n  want "
                    << ids_str(want);
  }
  EXPECT_EQ(mismatches, 0) << "of " << cases.size() << " golden lines";
}

TEST_P(TokenizerGolden, ExtraJsonl) {
  auto tok = load_source(GetParam());
  const auto cases = read_jsonl(tokenizer_data_dir() / "extra.jsonl");
  ASSERT_GT(cases.size(), 1000u);
  int mismatches = 0, n_encode = 0, n_hex = 0, n_trunc = 0, n_plain = 0, n_decode = 0;
  for (const auto& c : cases) {
    std::string what, got, want;
    if (c.contains("decode")) {
      ++n_decode;
      const auto ids = c["decode"].get<std::vector<int32_t>>();
      const bool skip = c["skip_special_tokens"];
      got = nlohmann::json(tok->decode(ids, skip)).dump();
      want = nlohmann::json(c["text"]).dump();
      what = "decode(" + ids_str(ids) + (skip ? ", skip_special_tokens)" : ")");
    } else {
      const auto want_ids = c["ids"].get<std::vector<int32_t>>();
      std::vector<int32_t> ids;
      if (c.contains("hex")) {
        ++n_hex;
        ids = tok->encode(from_hex(c["hex"]));
        what = "bytes " + c["hex"].get<std::string>();
      } else if (c.contains("max_length")) {
        ++n_trunc;
        ids = tok->encode(c["text"].get<std::string>(), true, c["max_length"].get<int>());
        what = c["text"].dump() + " max_length=" + c["max_length"].dump();
      } else if (c.contains("add_special_tokens")) {
        ++n_plain;
        ids = tok->encode(c["text"].get<std::string>(), false);
        what = c["text"].dump() + " without specials";
      } else {
        ++n_encode;
        ids = tok->encode(c["text"].get<std::string>());
        what = c["text"].dump();
      }
      got = ids_str(ids);
      want = ids_str(want_ids);
    }
    if (got != want && ++mismatches <= 5) ADD_FAILURE() << what << "\n  got  " << got << "\n  want " << want;
  }
  EXPECT_EQ(mismatches, 0) << "of " << cases.size() << " extra cases";
  // Every kind of case is present, so a generator change cannot silently drop one.
  EXPECT_GT(n_encode, 500);
  EXPECT_GT(n_hex, 100);
  EXPECT_GT(n_trunc, 10);
  EXPECT_GT(n_plain, 10);
  EXPECT_GT(n_decode, 100);
}

INSTANTIATE_TEST_SUITE_P(Sources, TokenizerGolden,
                         ::testing::Values(Source::tokenizer_json, Source::vocab_merges_files,
                                           Source::vocab_merges_dir),
                         [](const auto& info) { return std::string(source_name(info.param)); });

std::unique_ptr<Tokenizer>& shared_tokenizer() {
  static std::unique_ptr<Tokenizer> tok = Tokenizer::from_dir(roberta_tokenizer_dir());
  return tok;
}

TEST(Tokenizer, SpecialIdsAndVocab) {
  const auto& tok = shared_tokenizer();
  // roberta-base's ids (SOURCE.md of the tokenizer files).
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->pad_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->unk_id(), 3);
  EXPECT_EQ(tok->mask_id(), 50264);
  EXPECT_EQ(tok->vocab_size(), 50265);
  EXPECT_EQ(tok->token_to_id("Ġthe"), 5);
  EXPECT_EQ(tok->token_to_id("<mask>"), 50264);
  EXPECT_EQ(tok->token_to_id("no such token"), -1);
  EXPECT_EQ(tok->id_to_token(5), "Ġthe");
  EXPECT_EQ(tok->id_to_token(-1), "");
  EXPECT_EQ(tok->id_to_token(50265), "");
  auto files = Tokenizer::from_files(roberta_tokenizer_dir() / "vocab.json", roberta_tokenizer_dir() / "merges.txt");
  EXPECT_EQ(files->mask_id(), 50264);
  EXPECT_EQ(files->pad_id(), 1);
  EXPECT_EQ(files->vocab_size(), 50265);
}

TEST(Tokenizer, SpecialTokensInText) {
  const auto& tok = shared_tokenizer();
  const int32_t a = tok->token_to_id("a"), b_sp = tok->token_to_id("Ġb"), x = tok->token_to_id("x");
  const int32_t mask = tok->mask_id(), bos = tok->bos_id(), eos = tok->eos_id();
  // <mask> has lstrip: the space before it belongs to it.
  EXPECT_EQ(tok->encode("a <mask> b"), (std::vector<int32_t>{bos, a, mask, b_sp, eos}));
  EXPECT_EQ(tok->encode("a<mask> b"), (std::vector<int32_t>{bos, a, mask, b_sp, eos}));
  // <s> and </s> have no lstrip: written in the text they are still one id each.
  EXPECT_EQ(tok->encode("<s>x</s>"), (std::vector<int32_t>{bos, bos, x, eos, eos}));
  EXPECT_EQ(tok->encode("<s>x</s>", false), (std::vector<int32_t>{bos, x, eos}));
  // Not a special token: "<MASK>" is ordinary text.
  const auto upper = tok->encode("<MASK>");
  EXPECT_GT(upper.size(), 3u);
  EXPECT_EQ(std::count(upper.begin(), upper.end(), mask), 0);
}

TEST(Tokenizer, TruncationKeepsEos) {
  const auto& tok = shared_tokenizer();
  const auto cases = read_jsonl(tokenizer_data_dir() / "roberta-base.jsonl");
  int checked = 0;
  for (size_t i = 0; i < cases.size(); i += 7) {
    const std::string text = cases[i]["text"];
    const auto full = tok->encode(text);
    for (int max_length : {2, 3, 5, 10, 20, 64}) {
      const auto got = tok->encode(text, true, max_length);
      if (int(full.size()) <= max_length) {
        EXPECT_EQ(got, full);
        continue;
      }
      std::vector<int32_t> want(full.begin(), full.begin() + max_length - 1);
      want.push_back(tok->eos_id());
      ASSERT_EQ(got, want) << text << " max_length=" << max_length;
      ++checked;
    }
    // Without specials: a plain prefix.
    const auto plain = tok->encode(text, false);
    const auto cut = tok->encode(text, false, 4);
    EXPECT_EQ(cut, std::vector<int32_t>(plain.begin(), plain.begin() + std::min<size_t>(4, plain.size())));
  }
  EXPECT_GT(checked, 300);
  EXPECT_EQ(tok->encode("", true, 2), (std::vector<int32_t>{0, 2}));
  EXPECT_THROW(tok->encode("hello", true, 1), rc::Error);
  EXPECT_THROW(tok->encode("hello", true, -1), rc::Error);
  EXPECT_EQ(tok->encode("hello world", false, 1).size(), 1u);
  // A long text is cut early, with the same ids as the full encode.
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "word" + std::to_string(i) + " ";
  const auto big_full = tok->encode(big);
  const auto big_cut = tok->encode(big, true, 512);
  ASSERT_EQ(big_cut.size(), 512u);
  EXPECT_TRUE(std::equal(big_cut.begin(), big_cut.end() - 1, big_full.begin()));
  EXPECT_EQ(big_cut.back(), tok->eos_id());
}

TEST(Tokenizer, BatchPaddingAndMasks) {
  const auto& tok = shared_tokenizer();
  const std::vector<std::string> texts = {"short", "", "a somewhat longer text with more tokens 😀", "a <mask> b"};
  const EncodedBatch b = tok->encode_batch(texts);
  ASSERT_EQ(b.batch, 4);
  size_t longest = 0;
  for (const auto& t : texts) longest = std::max(longest, tok->encode(t).size());
  ASSERT_EQ(b.max_len, int64_t(longest));
  ASSERT_EQ(b.ids.size(), size_t(b.batch * b.max_len));
  ASSERT_EQ(b.attention_mask.size(), b.ids.size());
  for (int64_t r = 0; r < b.batch; ++r) {
    const auto row = tok->encode(texts[size_t(r)]);
    EXPECT_EQ(b.lengths[size_t(r)], int32_t(row.size()));
    for (int64_t c = 0; c < b.max_len; ++c) {
      const size_t k = size_t(r * b.max_len + c);
      if (c < int64_t(row.size())) {
        EXPECT_EQ(b.ids[k], row[size_t(c)]) << "row " << r << " col " << c;
        EXPECT_EQ(b.attention_mask[k], 1);
      } else {
        EXPECT_EQ(b.ids[k], tok->pad_id()) << "row " << r << " col " << c;
        EXPECT_EQ(b.attention_mask[k], 0);
      }
    }
  }
  const EncodedBatch cut = tok->encode_batch(texts, 4);
  EXPECT_EQ(cut.max_len, 4);
  EXPECT_EQ(cut.ids[size_t(2 * 4 + 3)], tok->eos_id());
  const EncodedBatch empty = tok->encode_batch(std::vector<std::string>{});
  EXPECT_EQ(empty.batch, 0);
  EXPECT_EQ(empty.max_len, 0);
  EXPECT_TRUE(empty.ids.empty());
}

TEST(Tokenizer, DecodeRoundTrip) {
  const auto& tok = shared_tokenizer();
  const auto cases = read_jsonl(tokenizer_data_dir() / "roberta-base.jsonl");
  int checked = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"];
    if (text.find('<') != std::string::npos) continue;  // added tokens may eat spaces (lstrip)
    EXPECT_EQ(tok->decode(tok->encode(text), true), text);
    EXPECT_EQ(tok->decode(tok->encode(text), false), "<s>" + text + "</s>");
    ++checked;
  }
  EXPECT_GT(checked, 2000);
  const std::vector<int32_t> ids = {0, tok->token_to_id("a"), tok->mask_id(), 99999, -5, 2};
  EXPECT_EQ(tok->decode(ids, false), "<s>a<mask></s>");
  EXPECT_EQ(tok->decode(ids, true), "a");
}

TEST(Tokenizer, InvalidUtf8IsReplacedNotFatal) {
  const auto& tok = shared_tokenizer();
  // Python: b"a\xffb".decode("utf-8", "replace") == "a\ufffdb"; b"\xe2\x82".decode(...) == "\ufffd";
  // b"\xed\xa0\x80" -> 3 x U+FFFD (checked with /usr/bin/python3).
  EXPECT_EQ(tok->encode("a\xff"
                        "b"),
            tok->encode("a\xEF\xBF\xBD"
                        "b"));
  EXPECT_EQ(tok->encode("x\xE2\x82"), tok->encode("x\xEF\xBF\xBD"));
  EXPECT_EQ(tok->encode("\xED\xA0\x80"), tok->encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
  EXPECT_NE(tok->encode("\xED\xA0\x80"), tok->encode("\xEF\xBF\xBD"));
  // Random bytes, with specials and NULs mixed in: never throws, never crashes, and
  // decode(encode(x)) is valid UTF-8 that re-encodes to the same ids (lstrip may have
  // eaten spaces before <mask>; they stay eaten).
  std::mt19937 gen(7);
  const std::vector<std::string> bits = {"<mask>", "<s>", " ", "\n", std::string(1, '\0'), "\xF0\x9F", "'s", "é"};
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    const int n = int(gen() % 40);
    for (int k = 0; k < n; ++k) {
      if (gen() % 4 == 0)
        s += bits[gen() % bits.size()];
      else
        s.push_back(char(gen() % 256));
    }
    std::vector<int32_t> ids;
    ASSERT_NO_THROW(ids = tok->encode(s)) << "case " << i;
    const std::vector<int32_t> inner(ids.begin() + 1, ids.end() - 1);
    const std::string back = tok->decode(inner, false);
    EXPECT_TRUE(rc::tokenizer::is_valid_utf8(back)) << "case " << i;
    EXPECT_EQ(tok->encode(back, false), inner) << "case " << i;
  }
}

TEST(Tokenizer, ConcurrentEncodeMatchesSerial) {
  // A fresh tokenizer: both threads fill the (empty) word cache at the same time.
  auto tok = Tokenizer::from_dir(roberta_tokenizer_dir());
  const auto cases = read_jsonl(tokenizer_data_dir() / "roberta-base.jsonl");
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> want;
  for (const auto& c : cases) {
    texts.push_back(c["text"]);
    want.push_back(c["ids"].get<std::vector<int32_t>>());
  }
  std::atomic<int> mismatches{0};
  auto work = [&](bool reverse) {
    for (size_t k = 0; k < texts.size(); ++k) {
      const size_t i = reverse ? texts.size() - 1 - k : k;
      if (tok->encode(texts[i]) != want[i]) ++mismatches;
    }
  };
  std::thread t1(work, false), t2(work, true);
  t1.join();
  t2.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace rc::test
