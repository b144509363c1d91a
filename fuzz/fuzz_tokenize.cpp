// The tokenizer on arbitrary bytes (every /predict, /tokenize and data-file text): RoBERTa's
// own vocab.json + merges.txt (tests/data/tiny). The first byte picks max_length; the rest
// is the text. Checks: ids in range, specials in place, truncation keeps a prefix, and
// decode(encode(text)) == text (invalid UTF-8 repaired as Python's errors="replace").
#include "fuzz/tokenizer_checks.h"

using namespace rc;

namespace {
std::unique_ptr<Tokenizer> tok;
}

// Loading 50k tokens under ASan takes over a second: done once, outside the timed runs.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tok = Tokenizer::from_files(RC_FUZZ_TOKENIZER_DIR "/vocab.json", RC_FUZZ_TOKENIZER_DIR "/merges.txt");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int max_length = data[0] < 128 ? 0 : data[0] - 126;  // 0 (no limit) or 2..129
  fuzz::check_tokenizer_on(*tok, fuzz::as_view(data + 1, size - 1), max_length, /*exact_round_trip=*/true);
  return 0;
}
