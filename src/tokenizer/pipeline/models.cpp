// Models (tokenizers/src/models/{wordpiece,unigram,wordlevel,bpe}).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <queue>

#include "core/check.h"
#include "tokenizer/pipeline/build.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pipeline/models.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
using nlohmann::json;

void Vocab::add(std::string token, int32_t id) {
  if (size_t(id) >= by_id_.size()) by_id_.resize(size_t(id) + 1), present_.resize(size_t(id) + 1, 0);
  max_token_bytes_ = std::max(max_token_bytes_, token.size());
  by_id_[size_t(id)] = token;
  present_[size_t(id)] = 1;
  to_id_.insert_or_assign(std::move(token), id);
}

int32_t Vocab::find(std::string_view token) const {
  auto it = to_id_.find(token);
  return it != to_id_.end() ? it->second : -1;
}

const std::string* Vocab::token(int32_t id) const {
  if (id < 0 || size_t(id) >= by_id_.size() || !present_[size_t(id)]) return nullptr;
  return &by_id_[size_t(id)];
}

void Model::tokenize_ids(std::string_view text, std::vector<int32_t>& out) const {
  thread_local std::vector<Token> tokens;
  tokens.clear();
  tokenize(text, tokens);
  for (const Token& t : tokens) out.push_back(t.id);
}

void Model::tokenize_spans(std::string_view text, std::vector<int32_t>& ids, std::vector<ByteRange>& spans) const {
  thread_local std::vector<Token> tokens;
  tokens.clear();
  tokenize(text, tokens);
  for (const Token& t : tokens) ids.push_back(t.id), spans.push_back({t.begin, t.end});
}

namespace {

// A read-only string -> id table for the fast path's lookups: open addressing over one array,
// the keys in one buffer, so that a lookup of a string_view hashes it once and compares bytes
// in place (std::unordered_map: a node per key, std::hash's byte loop).
class FlatStringTable {
 public:
  void build(const std::vector<std::pair<std::string, int32_t>>& entries) {
    size_t cap = 16;
    while (cap < entries.size() * 2) cap *= 2;
    slots_.assign(cap, Slot{});
    keys_.clear();
    for (const auto& [key, id] : entries) {
      max_len_ = std::max(max_len_, key.size());
      const uint64_t h = hash(key);
      size_t i = size_t(h) & (cap - 1);
      while (slots_[i].len != kEmpty) {
        if (view(slots_[i]) == key) break;  // a repeated key: the later id wins
        i = (i + 1) & (cap - 1);
      }
      if (slots_[i].len == kEmpty) {
        slots_[i] = {uint32_t(h >> 32), uint32_t(keys_.size()), uint32_t(key.size()), id};
        keys_ += key;
      } else {
        slots_[i].id = id;
      }
    }
  }
  int32_t find(std::string_view key) const {
    if (slots_.empty() || key.size() > max_len_) return -1;
    const uint64_t h = hash(key);
    const size_t mask = slots_.size() - 1;
    for (size_t i = size_t(h) & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.len == kEmpty) return -1;
      if (slot.tag == uint32_t(h >> 32) && slot.len == key.size() &&
          std::memcmp(keys_.data() + slot.offset, key.data(), key.size()) == 0)
        return slot.id;
    }
  }
  size_t max_len() const { return max_len_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint32_t tag = 0, offset = 0, len = kEmpty;
    int32_t id = -1;
  };
  // 8 bytes at a time, multiplied and folded (wyhash's mix): strong enough for a table of
  // tokens, a few cycles for a short word.
  static uint64_t mix(uint64_t a, uint64_t b) {
    const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
    return uint64_t(r) ^ uint64_t(r >> 64);
  }
  static uint64_t hash(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = mix(h ^ w, 0xA0761D6478BD642Full);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    return mix(h ^ tail, 0xE7037ED1A0B428DBull);
  }
  std::string_view view(const Slot& s) const { return std::string_view(keys_).substr(s.offset, s.len); }

  std::vector<Slot> slots_;
  std::string keys_;
  size_t max_len_ = 0;
};

void check_token(const std::string& t, const Source& src, const char* where) {
  RC_CHECK(t.size() <= kMaxTokenBytes && is_valid_utf8(t), Errc::format, "tokenizer file '", src.file, "': ", where,
           " token '", t.substr(0, 60), "' is longer than ", kMaxTokenBytes, " bytes or not valid UTF-8",
           "\nHINT: the file is corrupt; download it again");
}

// {"token": id, ...} with dense ids (a table is sized by the largest).
Vocab read_vocab_object(const json& v, const Source& src, const char* where) {
  RC_CHECK(v.is_object(), Errc::format, "tokenizer file '", src.file, "': ", where,
           " must be a JSON object {\"token\": id}, found ", v.type_name(), "\nHINT: the file is corrupt");
  RC_CHECK(v.size() <= kMaxVocab, Errc::format, "tokenizer file '", src.file, "': ", where, " has ", v.size(),
           " tokens, more than the ", kMaxVocab, " allowed", "\nHINT: the file is corrupt");
  const int64_t bound = 2 * int64_t(v.size()) + 1024;
  Vocab vocab;
  for (const auto& [token, id] : v.items()) {
    RC_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < bound, Errc::format,
             "tokenizer file '", src.file, "': ", where, " entry '", token.substr(0, 60), "' must map to an id in [0, ",
             bound, "), found ", id.dump().substr(0, 40),
             "\nHINT: ids must be dense, 0, 1, 2, ...; the file is corrupt");
    check_token(token, src, where);
    vocab.add(token, int32_t(id.get<int64_t>()));
  }
  return vocab;
}

[[noreturn]] void missing_unk(const char* model) {
  RC_THROW(Errc::invalid_argument, model,
           ": the text has a piece the vocabulary cannot cover and the model has no unk token",
           "\nHINT: HF's tokenizers fails on this text too (MissingUnkToken); the tokenizer files lack an unk token");
}

// wordpiece/mod.rs (released form): greedy longest match from the left, "##" on the pieces
// after the first, the whole word unk when a piece is missing or the word is too long.
class WordPieceModel final : public Model {
 public:
  WordPieceModel(Vocab vocab, std::string unk, std::string prefix, size_t max_chars)
      : vocab_(std::move(vocab)), unk_(std::move(unk)), prefix_(std::move(prefix)), max_chars_(max_chars) {
    unk_id_ = vocab_.find(unk_);
    // The fast path's tables: the tokens as they are (a word's first piece) and, for those
    // that start with the prefix, without it (the pieces after): each id as vocab_.find gives it.
    std::vector<std::pair<std::string, int32_t>> all, continuing;
    for (size_t id = 0; id < vocab_.id_bound(); ++id) {
      const std::string* t = vocab_.token(int32_t(id));
      if (!t || vocab_.find(*t) != int32_t(id)) continue;
      all.emplace_back(*t, int32_t(id));
      if (t->compare(0, prefix_.size(), prefix_) == 0) continuing.emplace_back(t->substr(prefix_.size()), int32_t(id));
    }
    first_.build(all);
    next_.build(continuing);
  }
  // tokenize() without strings: the same greedy longest match, each candidate looked up in
  // place (first_ or next_) instead of built as prefix + piece.
  void tokenize_ids(std::string_view text, std::vector<int32_t>& out) const override {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t first = out.size();
    bool bad = false;
    if (text.size() > max_chars_) {  // a character is at least one byte: count only when it may matter
      size_t chars = 0;
      for (size_t i = 0; i < text.size(); ++i) chars += (s[i] & 0xC0) != 0x80;
      bad = chars > max_chars_;
    }
    size_t start = 0;
    while (!bad && start < text.size()) {
      const FlatStringTable& table = start > 0 ? next_ : first_;
      size_t end = std::min(text.size(), start + table.max_len());
      while (end > start && end < text.size() && (s[end] & 0xC0) == 0x80) --end;
      int32_t id = -1;
      while (start < end) {
        id = table.find(text.substr(start, end - start));
        if (id >= 0) break;
        --end;
        while (end > start && (s[end] & 0xC0) == 0x80) --end;
      }
      if (id < 0) {
        bad = true;
        break;
      }
      out.push_back(id);
      start = end;
    }
    if (bad) {
      out.resize(first);
      if (unk_id_ < 0) missing_unk("WordPiece");
      out.push_back(unk_id_);
    }
  }
  void tokenize(std::string_view text, std::vector<Token>& out) const override {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    size_t chars = 0;
    for (size_t i = 0; i < text.size(); ++i) chars += (s[i] & 0xC0) != 0x80;
    const size_t first = out.size();
    bool bad = chars > max_chars_;
    std::string piece;
    size_t start = 0;
    while (!bad && start < text.size()) {
      // No token is longer than the longest in the vocabulary: start there (same result,
      // without a quadratic walk when a file allows very long words).
      size_t end = std::min(text.size(), start + vocab_.max_token_bytes());
      while (end > start && end < text.size() && (s[end] & 0xC0) == 0x80) --end;
      int32_t id = -1;
      while (start < end) {
        piece.clear();
        if (start > 0) piece = prefix_;
        piece.append(text.substr(start, end - start));
        id = vocab_.find(piece);
        if (id >= 0) break;
        --end;  // back to the start of the last character
        while (end > start && (s[end] & 0xC0) == 0x80) --end;
      }
      if (id < 0) {
        bad = true;
        break;
      }
      out.push_back({id, piece, start, end});
      start = end;
    }
    if (bad) {
      out.resize(first);
      if (unk_id_ < 0) missing_unk("WordPiece");
      out.push_back({unk_id_, unk_, 0, text.size()});
    }
  }
  int32_t token_to_id(std::string_view t) const override { return vocab_.find(t); }
  const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
  int64_t vocab_size() const override { return int64_t(vocab_.size()); }
  std::string unk_token() const override { return unk_; }

 private:
  Vocab vocab_;
  std::string unk_, prefix_;
  size_t max_chars_;
  int32_t unk_id_ = -1;
  FlatStringTable first_, next_;
};

// wordlevel/mod.rs: the whole piece, or unk.
class WordLevelModel final : public Model {
 public:
  WordLevelModel(Vocab vocab, std::string unk) : vocab_(std::move(vocab)), unk_(std::move(unk)) {
    unk_id_ = vocab_.find(unk_);
  }
  void tokenize(std::string_view text, std::vector<Token>& out) const override {
    const int32_t id = vocab_.find(text);
    if (id >= 0) {
      out.push_back({id, std::string(text), 0, text.size()});
      return;
    }
    if (unk_id_ < 0) missing_unk("WordLevel");
    out.push_back({unk_id_, unk_, 0, text.size()});
  }
  int32_t token_to_id(std::string_view t) const override { return vocab_.find(t); }
  const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
  int64_t vocab_size() const override { return int64_t(vocab_.size()); }
  std::string unk_token() const override { return unk_; }

 private:
  Vocab vocab_;
  std::string unk_;
  int32_t unk_id_ = -1;
};

std::string byte_piece(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// unigram/model.rs, encode_optimized: Viterbi over the vocabulary pieces that start at each
// character (shortest first; a later candidate wins only with a strictly higher score), a
// character no piece covers alone gets unk with min_score - 10; consecutive unks fuse.
// tokenize() then looks each piece's string up again (the last id of a repeated string) and
// turns a string not in the vocabulary into <0xXX> pieces (byte_fallback) or unk.
class UnigramModel final : public Model {
 public:
  UnigramModel(std::vector<std::pair<std::string, double>> pieces, int32_t unk_id, bool byte_fallback)
      : unk_id_(unk_id), byte_fallback_(byte_fallback) {
    scores_.reserve(pieces.size());
    // The trie of the pieces (HF's Trie<u8>): built with a child list per node, then flattened
    // into sorted edge arrays.
    std::vector<std::vector<std::pair<uint8_t, uint32_t>>> children(1);
    std::vector<int32_t> node_piece(1, -1);
    for (size_t id = 0; id < pieces.size(); ++id) {
      min_score_ = std::min(min_score_, pieces[id].second);
      scores_.push_back(pieces[id].second);
      const std::string& piece = pieces[id].first;
      uint32_t node = 0;
      for (unsigned char b : piece) {
        uint32_t next = 0;
        for (const auto& [byte, child] : children[node])
          if (byte == b) next = child;
        if (next == 0) {
          next = uint32_t(children.size());
          children[node].push_back({b, next});
          children.emplace_back();
          node_piece.push_back(-1);
        }
        node = next;
      }
      if (!piece.empty()) node_piece[node] = int32_t(id);  // a repeated piece: the last id, as token_to_ids
      vocab_.add(std::move(pieces[id].first), int32_t(id));
    }
    build_double_array(children, node_piece);
    for (int b = 0; b < 256; ++b) byte_ids_[size_t(b)] = vocab_.find(byte_piece(static_cast<unsigned char>(b)));
  }
  void tokenize(std::string_view text, std::vector<Token>& out) const override {
    for (const Piece& p : best_path(text)) {
      const std::string_view piece = text.substr(p.begin, p.end - p.begin);
      const int32_t id = p.id >= 0 ? p.id : vocab_.find(piece);
      if (id >= 0) {
        out.push_back({id, std::string(piece), p.begin, p.end});
        continue;
      }
      if (byte_fallback_) {
        std::vector<int32_t> ids;
        for (unsigned char b : piece) {
          const int32_t bid = vocab_.find(byte_piece(b));
          if (bid < 0) break;
          ids.push_back(bid);
        }
        if (ids.size() == piece.size()) {
          for (size_t k = 0; k < ids.size(); ++k)
            out.push_back({ids[k], byte_piece(static_cast<unsigned char>(piece[k])), p.begin, p.end});
          continue;
        }
      }
      if (unk_id_ < 0) missing_unk("Unigram");
      out.push_back({unk_id_, std::string(piece), p.begin, p.end});
    }
  }
  // tokenize() without strings: a piece of the best path is its own id; only fused unks are
  // looked up again. Words up to WordCache::kMaxWordBytes are cached (bounded, shared by
  // threads), as HF's Unigram caches its encodings.
  void tokenize_ids(std::string_view text, std::vector<int32_t>& out) const override {
    if (text.size() > WordCache::kMaxWordBytes || text.empty()) return tokenize_ids_uncached(text, out);
    const uint64_t hash = hash_bytes(text);
    if (cache_.lookup(text, hash, out)) return;
    const size_t first = out.size();
    tokenize_ids_uncached(text, out);
    cache_.insert(text, hash, out.data() + first, out.size() - first);
  }
  void tokenize_ids_uncached(std::string_view text, std::vector<int32_t>& out) const {
    for (const Piece& p : best_path(text)) {
      if (p.id >= 0) {
        out.push_back(p.id);
        continue;
      }
      const std::string_view piece = text.substr(p.begin, p.end - p.begin);
      if (const int32_t id = vocab_.find(piece); id >= 0) {
        out.push_back(id);
        continue;
      }
      if (byte_fallback_) {
        size_t k = 0;
        for (; k < piece.size() && byte_ids_[static_cast<unsigned char>(piece[k])] >= 0; ++k) {
        }
        if (k == piece.size()) {
          for (unsigned char b : piece) out.push_back(byte_ids_[b]);
          continue;
        }
      }
      if (unk_id_ < 0) missing_unk("Unigram");
      out.push_back(unk_id_);
    }
  }
  // tokenize() without strings, its ids and byte ranges; cached as tokenize_ids() is, each
  // token as (id, begin, end) in a cache of its own.
  void tokenize_spans(std::string_view text, std::vector<int32_t>& ids, std::vector<ByteRange>& spans) const override {
    thread_local std::vector<int32_t> packed;
    packed.clear();
    const bool cacheable = !text.empty() && text.size() <= WordCache::kMaxWordBytes;
    const uint64_t hash = cacheable ? hash_bytes(text) : 0;
    if (!cacheable || !spans_cache_.lookup(text, hash, packed)) {
      packed.clear();
      for (const Piece& p : best_path(text)) {
        auto put = [&](int32_t id) { packed.insert(packed.end(), {id, int32_t(p.begin), int32_t(p.end)}); };
        if (p.id >= 0) {
          put(p.id);
          continue;
        }
        const std::string_view piece = text.substr(p.begin, p.end - p.begin);
        if (const int32_t id = vocab_.find(piece); id >= 0) {
          put(id);
          continue;
        }
        if (byte_fallback_) {
          size_t k = 0;
          for (; k < piece.size() && byte_ids_[static_cast<unsigned char>(piece[k])] >= 0; ++k) {
          }
          if (k == piece.size()) {
            for (unsigned char b : piece) put(byte_ids_[b]);
            continue;
          }
        }
        if (unk_id_ < 0) missing_unk("Unigram");
        put(unk_id_);
      }
      if (cacheable) spans_cache_.insert(text, hash, packed.data(), packed.size());
    }
    for (size_t k = 0; k + 2 < packed.size(); k += 3) {
      ids.push_back(packed[k]);
      spans.push_back({size_t(packed[k + 1]), size_t(packed[k + 2])});
    }
  }
  int32_t token_to_id(std::string_view t) const override { return vocab_.find(t); }
  const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
  int64_t vocab_size() const override { return int64_t(scores_.size()); }
  std::string unk_token() const override {
    const std::string* t = vocab_.token(unk_id_);
    return t ? *t : std::string();
  }

 private:
  // A piece of the best path: bytes [begin, end) of the text, the vocabulary id of its string
  // (the last id of a repeated string, as vocab_.find gives), or -1 for a run of unknown
  // characters (fused), which tokenize() looks up again.
  struct Piece {
    size_t begin, end;
    int32_t id;
  };
  // unigram/model.rs encode_optimized's lattice and backtrack. Per-thread scratch: it runs once
  // per pre-tokenized word; the model is shared by threads, the scratch is not.
  const std::vector<Piece>& best_path(std::string_view text) const {
    struct BestNode {
      int32_t id = 0;
      double score = 0;
      size_t starts_at = SIZE_MAX;
    };
    thread_local std::vector<BestNode> best;
    thread_local std::vector<Piece> pieces;
    pieces.clear();
    if (text.empty()) return pieces;
    const size_t n = text.size();
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const double unk_score = min_score_ - 10.0;
    best.assign(n + 1, BestNode{});
    for (size_t start = 0; start < n;) {
      const double here = best[start].score;
      const size_t mblen = size_t(utf8_lead_length(s[start]));
      bool has_single = false;
      // common_prefix_search: the pieces starting here, shortest first.
      uint32_t node = 0;
      for (size_t len = 1; start + len <= n; ++len) {
        const size_t next = size_t(units_[node].base) + s[start + len - 1];
        if (next >= units_.size() || units_[next].check != int32_t(node)) break;
        node = uint32_t(next);
        const Unit& unit = units_[node];
        const int32_t id = unit.piece;
        if (id < 0) continue;
        BestNode& target = best[start + len];
        const double candidate = unit.score + here;
        if (target.starts_at == SIZE_MAX || candidate > target.score) target = {id, candidate, start};
        if (len == mblen) has_single = true;
      }
      if (!has_single) {
        if (unk_id_ < 0) missing_unk("Unigram");
        BestNode& target = best[start + mblen];
        const double candidate = unk_score + here;
        if (target.starts_at == SIZE_MAX || candidate > target.score) target = {unk_id_, candidate, start};
      }
      start += mblen;
    }
    // Back from the end: pieces, consecutive unks fused.
    size_t end = n, unk_end = SIZE_MAX;
    while (end > 0) {
      const BestNode& node = best[end];
      if (node.id == unk_id_) {
        if (unk_end == SIZE_MAX) unk_end = end;
      } else {
        if (unk_end != SIZE_MAX) pieces.push_back({end, unk_end, -1}), unk_end = SIZE_MAX;
        pieces.push_back({node.starts_at, end, node.id});
      }
      end = node.starts_at;
    }
    if (unk_end != SIZE_MAX) pieces.push_back({0, unk_end, -1});
    std::reverse(pieces.begin(), pieces.end());
    return pieces;
  }
  // The trie as a double array (Aoe's; Darts' layout without its packing): the child of node
  // n by byte b is unit base(n) + b when that unit's check is n, one load and one compare per
  // byte instead of a search of n's edges. Built breadth-first, each node's children placed at
  // the first base where all their units are free (bases tried from the free units only).
  struct Unit {
    int32_t base = 0, check = -1;  // check: the parent, -1 free (the root: its own parent, 0)
    int32_t piece = -1;            // id of the piece ending here, -1 for none
    double score = 0;              // its score, here to save the lattice a second cache miss
  };
  void build_double_array(std::vector<std::vector<std::pair<uint8_t, uint32_t>>>& children,
                          const std::vector<int32_t>& node_piece) {
    // The free units as a doubly linked list (next_free_/prev_free_, the end: SIZE_MAX), so that
    // a placement tries only free units for its first child.
    std::vector<size_t> next_free, prev_free;
    size_t head = SIZE_MAX, tail = SIZE_MAX;
    auto grow = [&](size_t size) {
      const size_t old = units_.size();
      if (size <= old) return;
      units_.resize(size);
      next_free.resize(size, SIZE_MAX);
      prev_free.resize(size, SIZE_MAX);
      for (size_t i = old; i < size; ++i) {
        prev_free[i] = tail;
        if (tail != SIZE_MAX)
          next_free[tail] = i;
        else
          head = i;
        tail = i;
      }
    };
    auto take = [&](size_t i) {
      if (prev_free[i] != SIZE_MAX)
        next_free[prev_free[i]] = next_free[i];
      else
        head = next_free[i];
      if (next_free[i] != SIZE_MAX)
        prev_free[next_free[i]] = prev_free[i];
      else
        tail = prev_free[i];
    };
    grow(512);
    take(0);
    units_[0].check = 0;
    units_[0].piece = node_piece[0];
    std::vector<std::pair<uint32_t, uint32_t>> queue{{0, 0}};  // (trie node, unit)
    for (size_t q = 0; q < queue.size(); ++q) {
      const auto [node, unit] = queue[q];
      auto& kids = children[node];
      if (kids.empty()) continue;
      std::sort(kids.begin(), kids.end());
      const size_t lowest = kids[0].first;
      size_t base = 0;
      for (size_t f = head;; f = next_free[f]) {
        if (f == SIZE_MAX) {  // nothing fits below the end: past it
          base = std::max(units_.size(), lowest + 1) - lowest;
          break;
        }
        if (f <= lowest) continue;  // base >= 1: the root's children never land on the root
        base = f - lowest;
        grow(base + 256);
        bool fits = true;
        for (const auto& kid : kids)
          if (units_[base + kid.first].check != -1) {
            fits = false;
            break;
          }
        if (fits) break;
      }
      grow(base + 256);
      units_[unit].base = int32_t(base);
      for (const auto& [byte, kid] : kids) {
        Unit& u = units_[base + byte];
        take(base + byte);
        u.check = int32_t(unit);
        u.piece = node_piece[kid];
        if (u.piece >= 0) u.score = scores_[size_t(u.piece)];
        queue.push_back({kid, uint32_t(base + byte)});
      }
      // Darts-clone's bound on the search: free units far behind the end (holes too small for
      // the nodes that come) stop being tried, so placement stays linear on large vocabularies.
      // They stay free (check -1) and below the list's head, so no later child lands on one.
      while (head != SIZE_MAX && head + kSearchWindow < units_.size()) take(head);
    }
    size_t used = units_.size();
    while (used > 1 && units_[used - 1].check == -1) --used;
    units_.resize(used);
    units_.shrink_to_fit();
  }

  static constexpr size_t kSearchWindow = 16 * 256;
  std::vector<Unit> units_;
  mutable WordCache cache_, spans_cache_;
  std::array<int32_t, 256> byte_ids_{};  // <0xXX> pieces (byte_fallback), -1 when absent
  Vocab vocab_;
  std::vector<double> scores_;
  double min_score_ = 1e300;
  int32_t unk_id_;
  bool byte_fallback_;
};

// bpe/model.rs merge_word + word.rs merge_all (no dropout): characters (with the
// continuing-subword prefix and end-of-word suffix) looked up, unknown ones as <0xXX> bytes
// (byte_fallback) or unk (fused when fuse_unk); then the lowest-ranked pair merged first, the
// leftmost among equals.
class BpeModel final : public Model {
 public:
  struct Options {
    std::string unk, prefix, suffix;
    bool has_unk = false, fuse_unk = false, byte_fallback = false, ignore_merges = false;
  };
  BpeModel(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges, Options o, const Source& src)
      : vocab_(std::move(vocab)), o_(std::move(o)) {
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const auto& [a, b] = merges[rank];
      const int32_t ia = vocab_.find(a), ib = vocab_.find(b);
      // model.rs: a merge whose parts or result (with the prefix stripped from the right part)
      // are missing is an error at load.
      std::string merged = a;
      merged += !o_.prefix.empty() && b.compare(0, o_.prefix.size(), o_.prefix) == 0 ? b.substr(o_.prefix.size()) : b;
      const int32_t im = vocab_.find(merged);
      RC_CHECK(ia >= 0 && ib >= 0 && im >= 0, Errc::format, "tokenizer file '", src.file, "': BPE merge ", rank, " '",
               a.substr(0, 40), " ", b.substr(0, 40), "' uses a token that is not in the vocabulary",
               "\nHINT: the vocabulary and the merges come from different tokenizers");
      merges_.insert_or_assign(key(ia, ib), std::pair<int32_t, int32_t>{int32_t(rank), im});
    }
    if (o_.has_unk) {
      unk_id_ = vocab_.find(o_.unk);
    }
  }
  void tokenize(std::string_view text, std::vector<Token>& out) const override {
    if (text.empty()) return;
    if (o_.ignore_merges)
      if (const int32_t id = vocab_.find(text); id >= 0) {
        out.push_back({id, std::string(text), 0, text.size()});
        return;
      }
    struct Symbol {
      int32_t id;
      size_t len;
      int64_t prev, next;
    };
    std::vector<Symbol> symbols;
    auto add = [&](int32_t id, size_t len) {
      const int64_t i = int64_t(symbols.size());
      symbols.push_back({id, len, i - 1, -1});
      if (i > 0) symbols[size_t(i - 1)].next = i;
    };
    bool has_pending = false;  // an unk not yet added (fused while fuse_unk)
    int32_t pending_id = 0;
    size_t pending_len = 0;
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    std::string piece;
    for (size_t i = 0; i < text.size();) {
      const size_t len = size_t(utf8_lead_length(s[i]));
      const bool is_first = i == 0, is_last = i + len == text.size();
      piece.clear();
      if (!is_first) piece = o_.prefix;
      piece.append(text.substr(i, len));
      if (is_last) piece += o_.suffix;
      i += len;
      if (const int32_t id = vocab_.find(piece); id >= 0) {
        if (has_pending) add(pending_id, pending_len), has_pending = false;
        add(id, len);
        continue;
      }
      if (o_.byte_fallback) {
        std::vector<int32_t> ids;
        for (unsigned char b : piece) {
          const int32_t bid = vocab_.find(byte_piece(b));
          if (bid < 0) break;
          ids.push_back(bid);
        }
        if (ids.size() == piece.size()) {  // HF adds each with length 1 (the pending unk stays)
          for (int32_t id : ids) add(id, 1);
          continue;
        }
      }
      if (o_.has_unk) {
        if (unk_id_ < 0) missing_unk("BPE");
        if (has_pending && o_.fuse_unk) {
          pending_len += len;
        } else {
          if (has_pending) add(pending_id, pending_len);
          has_pending = true, pending_id = unk_id_, pending_len = len;
        }
      }
    }
    if (has_pending) add(pending_id, pending_len);
    merge_all(symbols);
    size_t offset = 0;
    for (const Symbol& sym : symbols) {
      if (sym.len == 0) continue;
      const std::string* t = vocab_.token(sym.id);
      out.push_back({sym.id, t ? *t : std::string(), offset, std::min(offset + sym.len, text.size())});
      offset += sym.len;
    }
  }
  int32_t token_to_id(std::string_view t) const override { return vocab_.find(t); }
  const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
  int64_t vocab_size() const override { return int64_t(vocab_.size()); }
  std::string unk_token() const override { return o_.has_unk ? o_.unk : std::string(); }

 private:
  static uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

  template <class Symbols>
  void merge_all(Symbols& symbols) const {
    struct Merge {
      int64_t pos;
      int32_t rank, new_id;
      bool operator<(const Merge& o) const {  // the heap's top: lowest rank, then lowest pos
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::priority_queue<Merge> queue;
    auto push = [&](int64_t pos) {
      if (pos < 0) return;
      const auto& a = symbols[size_t(pos)];
      if (a.next < 0) return;
      auto it = merges_.find(key(a.id, symbols[size_t(a.next)].id));
      if (it != merges_.end()) queue.push({pos, it->second.first, it->second.second});
    };
    for (size_t i = 0; i + 1 < symbols.size(); ++i) push(int64_t(i));
    while (!queue.empty()) {
      const Merge top = queue.top();
      queue.pop();
      auto& left = symbols[size_t(top.pos)];
      if (left.len == 0 || left.next < 0) continue;
      auto& right = symbols[size_t(left.next)];
      auto it = merges_.find(key(left.id, right.id));
      if (it == merges_.end() || it->second.second != top.new_id) continue;
      left.id = top.new_id;
      left.len += right.len;
      right.len = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[size_t(right.next)].prev = top.pos;
      push(left.prev);
      push(top.pos);
    }
  }

  Vocab vocab_;
  Options o_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // pair -> (rank, merged id)
  int32_t unk_id_ = -1;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(Vocab vocab, std::string unk, std::string prefix, size_t max_chars) {
  return std::make_unique<WordPieceModel>(std::move(vocab), std::move(unk), std::move(prefix), max_chars);
}

std::unique_ptr<Model> make_unigram(std::vector<std::pair<std::string, double>> pieces, int32_t unk_id,
                                    bool byte_fallback) {
  return std::make_unique<UnigramModel>(std::move(pieces), unk_id, byte_fallback);
}

std::unique_ptr<Model> make_model(const json& j, const Source& src) {
  std::string type = j.is_object() && !j.contains("type") ? std::string("BPE") : type_of(j, src, "model");
  if (type == "WordPiece") {
    const int64_t max_chars = j.value("max_input_chars_per_word", int64_t(100));
    return make_wordpiece(read_vocab_object(j.value("vocab", json::object()), src, "model.vocab"),
                          get_string(j, "unk_token", "[UNK]"), get_string(j, "continuing_subword_prefix", "##"),
                          size_t(std::max<int64_t>(0, max_chars)));
  }
  if (type == "WordLevel")
    return std::make_unique<WordLevelModel>(read_vocab_object(j.value("vocab", json::object()), src, "model.vocab"),
                                            get_string(j, "unk_token", "<unk>"));
  if (type == "Unigram") {
    const json& v = j.value("vocab", json::array());
    RC_CHECK(v.is_array() && v.size() <= kMaxVocab, Errc::format, "tokenizer file '", src.file,
             "': Unigram model.vocab must be an array of at most ", kMaxVocab, " [piece, score] pairs",
             "\nHINT: the file is corrupt; download it again");
    std::vector<std::pair<std::string, double>> pieces;
    pieces.reserve(v.size());
    for (const json& p : v) {
      RC_CHECK(p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_number(), Errc::format, "tokenizer file '",
               src.file, "': Unigram vocab entry must be [piece, score], found ", p.dump().substr(0, 80),
               "\nHINT: the file is corrupt; download it again");
      check_token(p[0].get<std::string>(), src, "Unigram vocab");
      pieces.emplace_back(p[0].get<std::string>(), p[1].get<double>());
    }
    int32_t unk_id = -1;
    if (auto it = j.find("unk_id"); it != j.end() && !it->is_null()) {
      RC_CHECK(it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() < int64_t(pieces.size()),
               Errc::format, "tokenizer file '", src.file, "': Unigram unk_id ", it->dump(),
               " is not an index of its vocabulary of ", pieces.size(), "\nHINT: the file is corrupt");
      unk_id = int32_t(it->get<int64_t>());
    }
    return make_unigram(std::move(pieces), unk_id, get_bool(j, "byte_fallback", false));
  }
  if (type == "BPE") {
    if (auto it = j.find("dropout"); it != j.end() && it->is_number() && it->get<double>() > 0)
      RC_THROW(Errc::unsupported, "tokenizer file '", src.file, "': BPE dropout ", it->dump(),
               " is not supported (random at inference)", "\nHINT: set \"dropout\": null in the file");
    BpeModel::Options o;
    if (auto it = j.find("unk_token"); it != j.end() && it->is_string())
      o.unk = it->get<std::string>(), o.has_unk = true;
    o.prefix = get_string(j, "continuing_subword_prefix", "");
    o.suffix = get_string(j, "end_of_word_suffix", "");
    o.fuse_unk = get_bool(j, "fuse_unk", false);
    o.byte_fallback = get_bool(j, "byte_fallback", false);
    o.ignore_merges = get_bool(j, "ignore_merges", false);
    Vocab vocab = read_vocab_object(j.value("vocab", json::object()), src, "model.vocab");
    const json& m = j.value("merges", json::array());
    RC_CHECK(m.is_array() && m.size() <= kMaxVocab * 4, Errc::format, "tokenizer file '", src.file,
             "': model.merges must be an array", "\nHINT: the file is corrupt");
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(m.size());
    for (const json& e : m) {
      if (e.is_string()) {
        const std::string& line = e.get_ref<const std::string&>();
        const size_t sp = line.find(' ');
        RC_CHECK(sp != std::string::npos && line.find(' ', sp + 1) == std::string::npos, Errc::format,
                 "tokenizer file '", src.file, "': merge '", line.substr(0, 60), "' is not \"a b\"",
                 "\nHINT: the file is corrupt");
        merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
      } else {
        RC_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string(), Errc::format,
                 "tokenizer file '", src.file, "': merge ", e.dump().substr(0, 60), " is not [\"a\", \"b\"]",
                 "\nHINT: the file is corrupt");
        merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      }
    }
    return std::make_unique<BpeModel>(std::move(vocab), merges, std::move(o), src);
  }
  unknown_type(src, "model", type);
}

}  // namespace rc::tokenizer::pipeline
