// The sentence-transformers tasks on the one training loop (task.h, task_setup.h):
//   - embedding: MultipleNegativesRankingLoss (sentence_transformers/losses/
//     MultipleNegativesRankingLoss.py: scores = cos_sim(anchors, cat(positives, negatives)) ·
//     scale 20, cross-entropy of anchor i against candidate i; the other rows' positives and
//     every hard negative are its negatives) on JSONL {"anchor", "positive"[, "negative"]}.
//     One micro-batch holds the anchors, then their positives, then the negatives (mnrl.h);
//     the gradient runs back through any Dense modules (models/Dense.py, trained as parameters
//     beside the encoder's: Task::extra_params) and the pooling into the encoder. The held-out split is
//     scored as InformationRetrievalEvaluator does (ir_metrics.h: anchors are the queries, the
//     positives and negatives the corpus), or, for {"sentence1", "sentence2", "score"} rows,
//     as EmbeddingSimilarityEvaluator (Spearman of the cosine similarities).
//   - cross-encoder: sentence-transformers' CrossEncoder with num_labels 1
//     (cross_encoder/CrossEncoder.py fit: BCEWithLogitsLoss on logits.view(-1) against float
//     labels) on JSONL {"query", "text", "label"}: the sequence-classification task over
//     tokenizer(query, text) with one output and the multi-label (BCE) loss; held-out splits
//     also get CERerankingEvaluator's ranking metrics (ir_metrics.h reranking_metrics).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <map>
#include <optional>

#include "core/check.h"
#include "core/clock.h"
#include "core/json_depth.h"
#include "io/text_lines.h"
#include "model/checkpoint.h"
#include "model/hidden_states.h"
#include "model/sentence_transformer.h"
#include "roberta/log.h"
#include "train/checkpoint_dir.h"
#include "train/evaluator.h"
#include "train/ir_metrics.h"
#include "train/label_mapping.h"
#include "train/run_setup.h"
#include "train/task.h"
#include "train/task_setup.h"

namespace rc::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr float kMnrlScale = 20.0f;  // MultipleNegativesRankingLoss's default

// --data: one JSONL file (the train split), or a folder with train.jsonl and optionally
// val.jsonl (validation / dev / eval) and test.jsonl.
std::map<std::string, fs::path> split_files(const fs::path& data) {
  std::map<std::string, fs::path> out;
  if (fs::is_regular_file(data)) {
    out["train"] = data;
    return out;
  }
  RC_CHECK(fs::is_directory(data), Errc::not_found, data.string(), ": no such file or folder",
           "\nHINT: --data takes a .jsonl file or a folder with train.jsonl [val.jsonl test.jsonl]");
  for (const auto& [split, stems] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"train", {"train"}}, {"val", {"val", "validation", "dev", "eval"}}, {"test", {"test"}}})
    for (const std::string& stem : stems)
      if (!out.count(split) && fs::is_regular_file(data / (stem + ".jsonl"))) out[split] = data / (stem + ".jsonl");
  RC_CHECK(out.count("train"), Errc::not_found, data.string(), " has no train.jsonl");
  return out;
}

std::vector<json> read_jsonl(const fs::path& path) {
  std::vector<json> rows;
  int64_t line_no = 0;
  for (const std::string& line : io::read_text_lines(path)) {
    ++line_no;
    if (std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); })) continue;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    check_json_depth(line, where);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      RC_THROW(Errc::format, where, ": not JSON (", e.what(), ")");
    }
    RC_CHECK(j.is_object(), Errc::format, where, ": not a JSON object");
    rows.push_back(std::move(j));
  }
  RC_CHECK(!rows.empty(), Errc::invalid_argument, path.string(), ": no rows");
  return rows;
}

std::string text_field(const json& row, const char* key, const fs::path& path, size_t i) {
  RC_CHECK(row.contains(key) && row[key].is_string(), Errc::format, path.string(), ": row ", i + 1,
           ": no string field '", key, "'");
  return row[key].get<std::string>();
}

double number_field(const json& row, const char* key, const fs::path& path, size_t i) {
  RC_CHECK(row.contains(key) && row[key].is_number(), Errc::format, path.string(), ": row ", i + 1,
           ": no number field '", key, "'");
  const double v = row[key].get<double>();
  RC_CHECK(std::isfinite(v), Errc::format, path.string(), ": row ", i + 1, ": '", key, "' is not finite");
  return v;
}

TokenizedSplit tokenize_texts(const Tokenizer& tok, const std::vector<std::string>& texts, int max_len) {
  const std::vector<int32_t> zeros(texts.size(), 0);
  return tokenize_split(tok, texts, zeros, max_len);
}

// Anchors, their positives and (all rows or none) hard negatives, row i of each together.
struct Triplets {
  TokenizedSplit anchor, positive, negative;
  bool has_negative() const { return negative.size() > 0; }
  int64_t size() const { return anchor.size(); }
  int64_t columns() const { return has_negative() ? 3 : 2; }
};

// The retrieval view of a split (InformationRetrievalEvaluator's queries, corpus and
// relevant_docs): distinct anchor texts are the queries, distinct positive and negative texts
// the corpus; a query's relevant documents are the positives of every row with its text.
struct RetrievalSplit {
  TokenizedSplit queries, corpus;
  std::vector<std::vector<int64_t>> relevant;
};

// EmbeddingSimilarityEvaluator's rows.
struct ScoredPairs {
  TokenizedSplit first, second;
  std::vector<double> scores;
};

struct EmbeddingEvalSplit {
  std::string name;
  std::optional<Triplets> rows;  // retrieval (and the held-out loss)
  RetrievalSplit retrieval;
  std::optional<ScoredPairs> pairs;  // similarity
  int64_t size() const { return rows ? rows->size() : pairs->scores.size(); }
  int32_t max_length() const {
    if (!rows) return std::max(pairs->first.max_length(), pairs->second.max_length());
    return std::max({retrieval.queries.max_length(), retrieval.corpus.max_length(), rows->anchor.max_length(),
                     rows->positive.max_length(), rows->has_negative() ? rows->negative.max_length() : 0});
  }
};

Triplets read_triplets(const Tokenizer& tok, const std::vector<json>& rows, const fs::path& path, int max_len,
                       std::vector<std::string>* anchors_out = nullptr,
                       std::vector<std::string>* positives_out = nullptr,
                       std::vector<std::string>* negatives_out = nullptr) {
  std::vector<std::string> a, p, n;
  const bool negatives = rows.front().contains("negative");
  for (size_t i = 0; i < rows.size(); ++i) {
    a.push_back(text_field(rows[i], "anchor", path, i));
    p.push_back(text_field(rows[i], "positive", path, i));
    RC_CHECK(rows[i].contains("negative") == negatives, Errc::format, path.string(), ": row ", i + 1,
             negatives ? " has no 'negative'" : " has a 'negative'", " unlike the first row",
             "\nHINT: give every row a hard negative, or none");
    if (negatives) n.push_back(text_field(rows[i], "negative", path, i));
  }
  Triplets t;
  t.anchor = tokenize_texts(tok, a, max_len);
  t.positive = tokenize_texts(tok, p, max_len);
  if (negatives) t.negative = tokenize_texts(tok, n, max_len);
  if (anchors_out) *anchors_out = std::move(a);
  if (positives_out) *positives_out = std::move(p);
  if (negatives_out) *negatives_out = std::move(n);
  return t;
}

EmbeddingEvalSplit read_eval_split(const Tokenizer& tok, const std::string& name, const fs::path& path, int max_len) {
  const std::vector<json> rows = read_jsonl(path);
  EmbeddingEvalSplit s;
  s.name = name;
  if (rows.front().contains("sentence1")) {
    std::vector<std::string> a, b;
    ScoredPairs p;
    for (size_t i = 0; i < rows.size(); ++i) {
      a.push_back(text_field(rows[i], "sentence1", path, i));
      b.push_back(text_field(rows[i], "sentence2", path, i));
      p.scores.push_back(number_field(rows[i], "score", path, i));
    }
    p.first = tokenize_texts(tok, a, max_len);
    p.second = tokenize_texts(tok, b, max_len);
    s.pairs = std::move(p);
    return s;
  }
  std::vector<std::string> a, p, n;
  s.rows = read_triplets(tok, rows, path, max_len, &a, &p, &n);
  std::map<std::string, int64_t> query_of, doc_of;
  std::vector<std::string> queries, corpus;
  auto doc = [&](const std::string& text) {
    auto [it, added] = doc_of.emplace(text, int64_t(corpus.size()));
    if (added) corpus.push_back(text);
    return it->second;
  };
  for (size_t i = 0; i < a.size(); ++i) {
    auto [it, added] = query_of.emplace(a[i], int64_t(queries.size()));
    if (added) {
      queries.push_back(a[i]);
      s.retrieval.relevant.emplace_back();
    }
    std::vector<int64_t>& rel = s.retrieval.relevant[size_t(it->second)];
    const int64_t d = doc(p[i]);
    if (std::find(rel.begin(), rel.end(), d) == rel.end()) rel.push_back(d);
  }
  for (const std::string& text : n) doc(text);
  s.retrieval.queries = tokenize_texts(tok, queries, max_len);
  s.retrieval.corpus = tokenize_texts(tok, corpus, max_len);
  return s;
}

// Rows idx of each split in `columns`, back to back (column-major: every row of the first,
// then of the second, ...), right-padded to the longest row of them all.
void fill_columns(std::span<const TokenizedSplit* const> columns, std::span<const int64_t> idx, int32_t pad_id,
                  PaddedBatch& out) {
  const int64_t n = int64_t(idx.size());
  out.B = n * int64_t(columns.size());
  out.T = 0;
  out.tokens = 0;
  for (const TokenizedSplit* c : columns)
    for (int64_t i : idx) out.T = std::max<int64_t>(out.T, c->lengths[size_t(i)]);
  out.ids.resize(size_t(out.B * out.T));  // within the reserved capacity: no allocation per step
  out.seq_lens.resize(size_t(out.B));
  int64_t r = 0;
  for (const TokenizedSplit* c : columns)
    for (int64_t i : idx) {
      const int32_t len = c->lengths[size_t(i)];
      const int32_t* src = c->ids.data() + c->offsets[size_t(i)];
      int32_t* dst = out.ids.data() + r * out.T;
      std::copy(src, src + len, dst);
      std::fill(dst + len, dst + out.T, pad_id);
      out.seq_lens[size_t(r)] = len;
      out.tokens += len;
      ++r;
    }
}

// The embeddings (N, D) of a split, eval mode, in batches of the workspace's size: pooled,
// then through each Dense module (D: the last one's out_features, else hidden_size).
std::vector<float> embed_split(const kernels::ExecCtx& ctx, const model::RobertaModel& model,
                               const model::PoolingConfig& pooling, std::span<const model::DenseLayer> dense,
                               const TokenizedSplit& s, int64_t batch_size, model::InferenceWorkspace& ws) {
  const int64_t C = model.config().hidden_size, N = s.size();
  const int64_t B = std::min(batch_size, ws.max_B());
  std::vector<float> out(size_t(N * C)), hidden;
  PaddedBatch pb;
  pb.reserve(B, s.max_length());
  std::vector<int64_t> idx;
  for (int64_t i0 = 0; i0 < N; i0 += B) {
    idx.clear();
    for (int64_t i = i0; i < std::min(N, i0 + B); ++i) idx.push_back(i);
    fill_batch(s, idx, model.config().pad_token_id, pb);
    hidden.resize(size_t(pb.B * pb.T * C));
    model::forward_hidden_states(ctx, model, model::Batch{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr}, ws,
                                 hidden.data());
    model::pool_hidden_states(pooling, hidden.data(), pb.seq_lens.data(), nullptr, pb.B, pb.T, C, out.data() + i0 * C);
  }
  for (const model::DenseLayer& d : dense) {
    std::vector<float> y(size_t(N * d.out_features));
    d.forward(out.data(), N, y.data());
    out.swap(y);
  }
  return out;
}

// MultipleNegativesRankingLoss of pooled embeddings: anchors (A, C) against candidates (N, C),
// anchor i's positive is candidate i. The sum over anchors (not the mean), in double.
double mnrl_loss_sum(const float* anchors, int64_t A, const float* candidates, int64_t N, int64_t C, float scale) {
  std::vector<double> s(static_cast<size_t>(N));
  double sum = 0;
  for (int64_t i = 0; i < A; ++i) {
    double mx = -1e300;
    for (int64_t j = 0; j < N; ++j) {
      s[size_t(j)] = double(scale) * model::cosine_similarity(std::span<const float>(anchors + i * C, size_t(C)),
                                                              std::span<const float>(candidates + j * C, size_t(C)));
      mx = std::max(mx, s[size_t(j)]);
    }
    double z = 0;
    for (int64_t j = 0; j < N; ++j) z += std::exp(s[size_t(j)] - mx);
    sum += mx + std::log(z) - s[size_t(i)];
  }
  return sum;
}

class EmbeddingTask final : public Task {
 public:
  EmbeddingTask(Triplets train, std::vector<EmbeddingEvalSplit> evals, model::SentenceTransformerConfig st,
                int64_t hidden, int max_seq_length, std::string start_dir)
      : train_(std::move(train)),
        evals_(std::move(evals)),
        st_(std::move(st)),
        hidden_(hidden),
        max_seq_length_(max_seq_length),
        start_dir_(std::move(start_dir)) {
    // The loop's view of an example: all of its texts' ids (the data's fingerprint), its
    // longest text's length (the batch's T, --group-by-length).
    const TokenizedSplit* cols[] = {&train_.anchor, &train_.positive, &train_.negative};
    summary_.offsets.push_back(0);
    for (int64_t i = 0; i < train_.size(); ++i) {
      int32_t longest = 0;
      for (int64_t c = 0; c < train_.columns(); ++c) {
        const TokenizedSplit& s = *cols[c];
        summary_.ids.insert(summary_.ids.end(), s.ids.begin() + s.offsets[size_t(i)],
                            s.ids.begin() + s.offsets[size_t(i) + 1]);
        longest = std::max(longest, s.lengths[size_t(i)]);
      }
      summary_.offsets.push_back(int64_t(summary_.ids.size()));
      summary_.lengths.push_back(longest);
      summary_.labels.push_back(0);
    }
  }
  const TokenizedSplit& train_examples() const override { return summary_; }
  int64_t rows_per_example() const override { return train_.columns(); }
  void reserve(TaskBatch& b, int64_t max_B, int64_t max_T) const override {
    b.pb.reserve(max_B * train_.columns(), max_T);
  }
  void collate(std::span<const int64_t> idx, int64_t, int32_t pad_id, TaskBatch& out) const override {
    const TokenizedSplit* cols[] = {&train_.anchor, &train_.positive, &train_.negative};
    fill_columns(std::span<const TokenizedSplit* const>(cols, size_t(train_.columns())), idx, pad_id, out.pb);
    out.ranking.anchors = int64_t(idx.size());
    out.ranking.scale = kMnrlScale;
    out.ranking.pooling = st_.pooling.modes.front();
    out.ranking.dense = st_.dense;
  }
  model::Targets targets(const TaskBatch& b) const override {
    model::Targets t;
    t.ranking = &b.ranking;
    return t;
  }
  bool has_split(const std::string& name) const override { return find(name) != nullptr; }
  int64_t max_eval_length() const override {
    int64_t T = 1;
    for (const EmbeddingEvalSplit& s : evals_) T = std::max<int64_t>(T, s.max_length());
    return T;
  }
  EvalResult evaluate(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const std::string& split,
                      int64_t batch_size, model::InferenceWorkspace& ws) const override {
    const EmbeddingEvalSplit* s = find(split);
    RC_CHECK(s, Errc::not_found, "no '", split, "' split");
    const double t0 = monotonic_seconds();
    EvalResult e;
    e.split = split;
    e.num_examples = s->size();
    e.problem_type = "embedding";
    const int64_t C = st_.dense.empty() ? hidden_ : st_.dense.back().out_features;
    auto embed = [&](const TokenizedSplit& texts) {
      return embed_split(ctx, model, st_.pooling, st_.dense, texts, batch_size, ws);
    };
    if (s->pairs) {
      const auto a = embed(s->pairs->first);
      const auto b = embed(s->pairs->second);
      e.metrics = similarity_metrics(a, b, C, s->pairs->scores);
    } else {
      const Triplets& t = *s->rows;
      // The held-out loss: MultipleNegativesRankingLoss over batches of batch_size rows in
      // order (each batch's in-batch negatives), the mean over anchors.
      const auto anchors = embed(t.anchor);
      const auto positives = embed(t.positive);
      std::vector<float> negatives;
      if (t.has_negative()) negatives = embed(t.negative);
      double loss = 0;
      std::vector<float> cand;
      for (int64_t i0 = 0; i0 < t.size(); i0 += batch_size) {
        const int64_t n = std::min(batch_size, t.size() - i0);
        cand.assign(positives.begin() + i0 * C, positives.begin() + (i0 + n) * C);
        if (t.has_negative()) cand.insert(cand.end(), negatives.begin() + i0 * C, negatives.begin() + (i0 + n) * C);
        loss += mnrl_loss_sum(anchors.data() + i0 * C, n, cand.data(), int64_t(cand.size()) / C, C, kMnrlScale);
      }
      e.loss = loss / double(t.size());
      const auto q = embed(s->retrieval.queries);
      const auto d = embed(s->retrieval.corpus);
      e.metrics = embedding_retrieval_metrics(q, d, C, s->retrieval.relevant);
    }
    e.runtime_s = monotonic_seconds() - t0;
    return e;
  }
  // InformationRetrievalEvaluator's primary metric (ndcg@10); EmbeddingSimilarityEvaluator's
  // (spearman_cosine) when the held-out split is scored pairs.
  std::string default_metric() const override {
    const EmbeddingEvalSplit* v = find("val");
    return v && v->pairs ? "spearman_cosine" : "ndcg@10";
  }
  // A sentence-transformers folder (SentenceTransformer.save): modules.json, the Transformer
  // at the root, 1_Pooling/config.json, the trained Dense modules (2_Dense/, 3_Dense/, ...: each
  // module's folder is "<idx>_<class name>", Dense.save's files), a Normalize module when the
  // start had one, sentence_bert_config.json and config_sentence_transformers.json (the
  // start's, keeping its prompts, else the defaults).
  void save_files(const fs::path& dir) const override {
    json modules = json::array();
    auto add_module = [&](const std::string& kind, bool in_root) {
      const std::string idx = std::to_string(modules.size());
      const std::string path = in_root ? "" : idx + "_" + kind;
      modules.push_back(
          {{"idx", modules.size()}, {"name", idx}, {"path", path}, {"type", "sentence_transformers.models." + kind}});
      return path;
    };
    add_module("Transformer", true);
    add_module("Pooling", false);
    for (const model::DenseLayer& d : st_.dense) d.save(dir / add_module("Dense", false));
    if (st_.normalize) add_module("Normalize", false);
    write_json_atomic(dir / "modules.json", modules);
    const model::PoolingMode mode = st_.pooling.modes.front();
    fs::create_directories(dir / "1_Pooling");
    write_json_atomic(dir / "1_Pooling" / "config.json",
                      json{{"word_embedding_dimension", hidden_},
                           {"pooling_mode_cls_token", mode == model::PoolingMode::cls},
                           {"pooling_mode_mean_tokens", mode == model::PoolingMode::mean},
                           {"pooling_mode_max_tokens", mode == model::PoolingMode::max},
                           {"pooling_mode_mean_sqrt_len_tokens", mode == model::PoolingMode::mean_sqrt_len},
                           {"pooling_mode_weightedmean_tokens", mode == model::PoolingMode::weighted_mean},
                           {"pooling_mode_lasttoken", mode == model::PoolingMode::last_token},
                           {"include_prompt", true}});
    write_json_atomic(dir / "sentence_bert_config.json",
                      json{{"max_seq_length", max_seq_length_}, {"do_lower_case", false}});
    const fs::path start_cfg = fs::path(start_dir_) / "config_sentence_transformers.json";
    if (st_.has_modules && fs::is_regular_file(start_cfg)) {
      fs::copy_file(start_cfg, dir / "config_sentence_transformers.json", fs::copy_options::overwrite_existing);
    } else {
      write_json_atomic(
          dir / "config_sentence_transformers.json",
          json{{"prompts", json::object()}, {"default_prompt_name", nullptr}, {"similarity_fn_name", "cosine"}});
    }
  }
  std::vector<ExtraParam> extra_params() override { return dense_extra_params(st_.dense); }
  // Copied into the layers in place: the engine holds their addresses.
  void load_extra_params(const fs::path& dir) override {
    if (st_.dense.empty()) return;
    const std::vector<model::DenseLayer> saved = model::SentenceTransformerConfig::load(dir).dense;
    RC_CHECK(saved.size() == st_.dense.size(), Errc::format, dir.string(), " has ", saved.size(),
             " Dense modules, the run trains ", st_.dense.size());
    for (size_t l = 0; l < saved.size(); ++l) {
      model::DenseLayer& d = st_.dense[l];
      RC_CHECK(saved[l].weight.size() == d.weight.size() && saved[l].bias.size() == d.bias.size(), Errc::format,
               dir.string(), ": Dense module ", l + 1, " does not have the run's shape");
      std::copy(saved[l].weight.begin(), saved[l].weight.end(), d.weight.begin());
      std::copy(saved[l].bias.begin(), saved[l].bias.end(), d.bias.begin());
    }
  }

 private:
  const EmbeddingEvalSplit* find(const std::string& name) const {
    for (const EmbeddingEvalSplit& s : evals_)
      if (s.name == name) return &s;
    return nullptr;
  }
  Triplets train_;
  std::vector<EmbeddingEvalSplit> evals_;
  model::SentenceTransformerConfig st_;
  int64_t hidden_;
  int max_seq_length_;
  std::string start_dir_;
  TokenizedSplit summary_;
};

// A cross-encoder split: the pairs (targets = labels) and, per row, its query's index among
// the split's distinct queries (CERerankingEvaluator's samples).
struct RerankSplit {
  PreparedSplit pairs;
  std::vector<int64_t> query_of;
  int64_t queries = 0;
};

// The sequence-classification task over the pairs (its loss, BCE, and multi-label metrics),
// plus the reranking metrics of each held-out split.
class CrossEncoderTask final : public Task {
 public:
  CrossEncoderTask(std::unique_ptr<Task> pairs, std::vector<RerankSplit> evals)
      : pairs_(std::move(pairs)), evals_(std::move(evals)) {}
  const TokenizedSplit& train_examples() const override { return pairs_->train_examples(); }
  void reserve(TaskBatch& b, int64_t max_B, int64_t max_T) const override { pairs_->reserve(b, max_B, max_T); }
  void collate(std::span<const int64_t> idx, int64_t step, int32_t pad_id, TaskBatch& out) const override {
    pairs_->collate(idx, step, pad_id, out);
  }
  model::Targets targets(const TaskBatch& b) const override { return pairs_->targets(b); }
  bool has_split(const std::string& name) const override { return pairs_->has_split(name); }
  int64_t max_eval_length() const override { return pairs_->max_eval_length(); }
  EvalResult evaluate(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const std::string& split,
                      int64_t batch_size, model::InferenceWorkspace& ws) const override {
    EvalResult e = pairs_->evaluate(ctx, model, split, batch_size, ws);
    const RerankSplit* s = find(split);
    if (!s) return e;
    const TokenizedSplit& tok = s->pairs.tok;
    std::vector<float> logits(size_t(tok.size()));
    PaddedBatch pb;
    const int64_t B = std::min(batch_size, ws.max_B());
    pb.reserve(B, tok.max_length(), 1);
    std::vector<int64_t> idx;
    for (int64_t i0 = 0; i0 < tok.size(); i0 += B) {
      idx.clear();
      for (int64_t i = i0; i < std::min(tok.size(), i0 + B); ++i) idx.push_back(i);
      fill_batch(tok, idx, model.config().pad_token_id, pb);
      model::forward_logits(ctx, model, model::Batch{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr}, ws,
                            logits.data() + i0);
    }
    for (const auto& m : reranking_metrics(logits, s->query_of, s->pairs.tok.targets)) e.metrics.push_back(m);
    return e;
  }
  // CERerankingEvaluator's MRR@10 when the held-out split has queries to rank, else the
  // multi-label default.
  std::string default_metric() const override {
    const RerankSplit* v = find("val");
    return v && !reranking_metrics(std::vector<float>(v->query_of.size(), 0.0f), v->query_of, v->pairs.tok.targets)
                       .empty()
               ? "mrr@10"
               : pairs_->default_metric();
  }

 private:
  const RerankSplit* find(const std::string& name) const {
    for (const RerankSplit& s : evals_)
      if (s.pairs.name == name) return &s;
    return nullptr;
  }
  std::unique_ptr<Task> pairs_;
  std::vector<RerankSplit> evals_;
};

std::string eval_counts_of(const std::vector<std::pair<std::string, int64_t>>& sizes) {
  std::string s;
  for (const auto& [name, n] : sizes) s += ", " + std::to_string(n) + " " + name;
  return s;
}

}  // namespace

std::vector<ExtraParam> dense_extra_params(std::span<model::DenseLayer> dense) {
  std::vector<ExtraParam> p;
  for (model::DenseLayer& d : dense) {
    p.push_back({d.weight.data(), int64_t(d.weight.size()), true});
    if (!d.bias.empty()) p.push_back({d.bias.data(), int64_t(d.bias.size()), false});
  }
  return p;
}

TaskSetup setup_embedding_task(const TrainOptions& o, const fs::path& resume_dir, bool evaluate_splits) {
  // A plain encoder folder becomes Transformer + mean Pooling, as SentenceTransformer builds
  // from a model without modules.json (SentenceTransformer._load_auto_model).
  RC_CHECK(o.device.rfind("cuda", 0) != 0, Errc::unsupported,
           "--task embedding trains on the CPU only (MultipleNegativesRankingLoss, mnrl.h)\nHINT: --device cpu");
  const bool is_st = model::is_sentence_transformer(o.model_dir);
  model::SentenceTransformerConfig st = model::SentenceTransformerConfig::load(o.model_dir, is_st ? "" : "mean");
  RC_CHECK(st.pooling.modes.size() == 1 && st.pooling.include_prompt, Errc::unsupported, o.model_dir.string(),
           ": training pools by one mode with the prompt included, not ", st.pooling.describe(),
           st.pooling.include_prompt ? "" : " without the prompt");
  RC_CHECK(!st.do_lower_case, Errc::unsupported, o.model_dir.string(), ": do_lower_case is not supported in training");
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::encoder_only;
  const bool resume = !resume_dir.empty();
  std::unique_ptr<model::RobertaModel> model = model::load_checkpoint(resume ? resume_dir : st.transformer, lo);
  if (!resume) {
    model::RobertaConfig cfg = model->config();
    cfg.architectures = {model::head_architecture(model::HeadKind::encoder_only, cfg.family())};
    cfg.problem_type.clear();
    model = with_config(*model, cfg);
  }
  const model::RobertaConfig& cfg = model->config();
  // The Dense modules: each takes what the one before gives (the first, the pooled hidden
  // state); a resumed run's trained ones from its checkpoint, which must match the start's.
  int64_t features = cfg.hidden_size;
  for (const model::DenseLayer& d : st.dense) {
    RC_CHECK(d.in_features == features, Errc::format, o.model_dir.string(), ": a Dense module takes ", d.in_features,
             " features, the module before it gives ", features);
    features = d.out_features;
  }
  if (resume && !st.dense.empty()) {
    std::vector<model::DenseLayer> trained = model::SentenceTransformerConfig::load(resume_dir).dense;
    RC_CHECK(trained.size() == st.dense.size(), Errc::format, resume_dir.string(), " has ", trained.size(),
             " Dense modules, ", o.model_dir.string(), " ", st.dense.size());
    for (size_t l = 0; l < trained.size(); ++l)
      RC_CHECK(
          trained[l].in_features == st.dense[l].in_features && trained[l].out_features == st.dense[l].out_features &&
              trained[l].bias.empty() == st.dense[l].bias.empty() && trained[l].activation == st.dense[l].activation,
          Errc::format, resume_dir.string(), ": Dense module ", l + 1, " is not ", o.model_dir.string(), "'s");
    st.dense = std::move(trained);
  }
  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  model::check_tokenizer_fits(*tokenizer, cfg, o.model_dir);
  int max_len = int(std::min<int64_t>(o.max_length, cfg.max_tokens()));
  if (st.max_seq_length > 0) max_len = std::min<int>(max_len, int(st.max_seq_length));

  const auto files = split_files(o.data);
  Triplets train = read_triplets(*tokenizer, read_jsonl(files.at("train")), files.at("train"), max_len);
  std::vector<EmbeddingEvalSplit> evals;
  std::vector<std::pair<std::string, int64_t>> sizes;
  if (evaluate_splits)
    for (const char* name : {"val", "test"})
      if (files.count(name)) {
        evals.push_back(read_eval_split(*tokenizer, name, files.at(name), max_len));
        sizes.emplace_back(name, evals.back().size());
      }
  TaskSetup t;
  t.layout = train.has_negative() ? "jsonl (anchor, positive, negative)" : "jsonl (anchor, positive)";
  t.problem_type = "embedding";
  t.eval_counts = eval_counts_of(sizes);
  json options{{"task", "embedding"},
               {"loss", "MultipleNegativesRankingLoss"},
               {"scale", kMnrlScale},
               {"pooling", st.pooling.describe()}};
  if (!st.dense.empty()) {  // only then: an earlier run's checkpoints keep their identity
    json dense = json::array();
    for (const model::DenseLayer& d : st.dense) dense.push_back({d.in_features, d.out_features});
    options["dense"] = dense;
  }
  t.task_options = options.dump();
  t.task = std::make_unique<EmbeddingTask>(std::move(train), std::move(evals), std::move(st), cfg.hidden_size, max_len,
                                           o.model_dir.string());
  t.model = std::move(model);
  return t;
}

TaskSetup setup_cross_encoder_task(const TrainOptions& o, const fs::path& resume_dir, bool evaluate_splits) {
  const std::vector<std::string> labels{"LABEL_0"};
  model::CheckpointLoadOptions lo;
  lo.init_head = true;
  lo.labels = labels;
  lo.seed = o.seed;
  const bool resume = !resume_dir.empty();
  std::unique_ptr<model::RobertaModel> model =
      model::load_checkpoint(resume ? resume_dir : o.model_dir, resume ? model::CheckpointLoadOptions{} : lo);
  if (!resume) {
    // One output (a start with another number of labels gets a new head, as from_pretrained
    // with num_labels=1); its loss BCE-with-logits, which transformers runs for
    // multi_label_classification.
    if (model->config().num_labels() != 1) model = reheaded(*model, labels, o.seed);
    model::RobertaConfig cfg = model->config();
    cfg.problem_type = problem_type_name(ProblemType::multi_label);
    model = with_config(*model, cfg);
  }
  const model::RobertaConfig& cfg = model->config();
  RC_CHECK(cfg.num_labels() == 1, Errc::invalid_argument, "a cross-encoder has one output, the checkpoint has ",
           cfg.num_labels());
  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  model::check_tokenizer_fits(*tokenizer, cfg, o.model_dir);
  const int max_len = int(std::min<int64_t>(o.max_length, cfg.max_tokens()));
  auto prepare = [&](const std::string& name, const fs::path& path) {
    const std::vector<json> rows = read_jsonl(path);
    std::vector<std::string> queries, texts;
    std::vector<float> targets;
    RerankSplit r;
    std::map<std::string, int64_t> query_index;
    for (size_t i = 0; i < rows.size(); ++i) {
      queries.push_back(text_field(rows[i], "query", path, i));
      r.query_of.push_back(query_index.emplace(queries.back(), int64_t(query_index.size())).first->second);
      texts.push_back(text_field(rows[i], "text", path, i));
      const double label = number_field(rows[i], "label", path, i);
      RC_CHECK(label >= 0 && label <= 1, Errc::format, path.string(), ": row ", i + 1, ": label ", label,
               " is not in [0, 1] (BCE targets)");
      targets.push_back(float(label));
    }
    PreparedSplit p;
    p.name = name;
    const std::vector<int32_t> zeros(queries.size(), 0);
    p.tok = tokenize_split(*tokenizer, queries, zeros, max_len, texts);
    p.tok.targets = std::move(targets);
    p.tok.target_width = 1;
    r.pairs = std::move(p);
    r.queries = int64_t(query_index.size());
    return r;
  };
  const auto files = split_files(o.data);
  PreparedSplit train = prepare("train", files.at("train")).pairs;
  std::vector<PreparedSplit> evals;
  std::vector<RerankSplit> reranks;
  std::vector<std::pair<std::string, int64_t>> sizes;
  if (evaluate_splits)
    for (const char* name : {"val", "test"})
      if (files.count(name)) {
        reranks.push_back(prepare(name, files.at(name)));
        evals.push_back(reranks.back().pairs);
        sizes.emplace_back(name, evals.back().tok.size());
      }
  TaskSetup t;
  t.layout = "jsonl (query, text, label)";
  t.problem_type = problem_type_name(ProblemType::multi_label);
  t.eval_counts = eval_counts_of(sizes);
  t.task_options = json{{"task", "cross-encoder"}, {"loss", "BCEWithLogitsLoss"}}.dump();
  t.task = std::make_unique<CrossEncoderTask>(
      sequence_classification_task(std::move(train), std::move(evals), ProblemType::multi_label, o.threshold),
      std::move(reranks));
  t.model = std::move(model);
  return t;
}

}  // namespace rc::train
