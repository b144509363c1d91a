// Byte-level BPE model: turns one pre-tokenized word (raw UTF-8 bytes) into vocabulary ids.
//
// Words are never converted to the byte-to-unicode strings at encode time: the initial
// symbols are the ids of the 256 single-byte tokens, and merges are looked up by
// (left id, right id) in a flat open-addressing table. The lowest-ranked adjacent pair
// is merged first, the leftmost among equal ranks (HF tokenizers' heap order), until no
// pair has a merge. Results are cached per word in a sharded cache that many threads may
// read and fill at once (the server encodes concurrently).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace rc::tokenizer {

struct MergeRule {
  int32_t left, right, merged;  // ids; rank = position in the list
};

// (left, right) -> (rank, merged id); open addressing, linear probing.
class PairMap {
 public:
  struct Value {
    int32_t rank, id;
  };
  PairMap() = default;
  explicit PairMap(size_t expected);
  // Overwrites an existing pair (HF collects merges into a HashMap: the last rank wins).
  void insert(int32_t left, int32_t right, Value value);
  const Value* find(int32_t left, int32_t right) const noexcept {
    const uint64_t key = make_key(left, right);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }
  size_t size() const noexcept { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Value value{};
  };
  static uint64_t make_key(int32_t l, int32_t r) noexcept { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  size_t slot_of(uint64_t key) const noexcept { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  std::vector<Slot> slots_{Slot{}};
  size_t mask_ = 0, size_ = 0;
  int shift_ = 63;
};

// word bytes -> ids, bounded, thread-safe. When full it stops inserting (as HF's BPE
// cache does), so memory stays bounded on a long-running server.
class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 64;  // longer words are rare: not cached

  WordCache();
  ~WordCache();
  // Appends the cached ids of word to out; false on a miss.
  bool lookup(std::string_view word, uint64_t hash, std::vector<int32_t>& out) const;
  void insert(std::string_view word, uint64_t hash, const int32_t* ids, size_t n);
  size_t size() const;

 private:
  struct Shard;
  static constexpr size_t kShards = 64;
  std::unique_ptr<Shard[]> shards_;
};

uint64_t hash_bytes(std::string_view s) noexcept;

class BpeModel {
 public:
  // byte_ids[b]: id of the token for byte b (-1: none, the byte is dropped as HF drops
  // characters missing from a vocabulary without unk_token). merges in rank order.
  BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<MergeRule>& merges);

  // Appends the ids of one word (raw bytes, non-empty) to out.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  // The same without the cache (tests, benchmarks of the merge loop). force_heap takes the
  // long-word path for any length, so tests can check both paths agree.
  void encode_word_uncached(std::string_view word, std::vector<int32_t>& out, bool force_heap = false) const;
  size_t cache_size() const { return cache_.size(); }

 private:
  void merge_small(int32_t* ids, int n, std::vector<int32_t>& out) const;
  void merge_large(const std::vector<int32_t>& ids, std::vector<int32_t>& out) const;

  std::array<int32_t, 256> byte_ids_{};
  PairMap merges_;
  mutable WordCache cache_;
};

}  // namespace rc::tokenizer
