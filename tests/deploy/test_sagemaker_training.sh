#!/usr/bin/env bash
# `roberta train` as a SageMaker training job runs it: no flags, settings in /opt/ml. Each case
# runs in a mount namespace whose /opt/ml is a temporary folder (unshare -m + bind mount; needs
# root), so the binary sees exactly the paths SageMaker gives it, with no override:
#   - a job with train/validation/test channels and a model channel: HF folder in /opt/ml/model,
#     checkpoints in /opt/ml/checkpoints, metric lines matched by every regex of
#     deploy/sagemaker/metric-definitions.json (Python's re, as SageMaker's regexes are written);
#   - SIGTERM mid-run (a spot interruption): a checkpoint, exit within 120 s, a failure reason;
#     the restarted job resumes from the checkpoint and finishes;
#   - a bad hyperparameter value, an unknown one, a bad switch value, a missing train channel,
#     two hosts whose master does not resolve, a number out of range: non-zero exit with the
#     reason in /opt/ml/output/failure, that file at most 1,024 bytes (SageMaker keeps no more;
#     a 1 MB reason was written), and no staging folder left in the temporary folder;
#   - `roberta pretrain` as the job's command (ContainerArguments ["pretrain"]): text files from
#     the train and validation channels, a RobertaForMaskedLM folder in /opt/ml/model with its
#     perplexity; pretrain's own contract keys and unknown keys refused.
# Usage: test_sagemaker_training.sh path/to/roberta
set -euo pipefail
BIN=$(readlink -f "$1")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "skip: needs root (unshare -m, mount --bind)"; exit 77; }
unshare -m true 2>/dev/null || { echo "skip: unshare -m is not permitted here"; exit 77; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

WORK=$(mktemp -d /tmp/rc-sm-train.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
ML=$WORK/ml
fail() { echo "FAIL: $*" >&2; exit 1; }

# A fresh /opt/ml: channels train (TweetEval pair + mapping), validation (one CSV-free pair under
# another name: found by elimination), test, and a model channel holding the tiny fixture.
new_job() {
  rm -rf "$ML"
  mkdir -p "$ML/input/config" "$ML/input/data/train" "$ML/input/data/validation" "$ML/input/data/test" "$ML/output"
  local s=$SRC/data/tweeteval/sentiment
  head -n 64 "$s/train_text.txt" > "$ML/input/data/train/train_text.txt"
  head -n 64 "$s/train_labels.txt" > "$ML/input/data/train/train_labels.txt"
  cp "$s/mapping.txt" "$ML/input/data/train/"
  head -n 24 "$s/val_text.txt" > "$ML/input/data/validation/part-0_text.txt"
  head -n 24 "$s/val_labels.txt" > "$ML/input/data/validation/part-0_labels.txt"
  head -n 24 "$s/test_text.txt" > "$ML/input/data/test/test_text.txt"
  head -n 24 "$s/test_labels.txt" > "$ML/input/data/test/test_labels.txt"
  cp -r "$SRC/tests/data/tiny" "$ML/input/data/model"
  cat > "$ML/input/config/inputdataconfig.json" <<'JSON'
{"train": {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"},
 "validation": {"TrainingInputMode": "File"}, "test": {"TrainingInputMode": "File"}, "model": {"TrainingInputMode": "File"}}
JSON
  echo '{"current_host": "algo-1", "hosts": ["algo-1"], "network_interface_name": "eth0"}' > "$ML/input/config/resourceconfig.json"
  echo "$1" > "$ML/input/config/hyperparameters.json"
}

# Runs `roberta train` (no flags) with $ML as /opt/ml; a tmpfs over /opt keeps the host untouched.
job_cmd=(unshare -m sh -c 'mount -t tmpfs none /opt && mkdir /opt/ml && mount --bind "$1" /opt/ml && shift && exec "$@"' _ "$ML" "$BIN" train)

expect_failure() {  # expect_failure CODE TEXT HYPERPARAMETERS [setup]
  local code=$1 text=$2 hp=$3 rc=0
  new_job "$hp"
  [ -n "${4:-}" ] && eval "$4"
  rm -rf "$WORK/tmp" && mkdir "$WORK/tmp"  # the job's temporary folder: where it stages the channels
  TMPDIR=$WORK/tmp "${job_cmd[@]}" > "$WORK/out.txt" 2>&1 || rc=$?
  [ "$rc" = "$code" ] || { cat "$WORK/out.txt"; fail "expected exit $code, got $rc for ${hp:0:200}"; }
  [ -s "$ML/output/failure" ] || fail "no /opt/ml/output/failure for ${hp:0:200}"
  grep -qF -- "$text" "$ML/output/failure" || fail "failure file lacks '$text': $(head -c 300 "$ML/output/failure")"
  [ "$(head -c 1024 "$ML/output/failure" | grep -cF -- "$text")" -gt 0 ] || fail "'$text' not within the first 1,024 characters"
  local size; size=$(stat -c %s "$ML/output/failure")
  [ "$size" -le 1024 ] || fail "failure file of $size bytes (SageMaker keeps 1,024)"
  [ -z "$(ls -A "$WORK/tmp")" ] || fail "the failed job left $(ls "$WORK/tmp") in its temporary folder"
  [ ! -e "$ML/model/config.json" ] || fail "a failed job wrote a model"
  echo "ok: exit $code, failure: $(head -n1 "$ML/output/failure" | head -c 200)"
}

HP='{"epochs": "2", "batch_size": "16", "lr": "0.0005", "max_length": "48", "logging_steps": "1",
     "eval_every": "2", "seed": "7", "group_by_length": "false", "threads": "1",
     "sagemaker_region": "\"us-east-1\"", "_tuning_objective_metric": "validation:macro_recall"}'

echo "== 1. full job"
new_job "$HP"
"${job_cmd[@]}" > "$WORK/job.log" 2>&1 || { cat "$WORK/job.log"; fail "job failed: $(cat "$ML/output/failure" 2>/dev/null)"; }
for f in config.json model.safetensors vocab.json trainer_state.json eval_results.json; do
  [ -s "$ML/model/$f" ] || fail "/opt/ml/model/$f missing"
done
ls -d "$ML/checkpoints"/checkpoint-* >/dev/null || fail "no checkpoint in /opt/ml/checkpoints"
[ ! -e "$ML/model/checkpoint-2" ] || fail "checkpoints copied into /opt/ml/model"
[ ! -e "$ML/output/failure" ] || fail "failure file after a successful job"
grep -q "ignoring SageMaker's own hyperparameter 'sagemaker_region'" "$WORK/job.log" || fail "sagemaker_ hyperparameter not ignored"
"$PY" - "$SRC/deploy/sagemaker/metric-definitions.json" "$WORK/job.log" <<'PY'
import json, re, sys
defs = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read().splitlines()
for d in defs:
    values = [float(m.group(1)) for line in log for m in [re.search(d["Regex"], line)] if m]
    assert values, f"metric {d['Name']}: regex {d['Regex']!r} matched no line"
    print(f"ok: {d['Name']}: {len(values)} values, last {values[-1]}")
PY
steps=$(grep -c '^train: step' "$WORK/job.log")
[ "$steps" = 8 ] || fail "expected 8 logged steps (64 rows / 16 x 2 epochs), got $steps"

echo "== 2. SIGTERM (spot interruption) -> checkpoint within 120 s, then resume"
HP2='{"epochs": "2", "batch_size": "8", "lr": "0.0005", "max_length": "48", "eval_every": "1000", "logging_steps": "1", "threads": "1"}'
new_job "$HP2"
head -n 2000 "$SRC/data/tweeteval/sentiment/train_text.txt" > "$ML/input/data/train/train_text.txt"   # 500 steps
head -n 2000 "$SRC/data/tweeteval/sentiment/train_labels.txt" > "$ML/input/data/train/train_labels.txt"
mkdir -p "$WORK/tmp-term"
TMPDIR=$WORK/tmp-term "${job_cmd[@]}" > "$WORK/term.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q '^train: step' "$WORK/term.log" 2>/dev/null && break; sleep 0.05; done
grep -q '^train: step' "$WORK/term.log" || { kill -KILL $pid; fail "no training step within 30 s"; }
t0=$(date +%s%N)
kill -TERM $pid
rc=0; wait $pid || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "stopped with exit $rc, $ms ms after SIGTERM"
grep -q '^train: step 500/500' "$WORK/term.log" && fail "the job finished before SIGTERM arrived: give it more steps"
[ "$rc" != 0 ] || fail "SIGTERM-stopped job exited 0"
[ "$ms" -lt 120000 ] || fail "took $ms ms to stop (SageMaker allows 120 s)"
[ -z "$(ls -A "$WORK/tmp-term")" ] || fail "the interrupted job left $(ls "$WORK/tmp-term") in its temporary folder"
ckpt=$(ls -d "$ML/checkpoints"/checkpoint-* | head -n1)
[ -n "$ckpt" ] || fail "no checkpoint after SIGTERM"
grep -q "checkpoint" "$ML/output/failure" || fail "no interruption reason"
[ ! -e "$ML/model/config.json" ] || fail "an interrupted job published a model"
stopped_at=${ckpt##*-}
# The restarted job: same hyperparameters, /opt/ml/checkpoints restored by SageMaker.
rm -f "$ML/output/failure"
rc=0; "${job_cmd[@]}" > "$WORK/resume.log" 2>&1 || rc=$?
if [ "$rc" != 0 ]; then cat "$WORK/resume.log"; fail "resume failed ($rc)"; fi
grep -q "resuming from" "$WORK/resume.log" || fail "restarted job did not resume"
first=$(grep -m1 '^train: step' "$WORK/resume.log" | sed 's/train: step \([0-9]*\).*/\1/')
[ "$first" = $((stopped_at + 1)) ] || fail "resumed at step $first, expected $((stopped_at + 1))"
grep -q '^train: step 500/500' "$WORK/resume.log" || fail "resumed job did not finish"
[ -s "$ML/model/model.safetensors" ] || fail "resumed job wrote no model"
[ ! -e "$ML/output/failure" ] || fail "failure file after the resumed job succeeded"
echo "ok: stopped at step $stopped_at, resumed at step $first"

echo "== 3. errors -> /opt/ml/output/failure + non-zero exit"
expect_failure 2 "Could not convert: --lr = fast" '{"lr": "fast"}'
expect_failure 2 "unknown hyperparameter 'learning_rate'" '{"learning_rate": "1e-5"}'
expect_failure 2 "is a switch" '{"bf16": "maybe"}'
expect_failure 2 "cannot be set in a SageMaker job" '{"output": "/tmp/x"}'
expect_failure 3 "channel 'train' is missing" "$HP" 'rm -rf "$ML/input/data/train"; echo "{\"validation\": {}, \"model\": {}}" > "$ML/input/config/inputdataconfig.json"'
# Two hosts: data parallel, rank 0 = algo-1; here no such host resolves, so the rendezvous fails.
expect_failure 2 "cannot resolve MASTER_ADDR 'algo-1'" "$HP" 'echo "{\"current_host\": \"algo-1\", \"hosts\": [\"algo-1\", \"algo-2\"]}" > "$ML/input/config/resourceconfig.json"'
expect_failure 3 "hyperparameters.json: not valid JSON" '{"epochs": '
# After staging: the channels were linked into the temporary folder before the value was read.
expect_failure 2 "hyperparameter 'lr' is out of range: \"1e999\"" '{"lr": "1e999"}'
expect_failure 2 "Could not convert: --epochs = many" '{"epochs": "many"}'
# A reason of 1 MB (a hyperparameter name of a million bytes) is cut to what SageMaker keeps.
expect_failure 2 "unknown hyperparameter 'xxxxxxxx" "{\"$(head -c 1000000 /dev/zero | tr '\0' x)\": \"1\"}"
echo "== 4. pretrain as the job's command: texts from the channels, a masked-LM model out"
pretrain_job() {
  new_job "$1"
  rm -rf "$ML/input/data/train"/* "$ML/input/data/validation"/* "$ML/input/data/test"
  head -n 64 "$SRC/data/tweeteval/sentiment/train_text.txt" > "$ML/input/data/train/tweets.txt"
  head -n 16 "$SRC/data/tweeteval/sentiment/val_text.txt" | "$PY" -c 'import json,sys; [print(json.dumps({"text": l.rstrip("\n")})) for l in sys.stdin]' > "$ML/input/data/validation/part-0.jsonl"
  echo '{"train": {"TrainingInputMode": "File"}, "validation": {"TrainingInputMode": "File"}, "model": {}}' > "$ML/input/config/inputdataconfig.json"
}
pretrain_cmd=("${job_cmd[@]:0:${#job_cmd[@]}-1}" pretrain)
pretrain_job '{"max_steps": "4", "batch_size": "8", "max_length": "32", "mlm_probability": "0.2", "eval_every": "2", "logging_steps": "1", "threads": "1"}'
"${pretrain_cmd[@]}" > "$WORK/pretrain.log" 2>&1 || { cat "$WORK/pretrain.log"; fail "pretrain job failed: $(cat "$ML/output/failure" 2>/dev/null)"; }
grep -q '"RobertaForMaskedLM"' "$ML/model/config.json" || fail "/opt/ml/model is not a RobertaForMaskedLM folder"
grep -q '"perplexity"' "$ML/model/eval_results.json" || fail "no perplexity from the validation channel"
grep -q '16 held-out' "$WORK/pretrain.log" || { grep -i held "$WORK/pretrain.log"; fail "the validation channel's 16 texts were not the held-out split"; }
steps=$(grep -c '^train: step' "$WORK/pretrain.log")
[ "$steps" = 4 ] || fail "expected 4 logged pretraining steps, got $steps"
echo "ok: pretrain job wrote a masked-LM model with its perplexity"
pretrain_failure() {  # pretrain_failure TEXT HYPERPARAMETERS
  local rc=0
  pretrain_job "$2"
  "${pretrain_cmd[@]}" > "$WORK/out.txt" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { cat "$WORK/out.txt"; fail "expected exit 2, got $rc for $2"; }
  grep -qF -- "$1" "$ML/output/failure" || fail "failure file lacks '$1': $(head -c 300 "$ML/output/failure")"
  echo "ok: pretrain exit 2, failure: $(head -n1 "$ML/output/failure" | head -c 200)"
}
pretrain_failure "cannot be set in a SageMaker job" '{"eval_data": "/tmp/x.txt"}'
pretrain_failure "unknown hyperparameter 'labels'" '{"labels": "a,b"}'
echo "PASS"
