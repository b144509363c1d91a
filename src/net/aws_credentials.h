// AWS credentials and region, found as the AWS SDKs find them, in this order:
//   1. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
//   2. the shared files: AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and AWS_CONFIG_FILE
//      (~/.aws/config), profile AWS_PROFILE (else "default")
//   3. ECS/EKS container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI
//      (+ AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE])
//   4. EC2 instance metadata, IMDSv2 (token first), at AWS_EC2_METADATA_SERVICE_ENDPOINT
//      (default http://169.254.169.254); AWS_EC2_METADATA_DISABLED=true skips it.
// Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1.
#pragma once

#include <string>

namespace rc::net {

struct AwsCredentials {
  std::string access_key, secret_key, session_token;
  std::string source;  // "environment", "profile default", "container", "instance metadata" (for messages)
};

// Throws rc::Error(not_found) with a hint when no source has credentials.
AwsCredentials resolve_aws_credentials();
std::string resolve_aws_region();

}  // namespace rc::net
