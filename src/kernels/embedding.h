// RoBERTa's input embeddings, before their LayerNorm.
//   out(BT, C) = wte[ids] + wpe[positions] + tte[token_types]   (token_types null → type 0)
// Position ids are computed by the model (pad_id + 1 + running count of non-pad tokens;
// pad tokens get pad_id), as HF's create_position_ids_from_input_ids.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// OVERWRITES out. Ids are trusted here: the model checks them against the vocabulary.
void embedding_forward(const ExecCtx& ctx, float* out, const int32_t* ids, const int32_t* positions,
                       const int32_t* token_types, const float* wte, const float* wpe, const float* tte, int64_t BT,
                       int64_t C);

// ACCUMULATES into dwte, dwpe, dtte. nn.Embedding(padding_idx=pad_id) semantics: rows with
// ids[i] == pad_id add nothing to dwte, rows with positions[i] == pad_id nothing to dwpe
// (RoBERTa's position table also has padding_idx = pad_token_id); dtte gets every row.
void embedding_backward(const ExecCtx& ctx, float* dwte, float* dwpe, float* dtte, const float* dout,
                        const int32_t* ids, const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C,
                        int32_t pad_id);
// The same with the position table's own padding row: position_pad_id (RoBERTa's is
// pad_token_id), or -1 when it has none (BERT, DistilBERT: every position gets its gradient).
// One pass over dout on the CPU either way, which is why it is one call.
void embedding_backward(const ExecCtx& ctx, float* dwte, float* dwpe, float* dtte, const float* dout,
                        const int32_t* ids, const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C,
                        int32_t pad_id, int32_t position_pad_id);

namespace ref {
void embedding_forward(float* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types,
                       const float* wte, const float* wpe, const float* tte, int64_t BT, int64_t C);
void embedding_backward(float* dwte, float* dwpe, float* dtte, const float* dout, const int32_t* ids,
                        const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id);
}  // namespace ref

}  // namespace rc::kernels
