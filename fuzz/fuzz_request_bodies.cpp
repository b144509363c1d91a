// HTTP request bodies, every parser in src/serve/request.h, and the answers rendered from
// what they accept. Input: byte 0 picks the parser (kParsers), byte 1 the Content-Type
// (kContentTypes), the rest is the body. A new body parser is one line in kParsers.
//
// Bad bodies must be an HttpError (400/406/415/413) whose message renders as a JSON error
// body; accepted bodies give valid UTF-8 texts that the renderers turn into valid JSON.
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_util.h"
#include "serve/http_error.h"
#include "serve/multipart.h"
#include "serve/request.h"

using namespace rc;

namespace {

void check_parsed(const serve::ParsedInputs& in) {
  RC_FUZZ_REQUIRE(!in.texts.empty());
  RC_FUZZ_REQUIRE(!in.single || in.texts.size() == 1);
  RC_FUZZ_REQUIRE(in.top_k >= 0);
  for (const std::string& t : in.texts) RC_FUZZ_REQUIRE(serve::is_valid_utf8(t));
  // Render an answer for every input, as the routes do, with labels taken from the texts
  // (a hostile model's id2label is as untrusted as a request).
  std::vector<std::string> labels(in.texts.begin(), in.texts.begin() + ptrdiff_t(std::min<size_t>(in.texts.size(), 3)));
  std::vector<Prediction> preds;
  for (size_t i = 0; i < in.texts.size() && i < 64; ++i) {
    Prediction p;
    p.label_id = int(i % labels.size());
    p.label = labels[size_t(p.label_id)];
    for (size_t k = 0; k < labels.size(); ++k) {
      p.scores.push_back(k == size_t(p.label_id) ? 0.9f : 0.1f / float(labels.size()));
      p.logits.push_back(k == 0 ? std::numeric_limits<float>::infinity() : -float(k));
    }
    p.score = p.scores[size_t(p.label_id)];
    preds.push_back(std::move(p));
  }
  for (const std::string& body :
       {serve::render_invocation_json(preds, in, labels), serve::render_tei_predict(preds, in, labels),
        serve::render_hf_text_classification(preds, in, labels)})
    RC_FUZZ_REQUIRE(!nlohmann::json::parse(body, nullptr, false).is_discarded());
  (void)serve::render_invocation_csv(preds, in, labels);
}

struct BodyParser {
  const char* name;
  void (*parse)(std::string_view body, std::string_view content_type);
};

// One line per parser that sees request bytes; a new one goes last, so the seeds' byte 0
// (fuzz/make_seeds.py) keeps naming the parser it names.
const BodyParser kParsers[] = {
    {"invocation", [](std::string_view b, std::string_view ct) { check_parsed(serve::parse_invocation(b, ct)); }},
    {"tei", [](std::string_view b, std::string_view) { check_parsed(serve::parse_tei_tokenize(b)); }},
    {"csv",
     [](std::string_view b, std::string_view) {
       for (const auto& t : serve::parse_csv_texts(b)) (void)t;
     }},
    {"accept", [](std::string_view b, std::string_view) { (void)serve::response_format(b); }},
    {"multipart", [](std::string_view b, std::string_view ct) { (void)serve::parse_multipart(b, ct); }},
    {"hf_endpoint", [](std::string_view b, std::string_view) { check_parsed(serve::parse_hf_endpoint(b)); }},
};

const std::string_view kContentTypes[] = {"application/json",
                                          "text/csv",
                                          "text/plain",
                                          "",
                                          "application/jsonlines",
                                          "Application/JSON; charset=utf-8",
                                          "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=xyz",
                                          "multipart/form-data; boundary=\"a b\"",
                                          "image/png",
                                          "text/csv; header=present"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const BodyParser& parser = kParsers[data[0] % std::size(kParsers)];
  const std::string_view content_type = kContentTypes[data[1] % std::size(kContentTypes)];
  const std::string_view body = fuzz::as_view(data + 2, size - 2);
  try {
    parser.parse(body, content_type);
  } catch (const serve::HttpError& e) {
    RC_FUZZ_REQUIRE(e.status() >= 400 && e.status() < 500);
    const std::string rendered = serve::error_body(e.status(), e.type(), e.what());
    RC_FUZZ_REQUIRE(!nlohmann::json::parse(rendered, nullptr, false).is_discarded());
  } catch (const rc::Error& e) {  // the routes map it by errc (400 for format)
    RC_FUZZ_REQUIRE(
        !nlohmann::json::parse(serve::error_body(400, "BadRequest", e.what()), nullptr, false).is_discarded());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FUZZ FINDING: %s: %s escaped: %s\n", parser.name, typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
