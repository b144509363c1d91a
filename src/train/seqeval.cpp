// seqeval's default mode, transcribed (see seqeval.h for the source files).
#include "train/seqeval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/check.h"
#include "core/utf8.h"

namespace rc::train {
namespace {

// seqeval: tag = chunk[0]; type_ = chunk[1:].split('-', maxsplit=1)[-1] or '_'. Python
// indexes code points, so "chunk[1:]" drops the whole first UTF-8 sequence. Only the tag
// letters B I E S O and '.' are ever compared, so any other first character is kept as '\0'.
struct SplitTag {
  char tag;
  std::string type;
};

SplitTag split_tag(const std::string& chunk) {
  RC_CHECK(!chunk.empty(), Errc::invalid_argument, "seqeval: an empty tag (seqeval fails on it too)");
  const auto lead = static_cast<unsigned char>(chunk[0]);
  const size_t first_len = lead < 0x80 ? 1 : std::min<size_t>(size_t(utf8_lead_length(lead)), chunk.size());
  SplitTag out{lead < 0x80 ? char(lead) : '\0', {}};
  const std::string rest = chunk.substr(first_len);
  const size_t dash = rest.find('-');
  out.type = dash == std::string::npos ? rest : rest.substr(dash + 1);
  if (out.type.empty()) out.type = "_";
  return out;
}

bool end_of_chunk(char prev_tag, char tag, const std::string& prev_type, const std::string& type) {
  bool chunk_end = false;
  if (prev_tag == 'E') chunk_end = true;
  if (prev_tag == 'S') chunk_end = true;
  if (prev_tag == 'B' && tag == 'B') chunk_end = true;
  if (prev_tag == 'B' && tag == 'S') chunk_end = true;
  if (prev_tag == 'B' && tag == 'O') chunk_end = true;
  if (prev_tag == 'I' && tag == 'B') chunk_end = true;
  if (prev_tag == 'I' && tag == 'S') chunk_end = true;
  if (prev_tag == 'I' && tag == 'O') chunk_end = true;
  if (prev_tag != 'O' && prev_tag != '.' && prev_type != type) chunk_end = true;
  return chunk_end;
}

bool start_of_chunk(char prev_tag, char tag, const std::string& prev_type, const std::string& type) {
  bool chunk_start = false;
  if (tag == 'B') chunk_start = true;
  if (tag == 'S') chunk_start = true;
  if (prev_tag == 'E' && tag == 'E') chunk_start = true;
  if (prev_tag == 'E' && tag == 'I') chunk_start = true;
  if (prev_tag == 'S' && tag == 'E') chunk_start = true;
  if (prev_tag == 'S' && tag == 'I') chunk_start = true;
  if (prev_tag == 'O' && tag == 'E') chunk_start = true;
  if (prev_tag == 'O' && tag == 'I') chunk_start = true;
  if (tag != 'O' && tag != '.' && prev_type != type) chunk_start = true;
  return chunk_start;
}

// _prf_divide with zero_division=0.
double prf_divide(int64_t numerator, int64_t denominator) {
  return denominator == 0 ? 0.0 : double(numerator) / double(denominator);
}

// _precision_recall_fscore_support's F (beta = 1): denom = p + r, 1 where it is 0.
double f1_of(double precision, double recall) {
  double denom = precision + recall;
  if (denom == 0.0) denom = 1.0;
  return 2.0 * precision * recall / denom;
}

}  // namespace

std::vector<SeqevalEntity> seqeval_entities(std::span<const TagSequence> sentences) {
  std::vector<SeqevalEntity> chunks;
  char prev_tag = 'O';
  std::string prev_type;
  int64_t begin_offset = 0, i = 0;
  const std::string outside = "O";
  auto step = [&](const std::string& chunk) {
    SplitTag t = split_tag(chunk);
    if (end_of_chunk(prev_tag, t.tag, prev_type, t.type)) chunks.push_back({prev_type, begin_offset, i - 1});
    if (start_of_chunk(prev_tag, t.tag, prev_type, t.type)) begin_offset = i;
    prev_tag = t.tag;
    prev_type = std::move(t.type);
    ++i;
  };
  // seq = [item for sublist in seq for item in sublist + ['O']], then seq + ['O'].
  for (const TagSequence& sentence : sentences) {
    for (const std::string& chunk : sentence) step(chunk);
    step(outside);
  }
  step(outside);
  return chunks;
}

SeqevalReport seqeval_report(std::span<const TagSequence> gold, std::span<const TagSequence> predicted) {
  RC_CHECK(gold.size() == predicted.size(), Errc::invalid_argument, "seqeval: ", gold.size(), " gold sentences but ",
           predicted.size(), " predicted");
  SeqevalReport report;
  int64_t correct_tokens = 0;
  for (size_t s = 0; s < gold.size(); ++s) {
    RC_CHECK(gold[s].size() == predicted[s].size(), Errc::invalid_argument, "seqeval: sentence ", s, " has ",
             gold[s].size(), " gold tags but ", predicted[s].size(), " predicted");
    for (size_t t = 0; t < gold[s].size(); ++t) correct_tokens += gold[s][t] == predicted[s][t];
    report.tokens += int64_t(gold[s].size());
  }
  report.accuracy = prf_divide(correct_tokens, report.tokens);

  // extract_tp_actual_correct: per type, the sets of (start, end).
  using Spans = std::set<std::pair<int64_t, int64_t>>;
  std::map<std::string, Spans> gold_by_type, pred_by_type;  // std::map: sorted as Python's sorted()
  for (const SeqevalEntity& e : seqeval_entities(gold)) gold_by_type[e.type].insert({e.start, e.end});
  for (const SeqevalEntity& e : seqeval_entities(predicted)) pred_by_type[e.type].insert({e.start, e.end});
  std::set<std::string> names;
  for (const auto& [name, _] : gold_by_type) names.insert(name);
  for (const auto& [name, _] : pred_by_type) names.insert(name);

  for (const std::string& name : names) {
    const Spans& g = gold_by_type[name];
    const Spans& p = pred_by_type[name];
    EntityTypeScores row;
    row.type = name;
    row.support = int64_t(g.size());
    row.predicted = int64_t(p.size());
    for (const auto& span : p) row.correct += g.count(span) ? 1 : 0;
    row.precision = prf_divide(row.correct, row.predicted);
    row.recall = prf_divide(row.correct, row.support);
    row.f1 = f1_of(row.precision, row.recall);
    report.support += row.support;
    report.predicted += row.predicted;
    report.correct += row.correct;
    report.per_type.push_back(std::move(row));
  }
  report.precision = prf_divide(report.correct, report.predicted);
  report.recall = prf_divide(report.correct, report.support);
  report.f1 = f1_of(report.precision, report.recall);
  return report;
}

NerSequences ner_tag_sequences(std::span<const float> logits, std::span<const int32_t> labels, int64_t rows,
                               int64_t seq_len, std::span<const std::string> id2label) {
  const int64_t K = int64_t(id2label.size());
  RC_CHECK(K > 0 && rows >= 0 && seq_len >= 0, Errc::invalid_argument, "ner_tag_sequences: ", rows, " x ", seq_len,
           " x ", K);
  RC_CHECK(int64_t(labels.size()) == rows * seq_len && int64_t(logits.size()) == rows * seq_len * K,
           Errc::invalid_argument, "ner_tag_sequences: ", labels.size(), " labels and ", logits.size(), " logits for ",
           rows, " x ", seq_len, " x ", K);
  NerSequences out;
  for (int64_t r = 0; r < rows; ++r) {
    TagSequence gold, predicted;
    for (int64_t t = 0; t < seq_len; ++t) {
      const int32_t label = labels[size_t(r * seq_len + t)];
      if (label == -100) continue;
      RC_CHECK(label >= 0 && label < K, Errc::invalid_argument, "ner_tag_sequences: label ", label, " at (", r, ", ", t,
               ") is not -100 or in [0, ", K, ")");
      const float* z = logits.data() + (r * seq_len + t) * K;
      int64_t best = 0;  // np.argmax: the first maximum, a NaN wins
      for (int64_t k = 0; k < K && !std::isnan(z[best]); ++k)
        if (std::isnan(z[k]) || z[k] > z[best]) best = k;
      gold.push_back(id2label[size_t(label)]);
      predicted.push_back(id2label[size_t(best)]);
    }
    out.gold.push_back(std::move(gold));
    out.predicted.push_back(std::move(predicted));
  }
  return out;
}

nlohmann::ordered_json seqeval_to_json(const SeqevalReport& report) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const EntityTypeScores& row : report.per_type)
    j[row.type] = {{"precision", row.precision}, {"recall", row.recall}, {"f1", row.f1}, {"number", row.support}};
  j["overall_precision"] = report.precision;
  j["overall_recall"] = report.recall;
  j["overall_f1"] = report.f1;
  j["overall_accuracy"] = report.accuracy;
  return j;
}

}  // namespace rc::train
