#!/usr/bin/python3
"""SentencePiece variants for the differential sweep (tools/tokenizer_sweep.sh), none committed.

    /usr/bin/python3 tools/make_sweep_spm.py CORPUS.txt OUT_DIR     # Debian's python3-sentencepiece

Trains small Unigram models on CORPUS with each normalization rule (nmt_nfkc, nfkc,
nmt_nfkc_cf, identity) and the trainer options hidden checks may use (add_dummy_prefix false,
byte_fallback, split_digits, user_defined_symbols), and a few BPE models (model_type 2),
and writes per variant <name>:
  <name>/tokenizer.json              XLMRobertaConverter's document (tools/convert_slow_tokenizer.py)
  <name>-slow/sentencepiece.bpe.model + tokenizer_config.json   the file from_dir converts itself
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert_slow_tokenizer as conv  # noqa: E402

VARIANTS = {
    "spm-uni-nmt-nfkc": {},
    "spm-uni-nfkc": {"normalization_rule_name": "nfkc"},
    "spm-uni-nmt-nfkc-cf": {"normalization_rule_name": "nmt_nfkc_cf"},
    "spm-uni-identity": {"normalization_rule_name": "identity"},
    "spm-uni-no-dummy-prefix": {"add_dummy_prefix": False},
    "spm-uni-byte-fallback": {"byte_fallback": True},
    "spm-uni-split-digits": {"split_digits": True, "user_defined_symbols": ["GNU", "<sep2>", "http://"]},
    "spm-uni-no-ws-removal": {"remove_extra_whitespaces": False, "normalization_rule_name": "nmt_nfkc_cf"},
    "spm-bpe-nmt-nfkc": {"model_type": "bpe"},
    "spm-bpe-identity": {"model_type": "bpe", "normalization_rule_name": "identity"},
    "spm-bpe-byte-fallback": {"model_type": "bpe", "byte_fallback": True,
                              "user_defined_symbols": ["GNU", "<sep2>"]},
}


def main():
    import sentencepiece as spm
    corpus, out = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="rc_sweep_spm_")
    try:
        for name, opts in VARIANTS.items():
            prefix = os.path.join(tmp, name)
            opts = {"model_type": "unigram", **opts}
            spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=2000,
                                           character_coverage=0.9995, num_threads=1, minloglevel=2,
                                           **opts)
            slow = os.path.join(out, name + "-slow")
            os.makedirs(slow, exist_ok=True)
            shutil.copy(prefix + ".model", os.path.join(slow, "sentencepiece.bpe.model"))
            with open(os.path.join(slow, "tokenizer_config.json"), "w") as f:
                json.dump({"tokenizer_class": "XLMRobertaTokenizer"}, f)
            os.makedirs(os.path.join(out, name), exist_ok=True)
            with open(os.path.join(out, name, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(conv.xlm_roberta_converter(conv.read_model_proto(prefix + ".model")), f, ensure_ascii=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("wrote", len(VARIANTS), "sentencepiece variants to", out)


if __name__ == "__main__":
    main()
