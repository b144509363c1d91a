#!/usr/bin/python3
"""transformers' slow-to-fast tokenizer converters, transcribed for the pipeline fixtures.

From src/transformers/convert_slow_tokenizer.py (huggingface/transformers, commit
00111b31e6624701fe598078e80d36127ac95241): BertConverter and SpmConverter +
XLMRobertaConverter (+ CamembertConverter), writing the tokenizer.json that `tokenizers` would save (its serde
layout). transformers and `tokenizers` are not installed here: the ModelProto is read by hand
(sentencepiece_model.proto field numbers), and the JSON is written directly.
src/tokenizer/pipeline/convert.cpp is the same transcription in C++; the goldens check both
against HF's own library (tools/make_pipeline_goldens.mjs).
"""
import base64
import struct


# --- BertConverter -------------------------------------------------------------------------
def load_vocab(vocab_file):
    # tokenization_bert.py load_vocab: readlines() in text mode, rstrip("\n"), numbered from 0.
    vocab = {}
    with open(vocab_file, "r", encoding="utf-8") as reader:
        tokens = reader.readlines()
    for index, token in enumerate(tokens):
        vocab[token.rstrip("\n")] = index
    return vocab


def added_token(content, id_, lstrip=False, special=True):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": False,
            "normalized": False, "special": special}


def bert_converter(vocab, do_lower_case=True, tokenize_chinese_chars=True, strip_accents=None,
                   unk="[UNK]", sep="[SEP]", pad="[PAD]", cls="[CLS]", mask="[MASK]"):
    added, next_id = [], len(vocab)
    for t in [pad, unk, cls, sep, mask]:  # the fast tokenizer's special tokens
        if t in vocab:
            added.append(added_token(t, vocab[t]))
        else:
            added.append(added_token(t, next_id))
            next_id += 1
    ids = {a["content"]: a["id"] for a in added}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": tokenize_chinese_chars,
                       "strip_accents": strip_accents, "lowercase": do_lower_case},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            # single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1"
            "single": [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": sep, "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": sep, "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": sep, "type_id": 1}}],
            "special_tokens": {cls: {"id": cls, "ids": [ids[cls]], "tokens": [cls]},
                               sep: {"id": sep, "ids": [ids[sep]], "tokens": [sep]}},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }


# --- ModelProto, by hand ---------------------------------------------------------------------
def _varint(b, i):
    v, shift = 0, 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def _fields(b):
    i = 0
    while i < len(b):
        tag, i = _varint(b, i)
        f, w = tag >> 3, tag & 7
        if w == 0:
            v, i = _varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def read_model_proto(path):
    data = open(path, "rb").read()
    proto = {"pieces": [], "model_type": 1, "byte_fallback": False, "unk_id": 0, "unk_piece": "<unk>",
             "precompiled_charsmap": b""}
    for f, w, v in _fields(data):
        if f == 1:
            piece = {"piece": "", "score": 0.0, "type": 1}
            for pf, pw, pv in _fields(v):
                if pf == 1:
                    piece["piece"] = pv.decode("utf-8")
                elif pf == 2:
                    piece["score"] = struct.unpack("<f", pv)[0]
                elif pf == 3:
                    piece["type"] = pv
            proto["pieces"].append(piece)
        elif f == 2:  # TrainerSpec: model_type = 3, byte_fallback = 35, unk_id = 40, unk_piece = 45
            for tf, tw, tv in _fields(v):
                if tf == 3:
                    proto["model_type"] = tv
                elif tf == 35:
                    proto["byte_fallback"] = bool(tv)
                elif tf == 40:
                    proto["unk_id"] = tv
                elif tf == 45:
                    proto["unk_piece"] = tv.decode("utf-8")
        elif f == 3:  # NormalizerSpec: precompiled_charsmap = 2
            for nf, nw, nv in _fields(v):
                if nf == 2:
                    proto["precompiled_charsmap"] = nv
    return proto


# --- SentencePieceExtractor (BPE models) ----------------------------------------------------
# transformers v4.5x convert_slow_tokenizer.py: SentencePieceExtractor.extract(vocab_scores) ->
# generate_merges(vocab, vocab_scores). (At commit 00111b31 generate_merges is the same, moved to
# tokenization_utils_base.py, but SpmConverter's model_type 2 branch still calls extract(vocab_scores)
# against the extractor's new extract(model_type, **kwargs) signature and fails; v4.5x is the last
# working code.)
def generate_merges(vocab, vocab_scores):
    reverse = vocab_scores is not None
    vocab_scores = dict(vocab_scores) if reverse else vocab

    merges = []
    for merge, piece_score in vocab_scores.items():
        local = []
        for index in range(1, len(merge)):
            piece_l, piece_r = merge[:index], merge[index:]
            if piece_l in vocab and piece_r in vocab:
                local.append((piece_l, piece_r, piece_score))
        local = sorted(local, key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)

    merges = sorted(merges, key=lambda val: (val[2], len(val[0]), len(val[1])), reverse=reverse)
    merges = [(val[0], val[1]) for val in merges]
    return merges


def sentencepiece_extract(proto, vocab_scores):
    # {sp.id_to_piece(index): index for index in range(sp.GetPieceSize())}: the model's own pieces
    # and ids (a repeated piece keeps its last id), not the converter's reordered vocabulary.
    vocab = {p["piece"]: i for i, p in enumerate(proto["pieces"])}
    return vocab, generate_merges(vocab, vocab_scores)


# --- SpmConverter + XLMRobertaConverter ------------------------------------------------------
def xlm_roberta_converter(proto, camembert=False):
    assert proto["model_type"] in (1, 2), "model_type %d: neither Unigram nor BPE" % proto["model_type"]
    if camembert:  # CamembertConverter.vocab / unk_id (3)
        vocab = [["<s>NOTUSED", 0.0], ["<pad>", 0.0], ["</s>NOTUSED", 0.0], ["<unk>", 0.0], ["<unk>NOTUSED", -100]]
        vocab += [[p["piece"], p["score"]] for p in proto["pieces"][1:]]
    else:  # XLMRobertaConverter.vocab / unk_id (3)
        vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
        vocab += [[p["piece"], p["score"]] for p in proto["pieces"][3:]]
    vocab += [["<mask>", 0.0]]
    token_to_id = {}
    for i, (t, _) in enumerate(vocab):
        token_to_id[t] = i
    # SpmConverter.tokenizer: control/user-defined pieces as added tokens (normalized=False);
    # then XLMRobertaTokenizerFast's special tokens (<mask> with lstrip=True).
    added, seen, next_id = [], set(), len(vocab)

    def add(content, special, lstrip=False):
        nonlocal next_id
        if content in seen:
            return
        seen.add(content)
        id_ = token_to_id.get(content)
        if id_ is None:
            id_, next_id = next_id, next_id + 1
        added.append(added_token(content, id_, lstrip, special))

    for p in proto["pieces"]:
        if p["type"] in (3, 4):
            add(p["piece"], p["type"] == 3)
    for t in ["<s>", "</s>", "<unk>", "<pad>"]:
        add(t, True)
    add("<mask>", True, lstrip=True)
    added.sort(key=lambda a: a["id"])
    # SpmConverter.normalizer
    normalizers = [{"type": "Strip", "strip_left": False, "strip_right": True},
                   {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]
    if proto["precompiled_charsmap"]:
        normalizers = [{"type": "Precompiled", "precompiled_charsmap":
                        base64.b64encode(proto["precompiled_charsmap"]).decode("ascii")}] + normalizers
    # XLMRobertaTokenizer (CamembertTokenizer) has no add_prefix_space and no legacy:
    # prepend_scheme "always". (CamembertTokenizerFast's "<s>NOTUSED"-style
    # additional_special_tokens are left out, as convert.cpp does.)
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [token_to_id["<s>"]], "tokens": ["<s>"]},
                               "</s>": {"id": "</s>", "ids": [token_to_id["</s>"]], "tokens": ["</s>"]}},
        },
        "decoder": dict(metaspace),
        "model": spm_model(proto, vocab),
    }


def spm_model(proto, vocab):
    """SpmConverter.tokenizer's model; vocab is the converter's vocab(proto) list."""
    # byte_fallback=self.handle_byte_fallback: False for XLMRobertaConverter / CamembertConverter.
    if proto["model_type"] == 1:
        return {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False}
    # model_type == 2: merges = SpmExtractor(vocab_file).extract(vocab_scores); the BPE vocabulary
    # numbers vocab_scores in order (a repeated piece keeps its last number).
    _, merges = sentencepiece_extract(proto, vocab)
    bpe_vocab = {word: i for i, (word, score) in enumerate(vocab)}
    # BPE(bpe_vocab, merges, unk_token=trainer_spec.unk_piece, fuse_unk=True,
    #     byte_fallback=self.handle_byte_fallback, dropout=None), as tokenizers 0.22 serializes it.
    return {"type": "BPE", "dropout": None, "unk_token": proto["unk_piece"], "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": False, "ignore_merges": False,
            "vocab": bpe_vocab, "merges": [[a, b] for a, b in merges]}
