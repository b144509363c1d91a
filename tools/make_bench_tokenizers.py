#!/usr/bin/python3
"""Representative-size tokenizers for the tokenizer benchmark and tests (issue 30), from tweets.

    /usr/bin/python3 tools/make_bench_tokenizers.py [OUT=build/bench-tokenizers]

The pipeline fixtures (tests/data/tokenizer/pipeline/) are small (2,000 WordPiece tokens, 1,202
Unigram pieces): fine for correctness, unrepresentative for speed (a small vocabulary cuts words
into many pieces). This writes, from every TweetEval text under data/tweeteval/ (sorted file
list, so deterministic; spm runs on one thread):
  OUT/bert-30k/tokenizer.json   BertConverter of a ~30,000-token uncased WordPiece vocabulary
                                (make_pipeline_fixtures.wordpiece_vocab: the alphabet, frequent
                                words, frequent ##suffixes), as bert-base-uncased is 30,522;
  OUT/xlmr-32k/tokenizer.json   XLMRobertaConverter of a 32,000-piece SentencePiece Unigram
                                trained on the texts (Debian's python3-sentencepiece).
Generated, not committed (each is a few MB); bench/tokenizer/compare.sh and the fast-path tests
use them when present.
"""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert_slow_tokenizer as conv  # noqa: E402
import make_pipeline_fixtures as fx  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def all_texts():
    files = sorted(glob.glob(os.path.join(ROOT, "data/tweeteval/*/*_text.txt")))
    if not files:
        files = sorted(glob.glob("/work/shared/data/tweeteval/*/*_text.txt"))
    lines = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f]
    return lines


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/bench-tokenizers"))
    lines = all_texts()
    vocab_list = fx.wordpiece_vocab(lines, True, 30000)
    bert = os.path.join(out, "bert-30k")
    os.makedirs(bert, exist_ok=True)
    with open(os.path.join(bert, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in vocab_list))
    vocab = conv.load_vocab(os.path.join(bert, "vocab.txt"))
    fx.write_json(os.path.join(bert, "tokenizer.json"), conv.bert_converter(vocab, do_lower_case=True))
    xlmr = os.path.join(out, "xlmr-32k")
    os.makedirs(xlmr, exist_ok=True)
    model = os.path.join(xlmr, "sentencepiece.bpe.model")
    fx.train_spm(lines, model, 32000, False)
    fx.write_json(os.path.join(xlmr, "tokenizer.json"), conv.xlm_roberta_converter(conv.read_model_proto(model)))
    print(out, len(vocab_list), "WordPiece tokens, 32000 Unigram pieces")


if __name__ == "__main__":
    main()
