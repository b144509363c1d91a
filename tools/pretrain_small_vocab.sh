#!/usr/bin/env bash
# Issue 32's small-vocabulary pretraining, resumable: an XLM-R-layout 4 x 256 body (4 heads,
# intermediate 1,024; 5.41 M parameters, 21.7 MB in F32) on assets/tokenizer/tweets-unigram-8k,
# masked-LM line by line on the unlabelled tweets. Run it again to continue from the last
# checkpoint (bit-identical resume); docs/quality.md has the figures.
#   tools/pretrain_small_vocab.sh ROBERTA_BIN TWEETS_TXT OUT [THREADS=1] [STAGE=scratch]
# STAGE scratch: the 5,000 steps that made assets/pretrained/tweets-small-mlm.
# STAGE continue: a second schedule from that asset (a fresh warmup and linear decay: the first
# schedule ended at lr 0, and its optimizer state is not committed), 4,000 steps at peak lr 5e-4
# with seed 43 (new masks and order), into OUT/mlm2. Resumable the same way.
# STAGE wwm: the same second schedule with whole-word masking (--whole-word-mask), into
# OUT/mlm-wwm: against `continue`, the masking is the only difference.
# STAGE rtd: the same second schedule with ELECTRA's replaced-token detection (--generator: the
# asset itself, frozen, fills the masked positions), into OUT/rtd: against `continue`, the
# objective is the only difference. Its output is a two-label token classifier; fine-tune it
# with `train --task text-classification`.
# STAGE tapt: task-adaptive pretraining (Gururangan et al. 2020): the same second schedule, but
# 3,000 steps on the sentiment train texts alone (TWEETS_TXT from
# `scripts/prepare_pretrain_corpus.py --tasks sentiment`, ~4.2 epochs of them), into OUT/tapt.
set -euo pipefail
bin=$1 tweets=$2 out=$3 threads=${4:-1} stage=${5:-scratch}
root=$(cd "$(dirname "$0")/.." && pwd)
tok="$root/assets/tokenizer/tweets-unigram-8k"
if [[ $stage == continue || $stage == wwm || $stage == rtd || $stage == tapt ]]; then
  if [[ ! -f "$out/start2/model.safetensors" ]]; then
    mkdir -p "$out/start2"
    cp "$root/assets/pretrained/tweets-small-mlm/config.json" \
      "$root/assets/pretrained/tweets-small-mlm/model.safetensors" "$tok/sentencepiece.bpe.model" "$out/start2/"
  fi
  dest=$out/mlm2 masking=() steps=4000
  [[ $stage == wwm ]] && dest=$out/mlm-wwm masking=(--whole-word-mask)
  [[ $stage == rtd ]] && dest=$out/rtd masking=(--generator "$out/start2")
  [[ $stage == tapt ]] && dest=$out/tapt steps=3000
  resume=()
  compgen -G "$dest/checkpoint-*" >/dev/null && resume=(--resume)
  OMP_WAIT_POLICY=PASSIVE exec nice -n 5 "$bin" pretrain --model "$out/start2" --data "$tweets" --output "$dest" \
    "${masking[@]}" --max-steps "$steps" --batch-size 64 --max-length 64 --lr 5e-4 --adam-beta2 0.98 --weight-decay 0.01 \
    --warmup-steps 200 --validation-split-percentage 1 --eval-every 250 --logging-steps 50 \
    --save-total-limit 2 --seed 43 --threads "$threads" --no-progress "${resume[@]}"
fi
[[ $stage == scratch ]] || { echo "STAGE is scratch, continue, wwm, rtd or tapt, not '$stage'" >&2; exit 2; }
if [[ ! -f "$out/init/model.safetensors" ]]; then
  mkdir -p "$out"
  cat > "$out/config-4x256.json" <<'JSON'
{"architectures": ["XLMRobertaForSequenceClassification"], "model_type": "xlm-roberta",
 "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024,
 "vocab_size": 8002, "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1,
 "bos_token_id": 0, "eos_token_id": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-05,
 "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
 "position_embedding_type": "absolute"}
JSON
  "$bin" init --config "$out/config-4x256.json" --tokenizer "$tok" --labels negative,neutral,positive \
    --output "$out/init" --seed 42
  cp "$tok/sentencepiece.bpe.model" "$out/init/"
fi
resume=()
compgen -G "$out/mlm/checkpoint-*" >/dev/null && resume=(--resume)
OMP_WAIT_POLICY=PASSIVE exec nice -n 5 "$bin" pretrain --model "$out/init" --data "$tweets" --output "$out/mlm" \
  --max-steps 5000 --batch-size 64 --max-length 64 --lr 1e-3 --adam-beta2 0.98 --weight-decay 0.01 \
  --warmup-ratio 0.06 --validation-split-percentage 1 --eval-every 500 --logging-steps 50 \
  --save-total-limit 2 --seed 42 --threads "$threads" --no-progress "${resume[@]}"
