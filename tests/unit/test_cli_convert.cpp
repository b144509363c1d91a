// `roberta convert` keeps the head and the family a folder was saved with: a token classifier
// stays BertForTokenClassification (its classifier.weight of num_labels x hidden), a masked LM
// stays DistilBertForMaskedLM, and the line it prints names that class (it printed
// RobertaForSequenceClassification or RobertaForMaskedLM for every folder, and converted a token
// classifier's folder as a sequence classifier).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "support/run_cli.h"

namespace fs = std::filesystem;
using nlohmann::json;
using rc::test::run_roberta;

namespace {

const fs::path kFamilies = fs::path(RC_TEST_DATA_DIR) / "tiny_families";

std::set<std::string> tensor_names(const fs::path& dir) {
  std::set<std::string> names;
  const auto weights = rc::model::open_weights(dir);
  for (const auto& t : weights->tensors()) names.insert(t.name);
  return names;
}

class ConvertKeepsTheHead : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertKeepsTheHead, ArchitectureTensorsAndPrintedClass) {
  const fs::path src = kFamilies / GetParam();
  const fs::path out = fs::temp_directory_path() / ("rc_convert_" + GetParam() + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  const std::string want_class = json::parse(rc::test::slurp(src / "config.json"))["architectures"][0];

  const auto r = run_roberta("convert --model " + src.string() + " --output " + out.string() + " --dtype fp32");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(want_class), std::string::npos) << r.out;
  const json config = json::parse(rc::test::slurp(out / "config.json"));
  EXPECT_EQ(config["architectures"][0], want_class);
  EXPECT_EQ(config["model_type"], json::parse(rc::test::slurp(src / "config.json"))["model_type"]);
  EXPECT_EQ(tensor_names(out), tensor_names(src));
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Families, ConvertKeepsTheHead,
                         ::testing::Values("bert-token", "distilbert-mlm", "xlm-roberta-seq", "bert-seq"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
