// The tokenizer's parts on their own: character classes vs HF's regex for every code point,
// GPT-2 splitting, UTF-8 repair, the byte map, and the two BPE merge paths.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "golden_cases.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/utf8.h"

namespace rc::test {
namespace {

namespace tk = rc::tokenizer;

char class_letter(tk::CharClass c) {
  switch (c) {
    case tk::CharClass::letter:
      return 'L';
    case tk::CharClass::number:
      return 'N';
    case tk::CharClass::whitespace:
      return 'W';
    case tk::CharClass::other:
      return 'O';
  }
  return '?';
}

TEST(TokenizerParts, CharClassesMatchHfForEveryCodePoint) {
  std::ifstream in(tokenizer_data_dir() / "char_classes.txt");
  ASSERT_TRUE(in.good());
  std::string line;
  int64_t checked = 0, mismatches = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string first, last;
    char want;
    fields >> first >> last >> want;
    const uint32_t a = uint32_t(std::stoul(first, nullptr, 16)), b = uint32_t(std::stoul(last, nullptr, 16));
    for (uint32_t cp = a; cp <= b; ++cp) {
      ++checked;
      const char got = class_letter(tk::char_class(cp));
      if (got != want && ++mismatches <= 10)
        ADD_FAILURE() << "U+" << std::hex << cp << std::dec << ": got " << got << ", HF " << want;
    }
  }
  EXPECT_EQ(checked, 0x110000 - 0x800);  // every code point but the surrogates
  EXPECT_EQ(mismatches, 0);
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  tk::gpt2_split(text, [&](size_t b, size_t e) { out.emplace_back(text.substr(b, e - b)); });
  return out;
}
using V = std::vector<std::string>;

TEST(TokenizerParts, Gpt2Split) {
  // Expected pieces follow the regex's alternatives (checked against HF's
  // byteLevelPreTokenizer(false, true).preTokenizeString).
  EXPECT_EQ(split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(split("a \n b"), (V{"a", " \n", " b"}));  // \s+(?!\S) backtracks one
  EXPECT_EQ(split("x\n\n"), (V{"x", "\n\n"}));
  EXPECT_EQ(split("I'm don't I'M"), (V{"I", "'m", " don", "'t", " I", "'", "M"}));
  EXPECT_EQ(split("we'll've'd're's"), (V{"we", "'ll", "'ve", "'d", "'re", "'s"}));
  EXPECT_EQ(split(" 's"), (V{" '", "s"}));
  EXPECT_EQ(split("abc123 45!!?x"), (V{"abc", "123", " 45", "!!?", "x"}));
  EXPECT_EQ(split("a\u00a0b"), (V{"a", "\u00a0", "b"}));  // NBSP is \s, not ' '
  EXPECT_EQ(split("a \u00a0x"), (V{"a", " ", "\u00a0", "x"}));
  EXPECT_EQ(split("e\u0301t\u00e9"), (V{"e", "\u0301", "t\u00e9"}));  // a mark is "other"
  EXPECT_EQ(split(""), V{});
  EXPECT_EQ(split(" "), V{" "});
  EXPECT_EQ(split("   "), V{"   "});
}

TEST(TokenizerParts, Utf8Repair) {
  // Expected values from Python 3: bytes.decode("utf-8", errors="replace").
  const std::string R = "\xEF\xBF\xBD";
  EXPECT_EQ(tk::repair_utf8("\xC0\xAF"), R + R);
  EXPECT_EQ(tk::repair_utf8("\xE2\x82"), R);
  EXPECT_EQ(tk::repair_utf8("\xE2\x82"
                            "A"),
            R + "A");
  EXPECT_EQ(tk::repair_utf8("\xED\xA0\x80"), R + R + R);
  EXPECT_EQ(tk::repair_utf8("\xF0\x9F\x98"), R);
  EXPECT_EQ(tk::repair_utf8("\xF4\x90\x80\x80"), R + R + R + R);
  EXPECT_EQ(tk::repair_utf8("\xE1\x80\xE1\x80"), R + R);
  EXPECT_EQ(tk::repair_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_TRUE(tk::is_valid_utf8("plain ascii and \xC3\xA9 and \xF0\x9F\x98\x80"));
  EXPECT_FALSE(tk::is_valid_utf8("0123456789abcdef\xFF"));
  // Random bytes: the repair is valid UTF-8 and a no-op on valid input.
  std::mt19937 gen(3);
  for (int i = 0; i < 5000; ++i) {
    std::string s(gen() % 32, '\0');
    for (char& c : s) c = char(gen() % 256);
    const std::string r = tk::repair_utf8(s);
    ASSERT_TRUE(tk::is_valid_utf8(r));
    ASSERT_EQ(tk::repair_utf8(r), r);
    if (tk::is_valid_utf8(s)) {
      ASSERT_EQ(r, s);
    }
  }
}

TEST(TokenizerParts, ByteMapIsABijection) {
  EXPECT_EQ(tk::byte_to_codepoint(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(tk::byte_to_codepoint('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(tk::byte_to_codepoint('a'), uint32_t('a'));
  for (int b = 0; b < 256; ++b) EXPECT_EQ(tk::codepoint_to_byte(tk::byte_to_codepoint(uint8_t(b))), b);
  EXPECT_EQ(tk::codepoint_to_byte(0x4E00), -1);
}

TEST(TokenizerParts, BpeSmallAndHeapPathsAgree) {
  const auto spec = tk::read_tokenizer_json(roberta_tokenizer_dir() / "tokenizer.json");
  const tk::BpeModel model(tk::byte_ids_of(spec.vocab), tk::resolve_merges(spec));
  std::mt19937 gen(11);
  const std::vector<std::string> pieces = {"a", "b", "e", "th", "in", "g", " ", "1", "😀", "é", "ing", "!"};
  for (int i = 0; i < 2000; ++i) {
    std::string w;
    const int n = 1 + int(gen() % 40);
    for (int k = 0; k < n; ++k) w += pieces[gen() % pieces.size()];
    std::vector<int32_t> small, heap, cached;
    model.encode_word_uncached(w, small);
    model.encode_word_uncached(w, heap, /*force_heap=*/true);
    model.encode_word(w, cached);
    ASSERT_EQ(small, heap) << w;
    ASSERT_EQ(small, cached) << w;
  }
  EXPECT_GT(model.cache_size(), 0u);
  // A known merge: " the" is one token, "Ġthe" = 5.
  std::vector<int32_t> ids;
  model.encode_word(" the", ids);
  EXPECT_EQ(ids, std::vector<int32_t>{5});
}

}  // namespace
}  // namespace rc::test
