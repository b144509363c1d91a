#!/usr/bin/env bash
# The reference pipeline's SageMaker steps with roberta.cpp's image, over the AWS CLI (v1 or v2).
#
# Usage: deploy/sagemaker/sagemaker.sh STEP [args]
#   upload MODEL.tar.gz        copy the package (`roberta package`) to s3://$BUCKET/$PREFIX/model.tar.gz
#   train [DATA_DIR]           optional: a managed spot training job with our image: channel `train` =
#                              DATA_DIR uploaded to S3 (a TweetEval folder or train/val/test files),
#                              channel `model` = $START_MODEL_S3_URI (an S3 prefix holding the starting
#                              HF folder), hyperparameters $HYPERPARAMETERS; prints the model.tar.gz URI
#   deploy                     model + endpoint config ($INSTANCE_TYPE) + endpoint, waits for InService
#   autoscale                  target tracking on SageMakerVariantInvocationsPerInstance ($TARGET_INVOCATIONS)
#   invoke TEXT...             POST {"inputs": [TEXT...]} to the endpoint and print the answer
#   delete [--s3]              scaling policy, endpoint, config, model (and S3 objects with --s3);
#                              idempotent: what is already gone is skipped, so it is safe to run twice
#   pipeline MODEL.tar.gz TEXT...   upload, deploy, autoscale, invoke, delete --s3, in a row
#   status                     what exists now
#
# Settings (environment): NAME (roberta-demo: names the model, config, endpoint, policy, job),
# BUCKET (roberta-demo-<account>), PREFIX (NAME), IMAGE_URI (your ECR image of deploy/Dockerfile),
# ROLE_ARN (an execution role SageMaker assumes), INSTANCE_TYPE (ml.c7g.4xlarge: Graviton, as the
# reference pipeline), INSTANCE_COUNT (1), MIN_CAPACITY (1), MAX_CAPACITY (4),
# TARGET_INVOCATIONS (100 invocations per instance per minute), TRAIN_INSTANCE_TYPE
# (INSTANCE_TYPE), HYPERPARAMETERS (JSON object of strings, e.g. '{"epochs":"3","lr":"2e-5"}'),
# AWS_ENDPOINT_URL (an emulator such as moto_server: passed to every call as --endpoint-url).
set -euo pipefail

NAME=${NAME:-roberta-demo}
INSTANCE_TYPE=${INSTANCE_TYPE:-ml.c7g.4xlarge}
INSTANCE_COUNT=${INSTANCE_COUNT:-1}
MIN_CAPACITY=${MIN_CAPACITY:-1}
MAX_CAPACITY=${MAX_CAPACITY:-4}
TARGET_INVOCATIONS=${TARGET_INVOCATIONS:-100}
TRAIN_INSTANCE_TYPE=${TRAIN_INSTANCE_TYPE:-$INSTANCE_TYPE}
HYPERPARAMETERS=${HYPERPARAMETERS:-'{"epochs":"3","lr":"2e-5","batch_size":"16"}'}
VARIANT=AllTraffic
RESOURCE_ID="endpoint/$NAME/variant/$VARIANT"
DIMENSION=sagemaker:variant:DesiredInstanceCount

die() { echo "sagemaker.sh: error: $*" >&2; exit "${EXIT:-1}"; }
log() { echo "sagemaker.sh: $*" >&2; }

# Every call goes through here: --endpoint-url when an emulator is named, JSON output.
awsc() {
  if [ -n "${AWS_ENDPOINT_URL:-}" ]; then aws --endpoint-url "$AWS_ENDPOINT_URL" --output json "$@"
  else aws --output json "$@"; fi
}

# Runs a delete call; "does not exist" answers are success (idempotent cleanup), anything
# else (no permission, throttling, a typo) is reported and fails the step.
delete_call() {
  local what=$1; shift
  local err
  if err=$(awsc "$@" 2>&1 >/dev/null); then log "deleted $what"; return 0; fi
  if grep -qiE 'could not find|not found|does not exist|NoSuchBucket|NoSuchKey|ObjectNotFound|No scalable target|No scaling policy|ResourceNotFound' <<<"$err"; then
    log "$what: already gone"; return 0
  fi
  echo "$err" >&2
  die "deleting $what failed"
}

need() { [ -n "${!1:-}" ] || EXIT=2 die "set $1 (${2})"; }

# The default bucket is per account (bucket names are global); asked once per run.
bucket() {
  [ -n "${BUCKET:-}" ] || BUCKET="roberta-demo-$(awsc sts get-caller-identity --query Account --output text)"
  echo "$BUCKET"
}
prefix() { echo "${PREFIX:-$NAME}"; }

ensure_bucket() {
  local b; b=$(bucket)
  awsc s3api head-bucket --bucket "$b" >/dev/null 2>&1 || { awsc s3 mb "s3://$b" >/dev/null; log "created bucket s3://$b"; }
}

step_upload() {
  [ $# -eq 1 ] && [ -f "$1" ] || EXIT=2 die "upload needs a model.tar.gz (roberta package --model DIR --output model.tar.gz)"
  ensure_bucket
  local uri; uri="s3://$(bucket)/$(prefix)/model.tar.gz"
  awsc s3 cp --only-show-errors "$1" "$uri"
  log "uploaded $1 to $uri"
  echo "$uri"
}

step_train() {
  need IMAGE_URI "the image of deploy/Dockerfile in ECR"; need ROLE_ARN "an execution role SageMaker can assume"
  local data=${1:-}
  ensure_bucket
  local b p job channels=""
  b=$(bucket); p=$(prefix); job="$NAME-$(date +%Y%m%d-%H%M%S)"
  if [ -n "$data" ]; then
    [ -d "$data" ] || EXIT=2 die "train: $data is not a folder"
    awsc s3 cp --only-show-errors --recursive "$data" "s3://$b/$p/data/train/"
    channels="[{\"ChannelName\":\"train\",\"DataSource\":{\"S3DataSource\":{\"S3DataType\":\"S3Prefix\",\"S3Uri\":\"s3://$b/$p/data/train/\",\"S3DataDistributionType\":\"FullyReplicated\"}}}"
    [ -n "${START_MODEL_S3_URI:-}" ] && channels+=",{\"ChannelName\":\"model\",\"DataSource\":{\"S3DataSource\":{\"S3DataType\":\"S3Prefix\",\"S3Uri\":\"$START_MODEL_S3_URI\",\"S3DataDistributionType\":\"FullyReplicated\"}}}"
    channels+="]"
  fi
  # The metric regexes SageMaker applies to the job's log (docs/deploy.md lists them).
  local algo
  algo=$(python3 -c 'import json,sys; print(json.dumps({"TrainingImage": sys.argv[1], "TrainingInputMode": "File",
    "MetricDefinitions": json.load(open(sys.argv[2]))}))' "$IMAGE_URI" "$(dirname "$0")/metric-definitions.json")
  awsc sagemaker create-training-job --training-job-name "$job" \
    --algorithm-specification "$algo" \
    --role-arn "$ROLE_ARN" \
    ${channels:+--input-data-config "$channels"} \
    --output-data-config "S3OutputPath=s3://$b/$p/output/" \
    --checkpoint-config "S3Uri=s3://$b/$p/checkpoints/$NAME/,LocalPath=/opt/ml/checkpoints" \
    --resource-config "InstanceType=$TRAIN_INSTANCE_TYPE,InstanceCount=1,VolumeSizeInGB=30" \
    --stopping-condition "MaxRuntimeInSeconds=86400,MaxWaitTimeInSeconds=172800" \
    --enable-managed-spot-training \
    --hyper-parameters "$HYPERPARAMETERS" >/dev/null
  log "training job $job started; waiting (spot interruptions resume from s3://$b/$p/checkpoints/$NAME/)"
  awsc sagemaker wait training-job-completed-or-stopped --training-job-name "$job"
  local status; status=$(awsc sagemaker describe-training-job --training-job-name "$job" --query TrainingJobStatus --output text)
  [ "$status" = Completed ] || die "training job $job: $status: $(awsc sagemaker describe-training-job --training-job-name "$job" --query FailureReason --output text)"
  awsc sagemaker describe-training-job --training-job-name "$job" --query ModelArtifacts.S3ModelArtifacts --output text
}

step_deploy() {
  need IMAGE_URI "the image of deploy/Dockerfile in ECR"; need ROLE_ARN "an execution role SageMaker can assume"
  local data_url=${MODEL_S3_URI:-s3://$(bucket)/$(prefix)/model.tar.gz}
  awsc sagemaker create-model --model-name "$NAME" --execution-role-arn "$ROLE_ARN" \
    --primary-container "Image=$IMAGE_URI,ModelDataUrl=$data_url,Environment={SAGEMAKER_CONTAINER_LOG_LEVEL=20}" >/dev/null
  log "model $NAME ($data_url)"
  awsc sagemaker create-endpoint-config --endpoint-config-name "$NAME" \
    --production-variants "VariantName=$VARIANT,ModelName=$NAME,InitialInstanceCount=$INSTANCE_COUNT,InstanceType=$INSTANCE_TYPE" >/dev/null
  log "endpoint config $NAME ($INSTANCE_COUNT x $INSTANCE_TYPE)"
  awsc sagemaker create-endpoint --endpoint-name "$NAME" --endpoint-config-name "$NAME" >/dev/null
  log "endpoint $NAME creating; waiting for InService"
  awsc sagemaker wait endpoint-in-service --endpoint-name "$NAME"
  local status; status=$(awsc sagemaker describe-endpoint --endpoint-name "$NAME" --query EndpointStatus --output text)
  [ "$status" = InService ] || die "endpoint $NAME is $status"
  log "endpoint $NAME InService"
}

step_autoscale() {
  awsc application-autoscaling register-scalable-target --service-namespace sagemaker \
    --resource-id "$RESOURCE_ID" --scalable-dimension "$DIMENSION" \
    --min-capacity "$MIN_CAPACITY" --max-capacity "$MAX_CAPACITY" >/dev/null
  awsc application-autoscaling put-scaling-policy --service-namespace sagemaker --policy-name "$NAME-invocations" \
    --resource-id "$RESOURCE_ID" --scalable-dimension "$DIMENSION" --policy-type TargetTrackingScaling \
    --target-tracking-scaling-policy-configuration "{\"TargetValue\":$TARGET_INVOCATIONS,\"PredefinedMetricSpecification\":{\"PredefinedMetricType\":\"SageMakerVariantInvocationsPerInstance\"},\"ScaleInCooldown\":300,\"ScaleOutCooldown\":60}" >/dev/null
  log "autoscaling $MIN_CAPACITY..$MAX_CAPACITY instances at $TARGET_INVOCATIONS invocations/instance/minute"
}

step_invoke() {
  [ $# -gt 0 ] || EXIT=2 die "invoke needs at least one text"
  local body out
  body=$(python3 -c 'import json,sys; print(json.dumps({"inputs": sys.argv[1:]}))' "$@")
  out=$(mktemp)
  # CLI v1 sends a literal --body as its bytes (v2 would need --cli-binary-format raw-in-base64-out).
  awsc sagemaker-runtime invoke-endpoint --endpoint-name "$NAME" --content-type application/json \
    --accept application/json --body "$body" "$out" >/dev/null
  cat "$out"; echo
  rm -f "$out"
}

step_delete() {
  local s3=0
  [ "${1:-}" = --s3 ] && s3=1
  delete_call "scaling policy $NAME-invocations" application-autoscaling delete-scaling-policy --service-namespace sagemaker \
    --policy-name "$NAME-invocations" --resource-id "$RESOURCE_ID" --scalable-dimension "$DIMENSION"
  delete_call "scalable target $RESOURCE_ID" application-autoscaling deregister-scalable-target --service-namespace sagemaker \
    --resource-id "$RESOURCE_ID" --scalable-dimension "$DIMENSION"
  delete_call "endpoint $NAME" sagemaker delete-endpoint --endpoint-name "$NAME"
  delete_call "endpoint config $NAME" sagemaker delete-endpoint-config --endpoint-config-name "$NAME"
  delete_call "model $NAME" sagemaker delete-model --model-name "$NAME"
  if [ "$s3" = 1 ]; then
    local b; b=$(bucket)
    if awsc s3api head-bucket --bucket "$b" >/dev/null 2>&1; then
      awsc s3 rm --only-show-errors --recursive "s3://$b/$(prefix)/"
      log "deleted s3://$b/$(prefix)/"
      # The bucket goes too when nothing else is in it (it may be shared).
      if [ -z "$(awsc s3api list-objects-v2 --bucket "$b" --max-items 1 --query 'Contents[].Key' --output text | grep -v None)" ]; then
        delete_call "bucket s3://$b" s3api delete-bucket --bucket "$b"
      fi
    else
      log "bucket s3://$b: already gone"
    fi
  fi
}

step_status() {
  echo "endpoints:        $(awsc sagemaker list-endpoints --name-contains "$NAME" --query 'Endpoints[].[EndpointName,EndpointStatus]' --output text | tr '\n\t' '; ')"
  echo "endpoint configs: $(awsc sagemaker list-endpoint-configs --name-contains "$NAME" --query 'EndpointConfigs[].EndpointConfigName' --output text)"
  echo "models:           $(awsc sagemaker list-models --name-contains "$NAME" --query 'Models[].ModelName' --output text)"
  echo "scalable targets: $(awsc application-autoscaling describe-scalable-targets --service-namespace sagemaker --query 'ScalableTargets[].ResourceId' --output text)"
  echo "scaling policies: $(awsc application-autoscaling describe-scaling-policies --service-namespace sagemaker --query 'ScalingPolicies[].PolicyName' --output text)"
}

step="${1:-}"
[ $# -gt 0 ] && shift
case "$step" in
  upload) step_upload "$@" ;;
  train) step_train "$@" ;;
  deploy) step_deploy ;;
  autoscale) step_autoscale ;;
  invoke) step_invoke "$@" ;;
  delete) step_delete "$@" ;;
  status) step_status ;;
  pipeline)
    [ $# -ge 2 ] || EXIT=2 die "pipeline needs MODEL.tar.gz and at least one text"
    pkg=$1; shift
    step_upload "$pkg" >/dev/null
    step_deploy
    step_autoscale
    step_invoke "$@"
    step_delete --s3 ;;
  -h|--help|"") sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; [ -n "$step" ] || exit 2 ;;
  *) EXIT=2 die "unknown step '$step' (see --help)" ;;
esac
