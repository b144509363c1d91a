#!/usr/bin/env bash
# Issue 32's val-only fine-tunes: the demo's recipe (scripts/demo.sh's `train` flags) on a copy
# of TweetEval sentiment without its test files, so no test figure can be read while choosing.
# docs/quality.md's comparison tables are these runs; the best val macro recall is in
# OUT/NAME/trainer_state.json (best_metric) and in the eval lines of the log.
#   tools/finetune_val_only.sh ROBERTA_BIN START_DIR OUT NAME SEED [extra train flags...]
# START_DIR: a checkpoint folder with its tokenizer (e.g. assets/pretrained/tweets-small-mlm's two
# files plus assets/tokenizer/tweets-unigram-8k/sentencepiece.bpe.model). One thread, so two
# runs can share a 2-core machine. FT_MAX_STEPS / FT_EVAL_EVERY shorten a smoke run, FT_BATCH_SIZE
# and FT_LR change those two flags (the CLI takes each flag once);
# FT_MAX_STEPS=3000 FT_LABEL_SMOOTHING=0 is the recipe of the rows before the twenty-first session.
set -euo pipefail
[[ $# -ge 5 ]] || { sed -n 2,10p "$0" >&2; exit 2; }
bin=$1 start=$2 out=$3 name=$4 seed=$5
shift 5
root=$(cd "$(dirname "$0")/.." && pwd)
data=$out/sentiment-notest
if [[ ! -f $data/val_text.txt ]]; then
  # Built aside and renamed into place: two runs started together must not both write it.
  mkdir -p "$out"
  tmp=$(mktemp -d "$out/.sentiment-notest.XXXXXX")
  for f in mapping.txt train_text.txt train_labels.txt val_text.txt val_labels.txt; do
    cp "$root/data/tweeteval/sentiment/$f" "$tmp/"
  done
  mv -T "$tmp" "$data" 2>/dev/null || rm -rf "$tmp"
fi
OMP_WAIT_POLICY=PASSIVE exec "$bin" train --model "$start" --data "$data" --output "$out/$name" \
  --max-steps "${FT_MAX_STEPS:-2000}" --batch-size "${FT_BATCH_SIZE:-32}" --lr "${FT_LR:-5e-4}" --warmup-ratio 0.06 --weight-decay 0.01 \
  --label-smoothing-factor "${FT_LABEL_SMOOTHING:-0.1}" \
  --max-length 128 --eval-every "${FT_EVAL_EVERY:-300}" --eval-batch-size 128 --group-by-length --save-total-limit 2 \
  --threads 1 --logging-steps 50 --seed "$seed" --no-progress "$@"
