// Entity-level NER metrics as seqeval computes them in its default mode (conlleval-compatible,
// no `scheme`), which is what Hugging Face's `evaluate.load("seqeval")` and the
// token-classification examples report: micro precision / recall / F1 over entities, the same
// per entity type, and token accuracy (seqeval.metrics.accuracy_score).
//
// Source: chakki-works/seqeval 1.2.2, seqeval/metrics/sequence_labeling.py (get_entities,
// end_of_chunk, start_of_chunk, precision_recall_fscore_support, classification_report,
// accuracy_score) and seqeval/metrics/v1.py (_precision_recall_fscore_support, _prf_divide),
// with zero_division = 0. tools/seqeval_ref.py is the line-by-line Python transcription the
// tests compare against.
//
// Tags are read as seqeval's default mode reads them: the first character is the tag (B, I,
// E, S, O, anything else), the rest after the first '-' is the type ("B-PER" -> B, PER;
// "O" -> O, "_"). So IOB1-style I- starts, E-/S- tags and a type change inside an entity are
// handled exactly as seqeval does (an I- after O or after another type starts an entity).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rc::train {

using TagSequence = std::vector<std::string>;  // one sentence's tags, e.g. {"B-PER", "I-PER", "O"}

// One entity; start and end (inclusive) index the sentences joined with one "O" after each,
// as seqeval's get_entities does for a list of sentences.
struct SeqevalEntity {
  std::string type;
  int64_t start = 0, end = 0;
  bool operator==(const SeqevalEntity&) const = default;
};

// seqeval's get_entities(sentences) in default (prefix) mode. Throws invalid_argument on an
// empty tag (seqeval raises IndexError there).
std::vector<SeqevalEntity> seqeval_entities(std::span<const TagSequence> sentences);

struct EntityTypeScores {
  std::string type;
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;    // gold entities of this type (seqeval's "support", evaluate's "number")
  int64_t predicted = 0;  // predicted entities of this type
  int64_t correct = 0;    // predicted entities equal to a gold one (type, start, end)
};

struct SeqevalReport {
  // Every type found in gold OR predictions, sorted by name (Python's str order = code
  // points = UTF-8 byte order). A type only predicted has support 0 and recall 0.
  std::vector<EntityTypeScores> per_type;
  double precision = 0, recall = 0, f1 = 0;  // micro average ("overall_*"); 0 on a zero division
  int64_t support = 0, predicted = 0, correct = 0;
  double accuracy = 0;  // token accuracy; 0 when there are no tokens (seqeval divides by zero)
  int64_t tokens = 0;
};

// gold and predicted: the same number of sentences, each pair of the same length; throws
// invalid_argument (naming the sentence) otherwise, as seqeval's check_consistent_length does.
SeqevalReport seqeval_report(std::span<const TagSequence> gold, std::span<const TagSequence> predicted);

// The tag sequences HF's token-classification examples score (run_ner.py compute_metrics):
// predictions = np.argmax(logits, axis=2) (the first maximum); positions whose label is -100
// (special tokens, padding, a word's later sub-tokens) are dropped from both. logits:
// (rows, seq_len, K), labels: (rows, seq_len), K = id2label.size(). A label outside
// [0, K) other than -100 throws invalid_argument.
struct NerSequences {
  std::vector<TagSequence> gold, predicted;
};
NerSequences ner_tag_sequences(std::span<const float> logits, std::span<const int32_t> labels, int64_t rows,
                               int64_t seq_len, std::span<const std::string> id2label);

// The dict `evaluate`'s seqeval metric returns, in its key order: one object per type
// {"precision", "recall", "f1", "number"}, then "overall_precision", "overall_recall",
// "overall_f1", "overall_accuracy".
nlohmann::ordered_json seqeval_to_json(const SeqevalReport& report);

}  // namespace rc::train
