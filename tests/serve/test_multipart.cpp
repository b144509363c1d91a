// multipart/form-data bodies (TorchServe clients: curl -F, Python requests' files=): the
// parser on its own and through parse_invocation. Bodies are written as those clients send them.
#include <gtest/gtest.h>

#include <functional>

#include "serve/http_error.h"
#include "serve/multipart.h"
#include "serve/request.h"
#include "serve/serve_test_util.h"

using namespace rc::serve;

namespace {

using rc::test::status_of;

// As `curl -F data=@t.txt` sends it (curl's boundary: 24 dashes and hex digits).
const std::string kCurlType = "multipart/form-data; boundary=------------------------d74496d66958873e";
const std::string kCurlBody =
    "--------------------------d74496d66958873e\r\n"
    "Content-Disposition: form-data; name=\"data\"; filename=\"t.txt\"\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "Covid cases are increasing fast!\r\n"
    "--------------------------d74496d66958873e--\r\n";

TEST(Multipart, CurlUpload) {
  const auto parts = parse_multipart(kCurlBody, kCurlType);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].name, "data");
  EXPECT_EQ(parts[0].filename, "t.txt");
  EXPECT_EQ(parts[0].content_type, "text/plain");
  EXPECT_EQ(parts[0].body, "Covid cases are increasing fast!");
}

TEST(Multipart, SeveralPartsPreambleQuotedBoundaryBareLfAndEmptyContent) {
  const std::string type = "Multipart/Form-Data; charset=utf-8; boundary=\"a b;c\"";
  const std::string body =
      "preamble, ignored\n"
      "--a b;c\n"
      "content-disposition: form-data; name=\"first\"\n"
      "\n"
      "line one\r\nline two\n"
      "--a b;c\r\n"
      "Content-Disposition: form-data; name=\"empty\"\r\n"
      "\r\n"
      "\r\n"
      "--a b;c\r\n"
      "Content-Disposition: form-data; name=\"q\\\"uoted\"; filename=\"x;y.json\"\r\n"
      "Content-Type: application/json\r\n"
      "\r\n"
      "{\"inputs\": \"--a b;c is not at a line start here\"}\r\n"
      "--a b;c--";
  const auto parts = parse_multipart(body, type);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].name, "first");
  EXPECT_EQ(parts[0].body, "line one\r\nline two");
  EXPECT_EQ(parts[1].name, "empty");
  EXPECT_EQ(parts[1].body, "");
  EXPECT_EQ(parts[2].name, "q\"uoted");
  EXPECT_EQ(parts[2].filename, "x;y.json");
  EXPECT_EQ(parts[2].body, "{\"inputs\": \"--a b;c is not at a line start here\"}");
}

TEST(Multipart, InvocationTakesTheDataPartByItsOwnType) {
  auto a = parse_invocation(kCurlBody, kCurlType);
  EXPECT_EQ(a.texts, std::vector<std::string>{"Covid cases are increasing fast!"});
  EXPECT_TRUE(a.single);

  // Python requests: files={"data": ...} plus another field; a JSON part is read as JSON.
  const std::string type = "multipart/form-data; boundary=8f1e2b";
  const std::string body =
      "--8f1e2b\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nignored\r\n"
      "--8f1e2b\r\nContent-Disposition: form-data; name=\"data\"; filename=\"data\"\r\n"
      "Content-Type: application/json\r\n\r\n{\"inputs\": [\"a\", \"b\"], \"top_k\": 2}\r\n--8f1e2b--\r\n";
  auto b = parse_invocation(body, type);
  EXPECT_EQ(b.texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(b.top_k, 2);

  // "body" is TorchServe's other name; application/octet-stream (curl's default for an
  // unknown extension) is read as text.
  const std::string octet =
      "--8f1e2b\r\nContent-Disposition: form-data; name=\"body\"; filename=\"x.bin\"\r\n"
      "Content-Type: application/octet-stream\r\n\r\nplain words\r\n--8f1e2b--\r\n";
  EXPECT_EQ(parse_invocation(octet, type).texts, std::vector<std::string>{"plain words"});
}

TEST(Multipart, MalformedIs400) {
  const std::string type = "multipart/form-data; boundary=XyZ";
  const std::string part = "--XyZ\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\nhi\r\n";
  EXPECT_EQ(status_of([&] { parse_invocation(part + "--XyZ--", "multipart/form-data"); }), 400);  // no boundary
  EXPECT_EQ(
      status_of([&] { parse_invocation(part + "--XyZ--", "multipart/form-data; boundary=" + std::string(71, 'b')); }),
      400);
  EXPECT_EQ(status_of([&] { parse_invocation(part, type); }), 400);  // no closing delimiter
  EXPECT_EQ(status_of([&] { parse_invocation("no delimiter at all", type); }), 400);
  EXPECT_EQ(status_of([&] { parse_invocation("--XyZ\r\n\r\nhi\r\n--XyZ--", type); }), 400);  // no disposition
  EXPECT_EQ(status_of([&] { parse_invocation("--XyZ\r\nContent-Disposition: form-data; name=\"data\"", type); }), 400);
  EXPECT_EQ(status_of([&] { parse_invocation("--XyZ\r\nContent-Disposition: attachment\r\n\r\nx\r\n--XyZ--", type); }),
            400);
  EXPECT_EQ(status_of([&] { parse_invocation("--XyZtrailing\r\n", type); }), 400);
  // Two parts, neither named data/body: which one is the input is not ours to guess.
  const std::string two =
      "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n"
      "--XyZ\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\ny\r\n--XyZ--";
  EXPECT_EQ(status_of([&] { parse_invocation(two, type); }), 400);
  // A part that is itself multipart is refused, not parsed recursively.
  const std::string nested =
      "--XyZ\r\nContent-Disposition: form-data; name=\"data\"\r\n"
      "Content-Type: multipart/form-data; boundary=In\r\n\r\n--In--\r\n--XyZ--";
  EXPECT_EQ(parse_multipart(nested, type).at(0).body, "--In--");
  EXPECT_EQ(status_of([&] { parse_invocation(nested, type); }), 400);
  // Part count is bounded.
  std::string many;
  for (size_t i = 0; i <= kMaxFormParts; ++i)
    many += "--XyZ\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nx\r\n";
  EXPECT_EQ(status_of([&] { parse_multipart(many + "--XyZ--", type); }), 400);
  // Invalid UTF-8 in the text part is a 400 as in a text/plain body.
  EXPECT_EQ(status_of([&] {
              parse_invocation("--XyZ\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n\xFF\r\n--XyZ--", type);
            }),
            400);
}

}  // namespace
