// GPT-2's byte-to-unicode map: each of the 256 byte values is shown as one printable
// character, so a byte-level BPE vocabulary is a set of ordinary strings. Printable bytes
// (!..~, ¡..¬, ®..ÿ) map to themselves; the other 68 map to U+0100.. in byte order
// (space -> U+0120 'Ġ', newline -> U+010A 'Ċ').
#pragma once

#include <cstdint>
#include <string>

namespace rc::tokenizer {

uint32_t byte_to_codepoint(uint8_t byte) noexcept;
// The byte shown as cp, or -1 when cp is not in the map.
int codepoint_to_byte(uint32_t cp) noexcept;
// UTF-8 of the character that shows `byte`.
std::string byte_to_token_string(uint8_t byte);

}  // namespace rc::tokenizer
