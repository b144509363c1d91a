// PipelineTokenizer: HF tokenizers' encode path over the pipeline's components.
//   1. repair invalid UTF-8 (U+FFFD per maximal subpart, as Python's errors="replace");
//   2. added tokens with normalized=false split out of the raw text (AddedVocab);
//   3. the normalizer on the other pieces, then added tokens with normalized=true split out of
//      the normalized pieces (their contents normalized too), as added_vocabulary.rs's
//      extract_and_normalize does;
//   4. the pre-tokenizer, the model on each piece;
//   5. offsets back to the original text (NormalizedString alignments), as code points;
//   6. truncation (longest_first) on the budget left by the post-processor's added tokens, then
//      the post-processor (specials, type ids, trimmed offsets).
#include "tokenizer/pipeline/pipeline_tokenizer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "core/json_depth.h"
#include "core/regular_file.h"
#include "tokenizer/pipeline/build.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

AddedToken parse_added(const json& t, const Source& src) {
  RC_CHECK(t.is_object() && t.contains("content") && t["content"].is_string(), Errc::format, "tokenizer file '",
           src.file, "': an added token must be an object with a string \"content\", found ", t.dump().substr(0, 120),
           "\nHINT: the file is corrupt; download it again");
  AddedToken a;
  a.content = t["content"].get<std::string>();
  RC_CHECK(is_valid_utf8(a.content) && a.content.size() <= kMaxTokenBytes, Errc::format, "tokenizer file '", src.file,
           "': added token '", a.content.substr(0, 60), "' is not valid UTF-8 or longer than ", kMaxTokenBytes,
           " bytes", "\nHINT: the file is corrupt");
  auto id = t.find("id");
  RC_CHECK(id != t.end() && id->is_number_integer() && id->get<int64_t>() >= 0 && id->get<int64_t>() < INT32_MAX,
           Errc::format, "tokenizer file '", src.file, "': added token '", a.content, "' has no valid id",
           "\nHINT: the file is corrupt");
  a.id = int32_t(id->get<int64_t>());
  a.special = get_bool(t, "special", false);
  a.lstrip = get_bool(t, "lstrip", false);
  a.rstrip = get_bool(t, "rstrip", false);
  a.single_word = get_bool(t, "single_word", false);
  a.normalized = get_bool(t, "normalized", !a.special);
  return a;
}

class PipelineTokenizer final : public Tokenizer {
 public:
  PipelineTokenizer(const json& doc, const std::string& file, const Roles& roles, const PipelineOptions& options) {
    const Source src{file};
    RC_CHECK(doc.is_object() && doc.contains("model") && doc["model"].is_object(), Errc::format, "tokenizer file '",
             file, "' has no \"model\" object", "\nHINT: the file is corrupt; download it again");
    model_ = make_model(doc["model"], src);
    if (auto it = doc.find("normalizer"); it != doc.end() && !it->is_null()) normalizer_ = make_normalizer(*it, src);
    if (auto it = doc.find("pre_tokenizer"); it != doc.end() && !it->is_null())
      pre_tokenizer_ = make_pre_tokenizer(*it, src);
    if (auto it = doc.find("post_processor"); it != doc.end() && !it->is_null())
      post_processor_ = make_post_processor(*it, src);
    if (auto it = doc.find("decoder"); it != doc.end() && !it->is_null()) decoder_ = make_decoder(*it, src);
    std::vector<AddedToken> added;
    if (auto it = doc.find("added_tokens"); it != doc.end() && !it->is_null()) {
      RC_CHECK(it->is_array() && it->size() <= kMaxVocab, Errc::format, "tokenizer file '", file,
               "': added_tokens must be an array", "\nHINT: the file is corrupt");
      for (const json& t : *it) added.push_back(parse_added(t, src));
    }
    id_bound_ = model_->vocab_size();
    // The file's ids are not used: tokenizers' deserialization (tokenizer/serialization.rs) adds
    // the tokens one by one with AddedVocabulary::add_tokens (added_vocabulary.rs), which skips an
    // empty content, gives a content added before its id, one in the model's vocabulary the
    // model's id, and a new one the next id past the model's vocabulary and the ids given so far
    // (warning when that differs from the file's). In a file saved by tokenizers they agree.
    {
      std::unordered_map<std::string, int32_t> given;
      int64_t max_given = -1;
      const int64_t model_size = model_->vocab_size();
      std::vector<AddedToken> kept;
      for (AddedToken& a : added) {
        if (a.content.empty()) continue;
        if (auto it = given.find(a.content); it != given.end()) {
          a.id = it->second;
        } else if (const int32_t in_model = model_->token_to_id(a.content); in_model >= 0) {
          a.id = in_model;
        } else {
          a.id = int32_t(max_given < 0 || (max_given < model_size && model_size != 0) ? model_size : max_given + 1);
        }
        given[a.content] = a.id;
        max_given = std::max<int64_t>(max_given, a.id);
        kept.push_back(std::move(a));
      }
      added = std::move(kept);
    }
    for (const AddedToken& a : added) {
      added_to_id_[a.content] = a.id;
      if (size_t(a.id) >= added_by_id_.size()) added_by_id_.resize(size_t(a.id) + 1);
      added_by_id_[size_t(a.id)] = a.content;
      if (a.special) special_contents_.insert(a.content);
      id_bound_ = std::max<int64_t>(id_bound_, int64_t(a.id) + 1);
    }
    RC_CHECK(id_bound_ <= int64_t(kMaxVocab) * 2, Errc::format, "tokenizer file '", file, "': ids up to ", id_bound_,
             " are far past any real vocabulary", "\nHINT: the file is corrupt");
    // added_vocabulary.rs: non-normalized tokens match the raw text, normalized ones the
    // normalized text, their contents normalized as it is.
    std::vector<AddedToken> raw, normalized;
    for (AddedToken a : added) {
      if (a.normalized) {
        if (normalizer_) {
          NormalizedString n(a.content);
          normalizer_->normalize(n);
          a.content = n.get();
        }
        normalized.push_back(std::move(a));
      } else {
        raw.push_back(std::move(a));
      }
    }
    raw_added_ = AddedVocab(std::move(raw));
    normalized_added_ = AddedVocab(std::move(normalized));
    // Roles: the files' own (template specials, model's unk, padding), then tokenizer_config.json.
    {
      Encoding probe;
      probe.push(-7, 0, "x", {0, 0}, 0, 0);
      std::vector<Encoding> encs{probe};
      if (post_processor_) post_processor_->process_encodings(encs, true);
      const Encoding& e = encs[0];
      size_t body = 0;
      while (body < e.size() && e.ids[body] != -7) ++body;
      if (body > 0) bos_ = e.ids[0];
      if (body + 1 < e.size()) eos_ = e.ids.back();
    }
    auto first_of = [&](std::initializer_list<const char*> names) {
      for (const char* n : names)
        if (const int32_t id = token_to_id(n); id >= 0) return id;
      return int32_t(-1);
    };
    if (bos_ < 0) bos_ = first_of({"<s>", "[CLS]"});
    if (eos_ < 0) eos_ = first_of({"</s>", "[SEP]"});
    if (auto it = doc.find("padding"); it != doc.end() && it->is_object())
      if (auto id = it->find("pad_id"); id != it->end() && id->is_number_integer()) pad_ = id->get<int32_t>();
    if (pad_ < 0) pad_ = first_of({"<pad>", "[PAD]"});
    if (const std::string u = model_->unk_token(); !u.empty()) unk_ = token_to_id(u);
    if (unk_ < 0) unk_ = first_of({"<unk>", "[UNK]"});
    mask_ = first_of({"<mask>", "[MASK]"});
    auto role = [&](const std::string& name, int32_t& id) {
      if (name.empty()) return;
      if (const int32_t found = token_to_id(name); found >= 0) id = found;
    };
    role(roles.bos, bos_);
    role(roles.eos, eos_);
    role(roles.pad, pad_);
    role(roles.unk, unk_);
    role(roles.mask, mask_);
    if (options.fast_path) setup_fast_path();
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens, int max_length) const override {
    if (fast_) return encode_fast(text, add_special_tokens, max_length, TruncationSide::right);
    return run(text, nullptr, add_special_tokens, max_length, TruncationSide::right).ids;
  }
  std::vector<int32_t> encode(std::string_view text, int max_length, TruncationSide side) const override {
    if (fast_) return encode_fast(text, true, max_length, side);
    return run(text, nullptr, true, max_length, side).ids;
  }
  std::vector<int32_t> encode_pair(std::string_view text, std::string_view text_pair, int max_length,
                                   TruncationSide side) const override {
    if (fast_pair_) return encode_pair_fast(text, text_pair, max_length, side).ids;
    return run(text, &text_pair, true, max_length, side).ids;
  }
  PairEncoding encode_pair_with_types(std::string_view text, std::string_view text_pair, int max_length,
                                      TruncationSide side) const override {
    if (fast_pair_) return encode_pair_fast(text, text_pair, max_length, side);
    Encoding e = run(text, &text_pair, true, max_length, side);
    return {std::move(e.ids), std::move(e.type_ids)};
  }

  WordsEncoding encode_words(std::span<const std::string> words, int max_length) const override {
    RC_CHECK(max_length >= 0, Errc::invalid_argument, "max_length must be >= 0 (0: no limit), got ", max_length);
    RC_CHECK(words.size() < size_t(INT32_MAX), Errc::invalid_argument, "encode_words: ", words.size(),
             " words is more than a word index holds");
    if (fast_words_ && (max_length == 0 || size_t(max_length) >= fast_prefix_.size() + fast_suffix_.size())) {
      WordsEncoding out;
      out.ids = fast_prefix_;
      const size_t body = out.ids.size();
      out.word_ids.assign(body, -1);
      for (size_t w = 0; w < words.size(); ++w) {
        encode_plain(words[w], out.ids);
        out.word_ids.resize(out.ids.size(), int32_t(w));
      }
      if (max_length > 0) {
        const size_t budget = size_t(max_length) - fast_prefix_.size() - fast_suffix_.size();
        if (out.ids.size() - body > budget) out.ids.resize(body + budget), out.word_ids.resize(body + budget);
      }
      out.ids.insert(out.ids.end(), fast_suffix_.begin(), fast_suffix_.end());
      out.word_ids.resize(out.ids.size(), -1);
      return out;
    }
    // tokenizer/mod.rs encode_single_sequence, InputSequence::PreTokenized: each word alone.
    Encoding joined;
    for (size_t w = 0; w < words.size(); ++w) {
      Encoding e = encode_sequence(words[w], 0);
      e.word_ids.assign(e.size(), int32_t(w));
      joined.append(e);
    }
    std::vector<Encoding> encs{std::move(joined)};
    finish(encs, true, max_length, TruncationSide::right);
    WordsEncoding out;
    out.ids = std::move(encs[0].ids);
    out.word_ids = std::move(encs[0].word_ids);
    return out;
  }

  OffsetsEncoding encode_with_offsets(std::string_view text, int max_length) const override {
    RC_CHECK(text.size() < size_t(INT32_MAX), Errc::invalid_argument, "encode_with_offsets: a text of ", text.size(),
             " bytes is past what an int32 offset counts");
    if (offsets_fast_path_applies(max_length)) {
      OffsetsEncoding out;
      if (encode_offsets_fast(text, max_length, out)) return out;
    }
    Encoding e = run(text, nullptr, true, max_length, TruncationSide::right);
    OffsetsEncoding out;
    out.ids = std::move(e.ids);
    out.special_tokens_mask = std::move(e.special_tokens_mask);
    out.offsets.reserve(e.offsets.size());
    for (const ByteRange& o : e.offsets) out.offsets.push_back({int32_t(o.first), int32_t(o.second)});
    return out;
  }

  EncodedBatch encode_batch(std::span<const std::string> texts, int max_length) const override {
    std::vector<std::vector<int32_t>> rows;
    rows.reserve(texts.size());
    EncodedBatch b;
    b.batch = int64_t(texts.size());
    for (const std::string& text : texts) {
      rows.push_back(encode(text, true, max_length));
      b.max_len = std::max<int64_t>(b.max_len, int64_t(rows.back().size()));
    }
    b.ids.assign(size_t(b.batch * b.max_len), pad_);
    b.attention_mask.assign(size_t(b.batch * b.max_len), 0);
    b.lengths.resize(size_t(b.batch));
    for (size_t r = 0; r < rows.size(); ++r) {
      std::copy(rows[r].begin(), rows[r].end(), b.ids.begin() + int64_t(r) * b.max_len);
      std::fill_n(b.attention_mask.begin() + int64_t(r) * b.max_len, rows[r].size(), 1);
      b.lengths[r] = int32_t(rows[r].size());
    }
    return b;
  }

  // tokenizer/mod.rs decode: added tokens first, then the model's; specials skipped on request;
  // the decoder's chain joined, or the tokens joined by spaces without a decoder.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
      const std::string* t = token_of(id);
      if (!t) continue;
      if (skip_special_tokens && special_contents_.count(*t)) continue;
      tokens.push_back(*t);
    }
    std::string out;
    if (decoder_) {
      for (const std::string& s : decoder_->decode_chain(std::move(tokens))) out += s;
    } else {
      for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    }
    return is_valid_utf8(out) ? out : repair_utf8(out);
  }

  int32_t token_to_id(std::string_view token) const override {
    if (auto it = added_to_id_.find(std::string(token)); it != added_to_id_.end()) return it->second;
    return model_->token_to_id(token);
  }
  std::string id_to_token(int32_t id) const override {
    const std::string* t = token_of(id);
    return t ? *t : std::string();
  }
  int64_t vocab_size() const override { return id_bound_; }
  int32_t bos_id() const override { return bos_; }
  int32_t eos_id() const override { return eos_; }
  int32_t pad_id() const override { return pad_; }
  int32_t unk_id() const override { return unk_; }
  int32_t mask_id() const override { return mask_; }
  FastPaths fast_paths() const { return {fast_, fast_words_, fast_pair_, fast_offsets_}; }
  bool offsets_fast_path_serves(std::string_view text, int max_length) const {
    OffsetsEncoding out;
    return text.size() < size_t(INT32_MAX) && offsets_fast_path_applies(max_length) &&
           encode_offsets_fast(text, max_length, out);
  }

 private:
  bool offsets_fast_path_applies(int max_length) const {
    return fast_offsets_ && max_length >= 0 &&
           (max_length == 0 || size_t(max_length) >= fast_prefix_.size() + fast_suffix_.size());
  }
  const std::string* token_of(int32_t id) const {
    if (id >= 0 && size_t(id) < added_by_id_.size() && !added_by_id_[size_t(id)].empty())
      return &added_by_id_[size_t(id)];
    return model_->id_to_token(id);
  }

  // The fast path's conditions: every component has a plain form, and what the post-processor
  // does to one sequence's ids is a fixed prefix and suffix (probed with two stand-in ids).
  void setup_fast_path() {
    if ((normalizer_ && !normalizer_->has_plain()) || (pre_tokenizer_ && !pre_tokenizer_->has_plain())) return;
    // Metaspace's "first" asks whether a piece starts the original text, which a piece cut out
    // of normalized text by a normalized added token knows only through alignments.
    if (pre_tokenizer_ && pre_tokenizer_->uses_position() && !normalized_added_.tokens().empty()) return;
    // What the post-processor (then finish()'s merge) makes of stand-in sequences: ids -7 -8
    // (and -9 -10 for a pair's second text, type 1, as encode_sequence gives it), word 0.
    auto probe = [&](bool pair, bool add_special_tokens) {
      std::vector<Encoding> encs(1);
      encs[0].push(-7, 0, "x", {0, 1}, 0, 0);
      encs[0].push(-8, 0, "y", {1, 2}, 0, 0);
      if (pair) {
        encs.emplace_back();
        encs[1].push(-9, 1, "x", {0, 1}, 0, 0);
        encs[1].push(-10, 1, "y", {1, 2}, 0, 0);
      }
      if (post_processor_) post_processor_->process_encodings(encs, add_special_tokens);
      for (size_t i = 1; i < encs.size(); ++i) encs[0].append(encs[i]);
      return encs[0];
    };
    // Where the stand-ins [first, first + 1] sit, or npos when not exactly once, in order.
    auto find_pair = [](const Encoding& e, int32_t first) {
      const auto at = std::find(e.ids.begin(), e.ids.end(), first);
      if (at == e.ids.end() || at + 1 == e.ids.end() || at[1] != first - 1) return std::string::npos;
      return size_t(at - e.ids.begin());
    };
    auto specials_only = [](const Encoding& e, size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i)
        if (e.ids[i] < 0) return false;
      return true;
    };
    if (probe(false, false).ids != std::vector<int32_t>{-7, -8}) return;
    const Encoding single = probe(false, true);
    const size_t a = find_pair(single, -7);
    if (a == std::string::npos || !specials_only(single, 0, a) || !specials_only(single, a + 2, single.size())) return;
    fast_prefix_.assign(single.ids.begin(), single.ids.begin() + std::ptrdiff_t(a));
    fast_suffix_.assign(single.ids.begin() + std::ptrdiff_t(a) + 2, single.ids.end());
    const size_t n_special = post_processor_ ? post_processor_->added_tokens(false) : 0;
    if (fast_prefix_.size() + fast_suffix_.size() != n_special) return;
    fast_ = true;
    // encode_with_offsets: the specials at (0, 0) with mask 1 and the sequence's offsets left as
    // they are, even around spaces in its tokens (no trim_offsets); a normalizer with an
    // ASCII-aligned form and a pre-tokenizer whose plain pieces are the normalized text's own.
    {
      std::vector<Encoding> encs(1);
      encs[0].push(-7, 0, " x ", {0, 3}, 0, 0);
      encs[0].push(-8, 0, "y ", {3, 5}, 0, 0);
      if (post_processor_) post_processor_->process_encodings(encs, true);
      const Encoding& e = encs[0];
      bool kept = encs.size() == 1 && e.ids == single.ids;
      for (size_t i = 0; kept && i < e.size(); ++i) {
        const bool body = i == a || i == a + 1;
        const ByteRange want = !body ? ByteRange{0, 0} : i == a ? ByteRange{0, 3} : ByteRange{3, 5};
        kept = e.special_tokens_mask[i] == (body ? 0 : 1) && e.offsets[i] == want;
      }
      std::string probe_text = "A b";
      std::vector<uint32_t> probe_src = {0, 1, 2};
      fast_offsets_ascii_ = !normalizer_ || normalizer_->normalize_ascii_aligned(probe_text, probe_src);
      fast_offsets_unicode_ = !normalizer_ || normalizer_->has_aligned();
      fast_offsets_ = kept && (fast_offsets_ascii_ || fast_offsets_unicode_) &&
                      (!pre_tokenizer_ || pre_tokenizer_->plain_keeps_text() || pre_tokenizer_->has_aligned());
    }
    // encode_words: the specials have no word, the words' ids keep theirs.
    fast_words_ = single.word_ids[a] == 0 && single.word_ids[a + 1] == 0 &&
                  std::count(single.word_ids.begin(), single.word_ids.end(), -1) == std::ptrdiff_t(n_special);
    // Pairs: prefix A middle B suffix, each part's token types.
    const Encoding pair = probe(true, true);
    const size_t pa = find_pair(pair, -7), pb = find_pair(pair, -9);
    if (pa == std::string::npos || pb == std::string::npos || pb < pa + 2) return;
    if (!specials_only(pair, 0, pa) || !specials_only(pair, pa + 2, pb) || !specials_only(pair, pb + 2, pair.size()))
      return;
    if (pair.type_ids[pa] != pair.type_ids[pa + 1] || pair.type_ids[pb] != pair.type_ids[pb + 1]) return;
    pair_ = {};
    auto part = [&](size_t begin, size_t end, std::vector<int32_t>& ids, std::vector<int32_t>& types) {
      ids.assign(pair.ids.begin() + std::ptrdiff_t(begin), pair.ids.begin() + std::ptrdiff_t(end));
      types.assign(pair.type_ids.begin() + std::ptrdiff_t(begin), pair.type_ids.begin() + std::ptrdiff_t(end));
    };
    part(0, pa, pair_.prefix, pair_.prefix_types);
    part(pa + 2, pb, pair_.middle, pair_.middle_types);
    part(pb + 2, pair.size(), pair_.suffix, pair_.suffix_types);
    pair_.type_a = pair.type_ids[pa];
    pair_.type_b = pair.type_ids[pb];
    const size_t n_pair = post_processor_ ? post_processor_->added_tokens(true) : 0;
    fast_pair_ = pair_.prefix.size() + pair_.middle.size() + pair_.suffix.size() == n_pair;
  }

  // encode_pair_with_types on the fast path: finish()'s longest_first truncation, then the
  // probed template.
  PairEncoding encode_pair_fast(std::string_view text, std::string_view text_pair, int max_length,
                                TruncationSide side) const {
    const size_t n_special = pair_.prefix.size() + pair_.middle.size() + pair_.suffix.size();
    if (max_length < 0 || (max_length > 0 && size_t(max_length) < n_special)) {
      Encoding e = run(text, &text_pair, true, max_length, side);  // throws finish()'s error
      return {std::move(e.ids), std::move(e.type_ids)};
    }
    std::vector<int32_t> a, b;
    encode_plain(text, a);
    encode_plain(text_pair, b);
    if (max_length > 0) {
      const auto [n1, n2] = longest_first(a.size(), b.size(), size_t(max_length) - n_special);
      auto cut = [&](std::vector<int32_t>& v, size_t n) {
        if (v.size() <= n) return;
        if (side == TruncationSide::left)
          v.erase(v.begin(), v.end() - std::ptrdiff_t(n));
        else
          v.resize(n);
      };
      cut(a, n1);
      cut(b, n2);
    }
    PairEncoding out;
    out.ids.reserve(n_special + a.size() + b.size());
    auto put = [&](const std::vector<int32_t>& ids, const std::vector<int32_t>& types) {
      out.ids.insert(out.ids.end(), ids.begin(), ids.end());
      out.type_ids.insert(out.type_ids.end(), types.begin(), types.end());
    };
    put(pair_.prefix, pair_.prefix_types);
    out.ids.insert(out.ids.end(), a.begin(), a.end());
    out.type_ids.resize(out.ids.size(), pair_.type_a);
    put(pair_.middle, pair_.middle_types);
    out.ids.insert(out.ids.end(), b.begin(), b.end());
    out.type_ids.resize(out.ids.size(), pair_.type_b);
    put(pair_.suffix, pair_.suffix_types);
    return out;
  }

  // encode() of one sequence on the fast path: what run() gives, its ids only.
  std::vector<int32_t> encode_fast(std::string_view text, bool add_special_tokens, int max_length,
                                   TruncationSide side) const {
    const size_t n_special = add_special_tokens ? fast_prefix_.size() + fast_suffix_.size() : 0;
    // A bad max_length: run() throws finish()'s error.
    if (max_length < 0 || (max_length > 0 && size_t(max_length) < n_special))
      return run(text, nullptr, add_special_tokens, max_length, side).ids;
    std::vector<int32_t> ids;
    if (add_special_tokens) ids = fast_prefix_;
    const size_t body = ids.size();
    encode_plain(text, ids);
    if (max_length > 0) {  // Encoding::truncate on the sequence's tokens
      const size_t budget = size_t(max_length) - n_special;
      if (ids.size() - body > budget) {
        if (side == TruncationSide::left)
          ids.erase(ids.begin() + std::ptrdiff_t(body), ids.end() - std::ptrdiff_t(budget));
        else
          ids.resize(body + budget);
      }
    }
    if (add_special_tokens) ids.insert(ids.end(), fast_suffix_.begin(), fast_suffix_.end());
    return ids;
  }

  // encode_with_offsets on the fast path: the steps of encode_plain, each normalized byte with
  // its alignment (the original byte range NormalizedString would give it), each token's offsets
  // those of its first and last normalized bytes (NormalizedString::normalized_to_original), then
  // in code points as encode_sequence counts them. An ASCII text goes through
  // normalize_ascii_aligned (src: each normalized byte's original byte) when the normalizer has
  // it (fast_offsets_ascii_), any text through normalize_aligned when the normalizer has that
  // (fast_offsets_unicode_). A pre-tokenizer that keeps the text splits it where it is; one
  // that edits it (Metaspace) carries the alignments along (arena_align). false sends the text
  // to the general path.
  bool encode_offsets_fast(std::string_view input, int max_length, OffsetsEncoding& out) const {
    bool ascii = true;
    for (char c : input)
      if (static_cast<unsigned char>(c) >= 0x80) {
        ascii = false;
        break;
      }
    if (!(ascii && fast_offsets_ascii_) && !fast_offsets_unicode_) return false;
    std::string repaired;
    if (!ascii && !is_valid_utf8(input)) {
      repaired = repair_utf8(input);
      input = repaired;
    }
    thread_local std::vector<Segment> raw_segments, normalized_segments;
    thread_local std::string normalized, arena;
    thread_local std::vector<ByteRange> words, align, spans;
    thread_local std::vector<PreTokenizer::AlignRun> runs;
    thread_local std::vector<uint32_t> src;
    thread_local std::vector<int32_t> ids;
    thread_local std::vector<int32_t> char_of;  // code point index of each byte of input
    if (!ascii) {
      char_of.resize(input.size());
      int32_t chars = -1;
      for (size_t b = 0; b < input.size(); ++b) {
        if ((static_cast<unsigned char>(input[b]) & 0xC0) != 0x80) ++chars;
        char_of[b] = chars;
      }
    }
    // Byte offsets in input to code points (encode_sequence's to_chars).
    auto push = [&](int32_t id, ByteRange o) {
      if (!ascii && o.first < input.size()) {
        const size_t start = size_t(char_of[o.first]);
        if (o.second < input.size())
          o = {start, size_t(char_of[o.second])};
        else
          o = {start, (o.second >= 1 && o.second - 1 < input.size() ? size_t(char_of[o.second - 1]) : start) + 1};
      }
      out.ids.push_back(id);
      out.offsets.push_back({int32_t(o.first), int32_t(o.second)});
    };
    // Room for the tokens of a text of common words (about one per 4 bytes), without regrowth.
    const size_t expected = fast_prefix_.size() + fast_suffix_.size() + input.size() / 3 + 4;
    out.ids.reserve(expected);
    out.offsets.reserve(expected);
    out.ids = fast_prefix_;
    out.offsets.assign(fast_prefix_.size(), TokenOffset{0, 0});
    raw_segments.clear();
    raw_added_.split(input, raw_segments);
    for (const Segment& raw : raw_segments) {
      if (raw.begin == raw.end) continue;
      if (raw.id >= 0) {
        push(raw.id, {raw.begin, raw.end});
        continue;
      }
      normalized.assign(input.substr(raw.begin, raw.end - raw.begin));
      bool aligned = false;
      if (ascii && fast_offsets_ascii_) {
        src.resize(normalized.size());
        for (size_t i = 0; i < src.size(); ++i) src[i] = uint32_t(raw.begin + i);
        aligned = !normalizer_ || normalizer_->normalize_ascii_aligned(normalized, src);
        if (aligned) {
          align.resize(src.size());
          for (size_t i = 0; i < src.size(); ++i) align[i] = {src[i], size_t(src[i]) + 1};
        } else {
          if (!fast_offsets_unicode_) return false;
          normalized.assign(input.substr(raw.begin, raw.end - raw.begin));
        }
      }
      if (!aligned) {
        align.resize(normalized.size());
        if (ascii) {
          for (size_t i = 0; i < normalized.size(); ++i) align[i] = {raw.begin + i, raw.begin + i + 1};
        } else {
          const auto* p = reinterpret_cast<const unsigned char*>(normalized.data());
          for (size_t i = 0; i < normalized.size();) {
            const size_t len = std::min(normalized.size() - i, size_t(utf8_lead_length(p[i])));
            std::fill_n(align.begin() + std::ptrdiff_t(i), len, ByteRange{raw.begin + i, raw.begin + i + len});
            i += len;
          }
        }
        if (normalizer_ && !normalizer_->normalize_aligned(normalized, align)) return false;
      }
      if (normalized.empty()) continue;
      normalized_segments.clear();
      normalized_added_.split(normalized, normalized_segments);
      // The model's tokens of `word`; to_align(k, first) is the alignment of its byte k, the
      // first byte of a token when `first` (tokens come in order of their first bytes).
      auto model_on = [&](std::string_view word, auto&& to_align) {
        ids.clear();
        spans.clear();
        model_->tokenize_spans(word, ids, spans);
        for (size_t k = 0; k < ids.size(); ++k) {
          const auto [begin, end] = spans[k];
          if (end <= begin) return false;  // (no model makes one; the general path's rule if one did)
          push(ids[k], {to_align(begin, true).first, to_align(end - 1, false).second});
        }
        return true;
      };
      for (const Segment& seg : normalized_segments) {
        if (seg.begin == seg.end) continue;
        if (seg.id >= 0) {
          push(seg.id, {align[seg.begin].first, align[seg.end - 1].second});
          continue;
        }
        const std::string_view piece = std::string_view(normalized).substr(seg.begin, seg.end - seg.begin);
        const ByteRange* piece_align = align.data() + seg.begin;
        if (!pre_tokenizer_) {
          if (!model_on(piece, [&](size_t k, bool) { return piece_align[k]; })) return false;
          continue;
        }
        arena.clear();
        words.clear();
        const bool at_start = raw.begin == 0 && seg.begin == 0;
        // A pre-tokenizer's pieces are in the normalized text itself, or in an edited copy
        // whose bytes come from the piece's as `runs` say (the run of a token's first byte is
        // found from the previous token's onward, of its last byte from its first's).
        if (pre_tokenizer_->plain_keeps_text()) {
          pre_tokenizer_->pre_tokenize_plain(piece, at_start, arena, words);
          for (const ByteRange& w : words)
            if (!model_on(std::string_view(arena).substr(w.first, w.second - w.first),
                          [&](size_t k, bool) { return piece_align[w.first + k]; }))
              return false;
          continue;
        }
        runs.clear();
        pre_tokenizer_->pre_tokenize_aligned(piece, at_start, arena, runs, words);
        size_t run = 0;
        for (const ByteRange& w : words) {
          auto to_align = [&](size_t k, bool first) {
            k += w.first;
            size_t r = run;
            while (r + 1 < runs.size() && runs[r + 1].arena <= k) ++r;
            if (first) run = r;
            const PreTokenizer::AlignRun& a = runs[r];
            return piece_align[a.single ? a.from : a.from + (k - a.arena)];
          };
          if (!model_on(std::string_view(arena).substr(w.first, w.second - w.first), to_align)) return false;
        }
      }
    }
    const size_t body = fast_prefix_.size();
    if (max_length > 0) {  // Encoding::truncate, right, on the sequence's tokens
      const size_t budget = size_t(max_length) - fast_prefix_.size() - fast_suffix_.size();
      if (out.ids.size() - body > budget) out.ids.resize(body + budget), out.offsets.resize(body + budget);
    }
    const size_t end = out.ids.size();
    out.ids.insert(out.ids.end(), fast_suffix_.begin(), fast_suffix_.end());
    out.offsets.resize(out.ids.size(), TokenOffset{0, 0});
    out.special_tokens_mask.assign(out.ids.size(), 0);
    std::fill(out.special_tokens_mask.begin(), out.special_tokens_mask.begin() + std::ptrdiff_t(body), 1);
    std::fill(out.special_tokens_mask.begin() + std::ptrdiff_t(end), out.special_tokens_mask.end(), 1);
    return true;
  }

  // encode_sequence's steps 1-4 on plain strings, the ids appended to out: added tokens split
  // out of the raw text, each other piece normalized, normalized added tokens split out of it,
  // then pre-tokenized and given to the model; empty pieces dropped at each step, as
  // PreTokenizedString::split drops them.
  void encode_plain(std::string_view input, std::vector<int32_t>& out) const {
    std::string repaired;
    if (!is_valid_utf8(input)) {
      repaired = repair_utf8(input);
      input = repaired;
    }
    thread_local std::vector<Segment> raw_segments, normalized_segments;
    thread_local std::string normalized, arena;
    thread_local std::vector<ByteRange> words;
    raw_segments.clear();
    raw_added_.split(input, raw_segments);
    for (const Segment& raw : raw_segments) {
      if (raw.begin == raw.end) continue;
      if (raw.id >= 0) {
        out.push_back(raw.id);
        continue;
      }
      normalized.assign(input.substr(raw.begin, raw.end - raw.begin));
      if (normalizer_) normalizer_->normalize_plain(normalized);
      if (normalized.empty()) continue;
      normalized_segments.clear();
      normalized_added_.split(normalized, normalized_segments);
      for (const Segment& seg : normalized_segments) {
        if (seg.begin == seg.end) continue;
        if (seg.id >= 0) {
          out.push_back(seg.id);
          continue;
        }
        const std::string_view piece = std::string_view(normalized).substr(seg.begin, seg.end - seg.begin);
        if (!pre_tokenizer_) {
          model_->tokenize_ids(piece, out);
          continue;
        }
        arena.clear();
        words.clear();
        pre_tokenizer_->pre_tokenize_plain(piece, raw.begin == 0 && seg.begin == 0, arena, words);
        for (const ByteRange& w : words)
          model_->tokenize_ids(std::string_view(arena).substr(w.first, w.second - w.first), out);
      }
    }
  }

  // One text through steps 1-5 (no specials, no truncation), its tokens of type `type_id`.
  Encoding encode_sequence(std::string_view input, int32_t type_id) const {
    std::string repaired;
    if (!is_valid_utf8(input)) {
      repaired = repair_utf8(input);
      input = repaired;
    }
    PreTokenizedString pts(input);
    auto split_added = [](const AddedVocab& vocab, NormalizedString&& n) {
      std::vector<Segment> segments;
      vocab.split(n.get(), segments);
      std::vector<Split> out;
      if (segments.size() == 1 && segments[0].id < 0) {
        out.push_back({std::move(n), std::nullopt});
        return out;
      }
      for (const Segment& s : segments) {
        NormalizedString piece = n.slice(s.begin, s.end);
        if (s.id >= 0) {
          std::vector<Token> t{{s.id, piece.get(), 0, piece.len()}};
          out.push_back({std::move(piece), std::move(t)});
        } else {
          out.push_back({std::move(piece), std::nullopt});
        }
      }
      return out;
    };
    pts.split([&](size_t, NormalizedString&& n) { return split_added(raw_added_, std::move(n)); });
    pts.split([&](size_t, NormalizedString&& n) {
      if (normalizer_) normalizer_->normalize(n);
      return split_added(normalized_added_, std::move(n));
    });
    if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pts);
    // pre_tokenizer.rs into_encoding with OffsetType::Char.
    const std::string& original = pts.original();
    std::vector<int32_t> char_of(original.size());
    {
      int32_t chars = -1;
      for (size_t b = 0; b < original.size(); ++b) {
        if ((static_cast<unsigned char>(original[b]) & 0xC0) != 0x80) ++chars;
        char_of[b] = chars;
      }
    }
    auto to_chars = [&](ByteRange o) -> ByteRange {
      if (o.first >= original.size()) return o;  // BytesToCharOffsetConverter: start not in the map
      const size_t start = size_t(char_of[o.first]);
      if (o.second < original.size()) return {start, size_t(char_of[o.second])};
      const size_t last = o.second >= 1 && o.second - 1 < original.size() ? size_t(char_of[o.second - 1]) : start + 1;
      return {start, last + 1};
    };
    Encoding out;
    std::vector<Token> tokens;
    const std::vector<Split>& splits = pts.splits();
    for (size_t idx = 0; idx < splits.size(); ++idx) {
      const Split& split = splits[idx];
      const std::vector<Token>* list = split.tokens ? &*split.tokens : nullptr;
      if (!list) {
        tokens.clear();
        model_->tokenize(split.normalized.get(), tokens);
        list = &tokens;
      }
      const size_t shift = split.normalized.offsets_original().first;
      for (const Token& t : *list) {
        ByteRange o{t.begin, t.end};
        if (auto r = split.normalized.normalized_to_original(t.begin, t.end)) o = {shift + r->first, shift + r->second};
        out.push(t.id, type_id, t.value, to_chars(o), 0, int32_t(idx));
      }
    }
    return out;
  }

  // utils/truncation.rs truncate_encodings, LongestFirst: how many tokens each of a pair keeps
  // (all of both when they fit).
  static std::pair<size_t, size_t> longest_first(size_t n1, size_t n2, size_t budget) {
    if (n1 + n2 <= budget) return {n1, n2};
    const bool swapped = n1 > n2;
    if (swapped) std::swap(n1, n2);
    n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
    if (n1 + n2 > budget) {
      n1 = budget / 2;
      n2 = n1 + budget % 2;
    }
    if (swapped) std::swap(n1, n2);
    return {n1, n2};
  }

  // tokenizer/mod.rs post_process: truncation, then the post-processor (or the encodings
  // merged); encs holds one encoding or a pair.
  void finish(std::vector<Encoding>& encs, bool add_special_tokens, int max_length, TruncationSide side) const {
    RC_CHECK(max_length >= 0, Errc::invalid_argument, "max_length must be >= 0 (0: no limit), got ", max_length);
    const bool pair = encs.size() > 1;
    const bool left = side == TruncationSide::left;
    if (max_length > 0) {
      const size_t n_special = add_special_tokens && post_processor_ ? post_processor_->added_tokens(pair) : 0;
      RC_CHECK(size_t(max_length) >= n_special, Errc::invalid_argument, "max_length ", max_length,
               " leaves no room for the ", n_special, " special tokens", "\nHINT: use max_length >= ", n_special,
               ", or 0 for no limit");
      const size_t budget = size_t(max_length) - n_special;
      if (!pair) {
        encs[0].truncate(budget, left);
      } else {
        const auto [n1, n2] = longest_first(encs[0].size(), encs[1].size(), budget);
        encs[0].truncate(n1, left);
        encs[1].truncate(n2, left);
      }
    }
    if (post_processor_) post_processor_->process_encodings(encs, add_special_tokens);
    for (size_t i = 1; i < encs.size(); ++i) encs[0].append(encs[i]);
    encs.resize(1);
  }

  Encoding run(std::string_view text, const std::string_view* pair, bool add_special_tokens, int max_length,
               TruncationSide side) const {
    RC_CHECK(max_length >= 0, Errc::invalid_argument, "max_length must be >= 0 (0: no limit), got ", max_length);
    std::vector<Encoding> encs;
    encs.push_back(encode_sequence(text, 0));
    if (pair) encs.push_back(encode_sequence(*pair, 1));
    finish(encs, add_special_tokens, max_length, side);
    return std::move(encs[0]);
  }

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocab raw_added_, normalized_added_;
  std::unordered_map<std::string, int32_t> added_to_id_;
  std::vector<std::string> added_by_id_;
  std::unordered_set<std::string> special_contents_;
  int64_t id_bound_ = 0;
  int32_t bos_ = -1, eos_ = -1, pad_ = -1, unk_ = -1, mask_ = -1;
  bool fast_ = false, fast_words_ = false, fast_pair_ = false, fast_offsets_ = false;
  // The offsets fast path's normalizer forms: for ASCII texts (normalize_ascii_aligned), for
  // any text (normalize_aligned).
  bool fast_offsets_ascii_ = false, fast_offsets_unicode_ = false;
  std::vector<int32_t> fast_prefix_, fast_suffix_;  // the post-processor's ids around one sequence
  struct PairTemplate {
    std::vector<int32_t> prefix, middle, suffix, prefix_types, middle_types, suffix_types;
    int32_t type_a = 0, type_b = 0;
  } pair_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_pipeline_tokenizer(const json& doc, const std::string& file, const Roles& roles,
                                                   const PipelineOptions& options) {
  try {
    return std::make_unique<PipelineTokenizer>(doc, file, roles, options);
  } catch (const json::exception& e) {  // a field of the wrong JSON type
    RC_THROW(Errc::format, "tokenizer file '", file, "' has an unexpected layout: ", e.what(),
             "\nHINT: the file is corrupt; download it again");
  }
}

FastPaths fast_paths(const Tokenizer& t) {
  const auto* p = dynamic_cast<const PipelineTokenizer*>(&t);
  return p ? p->fast_paths() : FastPaths{};
}

bool offsets_fast_path_serves(const Tokenizer& t, std::string_view text, int max_length) {
  const auto* p = dynamic_cast<const PipelineTokenizer*>(&t);
  return p && p->offsets_fast_path_serves(text, max_length);
}

// The double serde_json's parser (de.rs: parse_integer / parse_decimal / parse_exponent, then
// f64_from_parts; its default, without the float_roundtrip feature) makes of the text a
// tokenizers-saved file holds for x: the shortest representation that reads back as x (ryu's,
// as serde_json writes it). The digits as a u64 (<= 17 of them: no overflow), then one
// multiplication or division by a power of ten: two roundings where strtod makes one.
double serde_json_f64(double x) {
  if (!std::isfinite(x) || x == 0) return x;
  static const std::array<double, 309> pow10 = [] {
    std::array<double, 309> t{};
    for (size_t i = 0; i < t.size(); ++i) t[i] = std::strtod(("1e" + std::to_string(i)).c_str(), nullptr);
    return t;
  }();
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(x), std::chars_format::scientific);
  const std::string_view sci(buf, size_t(res.ptr - buf));  // d[.ddd]e[+-]XX
  const size_t e = sci.find('e');
  uint64_t significand = 0;
  int digits = 0;
  for (char c : sci.substr(0, e))
    if (c != '.') significand = significand * 10 + uint64_t(c - '0'), ++digits;
  int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str()) - (digits - 1);
  double f = double(significand);
  while (true) {
    if (size_t(std::abs(exponent)) < pow10.size()) {
      f = exponent >= 0 ? f * pow10[size_t(exponent)] : f / pow10[size_t(-exponent)];
      break;
    }
    if (f == 0 || exponent >= 0) break;  // serde: overflow is an error; scores never get there
    f /= 1e308;
    exponent += 308;
  }
  return x < 0 ? -f : f;
}

json read_tokenizer_document(const fs::path& file) {
  const std::string text = read_regular_file(file, kMaxTokenizerFileBytes, "tokenizer file",
                                             "real tokenizer files are at most ~17 MB (multilingual tokenizer.json); "
                                             "is it corrupt or padded?");
  check_json_depth(text, "tokenizer file '" + file.string() + "'");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    RC_THROW(Errc::format, "tokenizer file '", file.string(), "' is not valid JSON: ", e.what(),
             "\nHINT: the file is truncated or corrupt; download it again from the model repository");
  }
  // Unigram scores as tokenizers reads them: serde_json without float_roundtrip is off by an
  // ulp on about 1 score in 6, which decides the Viterbi path where two segmentations tie
  // (measured: 40 dashes on a sentencepiece vocabulary).
  if (auto m = doc.find("model"); m != doc.end() && m->is_object()) {
    if (auto v = m->find("vocab"); v != m->end() && v->is_array())
      for (json& piece : *v)
        if (piece.is_array() && piece.size() == 2 && piece[1].is_number_float())
          piece[1] = serde_json_f64(piece[1].get<double>());
  }
  return doc;
}

Roles read_roles(const fs::path& dir) {
  Roles r;
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
    const fs::path file = dir / name;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) continue;
    const std::string text = read_regular_file(file, kMaxSmallJsonFileBytes, "tokenizer config");
    check_json_depth(text, "tokenizer config '" + file.string() + "'");
    const json j = json::parse(text, nullptr, false);
    if (!j.is_object()) continue;
    auto read = [&](const char* key, std::string& out) {
      auto it = j.find(key);
      if (it == j.end()) return;
      if (it->is_string()) out = it->get<std::string>();
      if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        out = (*it)["content"].get<std::string>();
    };
    read("cls_token", r.bos);
    read("bos_token", r.bos);
    read("sep_token", r.eos);
    read("eos_token", r.eos);
    read("pad_token", r.pad);
    read("unk_token", r.unk);
    read("mask_token", r.mask);
  }
  return r;
}

}  // namespace rc::tokenizer::pipeline
