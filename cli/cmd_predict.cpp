// roberta predict: labels and scores for texts, as a transformers text-classification
// pipeline prints them, one JSON line per text in input order; for a token classifier (NER),
// the token-classification pipeline's entities.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "device/device_choice.h"
#include "core/check.h"
#include "core/tweet_text.h"
#include "model/checkpoint.h"
#include "model/token_classifier.h"
#include "roberta/classifier.h"
#include "model_source.h"
#include "text_input.h"

namespace rc::cli {

void add_predict_command(CLI::App& app) {
  struct Opts {
    std::string model, revision, input, precision, device = "cpu", function_to_apply, preprocess = "none";
    std::string aggregation = "none";
    std::vector<std::string> texts, text_pairs;
    int batch_size = 32, max_length = 0, threads = 0;
    bool logits = false, init_head = false;
  };
  auto opts = std::make_shared<Opts>();
  // The option table: alike in shape to every command's, on purpose (see commands.h).
  auto* cmd = app.add_subcommand("predict", "Classify texts with a Hugging Face RoBERTa checkpoint (CPU)");
  cmd->add_option("--model", opts->model,
                  "Checkpoint folder (config.json, model.safetensors or pytorch_model.bin, "
                  "tokenizer files) or a Hugging Face model id (org/name[@rev])")
      ->required();
  cmd->add_option("texts", opts->texts, "Texts to classify (default: --input, else one per stdin line)");
  cmd->add_option("--input", opts->input,
                  "A .txt file (one text per line) or .jsonl file ({\"text\": ...} per line; with \"text_pair\" "
                  "on every line, pairs)");
  cmd->add_option("--text-pair", opts->text_pairs,
                  "Second text of each pair, one per TEXT argument (NLI, paraphrase): encoded as HF's "
                  "tokenizer(text, text_pair), <s> a </s></s> b </s>");
  cmd->add_option("--batch-size", opts->batch_size,
                  "Texts per forward pass; texts are sorted by length first so "
                  "each batch pads only to its own longest")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-length", opts->max_length,
                  "Truncate to this many tokens incl. <s> </s> (default: the "
                  "model's limit, 512 for roberta-base)");
  cmd->add_option("--precision", opts->precision,
                  "fp32 (exact parity with transformers), bf16 (AVX512-BF16/AMX: several times faster, logits "
                  "within ~1e-2) or int8 (fastest, same label on >= 99% of texts). Default: bf16 where the CPU "
                  "runs it natively, else fp32");
  cmd->add_option("--function-to-apply", opts->function_to_apply,
                  "softmax, sigmoid or none: how logits become scores, overriding the rule of transformers' "
                  "text-classification pipeline (regression: none; multi-label or one label: sigmoid; else softmax)")
      ->check(CLI::IsMember({"softmax", "sigmoid", "none"}, CLI::ignore_case));
  cmd->add_option("--aggregation", opts->aggregation,
                  "Token classification (NER) models: none | simple | first | average | max, transformers' "
                  "aggregation_strategy; one JSON list of entities per text")
      ->capture_default_str();
  add_preprocess_option(*cmd, opts->preprocess);
  cmd->add_flag("--logits", opts->logits, "Also print the raw logits");
  cmd->add_flag("--init-head", opts->init_head, "Allow a body-only checkpoint; the head is random (for testing only)");
  add_revision_option(*cmd, opts->revision);
  add_threads_option(*cmd, opts->threads);
  add_device_option(*cmd, opts->device);
  cmd->callback([opts] {
    apply_threads(opts->threads);
    LoadOptions load;
    load.precision = opts->precision.empty() ? default_precision() : parse_precision(opts->precision);
    load.max_length = opts->max_length;
    load.init_head = opts->init_head;
    load.device = opts->device;
    if (!opts->function_to_apply.empty()) load.function_to_apply = parse_score_function(opts->function_to_apply);
    const TextPreprocess preprocess = parse_text_preprocess(opts->preprocess);
    resolve_device_choice(opts->device);  // no CUDA device: exit 4 before loading anything
    const std::filesystem::path dir = resolve_model_source(opts->model, opts->revision);
    const model::Aggregation aggregation = model::parse_aggregation(opts->aggregation);
    if (model::checkpoint_head_kind(dir) == model::HeadKind::token_classifier) {
      // transformers' TokenClassificationPipeline: one list of entities per text.
      RC_CHECK(opts->text_pairs.empty(), Errc::invalid_argument, "--text-pair: a token classifier tags single texts");
      auto tagger = model::TokenClassifier::load(dir, load);
      std::vector<std::string> texts = gather_texts(opts->texts, opts->input, nullptr);
      preprocess_texts(preprocess, texts);
      for (const model::TokenClassification& r : tagger->predict(texts, aggregation, opts->batch_size))
        std::printf("%s\n", model::token_classification_to_json(r)
                                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                                .c_str());
      std::fflush(stdout);
      return;
    }
    auto classifier = Classifier::load(dir, load);
    std::vector<std::string> pairs = opts->text_pairs;
    RC_CHECK(pairs.empty() || pairs.size() == opts->texts.size(), Errc::invalid_argument, "--text-pair given ",
             pairs.size(), " times for ", opts->texts.size(), " texts\nHINT: one --text-pair per TEXT argument");
    std::vector<std::string> texts = gather_texts(opts->texts, opts->input, pairs.empty() ? &pairs : nullptr);
    preprocess_texts(preprocess, texts);
    preprocess_texts(preprocess, pairs);
    const std::vector<Prediction> preds = pairs.empty() ? classifier->predict(texts, opts->batch_size)
                                                        : classifier->predict_pairs(texts, pairs, opts->batch_size);
    const auto& labels = classifier->labels();
    for (const Prediction& p : preds) {
      nlohmann::ordered_json j;
      j["label"] = p.label;
      j["score"] = p.score;
      nlohmann::ordered_json scores;
      for (size_t k = 0; k < labels.size(); ++k) scores[labels[k]] = p.scores[k];
      j["scores"] = scores;
      if (opts->logits) j["logits"] = p.logits;
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    std::fflush(stdout);
  });
}

}  // namespace rc::cli
