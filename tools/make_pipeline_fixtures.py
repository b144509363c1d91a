#!/usr/bin/python3
"""Tokenizer files for the pipeline tests (tests/data/tokenizer/pipeline/), from tweets.

    /usr/bin/python3 tools/make_pipeline_fixtures.py      # needs Debian's python3-sentencepiece
    /usr/bin/python3 tools/make_pipeline_fixtures.py regressions   # only make_regressions()

Deterministic (fixed input, sorted counts, spm with one thread). Writes, per tokenizer <name>:
  <name>/tokenizer.json   what transformers' converter writes (tools/convert_slow_tokenizer.py)
  <name>-slow/...         the slow files it converts (vocab.txt + tokenizer_config.json, or
                          sentencepiece.bpe.model), which Tokenizer::from_dir converts itself
and the hand-made tokenizer.json files that cover the other components (a WordLevel, a general
BPE, a Unigram with byte fallback). tools/make_pipeline_goldens.mjs then writes the goldens with
HF's own library.
"""
import collections
import json
import os
import re
import shutil
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert_slow_tokenizer as conv  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "tests/data/tokenizer/pipeline")
TWEETS = os.path.join(ROOT, "../shared/data/tweeteval/sentiment/train_text.txt")
if not os.path.exists(TWEETS):
    TWEETS = "/work/shared/data/tweeteval/sentiment/train_text.txt"


def tweets(n):
    with open(TWEETS, encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(n), f)]


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


def basic_words(text, lower):
    # Close enough to BERT's BasicTokenizer for building a vocabulary.
    if lower:
        text = "".join(c for c in unicodedata.normalize("NFD", text.lower()) if unicodedata.category(c) != "Mn")
    out = []
    for w in text.split():
        out += [p for p in re.split(r"(\W)", w) if p and not p.isspace()]
    return out


def wordpiece_vocab(lines, lower, size):
    words = collections.Counter(w for line in lines for w in basic_words(line, lower))
    chars = collections.Counter(c for w, n in words.items() for c in w for _ in range(n))
    vocab = ["[PAD]"] + ["[unused%d]" % i for i in range(10)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    alphabet = sorted(c for c, n in chars.items() if n >= 3)
    vocab += alphabet + ["##" + c for c in alphabet]
    suffixes = collections.Counter()
    for w, n in words.items():
        for k in range(2, min(5, len(w))):
            suffixes["##" + w[-k:]] += n
    seen = set(vocab)
    for w, _ in sorted(words.items(), key=lambda x: (-x[1], x[0])):
        if len(vocab) >= size * 3 // 4:
            break
        if len(w) > 1 and w not in seen:
            vocab.append(w)
            seen.add(w)
    for s, _ in sorted(suffixes.items(), key=lambda x: (-x[1], x[0])):
        if len(vocab) >= size:
            break
        if s not in seen:
            vocab.append(s)
            seen.add(s)
    return vocab


def make_bert(name, lines, lower):
    vocab_list = wordpiece_vocab(lines, lower, 2000)
    slow = os.path.join(OUT, name + "-slow")
    os.makedirs(slow, exist_ok=True)
    with open(os.path.join(slow, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in vocab_list))
    write_json(os.path.join(slow, "tokenizer_config.json"),
               {"do_lower_case": lower, "tokenizer_class": "BertTokenizer", "model_max_length": 512})
    vocab = conv.load_vocab(os.path.join(slow, "vocab.txt"))
    write_json(os.path.join(OUT, name, "tokenizer.json"), conv.bert_converter(vocab, do_lower_case=lower))


def train_spm(lines, prefix, vocab_size, byte_fallback, **options):
    import sentencepiece as spm
    # A fixed folder: the model records its input's path (trainer_spec.input), so the same
    # path keeps the file the same from run to run.
    tmp = os.path.join(tempfile.gettempdir(), "rc_pipeline_spm")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(tmp, "m"), vocab_size=vocab_size,
                                       model_type="unigram", character_coverage=0.995, num_threads=1,
                                       byte_fallback=byte_fallback, seed_sentencepiece_size=200000,
                                       minloglevel=2, **options)
        shutil.copy(os.path.join(tmp, "m.model"), prefix)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def make_xlmr(lines):
    slow = os.path.join(OUT, "xlmr-slow")
    os.makedirs(slow, exist_ok=True)
    model = os.path.join(slow, "sentencepiece.bpe.model")
    train_spm(lines, model, 1200, False)
    write_json(os.path.join(slow, "tokenizer_config.json"), {"tokenizer_class": "XLMRobertaTokenizer"})
    write_json(os.path.join(OUT, "xlmr", "tokenizer.json"), conv.xlm_roberta_converter(conv.read_model_proto(model)))
    # CamemBERT's converter on the same model (the test copies the model beside a
    # tokenizer_config.json naming CamembertTokenizer).
    write_json(os.path.join(OUT, "camembert", "tokenizer.json"),
               conv.xlm_roberta_converter(conv.read_model_proto(model), camembert=True))


def make_components(lines):
    """Hand-made tokenizer.json files covering the other components."""
    # 1. WordLevel over NFKC + Lowercase + Replace + Strip, Whitespace/Punctuation/Digits,
    #    BertProcessing, no decoder (tokens joined by spaces).
    words = collections.Counter()
    for line in lines:
        t = unicodedata.normalize("NFKC", line).lower()
        words.update(re.findall(r"\w+|[^\w\s]+", t))
    vocab = {"<unk>": 0, "<cls>": 1, "<sep>": 2, "<pad>": 3}
    for w, _ in sorted(words.items(), key=lambda x: (-x[1], x[0]))[:1500]:
        vocab.setdefault(w, len(vocab))
    for d in "0123456789":
        vocab.setdefault(d, len(vocab))
    write_json(os.path.join(OUT, "wordlevel", "tokenizer.json"), {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [conv.added_token(t, vocab[t]) for t in ["<unk>", "<cls>", "<sep>", "<pad>"]],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Lowercase"},
            {"type": "Replace", "pattern": {"String": "\u2019"}, "content": "'"},
            {"type": "Replace", "pattern": {"Regex": "https?://\\S+"}, "content": "http"},
            {"type": "Strip", "strip_left": True, "strip_right": True}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Whitespace"}, {"type": "Digits", "individual_digits": True},
            {"type": "Punctuation", "behavior": "Isolated"}]},
        "post_processor": {"type": "BertProcessing", "sep": ["<sep>", 2], "cls": ["<cls>", 1]},
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    })
    # 2. General BPE (continuing_subword_prefix, end_of_word_suffix, unk fused) over NFD +
    #    StripAccents + Lowercase, a Split regex (contractions, lookahead) + WhitespaceSplit,
    #    TemplateProcessing with type ids, BPEDecoder.
    corpus = collections.Counter()
    for line in lines:
        t = "".join(c for c in unicodedata.normalize("NFD", line.lower()) if unicodedata.category(c) != "Mn")
        corpus.update(re.findall(r"[a-z]+|\d+|[^\sa-z\d]+", t))
    alphabet = sorted({c for w in corpus for c in w if corpus[w] >= 2})
    bpe_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for c in alphabet:
        bpe_vocab.setdefault(c, len(bpe_vocab))
        bpe_vocab.setdefault("##" + c, len(bpe_vocab))
        bpe_vocab.setdefault(c + "</w>", len(bpe_vocab))
        bpe_vocab.setdefault("##" + c + "</w>", len(bpe_vocab))

    def symbols(w):
        s = [c if i == 0 else "##" + c for i, c in enumerate(w)]
        s[-1] += "</w>"
        return s
    words_sym = {w: symbols(w) for w in corpus if all(c in alphabet for c in w)}
    merges = []
    for _ in range(600):
        pairs = collections.Counter()
        for w, s in words_sym.items():
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += corpus[w]
        if not pairs:
            break
        (a, b), _ = min(pairs.items(), key=lambda x: (-x[1], x[0]))
        merged = a + (b[2:] if b.startswith("##") else b)
        merges.append([a, b])
        bpe_vocab.setdefault(merged, len(bpe_vocab))
        for w, s in words_sym.items():
            i, out = 0, []
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            words_sym[w] = out
    write_json(os.path.join(OUT, "bpe-general", "tokenizer.json"), {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [conv.added_token("<unk>", 0), conv.added_token("<s>", 1), conv.added_token("</s>", 2),
                         {"id": len(bpe_vocab), "content": "[link]", "single_word": True, "lstrip": False,
                          "rstrip": True, "normalized": True, "special": False}],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"},
                                                            {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "'(?:s|t|re|ve|m|ll|d)|\\s+(?!\\S)"},
             "behavior": "Isolated", "invert": False},
            {"type": "WhitespaceSplit"},
            {"type": "Split", "pattern": {"String": "#"}, "behavior": "MergedWithNext", "invert": False},
            {"type": "Split", "pattern": {"Regex": "[a-z]+|\\d+"}, "behavior": "Isolated", "invert": False}]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "</s>", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                               "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
        "decoder": {"type": "BPEDecoder", "suffix": "</w>"},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": "##",
                  "end_of_word_suffix": "</w>", "fuse_unk": True, "byte_fallback": False, "ignore_merges": False,
                  "vocab": bpe_vocab, "merges": merges},
    })
    # 3. Unigram with byte fallback (Llama-style decoder chain), Metaspace prepend_scheme
    #    "first", NFKC + Prepend-free, spm vocabulary trained with byte_fallback.
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "bf.model")
        train_spm(lines, model, 600, True)
        proto = conv.read_model_proto(model)
    pieces = [[p["piece"], p["score"]] for p in proto["pieces"]]
    write_json(os.path.join(OUT, "unigram-bytes", "tokenizer.json"), {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [conv.added_token(p["piece"], i) for i, p in enumerate(proto["pieces"]) if p["type"] in (2, 3)],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"},
                                                            {"type": "Replace", "pattern": {"String": " "},
                                                             "content": "\u2581"}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "Unigram", "unk_id": 0, "vocab": pieces, "byte_fallback": True},
    })


def bytes_to_unicode():
    # GPT-2's byte-to-unicode map (tokenizers' ByteLevel BYTES_CHAR).
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def train_bpe(words, alphabet, n_merges, vocab):
    """A small BPE trainer (most frequent pair first, ties by the pair): merges and vocab."""
    syms = {w: list(w) for w in words}
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, s in syms.items():
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += words[w]
        if not pairs:
            break
        (a, b), _ = min(pairs.items(), key=lambda x: (-x[1], x[0]))
        merges.append([a, b])
        vocab.setdefault(a + b, len(vocab))
        for w, s in syms.items():
            i, out = 0, []
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            syms[w] = out
    return merges


def make_components2(lines):
    """Byte-level BPE in the general pipeline, and the split behaviours and forms not used above."""
    b2u = bytes_to_unicode()
    words = collections.Counter()
    for line in lines[:3000]:
        t = unicodedata.normalize("NFC", unicodedata.normalize("NFKD", line))
        for w in re.findall(r" ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+", t):
            words["".join(b2u[b] for b in w.encode("utf-8"))] += 1
    vocab = {"[CLS]": 0, "[SEP]": 1, "[PAD]": 2, "<unk>": 3}
    for b in range(256):
        vocab.setdefault(b2u[b], len(vocab))
    merges = train_bpe(words, None, 800, vocab)
    n = len(vocab)
    write_json(os.path.join(OUT, "bytelevel-mix", "tokenizer.json"), {
        "version": "1.0", "truncation": None, "padding": {"strategy": "BatchLongest", "direction": "Right",
                                                           "pad_to_multiple_of": None, "pad_id": 2,
                                                           "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": [conv.added_token("[CLS]", 0), conv.added_token("[SEP]", 1), conv.added_token("[PAD]", 2),
                         {"id": n, "content": "<mention>", "single_word": False, "lstrip": True, "rstrip": True,
                          "normalized": False, "special": False},
                         {"id": n + 1, "content": "hello", "single_word": True, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": False}],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKD"}, {"type": "NFC"},
            {"type": "Replace", "pattern": {"Regex": "@user"}, "content": "<mention>"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithPrevious", "invert": False},
            {"type": "Split", "pattern": {"Regex": "[,;]"}, "behavior": "Removed", "invert": False},
            {"type": "Split", "pattern": {"Regex": "\\p{L}+"}, "behavior": "Contiguous", "invert": True},
            {"type": "CharDelimiterSplit", "delimiter": "|"},
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]},
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                        {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                      {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
             "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [0], "tokens": ["[CLS]"]},
                                "[SEP]": {"id": "[SEP]", "ids": [1], "tokens": ["[SEP]"]}}}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": merges},
    })
    # GPT-2's pattern as a Split regex (PCRE2 here, Oniguruma in HF) before a ByteLevel without
    # its own regex: how newer byte-level tokenizers are written.
    doc = json.load(open(os.path.join(OUT, "bytelevel-mix", "tokenizer.json"), encoding="utf-8"))
    doc["normalizer"] = None
    doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
                                                "\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    doc["added_tokens"] = doc["added_tokens"][:3]
    write_json(os.path.join(OUT, "split-gpt2", "tokenizer.json"), doc)
    # WordPiece with a Prepend normalizer, Punctuation merged with the previous piece,
    # contiguous Digits, RobertaProcessing (its trim_offsets) and a WordPiece decoder without cleanup.
    uncased = conv.load_vocab(os.path.join(OUT, "bert-uncased-slow", "vocab.txt"))
    write_json(os.path.join(OUT, "wordpiece-mix", "tokenizer.json"), {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [conv.added_token(t, uncased[t]) for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}, {"type": "Prepend", "prepend": "x"},
            {"type": "Strip", "strip_left": False, "strip_right": True}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "MergedWithPrevious"},
            {"type": "Digits", "individual_digits": False}]},
        "post_processor": {"type": "RobertaProcessing", "sep": ["[SEP]", uncased["[SEP]"]],
                           "cls": ["[CLS]", uncased["[CLS]"]], "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": False},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 12, "vocab": uncased},
    })


def make_regressions(lines):
    """Small files pinning what the differential sweep (tools/tokenizer_sweep.sh) found."""
    # 1. Unigram scores that tie up to an ulp (from a sentencepiece model of the license texts):
    #    tokenizers reads them with serde_json's inexact float parser, which decides the path of
    #    40 dashes. The texts' JSON is this shortest form, as a saved tokenizer.json holds it.
    pieces = [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0], ["\u2581", -3.496880054473877], ["-", -4.594468116760254],
              ["-" * 13, -10.217400550842285], ["-" * 16, -10.408623695373535], ["\u2581--", -7.7518815994262695]]
    for k, c in enumerate("etaoinsrhldcumfpgwybvkxjqz0123456789.,'"):
        pieces.append([c, -5.0 - k * 0.0731])
        pieces.append(["\u2581" + c, -6.0 - k * 0.0617])
    write_json(os.path.join(OUT, "unigram-ties", "tokenizer.json"), {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [conv.added_token(p, i) for i, p in enumerate(["<unk>", "<s>", "</s>"])],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1], "trim_offsets": True,
                           "add_prefix_space": True},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": 0, "vocab": pieces, "byte_fallback": False},
    })
    # 2. A file whose added-token ids disagree with its vocabulary (tokenizers ignores the ids
    #    written: a content in the vocabulary takes its id there, a new one the next free id),
    #    and a BPEDecoder with an empty suffix (Rust's replace("", " ") between every character).
    words = collections.Counter()
    for line in lines[:2000]:
        words.update(re.findall(r"[a-z]+", line.lower()))
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for c in sorted({c for w in words for c in w}):
        vocab.setdefault(c, len(vocab))
    merges = train_bpe(words, None, 300, vocab)
    n = len(vocab)
    write_json(os.path.join(OUT, "bpe-reassigned-ids", "tokenizer.json"), {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [conv.added_token("<unk>", 0), conv.added_token("<s>", 1), conv.added_token("</s>", 2),
                         {"id": n + 5, "content": "the", "single_word": True, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": False},
                         {"id": 7, "content": "[LINK]", "single_word": False, "lstrip": True, "rstrip": True,
                          "normalized": False, "special": True},
                         {"id": n + 40, "content": "ing", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": False},
                         {"id": 3, "content": "@user", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": False},
                         {"id": n + 1, "content": "[LINK]", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]},
        "decoder": {"type": "BPEDecoder", "suffix": ""},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    })
    # 3. XLMRobertaConverter on a sentencepiece model trained with byte_fallback: the converter
    #    leaves the Unigram's byte_fallback False (handle_byte_fallback), so unknown characters
    #    give <unk>, not byte pieces.
    slow = os.path.join(OUT, "xlmr-bytefallback-slow")
    os.makedirs(slow, exist_ok=True)
    model = os.path.join(slow, "sentencepiece.bpe.model")
    train_spm(lines[:3000], model, 500, True, normalization_rule_name="identity")  # no charsmap: a small file
    write_json(os.path.join(slow, "tokenizer_config.json"), {"tokenizer_class": "XLMRobertaTokenizer"})
    write_json(os.path.join(OUT, "xlmr-bytefallback", "tokenizer.json"),
               conv.xlm_roberta_converter(conv.read_model_proto(model)))
    # 4. Byte-level BPE with only ByteLevel's post-processor (GPT-2's layout; the byte-level
    #    fast path reads it): no processor sets token types, so a pair's second text keeps the
    #    type 1 tokenizers encodes it with.
    doc = json.load(open(os.path.join(OUT, "bytelevel-mix", "tokenizer.json"), encoding="utf-8"))
    doc["normalizer"] = None
    doc["padding"] = None
    doc["added_tokens"] = doc["added_tokens"][:3]
    # (add_prefix_space true: encode_words on the byte-level path puts the space itself, as
    # transformers requires for pre-split words.)
    doc["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    doc["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                             "use_regex": True}
    doc["model"]["ignore_merges"] = False
    write_json(os.path.join(OUT, "bytelevel-post-only", "tokenizer.json"), doc)


def main():
    lines = tweets(6000)
    if sys.argv[1:] == ["regressions"]:  # only these (the others stay as committed)
        make_regressions(lines)
        return
    make_bert("bert-uncased", lines, True)
    make_bert("bert-cased", lines, False)
    make_xlmr(lines)
    make_components(lines)
    make_components2(lines)
    make_regressions(lines)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
