// Decoders (tokenizers/src/decoders/*.rs and the ByteLevel / Metaspace pre-tokenizers' decode_chain).
#include <algorithm>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pipeline/build.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
using nlohmann::json;
namespace {

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  if (from.empty()) return s;
  std::string out;
  size_t pos = 0;
  for (size_t hit = s.find(from); hit != std::string::npos; hit = s.find(from, pos)) {
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// Rust's str::replace("", to) (bpe.rs decodes with token.replace(&self.suffix, ...)): the empty
// pattern matches at every character boundary, so "ab" gives to + "a" + to + "b" + to.
std::string rust_replace_empty(const std::string& s, std::string_view to) {
  std::string out(to);
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const size_t len = std::min(s.size() - i, size_t(utf8_lead_length(p[i])));
    out.append(s, i, len);
    out.append(to);
    i += len;
  }
  return out;
}

// byte_level.rs decode_chain: every token's characters back to bytes (a token with a character
// outside the map stays as its UTF-8), all joined, invalid UTF-8 replaced (from_utf8_lossy).
class ByteLevelDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      std::string mine;
      bool ok = true;
      for (uint32_t c : code_points(t)) {
        const int b = codepoint_to_byte(c);
        if (b < 0) {
          ok = false;
          break;
        }
        mine.push_back(char(b));
      }
      bytes += ok ? mine : t;
    }
    return {is_valid_utf8(bytes) ? bytes : repair_utf8(bytes)};
  }
};

// wordpiece.rs
class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (!prefix_.empty() && t.compare(0, prefix_.size(), prefix_) == 0)
          t.erase(0, prefix_.size());
        else
          t.insert(0, " ");
      }
      if (cleanup_) t = cleanup(std::move(t));
    }
    return tokens;
  }
  // decoders/wordpiece.rs cleanup()
  static std::string cleanup(std::string s) {
    for (const auto& [from, to] : {std::pair<const char*, const char*>{" .", "."},
                                   {" ?", "?"},
                                   {" !", "!"},
                                   {" ,", ","},
                                   {" ' ", "'"},
                                   {" n't", "n't"},
                                   {" 'm", "'m"},
                                   {" do not", " don't"},
                                   {" 's", "'s"},
                                   {" 've", "'ve"},
                                   {" 're", "'re"}})
      s = replace_all(std::move(s), from, to);
    return s;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(uint32_t replacement, bool strip_first) : replacement_(replacement), strip_first_(strip_first) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (uint32_t c : code_points(tokens[i])) {
        if (c == replacement_) {
          if (!(i == 0 && strip_first_)) out.push_back(' ');
        } else {
          utf8_append(out, c);
        }
      }
      tokens[i] = std::move(out);
    }
    return tokens;
  }

 private:
  uint32_t replacement_;
  bool strip_first_;
};

class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string_view to = i + 1 == tokens.size() ? "" : " ";
      tokens[i] = suffix_.empty() ? rust_replace_empty(tokens[i], to) : replace_all(std::move(tokens[i]), suffix_, to);
    }
    return tokens;
  }

 private:
  std::string suffix_;
};

class ByteFallbackDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t n_bytes = 0;
    auto flush = [&] {
      if (n_bytes == 0) return;
      if (is_valid_utf8(bytes))
        out.push_back(bytes);
      else
        for (size_t k = 0; k < n_bytes; ++k) out.push_back("\xEF\xBF\xBD");
      bytes.clear();
      n_bytes = 0;
    };
    for (std::string& t : tokens) {
      int value = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        auto hex = [](char c) {
          return c >= '0' && c <= '9'   ? c - '0'
                 : c >= 'A' && c <= 'F' ? c - 'A' + 10
                 : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : -1;
        };
        const int hi = hex(t[3]), lo = hex(t[4]);
        if (hi >= 0 && lo >= 0) value = hi * 16 + lo;
      }
      if (value >= 0) {
        bytes.push_back(char(value));
        ++n_bytes;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    return out;
  }
};

class FuseDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    return {all};
  }
};

// strip.rs: up to `start` leading and `stop` trailing `content` characters off each token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(uint32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& t : tokens) {
      const std::vector<uint32_t> cps = code_points(t);
      size_t begin = 0, end = cps.size();
      while (begin < cps.size() && begin < start_ && cps[begin] == content_) ++begin;
      size_t cut = 0;
      while (end > begin && cut < stop_ && cps[end - 1] == content_) --end, ++cut;
      t = to_utf8(std::vector<uint32_t>(cps.begin() + std::ptrdiff_t(begin), cps.begin() + std::ptrdiff_t(end)));
    }
    return tokens;
  }

 private:
  uint32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& t : tokens) {
      std::string out;
      for (const PatternMatch& m : pattern_.find_matches(t)) {
        if (m.is_match)
          out += content_;
        else
          out.append(t, m.begin, m.end - m.begin);
      }
      t = std::move(out);
    }
    return tokens;
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& d : steps_) tokens = d->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

uint32_t one_char(const std::string& s, const Source& src, const char* what) {
  const std::vector<uint32_t> cps = is_valid_utf8(s) ? code_points(s) : std::vector<uint32_t>{};
  RC_CHECK(cps.size() == 1, Errc::format, "tokenizer file '", src.file, "': ", what, " must be one character, found '",
           s.substr(0, 40), "'", "\nHINT: the file is corrupt; download it again");
  return cps[0];
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& j, const Source& src) {
  const std::string type = type_of(j, src, "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "WordPiece")
    return std::make_unique<WordPieceDecoder>(get_string(j, "prefix", "##"), get_bool(j, "cleanup", true));
  if (type == "Metaspace")
    return std::make_unique<MetaspaceDecoder>(
        one_char(get_string(j, "replacement", "\xE2\x96\x81"), src, "Metaspace replacement"),
        read_prepend_scheme(j, src) != PrependScheme::never);
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(get_string(j, "suffix", "</w>"));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip")
    return std::make_unique<StripDecoder>(one_char(get_string(j, "content", " "), src, "Strip content"),
                                          size_t(std::max<int64_t>(0, j.value("start", int64_t(0)))),
                                          size_t(std::max<int64_t>(0, j.value("stop", int64_t(0)))));
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(read_pattern(j.value("pattern", json()), src, "Replace decoder"),
                                            get_string(j, "content", ""));
  if (type == "Sequence") {
    const json& list = j.value("decoders", json::array());
    RC_CHECK(list.is_array() && list.size() <= kMaxComponents, Errc::format, "tokenizer file '", src.file,
             "': decoder Sequence must list at most ", kMaxComponents, " decoders");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const json& d : list) steps.push_back(make_decoder(d, src));
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  unknown_type(src, "decoder", type);
}

}  // namespace rc::tokenizer::pipeline
