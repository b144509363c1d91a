// The encoder's final hidden states for every token (RobertaModel's last_hidden_state): what
// sentence-transformers' Pooling, TEI's /embed_all and the token-embedding answers read. The
// same inference forward as forward_logits (roberta_model.h: every weight format, every
// device) with every layer carrying every row, and no head.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/exec_ctx.h"
#include "model/batch.h"
#include "model/roberta_model.h"

namespace rc::model {

// Scratch for hidden-state forwards: forward_logits' own workspace (the same encoder stack,
// inference.cpp), one per concurrent caller.
using HiddenStatesWorkspace = InferenceWorkspace;

// hidden (B, T, C), host memory, OVERWRITTEN: the final hidden state of every position, the
// padding's included (what HF's RobertaModel returns; callers mask them). Eval mode. The
// model and the workspace must be on ctx's device. Any head the model has is not run.
void forward_hidden_states(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                           HiddenStatesWorkspace& ws, float* hidden);

// out (B, C), host memory, OVERWRITTEN: the final hidden state of sequence b at positions[b]
// alone (each in [0, seq_lens[b])): what CLS and last-token pooling read. The last layer's
// attention output and FFN run on those rows only (forward_logits' short cut for the <s>
// row); the same values as forward_hidden_states' rows there. Throws invalid_argument for a
// position outside its sequence.
void forward_selected_states(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                             HiddenStatesWorkspace& ws, std::span<const int32_t> positions, float* out);

}  // namespace rc::model
