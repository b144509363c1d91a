#!/usr/bin/python3
"""SentencePiece BPE (model_type 2) fixtures: tests/data/tokenizer/spm-bpe/ (issue 30).

    /usr/bin/python3 tools/make_spm_bpe_fixtures.py          # the models + tokenizer.json files
    npm ci --prefix tools && node tools/make_pipeline_goldens.mjs --dir tests/data/tokenizer/spm-bpe
    /usr/bin/python3 tools/make_spm_bpe_fixtures.py check    # HF's goldens against sentencepiece

Needs Debian's python3-sentencepiece; deterministic (fixed input path and text, one thread).
Trains small BPE models (default nmt_nfkc normalization) on text that is not the tweets: the
license texts of Debian's common-licenses plus a few lines of other scripts (so that the models
have some non-ASCII pieces and merges). Writes, per tokenizer <name>:
  <name>/tokenizer.json   the converter's document (tools/convert_slow_tokenizer.py)
  <name>-slow/sentencepiece.bpe.model + tokenizer_config.json   the files from_dir converts

`check` compares the ids of every "encode" golden (HF's Rust tokenizers on the converted
tokenizer.json) with sentencepiece's own encode of the same text, ids mapped as the converter
maps them, and prints the texts where the two differ: the converted tokenizer is HF's, not
sentencepiece's, and where they differ HF wins (README.md there lists why they differ).
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert_slow_tokenizer as conv  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "tests/data/tokenizer/spm-bpe")
LICENSES = ["GPL-3", "Apache-2.0", "MPL-2.0", "Artistic", "LGPL-2.1"]
OTHER_SCRIPTS = [
    "Café résumé naïve façade, l'école élémentaire à Zürich et à Genève.",
    "Über die Straße gehen wir schnell, später essen wir Brötchen.",
    "日本語のテキストと東京の天気。中文字符测试，北京欢迎你。",
    "한국어 텍스트와 서울의 날씨.",
    "مرحبا بالعالم، هذا نص عربي قصير.",
    "Ωμέγα και άλφα, Σίσυφος. Привет, мир! Это тест.",
    "emoji 😀👍 ❤️ full-width ＡＢＣ１２３ ligature ﬁ ﬂ",
]
# name: (converter, vocab_size, trainer options)
VARIANTS = {
    "spm-bpe": ("xlmr", 400, {}),
    "spm-bpe-camembert": ("camembert", 400, {}),
    "spm-bpe-bytefallback": ("xlmr", 700, {"byte_fallback": True}),
}


def corpus_lines():
    lines = []
    for name in LICENSES:
        with open("/usr/share/common-licenses/" + name, encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f if line.strip()]
    return lines + OTHER_SCRIPTS * 20


def train(prefix, vocab_size, options):
    import sentencepiece as spm
    # A fixed folder: the model records its input's path (trainer_spec.input).
    tmp = os.path.join(tempfile.gettempdir(), "rc_spm_bpe")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(corpus_lines()) + "\n")
        spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(tmp, "m"), vocab_size=vocab_size,
                                       model_type="bpe", character_coverage=0.9995, num_threads=1, minloglevel=2,
                                       **options)
        shutil.copy(os.path.join(tmp, "m.model"), prefix)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


def make():
    models = {}
    for name, (converter, vocab_size, options) in VARIANTS.items():
        key = (vocab_size, tuple(sorted(options.items())))
        if key not in models:
            slow = os.path.join(OUT, name + "-slow")
            os.makedirs(slow, exist_ok=True)
            models[key] = os.path.join(slow, "sentencepiece.bpe.model")
            train(models[key], vocab_size, options)
            write_json(os.path.join(slow, "tokenizer_config.json"), {"tokenizer_class": "XLMRobertaTokenizer"})
        # The CamemBERT variant has no slow folder: the test copies spm-bpe-slow's model beside a
        # tokenizer_config.json naming CamembertTokenizer.
        proto = conv.read_model_proto(models[key])
        assert proto["model_type"] == 2
        write_json(os.path.join(OUT, name, "tokenizer.json"),
                   conv.xlm_roberta_converter(proto, camembert=converter == "camembert"))
        print(name, len(proto["pieces"]), "pieces")


def spm_to_converted(proto, camembert):
    """Maps a sentencepiece id to the converted tokenizer's id (XLMRobertaConverter.vocab / CamembertConverter.vocab)."""
    def mapped(i):
        if i == proto["unk_id"]:
            return 3  # <unk>
        return i + 4 if camembert else i + 1
    return mapped


def check():
    import sentencepiece as spm
    differing = 0
    for name, (converter, _, _) in VARIANTS.items():
        model = os.path.join(OUT, (name if converter == "xlmr" else "spm-bpe") + "-slow", "sentencepiece.bpe.model")
        sp = spm.SentencePieceProcessor(model_file=model)
        proto = conv.read_model_proto(model)
        mapped = spm_to_converted(proto, converter == "camembert")
        byte_ids = {i for i, p in enumerate(proto["pieces"]) if p["type"] == 6}
        total = same = same_without_bytes = 0
        with open(os.path.join(OUT, name + ".jsonl"), encoding="utf-8") as f:
            cases = [json.loads(line) for line in f]
        for c in cases:
            if c["kind"] != "encode" or "text" not in c:
                continue
            total += 1
            hf = c["ids"][1:-1]  # without <s> ... </s>
            ours = [mapped(i) for i in sp.encode(c["text"])]
            # The converter drops byte_fallback (XLMRobertaConverter.handle_byte_fallback is False):
            # where sentencepiece gives <0xXX> pieces HF gives <unk>, one for a run (fuse_unk).
            no_bytes = []
            for i in sp.encode(c["text"]):
                i = 3 if i in byte_ids else mapped(i)
                if not (i == 3 and no_bytes and no_bytes[-1] == 3):
                    no_bytes.append(i)
            if hf == ours:
                same += 1
            elif byte_ids and hf == no_bytes:
                same_without_bytes += 1
            else:
                differing += 1
                print("%s differs on %r\n  hf  %s\n  spm %s" % (name, c["text"][:80], hf[:40], ours[:40]))
        print("%s: %d of %d texts give sentencepiece's ids, %d more once its byte pieces are <unk>"
              % (name, same, total, same_without_bytes))
    return differing


if __name__ == "__main__":
    if sys.argv[1:] == ["check"]:
        check()
    else:
        make()
