// `roberta train` (and `roberta pretrain`, e.g. as the job's ContainerArguments) inside a
// SageMaker training job: with no flags and
// /opt/ml/input/config/hyperparameters.json present, the settings come from SageMaker's files
// (src/train/sagemaker_env.h), the model goes to /opt/ml/model, checkpoints to
// /opt/ml/checkpoints (resumed after a spot interruption) and any error to /opt/ml/output/failure.
// See docs/deploy.md ("SageMaker training jobs").
#pragma once

#include <CLI/CLI.hpp>

namespace rc::cli {

// In a SageMaker job `train` / `pretrain` gets no flags: --model/--data/--output stop being
// required there.
void relax_required_flags_for_sagemaker(CLI::App& train_cmd);

// Called first by train's and pretrain's callbacks. Returns false when this is an ordinary run
// (flags given or no SageMaker config); otherwise runs the whole job (re-entering the same
// command with flags built from the hyperparameters and channels: train gets a staged dataset
// folder, pretrain the train / validation channels' text files) and returns true, or throws
// after writing the failure file.
bool run_sagemaker_training(CLI::App& train_cmd);

}  // namespace rc::cli
