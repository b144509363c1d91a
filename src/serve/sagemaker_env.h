// The SageMaker hosting environment variables `roberta serve` reads, as pure functions so
// that they are tested without a container.
#pragma once

#include <string_view>

namespace rc::serve {

// SAGEMAKER_MULTI_MODEL and the like: AWS's own containers see "True", "true" or "TRUE".
bool env_flag_is_true(std::string_view value);

// SAGEMAKER_SAFE_PORT_RANGE ("29000-29999"): SageMaker promises that only ports in it are
// free for a container's second listener. With a range set, a management port given
// explicitly must lie in it (-1, no listener, is always fine); otherwise the first port of
// the range that is not the inference port is taken. Without a range, `requested` stands.
// Throws rc::Error(invalid_argument) with a hint for a malformed range or a port outside it.
int pick_second_port(std::string_view safe_range, int requested, bool given_explicitly, int inference_port);

}  // namespace rc::serve
