// How deeply a JSON text nests, found before it is parsed. nlohmann::json parses any depth
// (its parser keeps its own stack), but copying, comparing and dumping a value recurse: a
// 200 KB body of '[' crashed the server on the stack when an error message dumped it. Every
// JSON text from outside (requests, model and tokenizer files, archives, data, checkpoints,
// answers of other servers) is checked here first; real ones nest a few levels.
#pragma once

#include <cstddef>
#include <string_view>

namespace rc {

// Deeper than any real config, tokenizer, header, request or state file (they nest ≤ 10).
inline constexpr size_t kMaxJsonDepth = 100;

// The deepest nesting of arrays and objects in `text`, counting brackets outside strings
// only; it stops counting once past `stop_after`. Does not validate: text that is not JSON
// gets a number, and the parser reports what is wrong with it.
size_t json_nesting_depth(std::string_view text, size_t stop_after = kMaxJsonDepth) noexcept;

// Throws Errc::format ("<source>: JSON nested deeper than 100 levels") when `text` nests
// deeper than `max_depth`.
void check_json_depth(std::string_view text, std::string_view source, size_t max_depth = kMaxJsonDepth);

}  // namespace rc
