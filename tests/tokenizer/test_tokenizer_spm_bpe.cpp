// SentencePiece BPE models (model_type 2) converted as transformers' XLMRobertaConverter /
// CamembertConverter do (issue 30): folders with only sentencepiece.bpe.model against the goldens
// HF's Rust tokenizers gives on the converted tokenizer.json (tests/data/tokenizer/spm-bpe, made
// by tools/make_spm_bpe_fixtures.py and tools/make_pipeline_goldens.mjs), the converter's document
// against its Python transcription's, and generate_merges' order on a model made by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "golden_cases.h"
#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "tokenizer/pipeline/pipeline_tokenizer.h"

namespace rc::test {
namespace spm_bpe_test {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path spm_bpe_dir() { return tokenizer_data_dir() / "spm-bpe"; }

std::vector<int32_t> as_ids(const json& j) { return j.get<std::vector<int32_t>>(); }

// A folder made for one test, removed after it.
struct TempFolder {
  fs::path path;
  explicit TempFolder(const std::string& name)
      : path(fs::temp_directory_path() / ("rc_spm_bpe_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempFolder() { fs::remove_all(path); }
  void write(const std::string& file, const std::string& bytes) const {
    std::ofstream(path / file, std::ios::binary) << bytes;
  }
};

// The folder a case loads: spm-bpe-camembert is spm-bpe-slow's model beside a
// tokenizer_config.json naming CamembertTokenizer.
std::unique_ptr<Tokenizer> load_slow(const std::string& name) {
  if (name != "spm-bpe-camembert") return Tokenizer::from_dir(spm_bpe_dir() / (name + "-slow"));
  TempFolder dir("camembert");
  fs::copy_file(spm_bpe_dir() / "spm-bpe-slow/sentencepiece.bpe.model", dir.path / "sentencepiece.bpe.model");
  dir.write("tokenizer_config.json", json{{"tokenizer_class", "CamembertTokenizer"}}.dump());
  return Tokenizer::from_dir(dir.path);
}

// Every golden case (tools/make_pipeline_goldens.mjs's kinds) against tok; the number that differ.
size_t count_differing(const Tokenizer& tok, const std::string& name) {
  const std::vector<json> cases = read_jsonl(spm_bpe_dir() / (name + ".jsonl"));
  EXPECT_GT(cases.size(), 400u) << name;
  size_t failures = 0;
  auto fail = [&](const json& c, const std::string& what) {
    if (++failures <= 10) ADD_FAILURE() << name << " " << what << " on " << c.dump().substr(0, 300);
  };
  for (const json& c : cases) {
    const std::string kind = c["kind"];
    const std::string text = c.contains("hex") ? from_hex(c["hex"].get<std::string>()) : c.value("text", "");
    if (kind == "encode") {
      const std::vector<int32_t> ids = as_ids(c["ids"]);
      if (tok.encode(text) != ids) fail(c, "ids " + ids_str(tok.encode(text)));
      const OffsetsEncoding o = tok.encode_with_offsets(text);
      std::vector<std::vector<int32_t>> offsets;
      for (const TokenOffset& t : o.offsets) offsets.push_back({t.start, t.end});
      if (o.ids != ids || json(offsets) != c["offsets"]) fail(c, "offsets " + json(offsets).dump());
      if (std::vector<int32_t>(o.special_tokens_mask.begin(), o.special_tokens_mask.end()) !=
          as_ids(c["special_tokens_mask"]))
        fail(c, "special_tokens_mask");
      if (tok.decode(ids, false) != c["decode"].get<std::string>()) fail(c, "decode " + tok.decode(ids, false));
      if (tok.decode(ids, true) != c["decode_skip"].get<std::string>()) fail(c, "decode_skip " + tok.decode(ids, true));
    } else if (kind == "plain") {
      if (tok.encode(text, false) != as_ids(c["ids"])) fail(c, "plain ids");
    } else if (kind == "pair") {
      const TruncationSide side =
          c.value("direction", "Right") == std::string("Left") ? TruncationSide::left : TruncationSide::right;
      const PairEncoding e =
          tok.encode_pair_with_types(text, c["text_pair"].get<std::string>(), c.value("max_length", 0), side);
      if (e.ids != as_ids(c["ids"]) || e.type_ids != as_ids(c["type_ids"])) fail(c, "pair " + ids_str(e.ids));
    } else if (kind == "truncate") {
      const TruncationSide side = c["direction"] == "Left" ? TruncationSide::left : TruncationSide::right;
      if (tok.encode(text, c["max_length"].get<int>(), side) != as_ids(c["ids"])) fail(c, "truncated ids");
    } else if (kind == "words") {
      const WordsEncoding w = tok.encode_words(c["words"].get<std::vector<std::string>>());
      if (w.ids != as_ids(c["ids"]) || w.word_ids != as_ids(c["word_ids"])) fail(c, "words " + ids_str(w.ids));
    } else if (kind == "vocab") {
      if (tok.vocab_size() != c["vocab_size"].get<int64_t>()) fail(c, "vocab_size");
      for (const json& t : c["tokens"])
        if (tok.token_to_id(t[0].get<std::string>()) != t[1].get<int32_t>() ||
            tok.id_to_token(t[1].get<int32_t>()) != t[0].get<std::string>())
          fail(t, "vocabulary entry");
    }
  }
  return failures;
}

const char* const kVariants[] = {"spm-bpe", "spm-bpe-camembert", "spm-bpe-bytefallback"};

// A folder with only sentencepiece.bpe.model (+ tokenizer_config.json) encodes as HF's tokenizer
// of the converted tokenizer.json: ids, offsets, masks, decode, pairs, truncation, words.
TEST(SpmBpeConversion, SlowFolderMatchesHuggingFace) {
  for (const char* name : kVariants) {
    const auto tok = load_slow(name);
    EXPECT_EQ(count_differing(*tok, name), 0u) << name << "-slow differs from HF";
  }
}

// The converted chain (Precompiled, Strip, Replace, Metaspace, BPE) takes the ids-only fast
// path, so the goldens above check encode() on it and encode_with_offsets() on the general one.
TEST(SpmBpeConversion, ConvertedChainTakesTheFastPath) {
  for (const char* name : kVariants) EXPECT_TRUE(tokenizer::pipeline::fast_paths(*load_slow(name)).single) << name;
}

// The converted tokenizer.json itself through the pipeline's BPE model (fuse_unk, Metaspace).
TEST(SpmBpeConversion, ConvertedTokenizerJsonMatchesHuggingFace) {
  for (const char* name : kVariants) {
    const auto tok = Tokenizer::from_dir(spm_bpe_dir() / name);
    EXPECT_EQ(count_differing(*tok, name), 0u) << name << " differs from HF";
  }
}

// The C++ converter writes the document of its Python transcription (tools/convert_slow_tokenizer.py),
// the file HF's library loaded for the goldens: the same vocabulary, merges in the same order.
TEST(SpmBpeConversion, ConverterWritesThePythonTranscriptionsDocument) {
  for (const char* name : kVariants) {
    const bool camembert = std::strcmp(name, "spm-bpe-camembert") == 0;
    const fs::path model =
        spm_bpe_dir() / (camembert ? "spm-bpe-slow" : std::string(name) + "-slow") / "sentencepiece.bpe.model";
    const json ours = tokenizer::pipeline::convert_sentencepiece(model, camembert);
    std::ifstream in(spm_bpe_dir() / name / "tokenizer.json");
    const json twin = json::parse(in);
    ASSERT_EQ(twin["model"]["type"], "BPE") << name;
    EXPECT_GT(twin["model"]["merges"].size(), 200u) << name;
    for (const char* key : {"added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder", "model"})
      EXPECT_EQ(ours[key], twin[key]) << name << " " << key;
  }
}

// XLM-R's role ids (<s> 0, <pad> 1, </s> 2, <unk> 3, <mask> last) and CamemBERT's (<s> 5 and
// </s> 6, the model's own pieces, after the NOTUSED ones), as the converted vocabularies give them.
TEST(SpmBpeConversion, SpecialIdsAreTheConvertersOnes) {
  const auto xlmr = load_slow("spm-bpe");
  EXPECT_EQ(xlmr->bos_id(), 0);
  EXPECT_EQ(xlmr->pad_id(), 1);
  EXPECT_EQ(xlmr->eos_id(), 2);
  EXPECT_EQ(xlmr->unk_id(), 3);
  EXPECT_EQ(xlmr->mask_id(), xlmr->vocab_size() - 1);
  const auto camembert = load_slow("spm-bpe-camembert");
  EXPECT_EQ(camembert->bos_id(), 5);
  EXPECT_EQ(camembert->pad_id(), 1);
  EXPECT_EQ(camembert->eos_id(), 6);
  EXPECT_EQ(camembert->unk_id(), 3);
  EXPECT_EQ(camembert->mask_id(), camembert->vocab_size() - 1);
}

// --- A SentencePiece ModelProto written by hand (sentencepiece_model.proto field numbers).
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(char((v & 0x7F) | 0x80));
  out.push_back(char(v));
  return out;
}
std::string bytes_field(int field, const std::string& s) {
  return varint(uint64_t(field) << 3 | 2) + varint(s.size()) + s;
}
std::string varint_field(int field, uint64_t v) { return varint(uint64_t(field) << 3) + varint(v); }
std::string piece(const std::string& text, float score, int type = 1) {
  std::string bits(4, '\0');
  std::memcpy(bits.data(), &score, 4);
  return bytes_field(1, bytes_field(1, text) + varint(2 << 3 | 5) + bits + varint_field(3, uint64_t(type)));
}
std::string model_proto(const std::vector<std::string>& pieces, int model_type, const std::string& unk_piece) {
  std::string out;
  for (const std::string& p : pieces) out += p;
  return out + bytes_field(2, varint_field(3, uint64_t(model_type)) + bytes_field(45, unk_piece));
}
std::vector<std::string> specials() { return {piece("<unk>", 0, 2), piece("<s>", 0, 3), piece("</s>", 0, 3)}; }

// generate_merges (transformers v4.5x convert_slow_tokenizer.py) worked through by hand:
// ids <unk>0 <s>1 </s>2 a3 b4 c5 bc6 ab7 abc8 xy9 zw10 x11 y12 z13 w14 ▁15.
//   bc (-1): b|c.  ab (-2): a|b.  abc (-3): a|bc (ids 3,6) before ab|c (7,5).  xy, zw (-3): x|y, z|w.
// Sorted by (score, left length, right length), highest first, ties kept in order:
//   b c | a b | ab c (2,1) | a bc (1,2) | x y (1,1) | z w (1,1, after x y).
TEST(SpmBpeConversion, MergesFollowGenerateMergesOrder) {
  std::vector<std::string> pieces = specials();
  for (const auto& [text, score] : std::vector<std::pair<std::string, float>>{{"a", -5},
                                                                              {"b", -6},
                                                                              {"c", -7},
                                                                              {"bc", -1},
                                                                              {"ab", -2},
                                                                              {"abc", -3},
                                                                              {"xy", -3},
                                                                              {"zw", -3},
                                                                              {"x", -8},
                                                                              {"y", -9},
                                                                              {"z", -10},
                                                                              {"w", -11},
                                                                              {"\xE2\x96\x81", -12}})
    pieces.push_back(piece(text, score));
  TempFolder dir("order");
  dir.write("sentencepiece.bpe.model", model_proto(pieces, 2, "<unk>"));
  const json doc = tokenizer::pipeline::convert_sentencepiece(dir.path / "sentencepiece.bpe.model", false);
  const json expected = json::parse(R"([["b","c"],["a","b"],["ab","c"],["a","bc"],["x","y"],["z","w"]])");
  EXPECT_EQ(doc["model"]["merges"], expected);
  EXPECT_EQ(doc["model"]["unk_token"], "<unk>");
  EXPECT_EQ(doc["model"]["fuse_unk"], true);
  EXPECT_EQ(doc["model"]["byte_fallback"], false);
  // XLM-R's ids: a piece of the model moves up one (<s> <pad> </s> <unk> first), <mask> last.
  EXPECT_EQ(doc["model"]["vocab"]["abc"], 9);
  EXPECT_EQ(doc["model"]["vocab"]["<mask>"], 17);
  // "abc xyzw": ▁ abc (b c, then a bc) and ▁ xy zw; "q" is not in the vocabulary: one <unk>
  // for "qq" (fuse_unk).
  const auto tok = Tokenizer::from_dir(dir.path);
  EXPECT_EQ(tok->encode("abc xyzw qq", false), (std::vector<int32_t>{16, 9, 16, 10, 11, 16, 3}));
}

// The unk_piece of the trainer spec is the BPE model's unk_token, as SpmConverter passes it.
TEST(SpmBpeConversion, UnkPieceComesFromTheTrainerSpec) {
  std::vector<std::string> pieces = specials();
  pieces.push_back(piece("a", -1));
  TempFolder dir("unk_piece");
  dir.write("sentencepiece.bpe.model", model_proto(pieces, 2, "<oov>"));
  const json doc = tokenizer::pipeline::convert_sentencepiece(dir.path / "sentencepiece.bpe.model", false);
  EXPECT_EQ(doc["model"]["unk_token"], "<oov>");
}

void expect_refused(const fs::path& dir, Errc errc, const std::vector<std::string>& needles) {
  try {
    Tokenizer::from_dir(dir);
    ADD_FAILURE() << "no error thrown";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), errc) << e.what();
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
    EXPECT_FALSE(e.hint().empty()) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

// WORD (3) and CHAR (4) models are refused as SpmConverter refuses them, naming the type.
TEST(SpmBpeConversion, WordAndCharModelsAreRefusedNamingTheType) {
  for (const auto& [type, kind] : std::vector<std::pair<int, std::string>>{{3, "WORD"}, {4, "CHAR"}, {7, "unknown"}}) {
    std::vector<std::string> pieces = specials();
    pieces.push_back(piece("a", -1));
    TempFolder dir("type" + std::to_string(type));
    dir.write("sentencepiece.bpe.model", model_proto(pieces, type, "<unk>"));
    expect_refused(dir.path, Errc::unsupported,
                   {"model_type " + std::to_string(type) + " (" + kind + ")", "sentencepiece.bpe.model"});
  }
}

// A NaN score would leave generate_merges' order undefined: the file is refused.
TEST(SpmBpeConversion, NanScoreIsRefused) {
  std::vector<std::string> pieces = specials();
  pieces.push_back(piece("a", -1));
  pieces.push_back(piece("b", std::numeric_limits<float>::quiet_NaN()));
  TempFolder dir("nan");
  dir.write("sentencepiece.bpe.model", model_proto(pieces, 2, "<unk>"));
  expect_refused(dir.path, Errc::format, {"NaN", "sentencepiece.bpe.model"});
}

}  // namespace spm_bpe_test
}  // namespace rc::test
