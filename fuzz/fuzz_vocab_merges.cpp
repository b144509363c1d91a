// vocab.json + merges.txt (+ tokenizer_config.json, special_tokens_map.json): the input is
// the files joined by fuzz_util.h's separator line, in that order; files past the last part
// are absent. A tokenizer that loads must then tokenize a few texts sanely.
#include "fuzz/tokenizer_checks.h"

using namespace rc;
namespace fs = std::filesystem;

namespace {
const char* const kFiles[] = {"vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"};
const std::string_view kTexts[] = {"Hello world", " <mask> leading space, <s>added</s>", "caf\xC3\xA9 \xF0\x9F\x98\x80",
                                   "\xFF\xFE broken \xC0", ""};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path dir = fuzz::scratch_dir() / "tokenizer";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto parts = fuzz::split_files(fuzz::as_view(data, size), 4);
  for (size_t i = 0; i < parts.size(); ++i) fuzz::write_file(dir / kFiles[i], parts[i]);
  std::unique_ptr<Tokenizer> tok;
  if (!fuzz::expect_rc_error([&] { tok = Tokenizer::from_dir(dir); })) return 0;
  for (std::string_view t : kTexts) fuzz::check_tokenizer_on(*tok, t, 8, /*exact_round_trip=*/false);
  return 0;
}
