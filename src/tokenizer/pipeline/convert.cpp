// transformers' slow-to-fast converters (src/transformers/convert_slow_tokenizer.py at commit
// 00111b31e6624701fe598078e80d36127ac95241: BertConverter, SpmConverter, XLMRobertaConverter,
// CamembertConverter; for BPE sentencepiece models SentencePieceExtractor and generate_merges as
// of transformers v4.5x, see spm_bpe_merges), writing the tokenizer.json document the fast
// tokenizer would save.
// tools/convert_slow_tokenizer.py is the same transcription in Python; the goldens check that
// both give HF's ids.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "core/check.h"
#include "core/json_depth.h"
#include "core/regular_file.h"
#include "tokenizer/pipeline/build.h"
#include "tokenizer/pipeline/pipeline_tokenizer.h"
#include "tokenizer/pipeline/precompiled.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json special_added(const std::string& content, int32_t id, bool lstrip = false, bool special = true) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", lstrip},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

json template_piece_special(const std::string& id, int type_id) {
  return {{"SpecialToken", {{"id", id}, {"type_id", type_id}}}};
}
json template_piece_sequence(const char* id, int type_id) { return {{"Sequence", {{"id", id}, {"type_id", type_id}}}}; }

json read_config(const fs::path& dir) {
  const fs::path file = dir / "tokenizer_config.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return json::object();
  const std::string text = read_regular_file(file, kMaxSmallJsonFileBytes, "tokenizer config");
  check_json_depth(text, "tokenizer config '" + file.string() + "'");
  try {
    json j = json::parse(text);
    return j.is_object() ? j : json::object();
  } catch (const json::exception& e) {
    RC_THROW(Errc::format, "tokenizer config '", file.string(), "' is not valid JSON: ", e.what(),
             "\nHINT: the file is truncated or corrupt; download it again");
  }
}

std::string config_token(const json& config, const char* key, const char* fallback) {
  auto it = config.find(key);
  if (it == config.end()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return fallback;
}

// --- SentencePiece ModelProto, read by hand (sentencepiece_model.proto): only the fields the
// converters use. Every length is checked against what is left.
struct SpmPiece {
  std::string piece;
  float score = 0;
  int type = 1;  // NORMAL; 2 UNKNOWN, 3 CONTROL, 4 USER_DEFINED, 5 UNUSED, 6 BYTE
};
struct SpmModel {
  std::vector<SpmPiece> pieces;
  int model_type = 1;               // TrainerSpec.model_type: 1 UNIGRAM, 2 BPE, 3 WORD, 4 CHAR
  bool byte_fallback = false;       // read, not used: see convert_sentencepiece
  std::string unk_piece = "<unk>";  // TrainerSpec.unk_piece: the BPE model's unk_token
  std::string precompiled_charsmap;
};

class ProtoReader {
 public:
  ProtoReader(std::string_view data, const std::string& file) : data_(data), file_(file) {}
  bool done() const { return pos_ >= data_.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      check(pos_ < data_.size(), "a varint runs past the end");
      const auto b = static_cast<unsigned char>(data_[pos_++]);
      v |= uint64_t(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    check(false, "a varint is longer than 10 bytes");
    return 0;
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    check(n <= data_.size() - pos_, "a length-delimited field runs past the end");
    const std::string_view out = data_.substr(pos_, size_t(n));
    pos_ += size_t(n);
    return out;
  }
  uint32_t fixed32() {
    check(data_.size() - pos_ >= 4, "a fixed32 runs past the end");
    uint32_t v;
    std::memcpy(&v, data_.data() + pos_, 4);  // little-endian on every supported target
    pos_ += 4;
    return v;
  }
  void skip(int wire) {
    switch (wire) {
      case 0:
        varint();
        break;
      case 1:
        check(data_.size() - pos_ >= 8, "a fixed64 runs past the end");
        pos_ += 8;
        break;
      case 2:
        bytes();
        break;
      case 5:
        fixed32();
        break;
      default:
        check(false, "an unknown wire type");
    }
  }
  void check(bool ok, const char* what) const {
    RC_CHECK(ok, Errc::format, "sentencepiece model '", file_, "' is not a valid ModelProto: ", what,
             "\nHINT: the file is truncated or corrupt; download it again");
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  const std::string& file_;
};

SpmModel read_spm(const fs::path& path) {
  const std::string file = path.string();
  const std::string data = read_regular_file(path, kMaxTokenizerFileBytes, "sentencepiece model",
                                             "real sentencepiece models are a few MB; is it corrupt?");
  SpmModel m;
  ProtoReader r(data, file);
  while (!r.done()) {
    const uint64_t tag = r.varint();
    const int field = int(tag >> 3), wire = int(tag & 7);
    if (field == 1 && wire == 2) {  // repeated SentencePiece pieces
      r.check(m.pieces.size() < kMaxVocab, "more pieces than the vocabulary bound");
      ProtoReader p(r.bytes(), file);
      SpmPiece piece;
      while (!p.done()) {
        const uint64_t t = p.varint();
        const int f = int(t >> 3), w = int(t & 7);
        if (f == 1 && w == 2) {
          const std::string_view s = p.bytes();
          p.check(s.size() <= kMaxTokenBytes && is_valid_utf8(s), "a piece is too long or not UTF-8");
          piece.piece = std::string(s);
        } else if (f == 2 && w == 5) {
          const uint32_t bits = p.fixed32();
          std::memcpy(&piece.score, &bits, 4);
        } else if (f == 3 && w == 0) {
          piece.type = int(p.varint());
        } else {
          p.skip(w);
        }
      }
      m.pieces.push_back(std::move(piece));
    } else if (field == 2 && wire == 2) {  // TrainerSpec
      ProtoReader t(r.bytes(), file);
      while (!t.done()) {
        const uint64_t tg = t.varint();
        const int f = int(tg >> 3), w = int(tg & 7);
        if (f == 3 && w == 0)
          m.model_type = int(t.varint());
        else if (f == 35 && w == 0)
          m.byte_fallback = t.varint() != 0;
        else if (f == 45 && w == 2) {
          const std::string_view s = t.bytes();
          t.check(s.size() <= kMaxTokenBytes && is_valid_utf8(s), "unk_piece is too long or not UTF-8");
          m.unk_piece = std::string(s);
        } else
          t.skip(w);
      }
    } else if (field == 3 && wire == 2) {  // NormalizerSpec
      ProtoReader n(r.bytes(), file);
      while (!n.done()) {
        const uint64_t tg = n.varint();
        const int f = int(tg >> 3), w = int(tg & 7);
        if (f == 2 && w == 2)
          m.precompiled_charsmap = std::string(n.bytes());
        else
          n.skip(w);
      }
    } else {
      r.skip(wire);
    }
  }
  r.check(!m.pieces.empty(), "it has no pieces");
  return m;
}

// transformers v4.5x convert_slow_tokenizer.py, SpmConverter.tokenizer for model_type 2:
// SentencePieceExtractor(vocab_file).extract(vocab_scores) -> generate_merges(vocab, vocab_scores),
// vocab being the model's own {piece: id} and vocab_scores the converter's vocab(proto). (At commit
// 00111b31 generate_merges is unchanged, moved to tokenization_utils_base.py, but SpmConverter still
// calls extract(vocab_scores) against the extractor's new extract(model_type, **kwargs) and fails
// on BPE models; v4.5x is the last code that converts them.) Every split of every piece of
// vocab_scores whose two parts are both pieces of the model, each piece's splits ordered by the
// parts' ids, then all stably by (score, left length, right length) in code points, highest first.
std::vector<std::pair<std::string, std::string>> spm_bpe_merges(
    const SpmModel& m, const std::vector<std::pair<std::string, double>>& vocab_scores, const std::string& file) {
  std::unordered_map<std::string_view, int32_t> spm_ids;  // a repeated piece keeps its last id
  for (size_t i = 0; i < m.pieces.size(); ++i) spm_ids[m.pieces[i].piece] = int32_t(i);
  // dict(vocab_scores): a repeated piece keeps its first position and its last score.
  std::vector<std::pair<std::string_view, double>> scores;
  std::unordered_map<std::string_view, size_t> position;
  for (const auto& [piece, score] : vocab_scores) {
    RC_CHECK(!std::isnan(score), Errc::format, "sentencepiece model '", file, "': piece '", piece.substr(0, 40),
             "' has a NaN score", "\nHINT: the file is corrupt; download it again");
    const auto [it, fresh] = position.emplace(piece, scores.size());
    if (fresh)
      scores.emplace_back(piece, score);
    else
      scores[it->second].second = score;
  }
  struct Merge {
    uint32_t piece;  // index in scores
    uint16_t split, left_chars, right_chars;
  };
  std::vector<Merge> merges;
  for (size_t p = 0; p < scores.size(); ++p) {
    const std::string_view piece = scores[p].first;
    size_t total_chars = 0;
    for (const char c : piece) total_chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    const size_t first = merges.size();
    size_t left_chars = 0;
    for (size_t i = 1; i < piece.size(); ++i) {
      if ((static_cast<unsigned char>(piece[i]) & 0xC0) == 0x80) continue;  // inside a character
      ++left_chars;
      if (spm_ids.count(piece.substr(0, i)) && spm_ids.count(piece.substr(i))) {
        RC_CHECK(merges.size() < kMaxVocab, Errc::format, "sentencepiece model '", file, "' gives more than ",
                 kMaxVocab, " BPE merges", "\nHINT: real models give a few per piece; is the file corrupt?");
        merges.push_back({uint32_t(p), uint16_t(i), uint16_t(left_chars), uint16_t(total_chars - left_chars)});
      }
    }
    std::sort(merges.begin() + std::ptrdiff_t(first), merges.end(), [&](const Merge& a, const Merge& b) {
      return std::pair(spm_ids[piece.substr(0, a.split)], spm_ids[piece.substr(a.split)]) <
             std::pair(spm_ids[piece.substr(0, b.split)], spm_ids[piece.substr(b.split)]);
    });
  }
  // sorted(..., reverse=True) keeps equal keys in their order: a stable sort, highest first.
  std::stable_sort(merges.begin(), merges.end(), [&](const Merge& a, const Merge& b) {
    return std::tuple(scores[a.piece].second, a.left_chars, a.right_chars) >
           std::tuple(scores[b.piece].second, b.left_chars, b.right_chars);
  });
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Merge& x : merges) {
    const std::string_view piece = scores[x.piece].first;
    out.emplace_back(piece.substr(0, x.split), piece.substr(x.split));
  }
  return out;
}

}  // namespace

json convert_bert_vocab(const fs::path& dir) {
  const fs::path vocab_file = dir / "vocab.txt";
  const std::string text = read_regular_file(vocab_file, kMaxTokenizerFileBytes, "tokenizer file",
                                             "a BERT vocab.txt is well under 1 MB; is it corrupt?");
  // transformers' load_vocab: each line, "\n" stripped, numbered from 0 (a repeated token keeps
  // its last number). Text mode also reads "\r\n" as one line end.
  json vocab = json::object();
  int32_t index = 0, size = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    const bool last = nl == std::string::npos;
    if (last) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    RC_CHECK(is_valid_utf8(line) && line.size() <= kMaxTokenBytes, Errc::format, "tokenizer file '",
             vocab_file.string(), "' line ", index + 1, " is not valid UTF-8 or longer than ", kMaxTokenBytes, " bytes",
             "\nHINT: the file is corrupt; download it again");
    RC_CHECK(size_t(index) < kMaxVocab, Errc::format, "tokenizer file '", vocab_file.string(), "' has more than ",
             kMaxVocab, " lines", "\nHINT: the file is corrupt");
    vocab[std::string(line)] = index++;
    pos = nl + 1;
  }
  size = index;
  const json config = read_config(dir);
  const bool lower = config.value("do_lower_case", true);
  const bool chinese = config.value("tokenize_chinese_chars", true);
  json strip_accents = config.contains("strip_accents") && config["strip_accents"].is_boolean()
                           ? config["strip_accents"]
                           : json(nullptr);
  const std::string unk = config_token(config, "unk_token", "[UNK]"), sep = config_token(config, "sep_token", "[SEP]"),
                    pad = config_token(config, "pad_token", "[PAD]"), cls = config_token(config, "cls_token", "[CLS]"),
                    mask = config_token(config, "mask_token", "[MASK]");
  // The fast tokenizer registers its special tokens as added tokens (special, not normalized),
  // with their vocabulary ids; one missing from vocab.txt gets the next id.
  json added = json::array();
  std::vector<std::string> seen;
  int32_t next_id = size;
  auto add = [&](const std::string& content, std::optional<int32_t> id, const json* flags) {
    for (const std::string& s : seen)
      if (s == content) return;
    seen.push_back(content);
    int32_t chosen = id.value_or(-1);
    if (chosen < 0) chosen = vocab.contains(content) ? vocab[content].get<int32_t>() : next_id++;
    json a = special_added(content, chosen);
    if (flags)
      for (const char* k : {"lstrip", "rstrip", "single_word", "normalized", "special"})
        if (flags->contains(k) && (*flags)[k].is_boolean()) a[k] = (*flags)[k];
    added.push_back(a);
  };
  if (auto it = config.find("added_tokens_decoder"); it != config.end() && it->is_object())
    for (const auto& [key, t] : it->items()) {
      if (!t.is_object() || !t.contains("content") || !t["content"].is_string()) continue;
      int32_t id = -1;
      try {
        id = std::stoi(key);
      } catch (const std::exception&) {
        id = -1;
      }
      add(t["content"].get<std::string>(), id >= 0 ? std::optional<int32_t>(id) : std::nullopt, &t);
    }
  for (const std::string& t : {pad, unk, cls, sep, mask}) add(t, std::nullopt, nullptr);
  auto id_of = [&](const std::string& t) {
    for (const json& a : added)
      if (a["content"] == t) return a["id"].get<int32_t>();
    return int32_t(-1);
  };
  json doc;
  doc["version"] = "1.0";
  doc["added_tokens"] = added;
  doc["normalizer"] = {{"type", "BertNormalizer"},
                       {"clean_text", true},
                       {"handle_chinese_chars", chinese},
                       {"strip_accents", strip_accents},
                       {"lowercase", lower}};
  doc["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  doc["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       json::array({template_piece_special(cls, 0), template_piece_sequence("A", 0), template_piece_special(sep, 0)})},
      {"pair",
       json::array({template_piece_special(cls, 0), template_piece_sequence("A", 0), template_piece_special(sep, 0),
                    template_piece_sequence("B", 1), template_piece_special(sep, 1)})},
      {"special_tokens",
       {{cls, {{"id", cls}, {"ids", {id_of(cls)}}, {"tokens", {cls}}}},
        {sep, {{"id", sep}, {"ids", {id_of(sep)}}, {"tokens", {sep}}}}}}};
  doc["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  doc["model"] = {{"type", "WordPiece"},
                  {"unk_token", unk},
                  {"continuing_subword_prefix", "##"},
                  {"max_input_chars_per_word", 100},
                  {"vocab", std::move(vocab)}};
  return doc;
}

bool is_camembert_config(const fs::path& dir) {
  const std::string cls = get_string(read_config(dir), "tokenizer_class", "");
  return cls == "CamembertTokenizer" || cls == "CamembertTokenizerFast";
}

json convert_sentencepiece(const fs::path& model_file, bool camembert) {
  const SpmModel m = read_spm(model_file);
  // SpmConverter.tokenizer: model_type 1 Unigram, 2 BPE; anything else raises.
  const char* const kind = m.model_type == 3 ? "WORD" : m.model_type == 4 ? "CHAR" : "unknown";
  RC_CHECK(m.model_type == 1 || m.model_type == 2, Errc::unsupported, "sentencepiece model '", model_file.string(),
           "' has model_type ", m.model_type, " (", kind, "), not Unigram (1) or BPE (2)",
           "\nHINT: transformers' converters refuse WORD and CHAR sentencepiece models too; use a tokenizer.json "
           "for it, or retrain the model with model_type=unigram or bpe");
  // The converter's vocab(proto), scores as Python holds them (the float read from the model).
  std::vector<std::pair<std::string, double>> vocab_scores;
  if (camembert) {  // CamembertConverter.vocab
    vocab_scores = {
        {"<s>NOTUSED", 0.0}, {"<pad>", 0.0}, {"</s>NOTUSED", 0.0}, {"<unk>", 0.0}, {"<unk>NOTUSED", -100.0}};
    for (size_t i = 1; i < m.pieces.size(); ++i) vocab_scores.emplace_back(m.pieces[i].piece, m.pieces[i].score);
  } else {  // XLMRobertaConverter.vocab
    vocab_scores = {{"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}};
    for (size_t i = 3; i < m.pieces.size(); ++i) vocab_scores.emplace_back(m.pieces[i].piece, m.pieces[i].score);
  }
  vocab_scores.emplace_back("<mask>", 0.0);
  std::unordered_map<std::string_view, int32_t> ids;  // HF's token_to_id and the BPE vocab keep the last
  for (size_t i = 0; i < vocab_scores.size(); ++i) ids[vocab_scores[i].first] = int32_t(i);
  auto vocab_id = [&](const std::string& t) {
    const auto it = ids.find(t);
    return it == ids.end() ? int32_t(-1) : it->second;
  };
  // SpmConverter.tokenizer: control (3) and user-defined (4) pieces as added tokens, not
  // normalized, special when control; then the fast tokenizer's own special tokens
  // (XLMRobertaTokenizerFast: <mask> with lstrip).
  json added = json::array();
  std::vector<std::string> seen;
  int32_t next_id = int32_t(vocab_scores.size());
  auto add = [&](const std::string& content, bool special, bool lstrip) {
    for (const std::string& s : seen)
      if (s == content) return;
    seen.push_back(content);
    int32_t id = vocab_id(content);
    if (id < 0) id = next_id++;
    added.push_back(special_added(content, id, lstrip, special));
  };
  for (const SpmPiece& p : m.pieces)
    if (p.type == 3 || p.type == 4) add(p.piece, p.type == 3, false);
  for (const char* t : {"<s>", "</s>", "<unk>", "<pad>"}) add(t, true, false);
  add("<mask>", true, true);
  std::sort(added.begin(), added.end(), [](const json& a, const json& b) { return a["id"] < b["id"]; });
  json steps = json::array();
  if (!m.precompiled_charsmap.empty()) {
    // Checked here so that a bad charsmap names the model file.
    PrecompiledCharsmap::from_bytes(m.precompiled_charsmap, "sentencepiece model '" + model_file.string() + "'");
    steps.push_back({{"type", "Precompiled"}, {"precompiled_charsmap", encode_base64(m.precompiled_charsmap)}});
  }
  steps.push_back({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}});
  steps.push_back({{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", "\xE2\x96\x81"}});
  json doc;
  doc["version"] = "1.0";
  doc["added_tokens"] = added;
  doc["normalizer"] = {{"type", "Sequence"}, {"normalizers", steps}};
  doc["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}, {"split", true}};
  const int32_t bos = vocab_id("<s>"), eos = vocab_id("</s>");
  doc["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", json::array({template_piece_special("<s>", 0), template_piece_sequence("A", 0),
                                                   template_piece_special("</s>", 0)})},
                           {"pair", json::array({template_piece_special("<s>", 0), template_piece_sequence("A", 0),
                                                 template_piece_special("</s>", 0), template_piece_special("</s>", 0),
                                                 template_piece_sequence("B", 0), template_piece_special("</s>", 0)})},
                           {"special_tokens",
                            {{"<s>", {{"id", "<s>"}, {"ids", {bos}}, {"tokens", {"<s>"}}}},
                             {"</s>", {{"id", "</s>"}, {"ids", {eos}}, {"tokens", {"</s>"}}}}}}};
  doc["decoder"] = {
      {"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}, {"split", true}};
  // SpmConverter.tokenizer passes byte_fallback=self.handle_byte_fallback, which
  // XLMRobertaConverter and CamembertConverter leave False whatever the model was trained with
  // (transformers warns; unknown characters become <unk>, not byte pieces).
  if (m.model_type == 1) {
    // Scores: as tokenizers reads them back from the tokenizer.json the converted tokenizer is
    // saved to (serde_json_f64), the file HF's library, and the goldens, load.
    json vocab = json::array();
    for (const auto& [piece, score] : vocab_scores) vocab.push_back({piece, serde_json_f64(score)});
    doc["model"] = {{"type", "Unigram"}, {"unk_id", 3}, {"vocab", std::move(vocab)}, {"byte_fallback", false}};
    return doc;
  }
  // BPE(bpe_vocab, merges, unk_token=trainer_spec.unk_piece, fuse_unk=True, byte_fallback=False,
  // dropout=None), bpe_vocab = {word: i for i, (word, score) in enumerate(vocab_scores)}.
  json bpe_vocab = json::object();
  for (size_t i = 0; i < vocab_scores.size(); ++i) bpe_vocab[vocab_scores[i].first] = int32_t(i);
  json merges = json::array();
  for (auto& [left, right] : spm_bpe_merges(m, vocab_scores, model_file.string()))
    merges.push_back({std::move(left), std::move(right)});
  doc["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", m.unk_piece},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", false},
                  {"ignore_merges", false},
                  {"vocab", std::move(bpe_vocab)},
                  {"merges", std::move(merges)}};
  return doc;
}

}  // namespace rc::tokenizer::pipeline
