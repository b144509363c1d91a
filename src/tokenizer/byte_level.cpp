// GPT-2's byte <-> unicode map (openai/gpt-2 encoder.py bytes_to_unicode).
#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace rc::tokenizer {
namespace {
struct Maps {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // every mapped code point is < 256 + 68
};

constexpr Maps make_maps() {
  Maps m{};
  for (auto& b : m.to_byte) b = -1;
  uint32_t extra = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    m.to_cp[b] = printable ? b : 256 + extra++;
    m.to_byte[m.to_cp[b]] = int16_t(b);
  }
  return m;
}
constexpr Maps kMaps = make_maps();
}  // namespace

uint32_t byte_to_codepoint(uint8_t byte) noexcept { return kMaps.to_cp[byte]; }

int codepoint_to_byte(uint32_t cp) noexcept { return cp < kMaps.to_byte.size() ? kMaps.to_byte[cp] : -1; }

std::string byte_to_token_string(uint8_t byte) {
  std::string s;
  utf8_append(s, byte_to_codepoint(byte));
  return s;
}

}  // namespace rc::tokenizer
