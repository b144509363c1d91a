// S3 objects over the one libcurl client, signed with SigV4 by libcurl. Endpoint:
// AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (path-style addressing, as emulators and
// S3-compatible stores expect), else https://<bucket>.s3.<region>.amazonaws.com.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace rc::net {

struct S3Location {
  std::string bucket, key;
};
// S3's own limit on a key. A URL is refused past it before anything else looks at it: the
// server's allowlist matched a 30,000-byte one (issue 27 finding 1), S3 would refuse it.
inline constexpr size_t kMaxS3KeyBytes = 1024;
inline constexpr size_t kMaxS3UrlBytes = 5 + 63 + 1 + kMaxS3KeyBytes;  // "s3://" bucket "/" key
bool is_s3_url(const std::string& url);
// s3://bucket/key; throws rc::Error(invalid_argument) otherwise: also for a key over
// kMaxS3KeyBytes, with control characters, or with an empty, "." or ".." segment. libcurl
// removes dot segments before it sends a path, so "prod/../secret/x" would fetch "secret/x"
// while an allowlist saw "prod/..." (issue 27 finding 2): such keys are never sent. Errors
// quote at most the URL's first 100 bytes.
S3Location parse_s3_url(const std::string& url);

// Streams the object to `dest` (written to dest.part, renamed when complete). max_bytes
// bounds what a URL may make us write (0: no bound; `roberta serve` passes its
// --max-download-bytes). Returns the object's size.
uint64_t s3_download(const std::string& url, const std::filesystem::path& dest, uint64_t max_bytes = 0);

// Uploads a file: one PUT up to `multipart_threshold`, else a multipart upload streamed
// part by part (memory stays bounded), aborted on failure so no parts are left behind.
struct S3UploadOptions {
  uint64_t multipart_threshold = 8ull << 20;  // the AWS CLI's defaults
  uint64_t part_size = 8ull << 20;
};
void s3_upload(const std::filesystem::path& file, const std::string& url, const S3UploadOptions& options = {});

}  // namespace rc::net
