// Grow-only device scratch per (device, slot), carved from the caching allocator.
// Slot cublaslt is cuBLASLt's workspace; slot partials holds kernel partials (column
// reductions, attention row dots). Users of a slot run on one stream one after another, so
// a slot is never used by two kernels at once. Growing frees the old block after a device
// synchronise and must not happen inside CUDA-graph capture: size it with one uncaptured
// step first (the trainer's warm-up step does), and warm the LARGEST shape first when
// capturing several graphs: a graph captured before a growth points at the freed block.
#pragma once

#include <cstddef>

namespace rc::kernels::cuda {

enum class Scratch { cublaslt = 0, partials = 1 };
void* workspace(Scratch slot, size_t bytes);

}  // namespace rc::kernels::cuda
