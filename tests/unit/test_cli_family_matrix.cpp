// Issue 30's matrix through the `roberta` binary: every family (BERT, DistilBERT, XLM-R,
// CamemBERT) x head (sequence classification, its multi-label and regression problem types,
// token classification, masked LM, the bare *Model) x command (predict, fill-mask, embed,
// rerank, bench, serve, train -> eval -> predict, convert) x precision (fp32, bf16, int8), each
// cell checked on something that can fail: the exit code, the answer's shape, fp32 against the
// PyTorch golden of tests/data/tiny_families (tools/make_golden_families.py) where the CLI can
// reach its batch, and bf16 / int8 against fp32. Commands that do not fit a head are refused
// with one line and an exit code, not a crash.
//
// The fixtures have vocabulary 48 and no tokenizer: each gets a WordLevel tokenizer.json here
// whose word "w<i>" is id i, so a golden row's ids are a text the CLI can be given. BERT's
// golden rows type their second half 1; a pair template "[CLS] $A $B:1 [SEP]:1" reproduces
// them through --text-pair.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "device/cpu_isa.h"
#include "io/tensor_source.h"
#include "support/files.h"
#include "support/ports.h"
#include "support/run_cli.h"
#include "support/subprocess.h"

namespace rc::family_matrix_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::CmdResult;
using test::run_roberta;

const fs::path kFamilies = fs::path(RC_TEST_DATA_DIR) / "tiny_families";
constexpr int kVocab = 48;

enum class Head { seq, token, mlm, bare };

struct Case {
  const char* name;    // the folder made under the temp dir
  const char* source;  // the tiny_families folder it comes from
  bool bert_like;      // [CLS]/[SEP] ids 2/3, pad 0; else <s>/</s> ids 0/2, pad 1
  bool token_types;    // the golden's rows type their second half 1 (BERT)
  Head head;
  const char* model_type;    // config.json's, rewritten when it differs from the source's
  const char* architecture;  // likewise
  const char* problem_type;  // "" = the source's
};

// Every family x head. camembert-seq / xlm-roberta-mlm are the other name of the same graph
// (XLM-R and CamemBERT share RoBERTa's weights names): the sources' goldens hold for them.
const Case kCases[] = {
    {"bert-seq", "bert-seq", true, true, Head::seq, "bert", "BertForSequenceClassification", ""},
    {"bert-seq-multilabel", "bert-seq", true, true, Head::seq, "bert", "BertForSequenceClassification",
     "multi_label_classification"},
    {"bert-token", "bert-token", true, true, Head::token, "bert", "BertForTokenClassification", ""},
    {"bert-mlm", "bert-mlm", true, true, Head::mlm, "bert", "BertForMaskedLM", ""},
    {"bert-bare", "bert-seq", true, true, Head::bare, "bert", "BertModel", ""},
    {"distilbert-seq", "distilbert-seq", true, false, Head::seq, "distilbert", "DistilBertForSequenceClassification",
     ""},
    {"distilbert-seq-regression", "distilbert-seq", true, false, Head::seq, "distilbert",
     "DistilBertForSequenceClassification", "regression"},
    {"distilbert-token", "distilbert-token", true, false, Head::token, "distilbert", "DistilBertForTokenClassification",
     ""},
    {"distilbert-mlm", "distilbert-mlm", true, false, Head::mlm, "distilbert", "DistilBertForMaskedLM", ""},
    {"distilbert-bare", "distilbert-seq", true, false, Head::bare, "distilbert", "DistilBertModel", ""},
    {"xlm-roberta-seq", "xlm-roberta-seq", false, false, Head::seq, "xlm-roberta",
     "XLMRobertaForSequenceClassification", ""},
    {"xlm-roberta-seq-multilabel", "xlm-roberta-seq", false, false, Head::seq, "xlm-roberta",
     "XLMRobertaForSequenceClassification", "multi_label_classification"},
    {"xlm-roberta-mlm", "camembert-mlm", false, false, Head::mlm, "xlm-roberta", "XLMRobertaForMaskedLM", ""},
    {"xlm-roberta-bare", "xlm-roberta-seq", false, false, Head::bare, "xlm-roberta", "XLMRobertaModel", ""},
    {"camembert-seq", "xlm-roberta-seq", false, false, Head::seq, "camembert", "CamembertForSequenceClassification",
     ""},
    {"camembert-mlm", "camembert-mlm", false, false, Head::mlm, "camembert", "CamembertForMaskedLM", ""},
    {"camembert-bare", "camembert-mlm", false, false, Head::bare, "camembert", "CamembertModel", ""},
};

std::vector<json> json_lines(const std::string& out) {
  std::vector<json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(json::parse(line));
  return lines;
}

int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

// The golden batch of a source folder.
struct Golden {
  int64_t B = 0, T = 0;
  std::vector<int64_t> ids, mask;
  std::vector<float> logits;
  std::vector<int64_t> logits_shape;
  int64_t len(int64_t b) const { return std::count(mask.begin() + b * T, mask.begin() + (b + 1) * T, int64_t(1)); }
  int64_t id(int64_t b, int64_t t) const { return ids[size_t(b * T + t)]; }
};

std::vector<int64_t> read_ints(const io::TensorSource& s, const std::string& name) {
  const io::TensorInfo* t = s.find(name);
  if (!t) return {};
  std::vector<int64_t> v(size_t(t->numel()));
  const auto bytes = s.data(name);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t->dtype == DType::i64) {
      int64_t x;
      std::memcpy(&x, bytes.data() + i * 8, 8);
      v[i] = x;
    } else {
      int32_t x;
      std::memcpy(&x, bytes.data() + i * 4, 4);
      v[i] = x;
    }
  }
  return v;
}

Golden read_golden(const std::string& source) {
  const auto s = io::open_safetensors(kFamilies / source / "golden.safetensors");
  Golden g;
  const io::TensorInfo* ids = s->find("input_ids");
  g.B = ids->shape[0];
  g.T = ids->shape[1];
  g.ids = read_ints(*s, "input_ids");
  g.mask = read_ints(*s, "attention_mask");
  const io::TensorInfo* l = s->find("logits");
  g.logits_shape = l->shape;
  g.logits.resize(size_t(l->numel()));
  io::convert_to_f32(l->dtype, s->data("logits"), g.logits.data(), l->numel());
  return g;
}

// The mask token of an MLM folder: the id at golden row 0, position 1 (every golden row has
// an MLM target there), so that row 0 with that word masked is the golden's input itself.
int64_t mask_id_for(const Case& c) {
  if (!std::string(c.source).ends_with("-mlm")) return 4;
  return read_golden(c.source).id(0, 1);
}

std::string word(const Case& c, int64_t id, int64_t mask_id) {
  if (id == mask_id) return c.bert_like ? "[MASK]" : "<mask>";
  return "w" + std::to_string(id);
}

// A WordLevel tokenizer.json over the fixture's 48 ids: specials as the golden uses them.
json tokenizer_json(const Case& c, int64_t mask_id) {
  const std::vector<std::string> specials = c.bert_like ? std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]"}
                                                        : std::vector<std::string>{"<s>", "<pad>", "</s>", "<unk>"};
  json vocab = json::object();
  json added = json::array();
  for (int64_t i = 0; i < kVocab; ++i) {
    const std::string w = i < 4 ? specials[size_t(i)] : word(c, i, mask_id);
    vocab[w] = i;
    if (i < 4 || i == mask_id)
      added.push_back({{"id", i},
                       {"content", w},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
  }
  const std::string cls = c.bert_like ? "[CLS]" : "<s>", sep = c.bert_like ? "[SEP]" : "</s>";
  auto special = [](const std::string& id, int type) {
    return json{{"SpecialToken", {{"id", id}, {"type_id", type}}}};
  };
  auto seq = [](const char* id, int type) { return json{{"Sequence", {{"id", id}, {"type_id", type}}}}; };
  json pair =
      c.bert_like
          ? json::array({special(cls, 0), seq("A", 0), seq("B", 1), special(sep, 1)})
          : json::array({special(cls, 0), seq("A", 0), special(sep, 0), special(sep, 0), seq("B", 0), special(sep, 0)});
  json special_tokens = json::object();
  for (const std::string& s : {cls, sep})
    special_tokens[s] = {{"id", s}, {"ids", {c.bert_like ? (s == cls ? 2 : 3) : (s == cls ? 0 : 2)}}, {"tokens", {s}}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", json::array({special(cls, 0), seq("A", 0), special(sep, 0)})},
            {"pair", pair},
            {"special_tokens", special_tokens}}},
          {"decoder", nullptr},
          {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", specials[c.bert_like ? 1 : 3]}}}};
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("rc_family_matrix_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// The case's folder under `root`: the source's weights, its config (rewritten), a tokenizer.
fs::path make_folder(const fs::path& root, const Case& c) {
  const fs::path dir = root / c.name;
  fs::create_directories(dir);
  fs::copy_file(kFamilies / c.source / "model.safetensors", dir / "model.safetensors");
  json config = json::parse(test::slurp(kFamilies / c.source / "config.json"));
  config["model_type"] = c.model_type;
  config["architectures"] = {c.architecture};
  if (*c.problem_type) config["problem_type"] = c.problem_type;
  std::ofstream(dir / "config.json") << config.dump(2);
  std::ofstream(dir / "tokenizer.json") << tokenizer_json(c, mask_id_for(c)).dump();
  return dir;
}

// Golden row b as the CLI's arguments: one text, or for BERT a text and --text-pair split
// where the row's type 1 starts (position len / 2).
std::string row_args(const Case& c, const Golden& g, int64_t b, int64_t mask_id) {
  const int64_t n = g.len(b);
  auto words = [&](int64_t from, int64_t to) {
    std::string s;
    for (int64_t t = from; t < to; ++t) s += (s.empty() ? "" : " ") + word(c, g.id(b, t), mask_id);
    return "'" + s + "'";
  };
  if (c.token_types) return words(1, n / 2) + " --text-pair " + words(n / 2, n - 1);
  return words(1, n - 1);
}

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  return ab / std::sqrt(aa * bb);
}

// A sequence classifier's weights: its own folders and a bare *Model made from them, which
// transformers' AutoModelForSequenceClassification (by model_type) loads with the head.
bool classifier_weights(const Case& c) { return std::string(c.source).ends_with("-seq"); }
bool mlm_weights(const Case& c) { return std::string(c.source).ends_with("-mlm"); }

// One error line starting "roberta: error: " (a hint line may follow), after any warnings.
void expect_one_line_error(const CmdResult& r) {
  EXPECT_TRUE(r.code == 2 || r.code == 3) << r.code << ": " << r.err << r.out;
  const size_t at = r.err.find("roberta: error: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_LE(count_lines(r.err.substr(at)), 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

class FamilyMatrix : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir;
    for (const Case& c : kCases) make_folder(tmp_->path, c);
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  void SetUp() override {
    if (!fs::exists(test::roberta_binary())) GTEST_SKIP() << "roberta binary not built";
  }
  static std::string dir(const Case& c) { return (tmp_->path / c.name).string(); }
  static TempDir* tmp_;
};
TempDir* FamilyMatrix::tmp_ = nullptr;

const char* const kPrecisions[] = {"fp32", "bf16", "int8"};

// predict on every sequence classifier: fp32 logits = the golden's (1e-4, issue 30's goal),
// scores by the problem type's function, and bf16 / int8 give the same label and logits with
// cosine >= 0.99 to fp32's.
TEST_F(FamilyMatrix, PredictSequenceClassifiers) {
  for (const Case& c : kCases) {
    if (!classifier_weights(c)) continue;
    SCOPED_TRACE(c.name);
    const Golden g = read_golden(c.source);
    const int64_t K = g.logits_shape[1];
    std::vector<std::vector<double>> fp32_logits;
    std::vector<std::string> fp32_labels;
    for (const char* precision : kPrecisions) {
      SCOPED_TRACE(precision);
      for (int64_t b = 0; b < g.B; ++b) {
        const CmdResult r = run_roberta("predict --logits --precision " + std::string(precision) + " --model " +
                                        dir(c) + " " + row_args(c, g, b, mask_id_for(c)));
        ASSERT_EQ(r.code, 0) << r.err;
        const auto lines = json_lines(r.out);
        ASSERT_EQ(lines.size(), 1u) << r.out;
        const json& j = lines[0];
        ASSERT_EQ(j["logits"].size(), size_t(K)) << r.out;
        ASSERT_EQ(j["scores"].size(), size_t(K)) << r.out;
        const auto logits = j["logits"].get<std::vector<double>>();
        if (std::string(precision) == "fp32") {
          for (int64_t k = 0; k < K; ++k) EXPECT_NEAR(logits[size_t(k)], g.logits[size_t(b * K + k)], 1e-4) << b;
          // transformers' text-classification pipeline: sigmoid for multi-label, none for
          // regression, softmax otherwise (pipelines/text_classification.py).
          const std::string problem = c.problem_type;
          double mx = *std::max_element(logits.begin(), logits.end()), sum = 0;
          for (double l : logits) sum += std::exp(l - mx);
          const std::vector<std::string> names = {"neg", "neu", "pos"};
          for (int64_t k = 0; k < K; ++k) {
            const double l = logits[size_t(k)];
            const double want = problem == "multi_label_classification" ? 1 / (1 + std::exp(-l))
                                : problem == "regression"               ? l
                                                                        : std::exp(l - mx) / sum;
            EXPECT_NEAR(j["scores"][names[size_t(k)]].get<double>(), want, 1e-5) << names[size_t(k)];
          }
          fp32_logits.push_back(logits);
          fp32_labels.push_back(j["label"]);
        } else {
          EXPECT_EQ(j["label"], fp32_labels[size_t(b)]) << b;
          // measured: int8 >= 0.999987; bf16 1.0 here (a CPU without AVX512-BF16/AMX runs it fp32)
          EXPECT_GE(cosine(logits, fp32_logits[size_t(b)]), 0.99) << b;
        }
      }
    }
  }
}

// predict on token classifiers: one JSON list per text; with --aggregation none an entity per
// non-O token whose score is the golden's softmax maximum there (fp32, DistilBERT: BERT's
// golden types its rows' second half 1, which a single text cannot), and bf16 / int8 tag the
// same tokens; --aggregation simple groups them (entity_group without B-/I-).
TEST_F(FamilyMatrix, PredictTokenClassifiers) {
  for (const Case& c : kCases) {
    if (c.head != Head::token) continue;
    SCOPED_TRACE(c.name);
    const Golden g = read_golden(c.source);
    const int64_t K = g.logits_shape[2];
    const std::vector<std::string> labels = {"O", "B-X", "I-X", "B-Y"};
    std::vector<json> fp32_answers;
    for (const char* precision : kPrecisions) {
      SCOPED_TRACE(precision);
      for (int64_t b = 0; b < g.B; ++b) {
        const Case single = {c.name, c.source, c.bert_like, false, c.head, "", "", ""};
        const CmdResult r = run_roberta("predict --aggregation none --precision " + std::string(precision) +
                                        " --model " + dir(c) + " " + row_args(single, g, b, mask_id_for(c)));
        ASSERT_EQ(r.code, 0) << r.err;
        const auto lines = json_lines(r.out);
        ASSERT_EQ(lines.size(), 1u) << r.out;
        const json& tokens = lines[0];
        ASSERT_TRUE(tokens.is_array()) << r.out;
        if (std::string(precision) == "fp32") {
          fp32_answers.push_back(tokens);
          if (c.token_types) continue;
          // The golden's non-O tokens, in order, with their softmax maxima.
          size_t e = 0;
          for (int64_t t = 1; t + 1 < g.len(b); ++t) {
            const float* l = g.logits.data() + (b * g.T + t) * K;
            const int64_t best = std::max_element(l, l + K) - l;
            if (best == 0) continue;
            double sum = 0;
            for (int64_t k = 0; k < K; ++k) sum += std::exp(double(l[k]) - l[best]);
            ASSERT_LT(e, tokens.size()) << r.out;
            EXPECT_EQ(tokens[e]["entity"], labels[size_t(best)]) << t;
            EXPECT_EQ(tokens[e]["index"], t) << t;
            EXPECT_EQ(tokens[e]["word"], word(c, g.id(b, t), mask_id_for(c))) << t;
            EXPECT_NEAR(tokens[e]["score"].get<double>(), 1 / sum, 1e-5) << t;
            ++e;
          }
          EXPECT_EQ(e, tokens.size()) << r.out;
        } else if (std::string(precision) == "bf16") {
          ASSERT_EQ(tokens.size(), fp32_answers[size_t(b)].size()) << r.out;
          for (size_t e = 0; e < tokens.size(); ++e)
            EXPECT_EQ(tokens[e]["entity"], fp32_answers[size_t(b)][e]["entity"]) << e;
        } else {
          // int8: the tiny random heads score 4 labels within ~0.1 of each other (fp32 scores
          // 0.31..0.42 measured), where int8 flips near-ties (bert-token row 0: one more
          // entity). Every clear fp32 tag (score >= 0.5) must stay.
          for (const json& want : fp32_answers[size_t(b)]) {
            if (want["score"].get<double>() < 0.5) continue;
            const auto same = std::find_if(tokens.begin(), tokens.end(), [&](const json& t) {
              return t["index"] == want["index"] && t["entity"] == want["entity"];
            });
            EXPECT_NE(same, tokens.end()) << want << " in " << r.out;
          }
        }
      }
    }
    const CmdResult grouped =
        run_roberta("predict --aggregation simple --precision fp32 --model " + dir(c) + " 'w5 w6 w7 w8 w9 w10'");
    ASSERT_EQ(grouped.code, 0) << grouped.err;
    const auto grouped_lines = json_lines(grouped.out);
    ASSERT_EQ(grouped_lines.size(), 1u) << grouped.out;
    for (const json& e : grouped_lines[0]) {
      EXPECT_TRUE(e.contains("entity_group")) << e;
      EXPECT_TRUE(e["entity_group"] == "X" || e["entity_group"] == "Y") << e;
    }
  }
}

// fill-mask on every masked LM: golden row 0 with its masked word is the golden's own input, so
// the candidates are the softmax of the golden's logits at that position, ranked (BERT's row
// types its second half 1: there the answer's shape only). A folder without masked-LM weights
// (a classifier, a token classifier, a bare model of a classifier's weights) is refused on one
// line; a bare *Model with them fills masks, as AutoModelForMaskedLM (by model_type) would.
TEST_F(FamilyMatrix, FillMask) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const int top_k = 3;
    if (!mlm_weights(c)) {
      const CmdResult r = run_roberta("fill-mask --model " + dir(c) + " 'w5 [MASK] <mask> w6'");
      expect_one_line_error(r);
      // The hint names a command that exists (it named a library option once).
      EXPECT_NE(r.err.find("roberta pretrain --model"), std::string::npos) << r.err;
      continue;
    }
    const Golden g = read_golden(c.source);
    const int64_t mask_id = mask_id_for(c), V = g.logits_shape[2];
    const CmdResult r =
        run_roberta("fill-mask --top-k " + std::to_string(top_k) + " --model " + dir(c) + " " +
                    row_args({c.name, c.source, c.bert_like, false, c.head, "", "", ""}, g, 0, mask_id));
    ASSERT_EQ(r.code, 0) << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 1u);
    // One mask: a list of candidates; several: a list per mask.
    std::vector<int64_t> positions;
    for (int64_t t = 0; t < g.len(0); ++t)
      if (g.id(0, t) == mask_id) positions.push_back(t);
    const json per_mask = positions.size() == 1 ? json::array({lines[0]}) : lines[0];
    ASSERT_EQ(per_mask.size(), positions.size()) << r.out;
    for (size_t m = 0; m < positions.size(); ++m) {
      const json& cands = per_mask[m];
      ASSERT_EQ(cands.size(), size_t(top_k)) << r.out;
      if (c.token_types) continue;
      const float* l = g.logits.data() + positions[m] * V;
      std::vector<int64_t> order(static_cast<size_t>(V));
      for (int64_t v = 0; v < V; ++v) order[size_t(v)] = v;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return l[a] > l[b]; });
      const double mx = l[order[0]];
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(double(l[v]) - mx);
      for (int k = 0; k < top_k; ++k) {
        EXPECT_EQ(cands[size_t(k)]["token"], order[size_t(k)]) << k;
        EXPECT_NEAR(cands[size_t(k)]["score"].get<double>(), std::exp(l[order[size_t(k)]] - mx) / sum, 1e-5) << k;
      }
    }
  }
}

// fill-mask --precision, predict's flag: bf16 and int8 (the encoder as predict packs it, the
// lm_head fp32) give fp32's top candidate with its score close; on a CPU without AVX512-BF16 /
// AMX bf16 runs fp32 with predict's warning, and then answers exactly as fp32. An unknown
// precision is refused on one line, as predict refuses it.
TEST_F(FamilyMatrix, FillMaskPrecisions) {
  for (const Case& c : kCases) {
    if (!mlm_weights(c)) continue;
    SCOPED_TRACE(c.name);
    const std::string args =
        " --top-k 3 --threads 1 --model " + dir(c) + " " +
        (c.bert_like ? "'w5 [MASK] w6 w7' 'w20 w21 [MASK]'" : "'w5 <mask> w6 w7' 'w20 w21 <mask>'");
    const CmdResult fp32 = run_roberta("fill-mask --precision fp32" + args);
    ASSERT_EQ(fp32.code, 0) << fp32.err;
    EXPECT_EQ(fp32.out, run_roberta("fill-mask" + args).out) << "fp32 is the default";
    const auto want = json_lines(fp32.out);
    ASSERT_EQ(want.size(), 2u) << fp32.out;
    for (const char* precision : {"bf16", "int8"}) {
      SCOPED_TRACE(precision);
      const CmdResult r = run_roberta("fill-mask --precision " + std::string(precision) + args);
      ASSERT_EQ(r.code, 0) << r.err;
      const bool runs_fp32 = std::string(precision) == "bf16" && !rc::cpu_has_bf16();
      if (runs_fp32) {
        EXPECT_NE(r.err.find("running fp32 instead"), std::string::npos) << r.err;
        EXPECT_EQ(r.out, fp32.out);
        continue;
      }
      EXPECT_NE(r.out, fp32.out) << "the scores move a little: " << precision << " ran";
      const auto got = json_lines(r.out);
      ASSERT_EQ(got.size(), want.size()) << r.out;
      for (size_t t = 0; t < got.size(); ++t) {
        ASSERT_EQ(got[t].size(), 3u) << r.out;
        EXPECT_EQ(got[t][0]["token"], want[t][0]["token"]) << t << ": " << r.out << " vs " << fp32.out;
        // int8 measured (AVX512-VNNI): |score - fp32's| <= 6.0e-5 (distilbert-mlm text 1), held
        // to 2e-4. bf16 not measured (this CPU has no AVX512-BF16/AMX: it runs fp32): predict's
        // "logits within ~1e-2" moves a ~0.05 probability by ~5e-4, held to 2e-3.
        const double tolerance = std::string(precision) == "int8" ? 2e-4 : 2e-3;
        EXPECT_NEAR(got[t][0]["score"].get<double>(), want[t][0]["score"].get<double>(), tolerance) << t;
      }
    }
  }
  const Case& mlm =
      *std::find_if(std::begin(kCases), std::end(kCases), [](const Case& k) { return k.head == Head::mlm; });
  const CmdResult bad = run_roberta("fill-mask --precision fp16 --model " + dir(mlm) + " 'w5 [MASK]'");
  expect_one_line_error(bad);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown precision 'fp16'"), std::string::npos) << bad.err;
}

// predict on masked-LM weights (the *ForMaskedLM folders, a bare *Model of them) has no
// classifier to run: refused on one line.
TEST_F(FamilyMatrix, PredictRefusesHeadsWithoutLabels) {
  for (const Case& c : kCases) {
    if (!mlm_weights(c)) continue;
    SCOPED_TRACE(c.name);
    expect_one_line_error(run_roberta("predict --model " + dir(c) + " 'w5 w6'"));
  }
}

// embed --pooling mean on every bare *Model folder (and a classifier's body): one vector of the
// hidden size per text, bf16 / int8 within cosine 0.99 of fp32's.
TEST_F(FamilyMatrix, EmbedBareModels) {
  for (const Case& c : kCases) {
    if (c.head != Head::bare && c.head != Head::seq) continue;
    SCOPED_TRACE(c.name);
    std::vector<std::vector<double>> fp32;
    for (const char* precision : kPrecisions) {
      SCOPED_TRACE(precision);
      const CmdResult r = run_roberta("embed --pooling mean --precision " + std::string(precision) + " --model " +
                                      dir(c) + " 'w5 w6 w7' 'w40 w41 w42 w43 w44'");
      ASSERT_EQ(r.code, 0) << r.err;
      const auto lines = json_lines(r.out);
      ASSERT_EQ(lines.size(), 2u);
      for (size_t i = 0; i < 2; ++i) {
        const auto v = lines[i].get<std::vector<double>>();
        ASSERT_EQ(v.size(), 16u);
        if (std::string(precision) == "fp32")
          fp32.push_back(v);
        else
          EXPECT_GE(cosine(v, fp32[i]), 0.99) << i;  // measured: int8 >= 0.999996, bf16 1.0 (fp32 here)
      }
      EXPECT_LT(cosine(fp32[0], fp32[1]), 0.999999);  // two texts, two vectors
    }
  }
}

// rerank needs a one-label cross-encoder: a 3-label classifier, a token classifier and a masked
// LM are refused on one line, naming the reason.
TEST_F(FamilyMatrix, RerankRefusesWhatIsNotACrossEncoder) {
  for (const Case& c : kCases) {
    if (c.head == Head::bare) continue;
    SCOPED_TRACE(c.name);
    expect_one_line_error(run_roberta("rerank --precision fp32 --model " + dir(c) + " --query 'w5 w6' 'w7 w8' 'w9'"));
  }
}

const char* bench_head(Head h) {
  return h == Head::mlm ? "masked-lm" : h == Head::token ? "token-classification" : "sequence-classification";
}

// bench infer runs each family's classifiers and masked LMs at each precision: one JSON line per
// shape, naming the head (a masked LM's forward is fill-mask's: the encoder, then the lm_head on
// the collator's targets; its FLOPs count that head, so they exceed the encoder's alone).
TEST_F(FamilyMatrix, BenchInfer) {
  for (const Case& c : kCases) {
    if (c.head == Head::bare) continue;
    SCOPED_TRACE(c.name);
    for (const char* precision : kPrecisions) {
      const CmdResult r = run_roberta("bench infer --model " + dir(c) + " --precision " + precision +
                                      " --batch-size 1,2 --seq-len 8 --iters 1 --warmup 0 --busy-threshold 1000");
      ASSERT_EQ(r.code, 0) << precision << ": " << r.err;
      const auto lines = json_lines(r.out);
      ASSERT_EQ(lines.size(), 2u) << r.out;
      for (const json& j : lines) {
        EXPECT_TRUE(j.contains("ms_median")) << r.out;
        EXPECT_EQ(j["head"], bench_head(c.head)) << r.out;
        EXPECT_EQ(j["precision"], precision) << r.out;
        EXPECT_EQ(j["seq"], 8) << r.out;
      }
      EXPECT_EQ(lines[0]["batch"], 1) << r.out;
      EXPECT_EQ(lines[1]["batch"], 2) << r.out;
    }
  }
}

// bench on every masked-LM fixture, RoBERTa's (tests/data/mlm_tiny) among them: infer at each
// precision, train (the step `roberta pretrain` takes) at fp32 and bf16, also on --lengths; int8
// training is refused on one line, as for a classifier.
TEST_F(FamilyMatrix, BenchMaskedLm) {
  const fs::path lengths = tmp_->path / "bench_lengths.txt";
  std::ofstream(lengths) << "5\n7\n9\n12\n";
  std::vector<std::string> folders = {(fs::path(RC_TEST_DATA_DIR) / "mlm_tiny").string()};
  for (const Case& c : kCases)
    if (c.head == Head::mlm) folders.push_back(dir(c));
  for (const std::string& folder : folders) {
    SCOPED_TRACE(folder);
    for (const char* precision : {"fp32", "bf16", "int8"}) {
      for (const char* mode : {"infer", "train"}) {
        const std::string cmd = std::string("bench ") + mode + " --model " + folder + " --precision " + precision +
                                " --batch-size 2 --seq-len 8,12 --iters 1 --warmup 0 --busy-threshold 1000";
        const CmdResult r = run_roberta(cmd);
        if (std::string(mode) == "train" && std::string(precision) == "int8") {
          expect_one_line_error(r);
          EXPECT_NE(r.err.find("int8 is for inference only"), std::string::npos) << r.err;
          continue;
        }
        ASSERT_EQ(r.code, 0) << cmd << ": " << r.err;
        const auto lines = json_lines(r.out);
        ASSERT_EQ(lines.size(), 2u) << r.out;
        for (size_t i = 0; i < lines.size(); ++i) {
          EXPECT_EQ(lines[i]["mode"], mode) << r.out;
          EXPECT_EQ(lines[i]["head"], "masked-lm") << r.out;
          EXPECT_EQ(lines[i]["seq"], i == 0 ? 8 : 12) << r.out;
          EXPECT_GT(lines[i]["tflops"].get<double>(), 0) << r.out;
        }
      }
    }
    const CmdResult r = run_roberta("bench train --model " + folder + " --lengths " + lengths.string() +
                                    " --batch-size 2 --iters 2 --busy-threshold 1000");
    ASSERT_EQ(r.code, 0) << r.err;
    const json j = json_lines(r.out).at(0);
    EXPECT_EQ(j["head"], "masked-lm") << r.out;
    EXPECT_EQ(j["steps"], 2) << r.out;
  }
}

// train 2 steps from each family's classifier, then eval and predict on the saved folder: the
// config keeps the family's architectures and model_type (what transformers reads), eval prints
// its metrics, and predict answers with the folder's labels.
TEST_F(FamilyMatrix, TrainThenEvalAndPredictTheSavedFolder) {
  const fs::path root = tmp_->path / "train";
  fs::create_directories(root);
  {
    std::ofstream seq(root / "seq.jsonl"), token(root / "token.jsonl");
    const char* labels[] = {"neg", "neu", "pos"};
    const char* tags[] = {"O", "B-X", "I-X", "B-Y"};
    for (int i = 0; i < 8; ++i) {
      seq << json{{"text", "w" + std::to_string(5 + i) + " w" + std::to_string(20 + i) + " w30"},
                  {"label", labels[i % 3]}}
                 .dump()
          << "\n";
      token << json{{"tokens", {"w" + std::to_string(5 + i), "w21", "w" + std::to_string(30 + i)}},
                    {"ner_tags", {tags[i % 4], tags[(i + 1) % 4], "O"}}}
                   .dump()
            << "\n";
    }
  }
  for (const Case& c : kCases) {
    if (c.head != Head::seq && c.head != Head::token) continue;
    if (*c.problem_type) continue;
    SCOPED_TRACE(c.name);
    const bool token = c.head == Head::token;
    const fs::path data = root / (token ? "token.jsonl" : "seq.jsonl");
    const fs::path out = root / c.name;
    const CmdResult tr = run_roberta("train --model " + dir(c) + " --data " + data.string() + " --output " +
                                     out.string() + " --max-steps 2 --batch-size 4 --threads 1 --no-progress");
    ASSERT_EQ(tr.code, 0) << tr.err;
    const json before = json::parse(test::slurp(fs::path(dir(c)) / "config.json"));
    const json after = json::parse(test::slurp(out / "config.json"));
    EXPECT_EQ(after["architectures"], before["architectures"]);
    EXPECT_EQ(after["model_type"], before["model_type"]);
    EXPECT_EQ(after["id2label"], before["id2label"]);
    const CmdResult ev = run_roberta("eval --model " + out.string() + " --data " + data.string());
    ASSERT_EQ(ev.code, 0) << ev.err;
    const json metrics = json::parse(ev.out);
    EXPECT_FALSE(metrics.empty()) << ev.out;
    const CmdResult pr = run_roberta("predict --precision fp32 --model " + out.string() + " 'w5 w21 w30'");
    ASSERT_EQ(pr.code, 0) << pr.err;
    const auto lines = json_lines(pr.out);
    ASSERT_EQ(lines.size(), 1u) << pr.out;
    if (token)
      EXPECT_TRUE(lines[0].is_array()) << pr.out;
    else
      EXPECT_TRUE(before["label2id"].contains(lines[0]["label"].get<std::string>())) << pr.out;
  }
}

// The other problem types through the same loop: a multi-label classifier trained on label
// lists keeps its problem_type and scores each label by sigmoid (independent: they need not
// sum to 1); a regression head trained on numbers is one output whose score is the logit, and
// as a one-label model it is a cross-encoder that rerank sorts by sigmoid(logit).
TEST_F(FamilyMatrix, TrainMultiLabelAndRegressionThenPredictAndRerank) {
  const fs::path root = tmp_->path / "train_problem_types";
  fs::create_directories(root);
  {
    std::ofstream multi(root / "multi.jsonl"), numbers(root / "numbers.jsonl");
    const json label_sets[] = {{"neg"}, {"neg", "pos"}, json::array(), {"neu"}, {"neu", "pos"}};
    for (int i = 0; i < 8; ++i) {
      const std::string text = "w" + std::to_string(5 + i) + " w21 w30";
      multi << json{{"text", text}, {"label", label_sets[i % 5]}}.dump() << "\n";
      numbers << json{{"text", text}, {"label", 0.25 * i}}.dump() << "\n";
    }
  }
  for (const Case& c : kCases) {
    if (!*c.problem_type) continue;
    SCOPED_TRACE(c.name);
    const bool regression = std::string(c.problem_type) == "regression";
    const fs::path data = root / (regression ? "numbers.jsonl" : "multi.jsonl");
    const fs::path out = root / c.name;
    const CmdResult tr = run_roberta("train --model " + dir(c) + " --data " + data.string() + " --output " +
                                     out.string() + " --max-steps 2 --batch-size 4 --threads 1 --no-progress");
    ASSERT_EQ(tr.code, 0) << tr.err;
    const json after = json::parse(test::slurp(out / "config.json"));
    EXPECT_EQ(after["architectures"], json::array({c.architecture}));
    EXPECT_EQ(after["model_type"], c.model_type);
    EXPECT_EQ(after["problem_type"], c.problem_type);
    const CmdResult ev = run_roberta("eval --model " + out.string() + " --data " + data.string());
    ASSERT_EQ(ev.code, 0) << ev.err;
    EXPECT_TRUE(json::parse(ev.out).contains(regression ? "test_mse" : "test_exact_match")) << ev.out;
    const CmdResult pr = run_roberta("predict --logits --precision fp32 --model " + out.string() + " 'w5 w21 w30'");
    ASSERT_EQ(pr.code, 0) << pr.err;
    const json p = json_lines(pr.out).at(0);
    const auto logits = p["logits"].get<std::vector<double>>();
    ASSERT_EQ(logits.size(), regression ? 1u : 3u) << pr.out;
    for (size_t k = 0; k < logits.size(); ++k) {
      const double score = p["scores"][after["id2label"][std::to_string(k)].get<std::string>()];
      EXPECT_NEAR(score, regression ? logits[k] : 1 / (1 + std::exp(-logits[k])), 1e-6) << pr.out;
    }
    if (!regression) continue;
    const CmdResult rr = run_roberta("rerank --raw-scores --precision fp32 --model " + out.string() +
                                     " --query 'w5' 'w21 w30' 'w6 w7 w8' 'w40'");
    ASSERT_EQ(rr.code, 0) << rr.err;
    const auto ranked = json_lines(rr.out);
    ASSERT_EQ(ranked.size(), 3u) << rr.out;
    for (size_t i = 1; i < ranked.size(); ++i)
      EXPECT_GE(ranked[i - 1]["score"].get<double>(), ranked[i]["score"].get<double>()) << rr.out;
    // The rerank score of a pair is predict's logit of that pair.
    const CmdResult pair =
        run_roberta("predict --logits --precision fp32 --model " + out.string() + " 'w5' --text-pair 'w40'");
    ASSERT_EQ(pair.code, 0) << pair.err;
    for (const json& r : ranked) {
      if (r["index"] != 2) continue;
      EXPECT_NEAR(r["score"].get<double>(), json_lines(pair.out).at(0)["logits"][0].get<double>(), 1e-6);
    }
  }
}

// XLM-R and CamemBERT have no token-classification fixture: one is made by training a new
// token head on their sequence classifiers' bodies (--task token-classification), saved as
// <Prefix>ForTokenClassification that predict tags with; bench train steps every family.
TEST_F(FamilyMatrix, RobertaLikeTokenHeadsAndBenchTrain) {
  const fs::path root = tmp_->path / "token_heads";
  fs::create_directories(root);
  {
    std::ofstream token(root / "token.jsonl");
    const char* tags[] = {"O", "B-X", "I-X"};
    for (int i = 0; i < 8; ++i)
      token << json{{"tokens", {"w" + std::to_string(5 + i), "w21", "w30"}},
                    {"ner_tags", {tags[i % 3], tags[(i + 1) % 3], "O"}}}
                   .dump()
            << "\n";
  }
  for (const char* name : {"xlm-roberta-seq", "camembert-seq"}) {
    SCOPED_TRACE(name);
    const Case& c =
        *std::find_if(std::begin(kCases), std::end(kCases), [&](const Case& k) { return std::string(k.name) == name; });
    const fs::path out = root / name;
    const CmdResult tr = run_roberta("train --task token-classification --model " + dir(c) + " --data " +
                                     (root / "token.jsonl").string() + " --output " + out.string() +
                                     " --max-steps 2 --batch-size 4 --threads 1 --no-progress");
    ASSERT_EQ(tr.code, 0) << tr.err;
    const json config = json::parse(test::slurp(out / "config.json"));
    std::string want = c.architecture;
    want.replace(want.find("ForSequenceClassification"), std::string::npos, "ForTokenClassification");
    EXPECT_EQ(config["architectures"], json::array({want}));
    EXPECT_EQ(config["model_type"], c.model_type);
    EXPECT_EQ(config["id2label"].size(), 3u);
    for (const char* precision : kPrecisions) {
      const CmdResult pr =
          run_roberta("predict --precision " + std::string(precision) + " --model " + out.string() + " 'w5 w21 w30'");
      ASSERT_EQ(pr.code, 0) << precision << ": " << pr.err;
      EXPECT_TRUE(json_lines(pr.out).at(0).is_array()) << pr.out;
    }
  }
  for (const char* name : {"bert-seq", "bert-token", "distilbert-seq", "distilbert-token", "xlm-roberta-seq"}) {
    const Case& c =
        *std::find_if(std::begin(kCases), std::end(kCases), [&](const Case& k) { return std::string(k.name) == name; });
    for (const char* precision : {"fp32", "bf16"}) {
      const CmdResult r = run_roberta("bench train --model " + dir(c) + " --precision " + precision +
                                      " --batch-size 2 --seq-len 8 --iters 1 --warmup 0 --busy-threshold 1000");
      ASSERT_EQ(r.code, 0) << name << " " << precision << ": " << r.err;
      EXPECT_EQ(json_lines(r.out).at(0)["mode"], "train") << r.out;
    }
  }
}

// Refused at load, naming the value (exit 3): an unknown model_type, a relative
// position_embedding_type, an unknown hidden_act (BERT) / activation (DistilBERT).
TEST_F(FamilyMatrix, UnsupportedConfigsAreRefusedNamingTheValue) {
  struct Edit {
    const char* source;
    const char* key;
    const char* value;
  };
  for (const Edit& e :
       {Edit{"bert-seq", "model_type", "deberta-v2"}, Edit{"bert-seq", "position_embedding_type", "relative_key"},
        Edit{"xlm-roberta-seq", "position_embedding_type", "relative_key_query"},
        Edit{"bert-seq", "hidden_act", "swish"}, Edit{"distilbert-seq", "activation", "swishy"}}) {
    SCOPED_TRACE(e.value);
    const fs::path d = tmp_->path / (std::string("refuse-") + e.value);
    fs::create_directories(d);
    fs::copy_file(kFamilies / e.source / "model.safetensors", d / "model.safetensors",
                  fs::copy_options::overwrite_existing);
    fs::copy_file(tmp_->path / e.source / "tokenizer.json", d / "tokenizer.json", fs::copy_options::overwrite_existing);
    json config = json::parse(test::slurp(kFamilies / e.source / "config.json"));
    config[e.key] = e.value;
    std::ofstream(d / "config.json") << config.dump();
    for (const std::string& cmd :
         {"predict --model " + d.string() + " w5", "embed --pooling mean --model " + d.string() + " w5"}) {
      const CmdResult r = run_roberta(cmd);
      EXPECT_EQ(r.code, 3) << cmd << ": " << r.err;
      expect_one_line_error(r);
      EXPECT_NE(r.err.find(std::string("'") + e.value + "'"), std::string::npos) << r.err;
    }
  }
}

// serve answers /invocations for each family's heads as the one-shot command does: a
// classifier's label, a token classifier's list, a masked LM's candidates.
TEST_F(FamilyMatrix, ServeAnswersAsTheCommand) {
  for (const char* name : {"bert-seq", "distilbert-token", "xlm-roberta-seq", "camembert-mlm", "bert-bare"}) {
    SCOPED_TRACE(name);
    const Case& c =
        *std::find_if(std::begin(kCases), std::end(kCases), [&](const Case& k) { return std::string(k.name) == name; });
    const int port = test::free_port();
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    std::vector<std::string> argv = {test::roberta_binary(),
                                     "serve",
                                     "--model",
                                     dir(c),
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     std::to_string(port),
                                     "--management-port",
                                     "-1",
                                     "--threads",
                                     "1",
                                     "--precision",
                                     "fp32"};
    if (c.head == Head::bare) argv.insert(argv.end(), {"--pooling", "mean"});  // as TEI, a bare model needs one
    test::Subprocess server(argv, (tmp_->path / (std::string(name) + ".serve.log")).string());
    const std::string text = c.head == Head::mlm ? "w5 <mask> w6" : "w5 w6 w7";
    CmdResult r;
    for (int i = 0; i < 100; ++i) {
      r = run_roberta("invoke --url " + url + " '" + text + "'");
      if (r.code == 0 || !server.running()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_EQ(r.code, 0) << r.err << test::slurp(tmp_->path / (std::string(name) + ".serve.log"));
    const json answer = json::parse(r.out);
    ASSERT_TRUE(answer.is_array()) << r.out;
    ASSERT_FALSE(answer.empty()) << r.out;
    if (c.head == Head::seq) {
      const CmdResult direct = run_roberta("predict --precision fp32 --model " + dir(c) + " '" + text + "'");
      EXPECT_EQ(answer[0]["label"], json_lines(direct.out).at(0)["label"]) << r.out;
    }
    if (c.head == Head::bare) {
      // TEI's /embed normalises by default (normalize: true), as `embed --normalize` does.
      const CmdResult direct =
          run_roberta("embed --normalize --pooling mean --precision fp32 --model " + dir(c) + " '" + text + "'");
      const auto want = json_lines(direct.out).at(0).get<std::vector<double>>();
      const auto got = answer.at(0).get<std::vector<double>>();
      ASSERT_EQ(got.size(), want.size()) << r.out;
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
    }
  }
}

// serve --precision reaches a masked-LM model: its answer is `fill-mask --precision int8`'s, which
// is not fp32's (the scores move by ~1e-5: the check that int8 ran at all).
TEST_F(FamilyMatrix, ServeFillMaskFollowsPrecision) {
  const Case& c =
      *std::find_if(std::begin(kCases), std::end(kCases), [](const Case& k) { return k.head == Head::mlm; });
  const std::string text = c.bert_like ? "w5 [MASK] w6 w7" : "w5 <mask> w6 w7";
  const int port = test::free_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const std::string log = (tmp_->path / "serve_int8.log").string();
  test::Subprocess server({test::roberta_binary(), "serve", "--model", dir(c), "--host", "127.0.0.1", "--port",
                           std::to_string(port), "--management-port", "-1", "--threads", "1", "--precision", "int8"},
                          log);
  CmdResult r;
  for (int i = 0; i < 100; ++i) {
    r = run_roberta("invoke --url " + url + " '" + text + "'");
    if (r.code == 0 || !server.running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(r.code, 0) << r.err << test::slurp(log);
  const CmdResult int8 = run_roberta("fill-mask --precision int8 --threads 1 --model " + dir(c) + " '" + text + "'");
  const CmdResult fp32 = run_roberta("fill-mask --precision fp32 --threads 1 --model " + dir(c) + " '" + text + "'");
  ASSERT_EQ(int8.code, 0) << int8.err;
  ASSERT_EQ(fp32.code, 0) << fp32.err;
  EXPECT_EQ(json::parse(r.out), json_lines(int8.out).at(0)) << r.out;
  EXPECT_NE(json::parse(r.out), json_lines(fp32.out).at(0)) << r.out;
}

// convert keeps each folder what it was: --dtype fp32 answers byte for byte as the source (the
// same architectures and model_type, the tokenizer carried over), --dtype bf16 logits within
// cosine 0.99 / the same top candidate.
TEST_F(FamilyMatrix, ConvertedFoldersAnswerAsTheirSource) {
  for (const Case& c : kCases) {
    if (c.head == Head::bare) continue;
    SCOPED_TRACE(c.name);
    const bool mlm = c.head == Head::mlm;
    const std::string text = mlm ? (c.bert_like ? "'w5 [MASK] w6'" : "'w5 <mask> w6'") : "'w5 w6 w7 w8'";
    auto answer = [&](const std::string& folder) {
      return run_roberta(mlm ? "fill-mask --top-k 2 --model " + folder + " " + text
                             : "predict --logits --precision fp32 --aggregation none --model " + folder + " " + text);
    };
    const CmdResult source = answer(dir(c));
    ASSERT_EQ(source.code, 0) << source.err;
    for (const char* dtype : {"fp32", "bf16"}) {
      const fs::path out = tmp_->path / "converted" / (std::string(c.name) + "-" + dtype);
      const CmdResult cv = run_roberta("convert --model " + dir(c) + " --output " + out.string() + " --dtype " + dtype);
      ASSERT_EQ(cv.code, 0) << dtype << ": " << cv.err;
      const json config = json::parse(test::slurp(out / "config.json"));
      EXPECT_EQ(config["architectures"], json::array({c.architecture})) << dtype;
      EXPECT_EQ(config["model_type"], c.model_type) << dtype;
      const CmdResult converted = answer(out.string());
      ASSERT_EQ(converted.code, 0) << dtype << ": " << converted.err;
      if (std::string(dtype) == "fp32") {
        EXPECT_EQ(converted.out, source.out);
      } else if (mlm) {
        EXPECT_EQ(json_lines(converted.out).at(0)[0]["token"], json_lines(source.out).at(0)[0]["token"]);
      } else if (c.head == Head::seq) {
        // bf16 weights move bert-seq's logits by <= 1.3e-3 (measured), which flips its near-tied
        // neg / pos (7e-4 apart): the logits' direction is the check, not the label.
        const auto a = json_lines(converted.out).at(0)["logits"].get<std::vector<double>>();
        const auto b = json_lines(source.out).at(0)["logits"].get<std::vector<double>>();
        EXPECT_GE(cosine(a, b), 0.99) << source.out << converted.out;
      } else {
        EXPECT_TRUE(json_lines(converted.out).at(0).is_array()) << converted.out;
      }
    }
  }
}

// cuda without a GPU: exit 4 for every family's commands.
TEST_F(FamilyMatrix, CudaIsRefusedWithExit4) {
  for (const Case& c : kCases) {
    if (c.head != Head::seq) continue;
    const CmdResult r = run_roberta("predict --device cuda --model " + dir(c) + " 'w5'");
    if (r.code == 0) GTEST_SKIP() << "a CUDA device is present";
    EXPECT_EQ(r.code, 4) << c.name << ": " << r.err;
  }
}

}  // namespace
}  // namespace rc::family_matrix_test
