// Input embeddings (embedding.h): out = wte[ids] + wpe[positions] + tte[token_types],
// fp32 tables, fp32 or bf16 output. Backward scatters with fp32 atomicAdd: repeated ids in
// a batch collide, so the sum order (and the last bits) can differ run to run; padding rows
// add nothing to dwte/dwpe (nn.Embedding padding_idx).
#include "kernels/cuda/common.cuh"

namespace rc::kernels::cuda {

namespace {

constexpr int kBlock = 256;

template <class T>
__global__ void embedding_forward_kernel(T* out, const int32_t* ids, const int32_t* positions,
                                         const int32_t* token_types, const float* wte, const float* wpe,
                                         const float* tte, int64_t BT, int64_t C) {
  const int64_t total = BT * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / C, c = i % C;
    float v = wte[int64_t(ids[r]) * C + c] + wpe[int64_t(positions[r]) * C + c];
    if (tte) v += tte[int64_t(token_types ? token_types[r] : 0) * C + c];
    st(out + i, v);
  }
}

template <class T>
__global__ void embedding_backward_kernel(float* dwte, float* dwpe, float* dtte, const T* dout, const int32_t* ids,
                                          const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C,
                                          int32_t pad_id) {
  const int64_t total = BT * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / C, c = i % C;
    const float d = ld(dout + i);
    if (dwte && ids[r] != pad_id) atomicAdd(dwte + int64_t(ids[r]) * C + c, d);
    if (dwpe && positions[r] != pad_id) atomicAdd(dwpe + int64_t(positions[r]) * C + c, d);
    if (dtte) atomicAdd(dtte + int64_t(token_types ? token_types[r] : 0) * C + c, d);
  }
}

template <class T>
void forward(T* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types, const float* wte,
             const float* wpe, const float* tte, int64_t BT, int64_t C, void* stream) {
  const int64_t grid = grid_1d(BT * C, kBlock);
  if (grid == 0) return;
  embedding_forward_kernel<T>
      <<<unsigned(grid), kBlock, 0, as_stream(stream)>>>(out, ids, positions, token_types, wte, wpe, tte, BT, C);
  RC_CUDA_CHECK_LAUNCH();
}

template <class T>
void backward(float* dwte, float* dwpe, float* dtte, const T* dout, const int32_t* ids, const int32_t* positions,
              const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id, void* stream) {
  const int64_t grid = grid_1d(BT * C, kBlock);
  if (grid == 0) return;
  embedding_backward_kernel<T><<<unsigned(grid), kBlock, 0, as_stream(stream)>>>(dwte, dwpe, dtte, dout, ids, positions,
                                                                                 token_types, BT, C, pad_id);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace

void embedding_forward(float* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types,
                       const float* wte, const float* wpe, const float* tte, int64_t BT, int64_t C, void* s) {
  forward<float>(out, ids, positions, token_types, wte, wpe, tte, BT, C, s);
}
void embedding_forward(Bf16* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types,
                       const float* wte, const float* wpe, const float* tte, int64_t BT, int64_t C, void* s) {
  forward<bf16>(as_bf16(out), ids, positions, token_types, wte, wpe, tte, BT, C, s);
}
void embedding_backward(float* dwte, float* dwpe, float* dtte, const float* dout, const int32_t* ids,
                        const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id,
                        void* s) {
  backward<float>(dwte, dwpe, dtte, dout, ids, positions, token_types, BT, C, pad_id, s);
}
void embedding_backward(float* dwte, float* dwpe, float* dtte, const Bf16* dout, const int32_t* ids,
                        const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id,
                        void* s) {
  backward<bf16>(dwte, dwpe, dtte, as_bf16(dout), ids, positions, token_types, BT, C, pad_id, s);
}

}  // namespace rc::kernels::cuda
