// roberta embed — sentence embeddings as sentence-transformers' SentenceTransformer.encode
// computes them (model/sentence_transformer.h): one JSON list of floats per input text, in
// input order. roberta rerank — a cross-encoder's relevance of each document to a query (a
// one-label RobertaForSequenceClassification, as TEI's /rerank and sentence-transformers'
// CrossEncoder.rank): sigmoid of the logit unless --raw-scores, best first.
#include <cmath>
#include <cstdio>
#include <numeric>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/check.h"
#include "device/device_choice.h"
#include "model/param_layout.h"
#include "model/roberta_config.h"
#include "model/sentence_transformer.h"
#include "model_source.h"
#include "roberta/classifier.h"
#include "text_input.h"

namespace rc::cli {

void add_embed_command(CLI::App& app) {
  struct Flags {
    std::string model, input, prompt_name, pooling, precision, device = "cpu", revision;
    std::vector<std::string> texts;
    bool normalize = false, no_normalize = false;  // neither: the folder's Normalize module decides
    int64_t dimensions = 0;
    int batch_size = 32, max_length = 0, threads = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "embed", "Sentence embeddings (sentence-transformers folders; a RobertaModel folder with --pooling)");
  cmd->add_option("--model", f->model, "sentence-transformers folder (modules.json), model folder or Hub id")
      ->required();
  cmd->add_option("texts", f->texts, "Texts to embed (default: --input, else one per stdin line)");
  cmd->add_option("--input", f->input, ".txt (one text per line) or .jsonl ({\"text\": ...} per line); - for stdin");
  cmd->add_option("--prompt-name", f->prompt_name,
                  "A key of config_sentence_transformers.json's prompts, prepended to every text "
                  "(default: its default_prompt_name, if any)");
  cmd->add_option("--pooling", f->pooling,
                  "cls | mean | max | mean_sqrt_len_tokens | weightedmean | lasttoken: required for a plain model "
                  "folder, overrides a sentence-transformers folder's Pooling module");
  auto* norm = cmd->add_flag("--normalize", f->normalize,
                             "L2-normalise the embeddings (default: when the folder has a Normalize module)");
  cmd->add_flag("--no-normalize", f->no_normalize, "Do not normalise, even with a Normalize module")->excludes(norm);
  cmd->add_option("--dimensions", f->dimensions,
                  "Matryoshka: keep the first N values, then L2-normalise again when normalising")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  cmd->add_option("--batch-size", f->batch_size, "Texts per forward pass")->capture_default_str();
  cmd->add_option("--max-length", f->max_length,
                  "Tokens per text incl. <s> </s> (default: sentence_bert_config.json's max_seq_length, else the "
                  "model's limit)");
  cmd->add_option("--precision", f->precision, "fp32 | bf16 | int8 (default: bf16 where the CPU runs it fast)");
  add_revision_option(*cmd, f->revision);
  add_threads_option(*cmd, f->threads);
  add_device_option(*cmd, f->device);
  cmd->callback([f] {
    apply_threads(f->threads);
    resolve_device_choice(f->device);
    model::EmbedderOptions o;
    o.precision = f->precision.empty() ? default_precision() : parse_precision(f->precision);
    o.max_length = f->max_length;
    o.device = f->device;
    o.pooling = f->pooling;
    const auto embedder = model::Embedder::load(resolve_model_source(f->model, f->revision), o);
    RC_CHECK(f->dimensions <= embedder->dimension(), Errc::invalid_argument, "--dimensions ", f->dimensions,
             " is more than the model's embedding dimension ", embedder->dimension());
    const std::vector<std::string> texts = gather_texts(f->texts, f->input);
    const bool normalize = f->normalize || (!f->no_normalize && embedder->config().normalize);
    // Pooled (+ Dense) vectors, then truncation, then normalisation: a truncated vector is
    // renormalised (sentence-transformers' truncate_dim with normalize_embeddings).
    for (std::vector<float>& v : embedder->encode_texts(texts, f->prompt_name, f->batch_size, 0)) {
      model::truncate_embedding(v, f->dimensions, normalize);
      std::printf("%s\n", nlohmann::json(v).dump().c_str());
    }
    std::fflush(stdout);
  });
}

// Refused from config.json alone, before the weights load: a token classifier or a masked LM
// would otherwise load as a sequence classifier first (HF's semantics: a BERT token head fits
// BertForSequenceClassification's shapes, so only a warning about the fresh pooler is printed).
static void require_cross_encoder(const std::string& dir) {
  const model::RobertaConfig c = model::RobertaConfig::from_file(std::filesystem::path(dir) / "config.json");
  const std::string what =
      c.architectures.empty() ? std::string("a config.json without \"architectures\"") : "a " + c.architectures[0];
  RC_CHECK(model::head_kind_of(c.architectures) == model::HeadKind::classifier && c.num_labels() == 1,
           Errc::invalid_argument, "--model ", dir, " holds ", what, " with ", c.num_labels(),
           c.num_labels() == 1 ? " label" : " labels", ": a cross-encoder (reranker) is a sequence classifier with one",
           "\nHINT: rerank with a model trained with one label, e.g. a cross-encoder/ms-marco-* checkpoint");
}

void add_rerank_command(CLI::App& app) {
  struct Flags {
    std::string model, query, input, precision, device = "cpu", revision;
    std::vector<std::string> texts;
    bool raw_scores = false, return_text = false;
    int batch_size = 32, max_length = 0, threads = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd =
      app.add_subcommand("rerank", "Rank documents against a query with a cross-encoder (one-label classifier)");
  cmd->add_option("--model", f->model, "A one-label RobertaForSequenceClassification folder or Hub id")->required();
  cmd->add_option("--query", f->query, "The query every document is scored against")->required();
  cmd->add_option("texts", f->texts, "Documents (default: --input, else one per stdin line)");
  cmd->add_option("--input", f->input,
                  ".jsonl ({\"text\": ...} per line) or .txt (one document per line); - for stdin");
  cmd->add_flag("--raw-scores", f->raw_scores, "The logits, not their sigmoid");
  cmd->add_flag("--return-text", f->return_text, "Print each document's text beside its score");
  cmd->add_option("--batch-size", f->batch_size, "Pairs per forward pass")->capture_default_str();
  cmd->add_option("--max-length", f->max_length, "Tokens per (query, document) pair incl. specials");
  cmd->add_option("--precision", f->precision, "fp32 | bf16 | int8 (default: bf16 where the CPU runs it fast)");
  add_revision_option(*cmd, f->revision);
  add_threads_option(*cmd, f->threads);
  add_device_option(*cmd, f->device);
  cmd->callback([f] {
    apply_threads(f->threads);
    resolve_device_choice(f->device);
    LoadOptions load;
    load.precision = f->precision.empty() ? default_precision() : parse_precision(f->precision);
    load.max_length = f->max_length;
    load.device = f->device;
    load.function_to_apply = ScoreFunction::none;  // the logits; the sigmoid is applied below
    const std::string dir = resolve_model_source(f->model, f->revision);
    require_cross_encoder(dir);
    const auto model = Classifier::load(dir, load);
    const std::vector<std::string> docs = gather_texts(f->texts, f->input);
    const std::vector<std::string> queries(docs.size(), f->query);
    const std::vector<Prediction> preds = model->predict_pairs(queries, docs, f->batch_size);
    std::vector<float> scores(preds.size());
    for (size_t i = 0; i < preds.size(); ++i) {
      const float logit = preds[i].logits[0];
      // TEI's predict (core/src/infer.rs): sigmoid for a one-label model unless raw_scores.
      scores[i] = f->raw_scores ? logit : 1.0f / (1.0f + std::exp(-logit));
    }
    std::vector<size_t> order(scores.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    for (size_t i : order) {
      nlohmann::ordered_json j;
      j["index"] = i;
      if (f->return_text) j["text"] = docs[i];
      j["score"] = scores[i];
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    std::fflush(stdout);
  });
}

}  // namespace rc::cli
