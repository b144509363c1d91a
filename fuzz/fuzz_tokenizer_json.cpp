// tokenizer.json (the `tokenizers` serialization): vocab, merges, added tokens,
// pre-tokenizer, post-processor, padding. A tokenizer that loads must then tokenize a few
// texts sanely.
#include "fuzz/tokenizer_checks.h"

using namespace rc;
namespace fs = std::filesystem;

namespace {
const std::string_view kTexts[] = {"Hello world", " <mask> leading space, <s>added</s>", "caf\xC3\xA9 \xF0\x9F\x98\x80",
                                   "\xFF\xFE broken \xC0", ""};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path dir = [] {
    fs::path d = fuzz::scratch_dir() / "tokenizer_json";
    fs::create_directories(d);
    return d;
  }();
  fuzz::write_file(dir / "tokenizer.json", fuzz::as_view(data, size));
  std::unique_ptr<Tokenizer> tok;
  if (!fuzz::expect_rc_error([&] { tok = Tokenizer::from_dir(dir); })) return 0;
  for (std::string_view t : kTexts) fuzz::check_tokenizer_on(*tok, t, 8, /*exact_round_trip=*/false);
  return 0;
}
