"""Trusted reference: a pure-PyTorch RobertaForSequenceClassification with Hugging Face semantics.

This file re-implements transformers' modeling_roberta.py (v4.30, the version our checkpoints
claim) without depending on transformers, which Debian does not package. Module names, and so
state_dict keys, are identical to HF's, e.g. `roberta.encoder.layer.0.attention.self.query.weight`
and `classifier.out_proj.bias`; there is no pooler (HF builds RobertaModel(add_pooling_layer=False)
for sequence classification).

The details that decide bit-level agreement with HF, each reproduced below:
  - position ids = cumsum(input_ids != pad) * mask + pad_token_id
    (create_position_ids_from_input_ids): the first real token gets pad+1 = 2, pads get pad = 1.
  - nn.Embedding(padding_idx=pad) on the word AND the position embeddings (their pad rows are
    zeroed at init and receive no gradient); token_type_ids default to zeros.
  - extended attention mask: (1 - mask) * torch.finfo(param dtype).min ADDED to the scores
    (a large finite number, not -inf), scores = q k^T / sqrt(head_dim), softmax, dropout.
  - erf GELU for hidden_act "gelu"; post-LN residual blocks; hidden dropout after the embedding
    LayerNorm, after the attention output dense and after the FFN output dense.
  - head on token 0 (<s>): dropout -> dense -> tanh -> dropout -> out_proj, where the dropout is
    classifier_dropout, or hidden_dropout_prob when classifier_dropout is null.
  - loss: CrossEntropyLoss (mean) for single_label_classification; MSE for 1 label (regression);
    BCEWithLogits for multi_label_classification, chosen as HF's problem_type logic does.
  - init (_init_weights): Linear/Embedding weights ~ N(0, initializer_range), biases 0,
    LayerNorm weight 1 / bias 0, padding_idx rows 0.

Usage:
    from roberta_ref import RobertaConfig, RobertaForSequenceClassification, load_pretrained
    model, config = load_pretrained("path/to/hf_dir")      # eval mode
    logits = model(input_ids, attention_mask)[1]              # (loss, logits); loss None w/o labels
"""
from __future__ import annotations

import copy
import math
import os
import sys
from typing import Dict, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_io  # noqa: E402


# ----------------------------------------------------------------------------- config

class RobertaConfig:
    """transformers.RobertaConfig with its defaults (note the BERT-like ones: max_position 512,
    type_vocab_size 2, layer_norm_eps 1e-12; real roberta-base overrides them to 514, 1, 1e-5)."""

    DEFAULTS = dict(
        vocab_size=50265,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        position_embedding_type="absolute",
        use_cache=True,
        classifier_dropout=None,
        problem_type=None,
    )

    def __init__(self, **kw):
        for k, v in self.DEFAULTS.items():
            setattr(self, k, kw.pop(k, v))
        id2label = kw.pop("id2label", None)
        label2id = kw.pop("label2id", None)
        num_labels = kw.pop("num_labels", None)
        if id2label is not None:
            # config.json keys are strings; PretrainedConfig converts them to int.
            self.id2label = {int(k): v for k, v in id2label.items()}
        else:
            n = 2 if num_labels is None else int(num_labels)  # PretrainedConfig's default
            self.id2label = {i: f"LABEL_{i}" for i in range(n)}
        if num_labels is not None and int(num_labels) != len(self.id2label):
            raise ValueError(f"num_labels={num_labels} but id2label has {len(self.id2label)} entries")
        self.label2id = ({k: int(v) for k, v in label2id.items()} if label2id is not None
                         else {v: k for k, v in self.id2label.items()})
        self.extra = kw  # architectures, model_type, torch_dtype, ... kept for round trips
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of "
                             f"num_attention_heads {self.num_attention_heads}")
        if self.position_embedding_type != "absolute":
            raise NotImplementedError(f"position_embedding_type={self.position_embedding_type!r}")

    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    @classmethod
    def from_dict(cls, d: dict) -> "RobertaConfig":
        d = dict(d)
        mt = d.get("model_type", "roberta")
        if mt not in ("roberta", "xlm-roberta", "camembert"):
            raise ValueError(f"model_type {mt!r} is not a RoBERTa-family model")
        return cls(**d)

    @classmethod
    def from_pretrained(cls, model_dir: str) -> "RobertaConfig":
        return cls.from_dict(hf_io.read_config_json(model_dir))

    def to_dict(self, transformers_version: str = "4.30.0") -> dict:
        """config.json content as transformers 4.30 save_pretrained writes it for
        RobertaForSequenceClassification."""
        d = {k: getattr(self, k) for k in self.DEFAULTS}
        d.update(self.extra)
        d["id2label"] = {str(k): v for k, v in sorted(self.id2label.items())}
        d["label2id"] = {k: v for k, v in sorted(self.label2id.items(), key=lambda kv: kv[1])}
        d.setdefault("architectures", ["RobertaForSequenceClassification"])
        d["model_type"] = self.extra.get("model_type", "roberta")  # xlm-roberta and camembert keep theirs
        d.setdefault("torch_dtype", "float32")
        d["transformers_version"] = transformers_version
        if d.get("problem_type") is None:
            d.pop("problem_type")
        return d


# ----------------------------------------------------------------------------- helpers

def create_position_ids_from_input_ids(input_ids: torch.Tensor, padding_idx: int,
                                       past_key_values_length: int = 0) -> torch.Tensor:
    """HF: positions start at padding_idx + 1; padding tokens get padding_idx."""
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
    return incremental_indices.long() + padding_idx


def _activation(name: str):
    # transformers.activations.ACT2FN, the entries RoBERTa checkpoints use.
    if name == "gelu":
        return lambda x: F.gelu(x)  # exact erf GELU
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "relu":
        return F.relu
    if name in ("silu", "swish"):
        return F.silu
    if name == "tanh":
        return torch.tanh
    raise ValueError(f"hidden_act {name!r} is not supported by the reference")


# ----------------------------------------------------------------------------- modules

class RobertaEmbeddings(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.padding_idx = config.pad_token_id
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size,
                                                padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        # HF <= 4.30 saved this buffer in checkpoints; it is not used for RoBERTa's positions.
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)

    def forward(self, input_ids: torch.Tensor, token_type_ids: Optional[torch.Tensor] = None,
                position_ids: Optional[torch.Tensor] = None) -> torch.Tensor:
        if position_ids is None:
            position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        embeddings = embeddings + self.position_embeddings(position_ids)
        embeddings = self.LayerNorm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class RobertaSelfAttention(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x: torch.Tensor) -> torch.Tensor:
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states: torch.Tensor, attention_mask: Optional[torch.Tensor]) -> torch.Tensor:
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = F.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


# RobertaSelfOutput and RobertaOutput are alike but stay two classes, as in transformers:
# the module tree is what names the parameters (attention.output.* vs output.*).
class RobertaSelfOutput(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class RobertaAttention(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.self = RobertaSelfAttention(config)
        self.output = RobertaSelfOutput(config)

    def forward(self, hidden_states, attention_mask):
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class RobertaIntermediate(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = _activation(config.hidden_act)

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class RobertaOutput(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class RobertaLayer(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.attention = RobertaAttention(config)
        self.intermediate = RobertaIntermediate(config)
        self.output = RobertaOutput(config)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class RobertaEncoder(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.layer = nn.ModuleList([RobertaLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)
        return hidden_states


class RobertaModel(nn.Module):
    """RobertaModel(add_pooling_layer=False)."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.config = config
        self.embeddings = RobertaEmbeddings(config)
        self.encoder = RobertaEncoder(config)

    def get_extended_attention_mask(self, attention_mask: torch.Tensor) -> torch.Tensor:
        # ModuleUtilsMixin.get_extended_attention_mask for an encoder with a [B, T] mask; dtype
        # is the parameters' dtype (fp32 even under autocast), as HF's self.dtype is.
        dtype = self.embeddings.word_embeddings.weight.dtype
        ext = attention_mask[:, None, None, :].to(dtype=dtype)
        return (1.0 - ext) * torch.finfo(dtype).min

    def forward(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                token_type_ids: Optional[torch.Tensor] = None,
                position_ids: Optional[torch.Tensor] = None) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        ext = self.get_extended_attention_mask(attention_mask)
        h = self.embeddings(input_ids, token_type_ids=token_type_ids, position_ids=position_ids)
        return self.encoder(h, ext)


class RobertaClassificationHead(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = features[:, 0, :]  # <s>
        x = self.dropout(x)
        x = self.dense(x)
        x = torch.tanh(x)
        x = self.dropout(x)
        return self.out_proj(x)


class RobertaForSequenceClassification(nn.Module):
    def __init__(self, config: RobertaConfig, init: bool = True):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.roberta = RobertaModel(config)
        self.classifier = RobertaClassificationHead(config)
        if init:
            init_weights_hf(self, config.initializer_range)

    def forward(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                token_type_ids: Optional[torch.Tensor] = None, position_ids: Optional[torch.Tensor] = None,
                labels: Optional[torch.Tensor] = None) -> Tuple[Optional[torch.Tensor], torch.Tensor]:
        sequence_output = self.roberta(input_ids, attention_mask, token_type_ids, position_ids)
        logits = self.classifier(sequence_output)
        loss = None
        if labels is not None:
            problem_type = self.config.problem_type
            if problem_type is None:
                if self.num_labels == 1:
                    problem_type = "regression"
                elif labels.dtype in (torch.long, torch.int):
                    problem_type = "single_label_classification"
                else:
                    problem_type = "multi_label_classification"
            if problem_type == "regression":
                loss = F.mse_loss(logits.squeeze(), labels.squeeze()) if self.num_labels == 1 \
                    else F.mse_loss(logits, labels)
            elif problem_type == "single_label_classification":
                loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
            else:
                loss = F.binary_cross_entropy_with_logits(logits, labels)
        return loss, logits


class RobertaForTokenClassification(nn.Module):
    """transformers' RobertaForTokenClassification (modeling_roberta.py): dropout
    (classifier_dropout, else hidden_dropout_prob) -> classifier Linear on every token; loss =
    CrossEntropyLoss over the flattened tokens, ignore_index -100 (the mean over the others)."""

    def __init__(self, config: RobertaConfig, init: bool = True):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.roberta = RobertaModel(config)
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        if init:
            init_weights_hf(self, config.initializer_range)

    def forward(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                labels: Optional[torch.Tensor] = None) -> Tuple[Optional[torch.Tensor], torch.Tensor]:
        logits = self.classifier(self.dropout(self.roberta(input_ids, attention_mask)))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return loss, logits


class RobertaLMHead(nn.Module):
    """transformers' RobertaLMHead: dense -> gelu -> layer_norm -> decoder (+ bias). The
    decoder's weight is tied to the word embeddings by RobertaForMaskedLM, its bias IS
    lm_head.bias (one Parameter under two names, as HF)."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder.bias = self.bias

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.dense(features)
        x = F.gelu(x)  # "gelu" = exact erf form
        if x.dtype != self.layer_norm.weight.dtype:
            # Under CPU autocast, torch >= 2 runs layer_norm in fp32 (its fp32 op list);
            # torch 1.13 has no rule and refuses bf16 input with fp32 weights.
            x = x.to(self.layer_norm.weight.dtype)
        x = self.layer_norm(x)
        return self.decoder(x)


class RobertaForMaskedLM(nn.Module):
    """RobertaForMaskedLM: loss = mean cross-entropy over the positions whose label != -100."""

    def __init__(self, config: RobertaConfig, init: bool = True):
        super().__init__()
        self.config = config
        self.roberta = RobertaModel(config)
        self.lm_head = RobertaLMHead(config)
        if init:
            init_weights_hf(self, config.initializer_range)
        # HF ties after init (post_init -> tie_weights): the embeddings' init wins.
        self.lm_head.decoder.weight = self.roberta.embeddings.word_embeddings.weight

    def forward(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                labels: Optional[torch.Tensor] = None) -> Tuple[Optional[torch.Tensor], torch.Tensor]:
        logits = self.lm_head(self.roberta(input_ids, attention_mask))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, self.config.vocab_size), labels.view(-1), ignore_index=-100)
        return loss, logits

    def hf_named_parameters(self):
        """(HF saved name, parameter) once each: the tied decoder is the word embedding and
        its bias is lm_head.bias (transformers' safetensors save drops lm_head.decoder.*)."""
        seen = set()
        for mod_name, mod in self.named_modules():
            for pn, p in mod._parameters.items():
                n = f"{mod_name}.{pn}" if mod_name else pn
                if p is None or n.startswith("lm_head.decoder.") or id(p) in seen:
                    continue
                seen.add(id(p))
                yield n, p


# ----------------------------------------------------------------------------- init / load

def init_weights_hf(model: nn.Module, std: float) -> None:
    """RobertaPreTrainedModel._init_weights applied to every submodule."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                m.weight.normal_(mean=0.0, std=std)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(mean=0.0, std=std)
                if m.padding_idx is not None:
                    m.weight[m.padding_idx].zero_()
            elif isinstance(m, nn.LayerNorm):
                m.bias.zero_()
                m.weight.fill_(1.0)


# Keys that HF ignores when loading a sequence classifier (buffers of older versions, the
# pooler and the MLM head of base checkpoints).
_IGNORED_PREFIXES = ("roberta.pooler.", "lm_head.")
_IGNORED_KEYS = ("roberta.embeddings.position_ids", "roberta.embeddings.token_type_ids")


def normalize_hf_keys(sd: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """The key renames HF's from_pretrained applies: gamma/beta -> weight/bias, and the
    'roberta.' prefix for checkpoints saved from a bare RobertaModel."""
    out = {}
    bare = not any(k.startswith("roberta.") for k in sd) and any(k.startswith("embeddings.") for k in sd)
    for k, v in sd.items():
        nk = k
        if nk.endswith(".gamma"):
            nk = nk[: -len(".gamma")] + ".weight"
        elif nk.endswith(".beta"):
            nk = nk[: -len(".beta")] + ".bias"
        if bare and (nk.startswith("embeddings.") or nk.startswith("encoder.") or nk.startswith("pooler.")):
            nk = "roberta." + nk
        out[nk] = v
    return out


def load_pretrained(model_dir: str, dtype: torch.dtype = torch.float32, allow_missing_head: bool = False):
    """Loads an HF folder (config.json + model.safetensors or pytorch_model.bin) in eval mode.
    Missing classifier weights are an error unless allow_missing_head (HF would init them)."""
    config = RobertaConfig.from_pretrained(model_dir)
    model = RobertaForSequenceClassification(config, init=True)
    sd = normalize_hf_keys(hf_io.load_state_dict(model_dir))
    sd = {k: v for k, v in sd.items() if k not in _IGNORED_KEYS and not k.startswith(_IGNORED_PREFIXES)}
    own = model.state_dict()
    unexpected = sorted(set(sd) - set(own))
    missing = sorted(set(own) - set(sd))
    if unexpected:
        raise KeyError(f"{model_dir}: unexpected tensors {unexpected[:5]} (+{max(0, len(unexpected) - 5)} more)")
    if missing and not (allow_missing_head and all(k.startswith("classifier.") for k in missing)):
        raise KeyError(f"{model_dir}: missing tensors {missing[:5]} (+{max(0, len(missing) - 5)} more)")
    for k, v in sd.items():
        if tuple(v.shape) != tuple(own[k].shape):
            raise ValueError(f"{model_dir}: {k} has shape {tuple(v.shape)}, config implies {tuple(own[k].shape)}")
    model.load_state_dict({k: v.to(torch.float32) if v.is_floating_point() else v for k, v in sd.items()},
                          strict=False)
    model = model.to(dtype)
    model.eval()
    return model, config


def hf_state_dict(model: nn.Module) -> Dict[str, torch.Tensor]:
    """Parameters only, HF names (what model.safetensors holds)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def hf_bin_state_dict(model: nn.Module):
    """What transformers <= 4.30 save_pretrained put in pytorch_model.bin: model.state_dict()
    (an OrderedDict with its `_metadata` attribute) including the persistent buffer
    `roberta.embeddings.position_ids` = torch.arange(max_pos).expand((1, -1)) (int64 [1, max_pos],
    stride (max_pos, 1) in torch 1.13), placed first as HF's module order puts it."""
    from collections import OrderedDict
    sd = model.state_dict()
    max_pos = model.roberta.embeddings.position_embeddings.weight.shape[0]
    out = OrderedDict()
    out["roberta.embeddings.position_ids"] = torch.arange(max_pos).expand((1, -1))
    for k, v in sd.items():
        out[k] = v.detach()
    out._metadata = sd._metadata  # type: ignore[attr-defined]
    return out


def no_dropout(model: nn.Module) -> nn.Module:
    """Sets p=0 on every Dropout, keeping the module in whatever mode it is (train mode with
    p=0 is numerically identical to eval mode for these layers)."""
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return model


def clone_model(model: nn.Module) -> nn.Module:
    return copy.deepcopy(model)


# ============================================================================= BERT, DistilBERT
# The other encoder families (issue 30), transcribed from transformers' modeling code (v4.30):
# models/bert/modeling_bert.py, configuration_bert.py, models/distilbert/modeling_distilbert.py,
# configuration_distilbert.py. Module trees (and so state_dict keys) are HF's. XLM-RoBERTa and
# CamemBERT are the RoBERTa classes above under another model_type (their modeling files are
# "Copied from transformers.models.roberta").

def _sequence_loss(config, num_labels: int, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The problem_type rule every *ForSequenceClassification shares."""
    problem_type = config.problem_type
    if problem_type is None:
        if num_labels == 1:
            problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            problem_type = "single_label_classification"
        else:
            problem_type = "multi_label_classification"
    if problem_type == "regression":
        return F.mse_loss(logits.squeeze(), labels.squeeze()) if num_labels == 1 else F.mse_loss(logits, labels)
    if problem_type == "single_label_classification":
        return F.cross_entropy(logits.view(-1, num_labels), labels.view(-1))
    return F.binary_cross_entropy_with_logits(logits, labels)


def _classifier_dropout(config) -> float:
    return config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob


class BertConfig(RobertaConfig):
    """transformers.BertConfig: RobertaConfig's keys (no bos/eos) with BERT's defaults."""

    DEFAULTS = dict(RobertaConfig.DEFAULTS, vocab_size=30522, pad_token_id=0)
    del DEFAULTS["bos_token_id"], DEFAULTS["eos_token_id"]

    @classmethod
    def from_dict(cls, d: dict) -> "BertConfig":
        d = dict(d)
        if d.get("model_type", "bert") != "bert":
            raise ValueError(f"model_type {d['model_type']!r} is not BERT")
        return cls(**d)

    def to_dict(self, transformers_version: str = "4.30.0") -> dict:
        d = super().to_dict(transformers_version)
        d["model_type"] = "bert"
        return d


class BertEmbeddings(nn.Module):
    """modeling_bert.BertEmbeddings: positions from the position_ids buffer (0..T-1, no
    padding_idx on the position table), token types default to zeros."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    """BertLayer is RobertaLayer (same modules, same names: encoder.layer.N.attention.self...)."""

    def __init__(self, config, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = RobertaEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        dtype = self.embeddings.word_embeddings.weight.dtype
        ext = (1.0 - attention_mask[:, None, None, :].to(dtype=dtype)) * torch.finfo(dtype).min
        sequence_output = self.encoder(self.embeddings(input_ids, token_type_ids), ext)
        pooled = self.pooler(sequence_output) if self.pooler is not None else None
        return sequence_output, pooled


class BertForSequenceClassification(nn.Module):
    def __init__(self, config, init: bool = True):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config)
        self.dropout = nn.Dropout(_classifier_dropout(config))
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        if init:
            init_weights_hf(self, config.initializer_range)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        _, pooled = self.bert(input_ids, attention_mask, token_type_ids)
        logits = self.classifier(self.dropout(pooled))
        loss = _sequence_loss(self.config, self.num_labels, logits, labels) if labels is not None else None
        return loss, logits


class BertForTokenClassification(nn.Module):
    def __init__(self, config, init: bool = True):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        self.dropout = nn.Dropout(_classifier_dropout(config))
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        if init:
            init_weights_hf(self, config.initializer_range)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        sequence_output, _ = self.bert(input_ids, attention_mask, token_type_ids)
        logits = self.classifier(self.dropout(sequence_output))
        loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1)) if labels is not None else None
        return loss, logits


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = _activation(config.hidden_act)  # ACT2FN[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        return self.LayerNorm(self.transform_act_fn(self.dense(hidden_states)))


class BertLMPredictionHead(nn.Module):
    """decoder (no bias of its own) tied to the word embeddings; its bias IS predictions.bias."""

    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder.bias = self.bias

    def forward(self, hidden_states):
        return self.decoder(self.transform(hidden_states))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)

    def forward(self, sequence_output):
        return self.predictions(sequence_output)


class BertForMaskedLM(nn.Module):
    def __init__(self, config, init: bool = True):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        if init:
            init_weights_hf(self, config.initializer_range)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tie_weights

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        sequence_output, _ = self.bert(input_ids, attention_mask, token_type_ids)
        logits = self.cls(sequence_output)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, self.config.vocab_size), labels.view(-1))
        return loss, logits


class DistilBertConfig:
    """transformers.DistilBertConfig (its own keys; attribute_map hidden_size -> dim, ...)."""

    DEFAULTS = dict(vocab_size=30522, max_position_embeddings=512, sinusoidal_pos_embds=False, n_layers=6,
                    n_heads=12, dim=768, hidden_dim=4 * 768, dropout=0.1, attention_dropout=0.1,
                    activation="gelu", initializer_range=0.02, qa_dropout=0.1, seq_classif_dropout=0.2,
                    pad_token_id=0, problem_type=None)

    def __init__(self, **kw):
        for k, v in self.DEFAULTS.items():
            setattr(self, k, kw.pop(k, v))
        id2label = kw.pop("id2label", None)
        kw.pop("label2id", None)
        self.id2label = ({int(k): v for k, v in id2label.items()} if id2label is not None
                         else {i: f"LABEL_{i}" for i in range(int(kw.pop("num_labels", 2)))})
        self.extra = kw
        if self.sinusoidal_pos_embds:
            raise NotImplementedError("sinusoidal_pos_embds")

    hidden_size = property(lambda self: self.dim)
    num_labels = property(lambda self: len(self.id2label))

    def to_dict(self, transformers_version: str = "4.30.0") -> dict:
        d = {k: getattr(self, k) for k in self.DEFAULTS}
        d.update(self.extra)
        d["id2label"] = {str(k): v for k, v in sorted(self.id2label.items())}
        d["label2id"] = {v: k for k, v in sorted(self.id2label.items())}
        d["model_type"] = "distilbert"
        d.setdefault("torch_dtype", "float32")
        d["transformers_version"] = transformers_version
        if d.get("problem_type") is None:
            d.pop("problem_type")
        return d


class DistilEmbeddings(nn.Module):
    """modeling_distilbert.Embeddings: word + position (0..T-1), LayerNorm(eps=1e-12), dropout;
    no token types."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.dim, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.dim)
        self.LayerNorm = nn.LayerNorm(config.dim, eps=1e-12)
        self.dropout = nn.Dropout(config.dropout)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)

    def forward(self, input_ids):
        position_ids = self.position_ids[:, :input_ids.size(1)]
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class MultiHeadSelfAttention(nn.Module):
    """q scaled by 1/sqrt(d) before the product; masked scores REPLACED by finfo.min; no dropout
    after out_lin."""

    def __init__(self, config):
        super().__init__()
        self.n_heads = config.n_heads
        self.dim = config.dim
        self.dropout = nn.Dropout(p=config.attention_dropout)
        self.q_lin = nn.Linear(config.dim, config.dim)
        self.k_lin = nn.Linear(config.dim, config.dim)
        self.v_lin = nn.Linear(config.dim, config.dim)
        self.out_lin = nn.Linear(config.dim, config.dim)

    def forward(self, x, mask):
        bs, q_length, dim = x.size()
        dim_per_head = self.dim // self.n_heads

        def shape(t):
            return t.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)

        q = shape(self.q_lin(x)) / math.sqrt(dim_per_head)
        k = shape(self.k_lin(x))
        v = shape(self.v_lin(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        masked = (mask == 0).view(bs, 1, 1, -1).expand_as(scores)
        scores = scores.masked_fill(masked, torch.tensor(torch.finfo(scores.dtype).min))
        weights = self.dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(weights, v).transpose(1, 2).contiguous().view(bs, -1, self.n_heads * dim_per_head)
        return self.out_lin(context)


class DistilFFN(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dropout = nn.Dropout(p=config.dropout)
        self.lin1 = nn.Linear(config.dim, config.hidden_dim)
        self.lin2 = nn.Linear(config.hidden_dim, config.dim)
        self.activation = _activation(config.activation)

    def forward(self, x):
        return self.dropout(self.lin2(self.activation(self.lin1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = MultiHeadSelfAttention(config)
        self.sa_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)
        self.ffn = DistilFFN(config)
        self.output_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)

    def forward(self, x, mask):
        sa_output = self.sa_layer_norm(self.attention(x, mask) + x)
        return self.output_layer_norm(self.ffn(sa_output) + sa_output)


class DistilTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([TransformerBlock(config) for _ in range(config.n_layers)])

    def forward(self, x, mask):
        for layer_module in self.layer:
            x = layer_module(x, mask)
        return x


class DistilBertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = DistilEmbeddings(config)
        self.transformer = DistilTransformer(config)

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return self.transformer(self.embeddings(input_ids), attention_mask)


class DistilBertForSequenceClassification(nn.Module):
    def __init__(self, config, init: bool = True):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.distilbert = DistilBertModel(config)
        self.pre_classifier = nn.Linear(config.dim, config.dim)
        self.classifier = nn.Linear(config.dim, config.num_labels)
        self.dropout = nn.Dropout(config.seq_classif_dropout)
        if init:
            init_weights_hf(self, config.initializer_range)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        pooled = self.distilbert(input_ids, attention_mask)[:, 0]
        logits = self.classifier(self.dropout(F.relu(self.pre_classifier(pooled))))
        loss = _sequence_loss(self.config, self.num_labels, logits, labels) if labels is not None else None
        return loss, logits


class DistilBertForTokenClassification(nn.Module):
    def __init__(self, config, init: bool = True):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.distilbert = DistilBertModel(config)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.dim, config.num_labels)
        if init:
            init_weights_hf(self, config.initializer_range)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        logits = self.classifier(self.dropout(self.distilbert(input_ids, attention_mask)))
        loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1)) if labels is not None else None
        return loss, logits


class DistilBertForMaskedLM(nn.Module):
    def __init__(self, config, init: bool = True):
        super().__init__()
        self.config = config
        self.activation = _activation(config.activation)
        self.distilbert = DistilBertModel(config)
        self.vocab_transform = nn.Linear(config.dim, config.dim)
        self.vocab_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)
        self.vocab_projector = nn.Linear(config.dim, config.vocab_size)
        if init:
            init_weights_hf(self, config.initializer_range)
        self.vocab_projector.weight = self.distilbert.embeddings.word_embeddings.weight  # tie_weights

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        h = self.distilbert(input_ids, attention_mask)
        logits = self.vocab_projector(self.vocab_layer_norm(self.activation(self.vocab_transform(h))))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits


def hf_saved_parameters(model: nn.Module, tied_prefixes=("lm_head.decoder.", "cls.predictions.decoder.",
                                                          "vocab_projector.weight")):
    """(HF saved name, parameter) once each, as save_pretrained's safetensors holds them: a tied
    decoder is left out (it is the word embedding; its bias is the head's own bias)."""
    seen = set()
    for mod_name, mod in model.named_modules():
        for pn, p in mod._parameters.items():
            n = f"{mod_name}.{pn}" if mod_name else pn
            if p is None or n.startswith(tied_prefixes) or id(p) in seen:
                continue
            seen.add(id(p))
            yield n, p


def decay_groups_by_module(model: nn.Module, weight_decay: float):
    """HF Trainer.get_decay_parameter_names: no decay for LayerNorm modules' parameters (whatever
    their name: DistilBERT's sa_layer_norm) and for names containing "bias"."""
    no_decay_ids = set()
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            no_decay_ids.update(id(p) for p in m.parameters(recurse=False))
    decay, no_decay = [], []
    for n, p in hf_saved_parameters(model):
        (no_decay if (id(p) in no_decay_ids or "bias" in n) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
