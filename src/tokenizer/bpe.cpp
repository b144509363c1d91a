// Byte-level BPE merges, the pair table and the sharded word cache.
#include "tokenizer/bpe.h"

#include <bit>
#include <climits>
#include <cstring>
#include <mutex>
#include <queue>

namespace rc::tokenizer {

// ---------------------------------------------------------------------------------------
// PairMap

PairMap::PairMap(size_t expected) {
  size_t cap = 16;
  while (cap < expected * 2) cap <<= 1;  // load <= 50%: short probes
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  shift_ = 64 - std::countr_zero(cap);
}

void PairMap::insert(int32_t left, int32_t right, Value value) {
  if ((size_ + 1) * 2 > slots_.size()) {  // grow (only while building)
    PairMap bigger((size_ + 1) * 2);
    for (const Slot& s : slots_)
      if (s.key != kEmpty) bigger.insert(int32_t(s.key >> 32), int32_t(uint32_t(s.key)), s.value);
    *this = std::move(bigger);
  }
  const uint64_t key = make_key(left, right);
  for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) {
      s.value = value;
      return;
    }
    if (s.key == kEmpty) {
      s.key = key;
      s.value = value;
      ++size_;
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------
// WordCache

uint64_t hash_bytes(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t(n) * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8, n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * 0x94D049BB133111EBull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
}

namespace {
constexpr size_t kSlotsPerShard = 4096;              // power of two
constexpr size_t kMaxPerShard = kSlotsPerShard / 2;  // 64 shards x 2048 = 131,072 words
}  // namespace

struct WordCache::Shard {
  struct Slot {
    uint64_t tag = 0;  // hash | 1; 0 = empty
    uint32_t key_off = 0, ids_off = 0;
    uint16_t key_len = 0, ids_len = 0;
  };
  mutable std::shared_mutex mu;
  std::vector<Slot> slots;  // allocated on first insert
  std::string keys;
  std::vector<int32_t> ids;
  size_t count = 0;
};

WordCache::WordCache() : shards_(new Shard[kShards]) {}
WordCache::~WordCache() = default;

bool WordCache::lookup(std::string_view word, uint64_t hash, std::vector<int32_t>& out) const {
  const Shard& sh = shards_[hash >> 58];  // top 6 bits pick the shard (kShards == 64)
  std::shared_lock lock(sh.mu);
  if (sh.slots.empty()) return false;
  const uint64_t tag = hash | 1;
  for (size_t i = hash & (kSlotsPerShard - 1);; i = (i + 1) & (kSlotsPerShard - 1)) {
    const Shard::Slot& s = sh.slots[i];
    if (s.tag == 0) return false;
    if (s.tag == tag && s.key_len == word.size() &&
        std::memcmp(sh.keys.data() + s.key_off, word.data(), word.size()) == 0) {
      const int32_t* ids = sh.ids.data() + s.ids_off;
      out.insert(out.end(), ids, ids + s.ids_len);
      return true;
    }
  }
}

void WordCache::insert(std::string_view word, uint64_t hash, const int32_t* ids, size_t n) {
  if (word.size() > kMaxWordBytes || n > 0xFFFF) return;
  Shard& sh = shards_[hash >> 58];
  std::unique_lock lock(sh.mu);
  if (sh.count >= kMaxPerShard) return;
  if (sh.slots.empty()) sh.slots.resize(kSlotsPerShard);
  const uint64_t tag = hash | 1;
  size_t i = hash & (kSlotsPerShard - 1);
  for (;; i = (i + 1) & (kSlotsPerShard - 1)) {
    const Shard::Slot& s = sh.slots[i];
    if (s.tag == 0) break;
    if (s.tag == tag && s.key_len == word.size() &&
        std::memcmp(sh.keys.data() + s.key_off, word.data(), word.size()) == 0)
      return;  // another thread got here first
  }
  Shard::Slot& s = sh.slots[i];
  s.tag = tag;
  s.key_off = uint32_t(sh.keys.size());
  s.key_len = uint16_t(word.size());
  s.ids_off = uint32_t(sh.ids.size());
  s.ids_len = uint16_t(n);
  sh.keys.append(word);
  sh.ids.insert(sh.ids.end(), ids, ids + n);
  ++sh.count;
}

size_t WordCache::size() const {
  size_t total = 0;
  for (size_t i = 0; i < kShards; ++i) {
    std::shared_lock lock(shards_[i].mu);
    total += shards_[i].count;
  }
  return total;
}

// ---------------------------------------------------------------------------------------
// BpeModel

BpeModel::BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<MergeRule>& merges)
    : byte_ids_(byte_ids), merges_(merges.size()) {
  for (size_t r = 0; r < merges.size(); ++r)
    merges_.insert(merges[r].left, merges[r].right, {int32_t(r), merges[r].merged});
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > WordCache::kMaxWordBytes) {
    encode_word_uncached(word, out);
    return;
  }
  const uint64_t h = hash_bytes(word);
  if (cache_.lookup(word, h, out)) return;
  const size_t before = out.size();
  encode_word_uncached(word, out);
  cache_.insert(word, h, out.data() + before, out.size() - before);
}

namespace {
constexpr int kSmallWord = 256;  // up to this many symbols: O(n^2) scan on the stack
}

void BpeModel::encode_word_uncached(std::string_view word, std::vector<int32_t>& out, bool force_heap) const {
  const auto* s = reinterpret_cast<const unsigned char*>(word.data());
  if (word.size() <= size_t(kSmallWord) && !force_heap) {
    int32_t ids[kSmallWord];
    int n = 0;
    for (size_t i = 0; i < word.size(); ++i)
      if (const int32_t id = byte_ids_[s[i]]; id >= 0) ids[n++] = id;
    merge_small(ids, n, out);
    return;
  }
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  for (size_t i = 0; i < word.size(); ++i)
    if (const int32_t id = byte_ids_[s[i]]; id >= 0) ids.push_back(id);
  merge_large(ids, out);
}

// Repeatedly merges the lowest-ranked adjacent pair (leftmost among ties). ranks[i] and
// merged[i] describe the pair (ids[i], ids[i+1]); only the two pairs next to a merge change.
void BpeModel::merge_small(int32_t* ids, int n, std::vector<int32_t>& out) const {
  if (n <= 1) {
    out.insert(out.end(), ids, ids + n);
    return;
  }
  int32_t ranks[kSmallWord], merged[kSmallWord];
  auto look = [&](int i) {
    const PairMap::Value* v = merges_.find(ids[i], ids[i + 1]);
    ranks[i] = v ? v->rank : INT32_MAX;
    merged[i] = v ? v->id : -1;
  };
  for (int i = 0; i + 1 < n; ++i) look(i);
  while (n > 1) {
    int best = -1;
    int32_t best_rank = INT32_MAX;
    for (int i = 0; i + 1 < n; ++i)
      if (ranks[i] < best_rank) best_rank = ranks[i], best = i;
    if (best < 0) break;
    ids[best] = merged[best];
    // Drop symbol best+1 and pair best; pairs after it move one place left.
    std::memmove(ids + best + 1, ids + best + 2, sizeof(int32_t) * size_t(n - best - 2));
    std::memmove(ranks + best, ranks + best + 1, sizeof(int32_t) * size_t(n - best - 2));
    std::memmove(merged + best, merged + best + 1, sizeof(int32_t) * size_t(n - best - 2));
    --n;
    if (best > 0) look(best - 1);
    if (best + 1 < n) look(best);
  }
  out.insert(out.end(), ids, ids + n);
}

// Long words: a heap of candidate merges over a linked list of symbols (HF's Word::merge_all),
// O(n log n). Stale heap entries are skipped when popped.
void BpeModel::merge_large(const std::vector<int32_t>& ids_in, std::vector<int32_t>& out) const {
  const int n = int(ids_in.size());
  struct Sym {
    int32_t id, prev, next;
    bool alive;
  };
  std::vector<Sym> sym(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) sym[size_t(i)] = {ids_in[size_t(i)], i - 1, i + 1 < n ? i + 1 : -1, true};
  struct Cand {
    int32_t rank, pos, id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int32_t pos) {
    const int32_t nx = sym[size_t(pos)].next;
    if (nx < 0) return;
    if (const PairMap::Value* v = merges_.find(sym[size_t(pos)].id, sym[size_t(nx)].id))
      heap.push({v->rank, pos, v->id});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& a = sym[size_t(c.pos)];
    if (!a.alive || a.next < 0) continue;
    Sym& b = sym[size_t(a.next)];
    const PairMap::Value* v = merges_.find(a.id, b.id);
    if (!v || v->id != c.id) continue;  // the pair changed since it was pushed
    a.id = c.id;
    b.alive = false;
    a.next = b.next;
    if (a.next >= 0) sym[size_t(a.next)].prev = c.pos;
    if (a.prev >= 0) push(a.prev);
    push(c.pos);
  }
  for (int i = 0; i >= 0 && i < n; i = sym[size_t(i)].next) out.push_back(sym[size_t(i)].id);
}

}  // namespace rc::tokenizer
