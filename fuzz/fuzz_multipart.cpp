// multipart/form-data bodies (TorchServe's curl -F uploads). Input: the first line is the
// Content-Type header value (so the boundary parameter is fuzzed too), the rest the body.
// Parts must be views inside the body, in order, and never more than kMaxFormParts; the
// same bytes then go through parse_invocation as the server would route them.
#include "fuzz/fuzz_util.h"
#include "serve/http_error.h"
#include "serve/multipart.h"
#include "serve/request.h"

using namespace rc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::as_view(data, size);
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  const std::string_view content_type = in.substr(0, nl), body = in.substr(nl + 1);
  try {
    const std::vector<serve::FormPart> parts = serve::parse_multipart(body, content_type);
    RC_FUZZ_REQUIRE(parts.size() <= serve::kMaxFormParts);
    const char* prev_end = body.data();
    for (const serve::FormPart& p : parts) {
      RC_FUZZ_REQUIRE(p.body.data() >= prev_end && p.body.data() + p.body.size() <= body.data() + body.size());
      prev_end = p.body.data() + p.body.size();
    }
  } catch (const serve::HttpError& e) {
    RC_FUZZ_REQUIRE(e.status() == 400);
  }
  try {
    const serve::ParsedInputs got = serve::parse_invocation(body, content_type);
    RC_FUZZ_REQUIRE(!got.texts.empty());
    for (const std::string& t : got.texts) RC_FUZZ_REQUIRE(serve::is_valid_utf8(t));
  } catch (const serve::HttpError& e) {
    RC_FUZZ_REQUIRE(e.status() >= 400 && e.status() < 500);
  }
  return 0;
}
