#!/usr/bin/env bash
# deploy/sagemaker/sagemaker.sh end to end against moto_server (the AWS API emulator) on
# loopback: package -> S3 -> training job -> model -> endpoint config -> endpoint (InService) ->
# autoscaling -> invoke -> delete, then delete again (idempotent), and list calls prove nothing
# is left. What moto proves: the calls, their parameters and their order are accepted by an
# implementation of the AWS APIs; NOT that SageMaker runs our image (moto runs no container:
# invoke-endpoint answers a canned "body", training jobs are "Completed" at once).
# Usage: test_sagemaker_scripts.sh path/to/roberta
set -euo pipefail
BIN=$(readlink -f "$1")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SM=$SRC/deploy/sagemaker/sagemaker.sh
command -v moto_server >/dev/null && command -v aws >/dev/null || { echo "skip: moto_server / aws not on PATH"; exit 77; }

WORK=$(mktemp -d /tmp/rc-sm-scripts.XXXXXX)
MOTO_PID=""
cleanup() { [ -n "$MOTO_PID" ] && kill "$MOTO_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
moto_server -H 127.0.0.1 -p "$PORT" > "$WORK/moto.log" 2>&1 &
MOTO_PID=$!
for _ in $(seq 100); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/moto-api/')" 2>/dev/null && break; sleep 0.2; done

export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT
export IMAGE_URI=123456789012.dkr.ecr.us-east-1.amazonaws.com/roberta:latest
export ROLE_ARN=arn:aws:iam::123456789012:role/SageMakerExecution
export NAME=rc-test INSTANCE_TYPE=ml.c5.xlarge   # moto's list predates Graviton: ml.c7g.* is refused there
aws_() { aws --endpoint-url "$AWS_ENDPOINT_URL" --output text "$@"; }

"$BIN" package --model "$SRC/tests/data/tiny" --output "$WORK/model.tar.gz" >/dev/null

t0=$(date +%s%N)
echo "== the reference pipeline's deploy steps, one run"
"$SM" upload "$WORK/model.tar.gz" > "$WORK/uri.txt"
[ "$(aws_ s3 ls "$(cat "$WORK/uri.txt")" | awk '{print $3}')" = "$(stat -c %s "$WORK/model.tar.gz")" ] || fail "uploaded size differs"
"$SM" deploy
[ "$(aws_ sagemaker describe-endpoint --endpoint-name rc-test --query EndpointStatus)" = InService ] || fail "endpoint not InService"
[ "$(aws_ sagemaker describe-endpoint-config --endpoint-config-name rc-test --query 'ProductionVariants[0].InstanceType')" = ml.c5.xlarge ] \
  || fail "instance type not passed"
[ "$(aws_ sagemaker describe-model --model-name rc-test --query PrimaryContainer.ModelDataUrl)" = "$(cat "$WORK/uri.txt")" ] || fail "model data URL"
"$SM" autoscale
[ "$(aws_ application-autoscaling describe-scaling-policies --service-namespace sagemaker \
      --query 'ScalingPolicies[0].TargetTrackingScalingPolicyConfiguration.PredefinedMetricSpecification.PredefinedMetricType')" \
  = SageMakerVariantInvocationsPerInstance ] || fail "no target-tracking policy"
"$SM" invoke "I love it" "meh" > "$WORK/answer.txt"
# moto answers every invocation with the static text "body": it proves the call, not the answer.
[ "$(cat "$WORK/answer.txt")" = body ] || fail "unexpected invoke answer: $(cat "$WORK/answer.txt")"
"$SM" delete --s3
t1=$(date +%s%N)
echo "pipeline: $(( (t1 - t0) / 1000000 )) ms"

echo "== nothing left behind"
[ -z "$(aws_ sagemaker list-endpoints --query 'Endpoints[].EndpointName')" ] || fail "endpoint left"
[ -z "$(aws_ sagemaker list-endpoint-configs --query 'EndpointConfigs[].EndpointConfigName')" ] || fail "endpoint config left"
[ -z "$(aws_ sagemaker list-models --query 'Models[].ModelName')" ] || fail "model left"
[ -z "$(aws_ application-autoscaling describe-scalable-targets --service-namespace sagemaker --query 'ScalableTargets[].ResourceId')" ] || fail "scalable target left"
[ -z "$(aws_ application-autoscaling describe-scaling-policies --service-namespace sagemaker --query 'ScalingPolicies[].PolicyName')" ] || fail "policy left"
[ -z "$(aws_ s3api list-buckets --query 'Buckets[].Name')" ] || fail "bucket left"

echo "== delete again: idempotent"
"$SM" delete --s3 2> "$WORK/delete2.log" || { cat "$WORK/delete2.log"; fail "second delete failed"; }
[ "$(grep -c 'already gone' "$WORK/delete2.log")" = 6 ] || { cat "$WORK/delete2.log"; fail "second delete did not skip all six"; }

echo "== a refused call is an error, not 'already gone'"
rc=0; INSTANCE_TYPE=ml.nope.large "$SM" deploy 2> "$WORK/bad.log" || rc=$?
[ "$rc" != 0 ] || fail "a refused instance type passed"
"$SM" delete >/dev/null 2>&1   # the model it created before the refusal

echo "== training job with our image, channels and metric definitions"
mkdir -p "$WORK/data"
head -n 32 "$SRC/data/tweeteval/sentiment/train_text.txt" > "$WORK/data/train_text.txt"
head -n 32 "$SRC/data/tweeteval/sentiment/train_labels.txt" > "$WORK/data/train_labels.txt"
START_MODEL_S3_URI=s3://roberta-demo-123456789012/rc-test/init/ HYPERPARAMETERS='{"epochs":"2","lr":"2e-5"}' \
  "$SM" train "$WORK/data" > "$WORK/artifact.txt"
job=$(aws_ sagemaker list-training-jobs --query 'TrainingJobSummaries[0].TrainingJobName')
[ "$(aws_ sagemaker describe-training-job --training-job-name "$job" --query 'HyperParameters.epochs')" = 2 ] || fail "hyperparameters"
[ "$(aws_ sagemaker describe-training-job --training-job-name "$job" --query 'CheckpointConfig.LocalPath')" = /opt/ml/checkpoints ] || fail "checkpoint config"
[ "$(aws_ sagemaker describe-training-job --training-job-name "$job" --query 'InputDataConfig[].ChannelName' | tr '\t' ' ')" = "train model" ] \
  || fail "channels train + model expected"
grep -q '^s3://.*model.tar.gz$' "$WORK/artifact.txt" || fail "train did not print the model artifact URI"
aws_ s3 ls "s3://roberta-demo-123456789012/rc-test/data/train/train_text.txt" >/dev/null || fail "channel data not uploaded"
"$SM" delete --s3 >/dev/null 2>&1
[ -z "$(aws_ s3api list-buckets --query 'Buckets[].Name')" ] || fail "bucket left after training"
echo "PASS (pipeline $(( (t1 - t0) / 1000000 )) ms)"
