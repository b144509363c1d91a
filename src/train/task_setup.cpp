// The run's task and model (task_setup.h).
#include "train/task_setup.h"

#include "core/check.h"
#include "model/checkpoint.h"
#include "roberta/log.h"
#include "train/dataset.h"
#include "train/evaluator.h"
#include "train/label_mapping.h"
#include "train/run_setup.h"
#include "train/token_data.h"
#include "train/mlm_collator.h"
#include "train/replaced_tokens.h"
#include "core/json_depth.h"
#include "io/text_lines.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace rc::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The problem type of a new run (TrainOptions::problem_type's rule) and the labels it starts
// the head with.
std::pair<ProblemType, std::vector<std::string>> choose_problem(const TrainOptions& o, const Dataset& ds,
                                                                const fs::path& model_dir) {
  const model::RobertaConfig start = model::RobertaConfig::from_file(model_dir / "config.json");
  const bool start_classifier = model::head_kind_of(start.architectures) == model::HeadKind::classifier;
  std::optional<ProblemType> p;
  if (!o.problem_type.empty()) p = parse_problem_type(o.problem_type);
  if (!p) p = problem_type_of_data(ds);
  if (!p && start_classifier && !start.problem_type.empty() && o.labels.empty())
    p = parse_problem_type(start.problem_type);
  if (!p) p = o.labels.size() == 1 ? ProblemType::regression : ProblemType::single_label;
  std::vector<std::string> labels = o.labels;
  if (labels.empty()) {
    if (*p == ProblemType::multi_label)
      labels = multi_label_names(ds);
    else if (*p == ProblemType::single_label)
      labels = dataset_label_names(ds);
    else if (start_classifier && start.num_labels() == 1)
      labels = start.id2label;
    else
      labels = {"LABEL_0"};
  }
  return {*p, labels};
}

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// One text per line: .txt (the line without its ending), .jsonl ({"text": ...}), .csv / .tsv
// (a header row, the text column). Blank texts are dropped, as run_mlm.py's line_by_line does.
// Read by io/text_lines.h, as `train` reads its data: a UTF-8 BOM dropped, CRLF ends a line,
// NUL bytes (UTF-16, binary files) refused with the file and line named.
std::vector<std::string> read_texts(const fs::path& path, const std::string& column) {
  RC_CHECK(fs::is_regular_file(path), Errc::not_found, path.string(), ": no such file",
           "\nHINT: --data takes a .txt, .jsonl, .csv or .tsv file with one text per line");
  const std::string ext = path.extension().string();
  std::vector<std::string> texts;
  if (ext == ".jsonl" || ext == ".json") {
    int64_t line_no = 0;
    for (const std::string& line : io::read_text_lines(path)) {
      ++line_no;
      if (blank(line)) continue;
      check_json_depth(line, path.string() + ":" + std::to_string(line_no));
      json j;
      try {
        j = json::parse(line);
      } catch (const json::exception& e) {
        RC_THROW(Errc::format, path.string(), ":", line_no, ": not JSON (", e.what(), ")");
      }
      RC_CHECK(j.is_object() && j.contains(column) && j[column].is_string(), Errc::format, path.string(), ":", line_no,
               ": no string field '", column, "'\nHINT: pass --text-column NAME");
      texts.push_back(j[column].get<std::string>());
    }
  } else if (ext == ".csv" || ext == ".tsv") {
    // The text column doubles as the (unused) label column.
    TextSplit s = parse_delimited(io::read_text_file(path), ext == ".tsv" ? '\t' : ',', {column, column}, path);
    texts = std::move(s.texts);
  } else {
    texts = io::read_text_lines(path);
  }
  texts.erase(std::remove_if(texts.begin(), texts.end(), blank), texts.end());
  RC_CHECK(!texts.empty(), Errc::invalid_argument, path.string(), ": no texts");
  return texts;
}

std::string eval_counts(const std::vector<std::string>& names, const std::vector<int64_t>& sizes) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += ", " + std::to_string(sizes[i]) + " " + names[i];
  return s;
}

}  // namespace

bool is_token_task(const TrainOptions& o) {
  if (o.task == "token-classification") return true;
  RC_CHECK(o.task.empty() || o.task == "text-classification" || o.task == "embedding" || o.task == "cross-encoder",
           Errc::invalid_argument, "unknown --task '", o.task,
           "'\nHINT: use text-classification, token-classification, embedding or cross-encoder");
  if (o.task == "embedding" || o.task == "cross-encoder") return false;
  if (!o.task.empty() || o.model_dir.empty() || !fs::exists(o.model_dir / "config.json")) return false;
  const model::RobertaConfig start = model::RobertaConfig::from_file(o.model_dir / "config.json");
  return model::head_kind_of(start.architectures) == model::HeadKind::token_classifier;
}

TaskSetup setup_task(const TrainOptions& o, const fs::path& resume_dir, bool evaluate_splits) {
  if (is_token_task(o)) return setup_token_task(o, resume_dir, evaluate_splits);
  if (o.task == "embedding") return setup_embedding_task(o, resume_dir, evaluate_splits);
  if (o.task == "cross-encoder") return setup_cross_encoder_task(o, resume_dir, evaluate_splits);
  return setup_sequence_task(o, resume_dir, evaluate_splits);
}

TaskSetup setup_sequence_task(const TrainOptions& o, const fs::path& resume_dir, bool evaluate_splits) {
  const Dataset ds = load_dataset(o.data, DataColumns{o.text_column, o.label_column});
  const TextSplit* train_split = ds.find("train");
  RC_CHECK(train_split, Errc::not_found, "dataset ", o.data.string(), " has no train split");
  const std::vector<std::string> data_names = dataset_label_names(ds);
  const auto [problem0, problem_labels] = choose_problem(o, ds, o.model_dir);

  // As from_pretrained: a checkpoint without a classifier (RobertaModel, RobertaForMaskedLM)
  // loads its encoder, reports lm_head.* as unused and gets a new head, labels from the data.
  model::CheckpointLoadOptions lo;
  lo.init_head = true;
  lo.labels = problem_labels;
  lo.seed = o.seed;
  const bool resume = !resume_dir.empty();
  std::unique_ptr<model::RobertaModel> model =
      model::load_checkpoint(resume ? resume_dir : o.model_dir, resume ? model::CheckpointLoadOptions{} : lo);
  if (!resume) {
    // A new head when the labels change: --labels, or a problem type whose labels differ from
    // the starting classifier's (its multi-label names, one regression output).
    const bool new_labels = !o.labels.empty() || problem0 != ProblemType::single_label;
    if (new_labels && model->config().id2label != problem_labels) model = reheaded(*model, problem_labels, o.seed);
    model::RobertaConfig cfg = model->config();
    if (o.labels.empty() && is_default_label_names(cfg.id2label) && data_names.size() == cfg.id2label.size() &&
        problem0 == ProblemType::single_label)
      cfg.id2label = data_names;  // name the placeholder labels after the data
    cfg.problem_type = problem_type_name(problem0);
    model = with_config(*model, cfg);
  }
  const model::RobertaConfig& cfg = model->config();
  const int64_t K = cfg.num_labels();
  const ProblemType problem = problem_type_of(cfg);
  RC_CHECK(problem != ProblemType::single_label || K >= 2, Errc::invalid_argument, "the model has ", K,
           " label(s); single-label classification needs at least 2",
           "\nHINT: --problem-type regression for one output");
  RC_CHECK(problem != ProblemType::regression || K == 1, Errc::invalid_argument, "regression trains one output, the ",
           "model has ", K, "\nHINT: pass --labels NAME for a new one-output head");
  RC_CHECK(K >= 1, Errc::invalid_argument, "the model has no labels\nHINT: pass --labels a,b,c");

  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  model::check_tokenizer_fits(*tokenizer, cfg, o.model_dir);
  const int max_len = int(std::min<int64_t>(o.max_length, cfg.max_tokens()));
  PreparedSplit train = prepare_split(*train_split, data_names, cfg.id2label, *tokenizer, max_len, problem);
  std::vector<PreparedSplit> evals;
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  if (evaluate_splits)  // only rank 0 evaluates
    for (const char* name : {"val", "test"})
      if (const TextSplit* sp = ds.find(name)) {
        evals.push_back(prepare_split(*sp, data_names, cfg.id2label, *tokenizer, max_len, problem));
        evals.back().name = name;
        names.push_back(name);
        sizes.push_back(evals.back().tok.size());
      }
  TaskSetup t;
  t.layout = ds.layout;
  t.problem_type = problem_type_name(problem);
  t.eval_counts = eval_counts(names, sizes);
  t.task = sequence_classification_task(std::move(train), std::move(evals), problem, o.threshold);
  t.model = std::move(model);
  return t;
}

TaskSetup setup_token_task(const TrainOptions& o, const fs::path& resume_dir, bool evaluate_splits) {
  const TokenColumns columns{o.tokens_column, o.tags_column};
  const TaggedDataset ds = load_tagged_dataset(o.data, columns);
  const TaggedSplit* train_split = ds.find("train");
  RC_CHECK(train_split, Errc::not_found, "dataset ", o.data.string(), " has no train split");
  // The label list: --labels, else a token classifier's own (real) names, else the data's.
  const model::RobertaConfig start = model::RobertaConfig::from_file(o.model_dir / "config.json");
  std::vector<std::string> given = o.labels;
  if (given.empty() && model::head_kind_of(start.architectures) == model::HeadKind::token_classifier &&
      !is_default_label_names(start.id2label))
    given = start.id2label;
  const std::vector<std::string> labels = resolve_label_list(ds, given);

  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::token_classifier;
  lo.init_head = true;
  lo.labels = labels;
  lo.seed = o.seed;
  const bool resume = !resume_dir.empty();
  model::CheckpointLoadOptions resume_lo;
  resume_lo.head = model::HeadKind::token_classifier;
  std::unique_ptr<model::RobertaModel> model =
      model::load_checkpoint(resume ? resume_dir : o.model_dir, resume ? resume_lo : lo);
  if (!resume) {
    if (model->config().id2label != labels) model = reheaded(*model, labels, o.seed);
    model::RobertaConfig cfg = model->config();
    cfg.problem_type.clear();
    cfg.architectures = {"RobertaForTokenClassification"};
    model = with_config(*model, cfg);
  }
  const model::RobertaConfig& cfg = model->config();
  RC_CHECK(cfg.num_labels() >= 1, Errc::invalid_argument, "the model has no labels\nHINT: pass --labels O,B-PER,I-PER");
  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  model::check_tokenizer_fits(*tokenizer, cfg, o.model_dir);
  const int max_len = int(std::min<int64_t>(o.max_length, cfg.max_tokens()));
  TokenLabelledSplit train =
      tokenize_tagged_split(*tokenizer, *train_split, cfg.id2label, max_len, o.label_all_tokens, columns);
  std::vector<TokenLabelledSplit> evals;
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  if (evaluate_splits)
    for (const char* name : {"val", "test"})
      if (const TaggedSplit* sp = ds.find(name)) {
        evals.push_back(tokenize_tagged_split(*tokenizer, *sp, cfg.id2label, max_len, o.label_all_tokens, columns));
        names.push_back(name);
        sizes.push_back(evals.back().size());
      }
  TaskSetup t;
  t.layout = ds.layout;
  t.problem_type = "token_classification";
  t.eval_counts = eval_counts(names, sizes);
  t.task = token_classification_task(std::move(train), std::move(evals), std::move(names));
  t.model = std::move(model);
  return t;
}

TaskSetup setup_masked_lm_task(const PretrainOptions& o, const fs::path& resume_dir) {
  RC_CHECK(o.validation_split_percentage >= 0 && o.validation_split_percentage < 100, Errc::invalid_argument,
           "--validation-split-percentage must be in [0, 100)");
  const bool rtd = !o.generator.empty();
  const bool resume = !resume_dir.empty();
  std::unique_ptr<model::RobertaModel> model;
  if (!rtd) {
    model::CheckpointLoadOptions lo;
    lo.head = model::HeadKind::masked_lm;
    lo.init_head = true;
    lo.seed = o.seed;
    model = model::load_checkpoint(resume ? resume_dir : o.model_dir, lo);
  } else {
    // Replaced-token detection: a two-label token classifier over the start's encoder.
    const std::vector<std::string> labels{"original", "replaced"};
    model::CheckpointLoadOptions lo;
    lo.head = model::HeadKind::token_classifier;
    lo.init_head = !resume;
    lo.labels = labels;
    lo.seed = o.seed;
    model = model::load_checkpoint(resume ? resume_dir : o.model_dir, lo);
    if (!resume) {
      if (model->config().id2label != labels) model = reheaded(*model, labels, o.seed);
      model::RobertaConfig c = model->config();
      c.problem_type.clear();
      c.architectures = {"RobertaForTokenClassification"};
      model = with_config(*model, c);
    }
    RC_CHECK(model->config().id2label == labels, Errc::invalid_argument, (resume ? resume_dir : o.model_dir).string(),
             ": not a replaced-token detector (labels original, replaced)");
  }
  const model::RobertaConfig& cfg = model->config();
  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  RC_CHECK(tokenizer->vocab_size() <= cfg.vocab_size, Errc::invalid_argument, "the tokenizer has ",
           tokenizer->vocab_size(), " tokens, the model ", cfg.vocab_size);
  const int max_len = int(std::min<int64_t>(o.max_length, cfg.max_tokens()));

  // The held-out split is the last validation_split_percentage of the texts (run_mlm.py takes
  // train[:-p%] / train[-p%:]) unless --eval-data names a file.
  std::vector<std::string> texts = read_texts(o.data, o.text_column);
  std::vector<std::string> eval_texts;
  if (!o.eval_data.empty()) {
    eval_texts = read_texts(o.eval_data, o.text_column);
  } else if (o.validation_split_percentage > 0) {
    const size_t n_eval = texts.size() * size_t(o.validation_split_percentage) / 100;
    eval_texts.assign(texts.end() - std::ptrdiff_t(n_eval), texts.end());
    texts.resize(texts.size() - n_eval);
  }
  auto split = [&](const std::vector<std::string>& t) {
    MlmSplit s{mlm_examples(*tokenizer, t, max_len, o.group_texts), {}};
    if (o.whole_word_mask) s.word_starts = mlm_word_starts(*tokenizer, t, max_len, o.group_texts, s.examples);
    return s;
  };
  MlmSplit train = split(texts);
  std::optional<MlmSplit> eval;
  if (!eval_texts.empty()) eval = split(eval_texts);
  const MlmMasking masking = MlmMasking::for_tokenizer(*tokenizer, o.mlm_probability);
  std::unique_ptr<TokenReplacer> replacer;
  if (rtd) {
    const fs::path gen_dir = o.generator;
    RC_CHECK(fs::is_regular_file(gen_dir / "config.json"), Errc::not_found, gen_dir.string(),
             ": no config.json\nHINT: --generator takes a masked-LM folder (a `roberta pretrain` output)");
    const model::RobertaConfig gc = model::RobertaConfig::from_file(gen_dir / "config.json");
    RC_CHECK(model::head_kind_of(gc.architectures) == model::HeadKind::masked_lm, Errc::invalid_argument,
             gen_dir.string(), ": not a masked-LM model (architectures ",
             gc.architectures.empty() ? std::string("none") : gc.architectures.front(),
             ")\nHINT: --generator takes a masked-LM folder (a `roberta pretrain` output)");
    model::CheckpointLoadOptions glo;
    glo.head = model::HeadKind::masked_lm;
    std::shared_ptr<const model::RobertaModel> gen = model::load_checkpoint(gen_dir, glo);
    RC_CHECK(gen->config().vocab_size == cfg.vocab_size && gen->config().pad_token_id == cfg.pad_token_id,
             Errc::invalid_argument, "the generator's vocabulary (", gen->config().vocab_size,
             " tokens) is not the model's (", cfg.vocab_size,
             ")\nHINT: the generator and the model must share one tokenizer");
    const auto gen_tok = Tokenizer::from_dir(gen_dir);
    RC_CHECK(gen_tok->vocab_size() == tokenizer->vocab_size() && gen_tok->mask_id() == tokenizer->mask_id(),
             Errc::invalid_argument, "the generator's tokenizer (", gen_dir.string(),
             ") is not the model's\nHINT: the generator and the model must share one tokenizer");
    const int64_t max_T =
        std::max<int64_t>(std::max<int64_t>(1, train.examples.max_length()), eval ? eval->examples.max_length() : 1);
    replacer = std::make_unique<TokenReplacer>(std::move(gen), masking, o.seed,
                                               std::max<int64_t>(o.batch_size, o.eval_batch_size), max_T);
  }

  TaskSetup t;
  t.layout = std::string(o.group_texts ? "blocks of " + std::to_string(max_len) + " tokens" : "line by line") +
             (o.whole_word_mask ? ", whole-word masking" : "");
  t.problem_type = rtd ? "replaced_token_detection" : "masked_lm";
  if (rtd) t.layout += ", replaced-token detection (generator " + o.generator.string() + ")";
  t.eval_counts = eval ? ", " + std::to_string(eval->examples.size()) + " held-out" : "";
  t.load_best_at_end = false;  // run_mlm.py's Trainer default: the last weights
  // run_mlm.py's arguments: a resume with other ones is refused.
  nlohmann::json args{{"model_name_or_path", o.model_dir.string()},
                      {"train_file", o.data.string()},
                      {"validation_file", o.eval_data.string()},
                      {"validation_split_percentage", o.validation_split_percentage},
                      {"line_by_line", !o.group_texts},
                      {"max_seq_length", max_len},
                      {"mlm_probability", o.mlm_probability},
                      {"learning_rate", o.lr},
                      {"weight_decay", o.weight_decay},
                      {"max_grad_norm", o.max_grad_norm},
                      {"lr_scheduler_type", o.lr_scheduler},
                      {"warmup_ratio", o.warmup_ratio},
                      {"warmup_steps", o.warmup_steps},
                      {"adam_beta2", o.adam_beta2},
                      {"bf16", o.bf16}};
  // Only when on, so that runs started before the flag existed still resume.
  if (o.whole_word_mask) args["whole_word_mask"] = true;
  if (rtd) args["generator"] = o.generator.string();
  t.task_options = args.dump();
  t.task = rtd ? replaced_token_task(std::move(train), std::move(eval), std::move(replacer), cfg.pad_token_id,
                                     o.eval_batch_size)
               : masked_lm_task(std::move(train), std::move(eval), masking, o.seed);
  t.model = std::move(model);
  return t;
}

}  // namespace rc::train
