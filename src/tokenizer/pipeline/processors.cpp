// Post-processors (tokenizers/src/processors/*.rs) and ByteLevel's process_offsets.
#include "core/check.h"
#include "tokenizer/pipeline/build.h"
#include "tokenizer/pipeline/normalized.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
using nlohmann::json;

void Encoding::truncate(size_t n, bool left) {
  if (size() <= n) return;
  auto cut = [&](auto& v) {
    if (left)
      v.erase(v.begin(), v.end() - std::ptrdiff_t(n));
    else
      v.resize(n);
  };
  cut(ids);
  cut(type_ids);
  cut(tokens);
  cut(offsets);
  cut(special_tokens_mask);
  cut(word_ids);
}

void trim_byte_level_offsets(Encoding& e, bool add_prefix_space) {
  auto space = [](uint32_t c) { return c == 0x120 || is_unicode_whitespace(c); };
  for (size_t i = 0; i < e.size(); ++i) {
    const std::vector<uint32_t> cps = code_points(e.tokens[i]);
    size_t leading = 0, trailing = 0;
    while (leading < cps.size() && space(cps[leading])) ++leading;
    while (trailing < cps.size() && space(cps[cps.size() - 1 - trailing])) ++trailing;
    ByteRange& o = e.offsets[i];
    if (leading > 0) {
      // byte_level.rs: "If user uses `is_pretokenized=True` we might have offsets that might
      // begin at the start of the string but are NOT the first token" (kept as it is).
      const bool is_first = i == 0 || o.first == 0;
      if (is_first && add_prefix_space && leading == 1) leading = 0;
      o.first = std::min(o.first + leading, o.second);
    }
    if (trailing > 0 && o.second >= trailing) o.second = std::max(o.second - trailing, o.first);
  }
}

namespace {

struct SpecialIds {
  std::string name;
  std::vector<int32_t> ids;
  std::vector<std::string> tokens;
};

void push_special(Encoding& out, const SpecialIds& s, int32_t type_id) {
  for (size_t k = 0; k < s.ids.size(); ++k)
    out.push(s.ids[k], type_id, k < s.tokens.size() ? s.tokens[k] : s.name, {0, 0}, 1, -1);
}

void set_type(Encoding& e, int32_t type_id) { e.type_ids.assign(e.size(), type_id); }

// template.rs: pieces of the single and pair templates.
class TemplateProcessing final : public PostProcessor {
 public:
  struct Piece {
    bool is_sequence;
    int which;  // sequence: 0 A, 1 B; special: index into specials_
    int32_t type_id;
  };
  TemplateProcessing(std::vector<Piece> single, std::vector<Piece> pair, std::vector<SpecialIds> specials)
      : single_(std::move(single)), pair_(std::move(pair)), specials_(std::move(specials)) {}
  size_t added_tokens(bool pair) const override {
    size_t n = 0;
    for (const Piece& p : pair ? pair_ : single_)
      if (!p.is_sequence) n += specials_[size_t(p.which)].ids.size();
    return n;
  }
  void process_encodings(std::vector<Encoding>& encodings, bool add_special_tokens) const override {
    const std::vector<Piece>& tmpl = encodings.size() > 1 ? pair_ : single_;
    Encoding out;
    for (const Piece& p : tmpl) {
      if (p.is_sequence) {
        if (size_t(p.which) >= encodings.size()) continue;
        Encoding e = encodings[size_t(p.which)];
        set_type(e, p.type_id);
        out.append(e);
      } else if (add_special_tokens) {
        push_special(out, specials_[size_t(p.which)], p.type_id);
      }
    }
    encodings.assign(1, std::move(out));
  }

 private:
  std::vector<Piece> single_, pair_;
  std::vector<SpecialIds> specials_;
};

// bert.rs / roberta.rs: [CLS] A [SEP] (B [SEP]) with types 0 (1), or <s> A </s> (</s> B </s>)
// all type 0 after RoBERTa's trim_offsets.
class ClsSepProcessing final : public PostProcessor {
 public:
  ClsSepProcessing(SpecialIds cls, SpecialIds sep, bool roberta, bool trim_offsets, bool add_prefix_space)
      : cls_(std::move(cls)),
        sep_(std::move(sep)),
        roberta_(roberta),
        trim_offsets_(trim_offsets),
        add_prefix_space_(add_prefix_space) {}
  size_t added_tokens(bool pair) const override { return pair ? (roberta_ ? 4 : 3) : 2; }
  void process_encodings(std::vector<Encoding>& encodings, bool add_special_tokens) const override {
    if (roberta_ && trim_offsets_)
      for (Encoding& e : encodings) trim_byte_level_offsets(e, add_prefix_space_);
    if (!add_special_tokens) return;
    Encoding out;
    push_special(out, cls_, 0);
    Encoding a = encodings[0];
    set_type(a, 0);
    out.append(a);
    push_special(out, sep_, 0);
    if (encodings.size() > 1) {
      const int32_t type_b = roberta_ ? 0 : 1;
      if (roberta_) push_special(out, sep_, 0);
      Encoding b = encodings[1];
      set_type(b, type_b);
      out.append(b);
      push_special(out, sep_, type_b);
    }
    encodings.assign(1, std::move(out));
  }

 private:
  SpecialIds cls_, sep_;
  bool roberta_, trim_offsets_, add_prefix_space_;
};

class ByteLevelProcessing final : public PostProcessor {
 public:
  ByteLevelProcessing(bool trim_offsets, bool add_prefix_space)
      : trim_offsets_(trim_offsets), add_prefix_space_(add_prefix_space) {}
  size_t added_tokens(bool) const override { return 0; }
  void process_encodings(std::vector<Encoding>& encodings, bool) const override {
    if (trim_offsets_)
      for (Encoding& e : encodings) trim_byte_level_offsets(e, add_prefix_space_);
  }

 private:
  bool trim_offsets_, add_prefix_space_;
};

class SequenceProcessing final : public PostProcessor {
 public:
  explicit SequenceProcessing(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  size_t added_tokens(bool pair) const override {
    size_t n = 0;
    for (const auto& p : steps_) n += p->added_tokens(pair);
    return n;
  }
  void process_encodings(std::vector<Encoding>& encodings, bool add_special_tokens) const override {
    for (const auto& p : steps_) p->process_encodings(encodings, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

SpecialIds read_pair(const json& j, const Source& src, const char* what) {
  RC_CHECK(j.is_array() && j.size() == 2 && j[0].is_string() && j[1].is_number_integer() && j[1].get<int64_t>() >= 0 &&
               j[1].get<int64_t>() < INT32_MAX,
           Errc::format, "tokenizer file '", src.file, "': post_processor.", what, " must be [token, id], found ",
           j.dump().substr(0, 80), "\nHINT: the file is corrupt; download it again");
  return {j[0].get<std::string>(), {int32_t(j[1].get<int64_t>())}, {j[0].get<std::string>()}};
}

std::vector<TemplateProcessing::Piece> read_template(const json& list, const json& specials_json,
                                                     std::vector<SpecialIds>& specials, const Source& src) {
  RC_CHECK(list.is_array() && list.size() <= kMaxComponents, Errc::format, "tokenizer file '", src.file,
           "': TemplateProcessing template must be an array of at most ", kMaxComponents, " pieces",
           "\nHINT: the file is corrupt; download it again");
  std::vector<TemplateProcessing::Piece> out;
  for (const json& piece : list) {
    if (auto it = piece.find("Sequence"); it != piece.end()) {
      const std::string id = get_string(*it, "id", "A");
      RC_CHECK(id == "A" || id == "B", Errc::format, "tokenizer file '", src.file, "': TemplateProcessing sequence '",
               id, "' is not A or B", "\nHINT: the file is corrupt");
      out.push_back({true, id == "A" ? 0 : 1, int32_t(it->value("type_id", 0))});
      continue;
    }
    auto it = piece.find("SpecialToken");
    RC_CHECK(it != piece.end(), Errc::format, "tokenizer file '", src.file,
             "': TemplateProcessing piece must be {\"Sequence\": ...} or {\"SpecialToken\": ...}, found ",
             piece.dump().substr(0, 80), "\nHINT: the file is corrupt");
    const std::string name = get_string(*it, "id", "");
    size_t index = specials.size();
    for (size_t k = 0; k < specials.size(); ++k)
      if (specials[k].name == name) index = k;
    if (index == specials.size()) {
      auto sp = specials_json.find(name);
      RC_CHECK(sp != specials_json.end() && sp->contains("ids") && (*sp)["ids"].is_array(), Errc::format,
               "tokenizer file '", src.file, "': TemplateProcessing names special token '", name,
               "' that special_tokens does not define", "\nHINT: the file is corrupt; download it again");
      SpecialIds s{name, {}, {}};
      for (const json& id : (*sp)["ids"]) {
        RC_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < INT32_MAX, Errc::format,
                 "tokenizer file '", src.file, "': special token '", name, "' has a bad id ", id.dump(),
                 "\nHINT: the file is corrupt");
        s.ids.push_back(int32_t(id.get<int64_t>()));
      }
      for (const json& t : sp->value("tokens", json::array()))
        if (t.is_string()) s.tokens.push_back(t.get<std::string>());
      specials.push_back(std::move(s));
    }
    out.push_back({false, int(index), int32_t(it->value("type_id", 0))});
  }
  return out;
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& j, const Source& src) {
  const std::string type = type_of(j, src, "post_processor");
  if (type == "TemplateProcessing") {
    std::vector<SpecialIds> specials;
    const json& sj = j.value("special_tokens", json::object());
    auto single = read_template(j.value("single", json::array()), sj, specials, src);
    auto pair = read_template(j.value("pair", json::array()), sj, specials, src);
    return std::make_unique<TemplateProcessing>(std::move(single), std::move(pair), std::move(specials));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const bool roberta = type == "RobertaProcessing";
    return std::make_unique<ClsSepProcessing>(read_pair(j.value("cls", json()), src, "cls"),
                                              read_pair(j.value("sep", json()), src, "sep"), roberta,
                                              get_bool(j, "trim_offsets", true), get_bool(j, "add_prefix_space", true));
  }
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelProcessing>(get_bool(j, "trim_offsets", true),
                                                 get_bool(j, "add_prefix_space", true));
  if (type == "Sequence") {
    const json& list = j.value("processors", json::array());
    RC_CHECK(list.is_array() && list.size() <= kMaxComponents, Errc::format, "tokenizer file '", src.file,
             "': post_processor Sequence must list at most ", kMaxComponents, " processors");
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (const json& p : list) steps.push_back(make_post_processor(p, src));
    return std::make_unique<SequenceProcessing>(std::move(steps));
  }
  unknown_type(src, "post_processor", type);
}

}  // namespace rc::tokenizer::pipeline
