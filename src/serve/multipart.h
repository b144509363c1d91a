// multipart/form-data request bodies (RFC 7578 over RFC 2046), as TorchServe clients send
// them: `curl -F data=@text.txt`, Python `requests.post(url, files={"data": f})`. Pure
// functions over strings; every malformed body is an HttpError 400, never a crash.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rc::serve {

struct FormPart {
  std::string name;          // Content-Disposition name="..."
  std::string filename;      // filename="..." (empty for a plain field)
  std::string content_type;  // the part's Content-Type; "" when absent (text/plain per RFC 7578)
  std::string_view body;     // a view into the request body
};

inline constexpr size_t kMaxFormParts = 1024;

// The boundary parameter of a multipart Content-Type; HttpError 400 when absent or invalid.
std::string multipart_boundary(std::string_view content_type);
// Splits the body into its parts, in order. Lines may end in CRLF (the RFC) or a bare LF.
std::vector<FormPart> parse_multipart(std::string_view body, std::string_view content_type);

}  // namespace rc::serve
