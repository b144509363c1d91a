// SageMaker training contract, file level (src/train/sagemaker_env.h): config parsing,
// channel -> dataset staging, model publishing, the failure file. The end-to-end run under a
// real /opt/ml is tests/deploy/test_sagemaker_training.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/utf8.h"
#include "roberta/error.h"
#include "train/dataset.h"
#include "train/sagemaker_env.h"
#include "support/files.h"

namespace fs = std::filesystem;
using rc::train::load_sagemaker_env;
using rc::train::stage_sagemaker_dataset;

namespace {

using rc::test::slurp;

void put(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}
class SageMakerEnv : public ::testing::Test {
 protected:
  fs::path root;
  void SetUp() override {
    root = fs::temp_directory_path() / ("rc_sm_env_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    put(root / "input/config/hyperparameters.json", "{}");
  }
  void TearDown() override { fs::remove_all(root); }
  fs::path data(const std::string& channel) { return root / "input/data" / channel; }
  rc::Errc stage_error() {
    try {
      stage_sagemaker_dataset(load_sagemaker_env(root), root / "staged");
    } catch (const rc::Error& e) {
      last_message = e.what();
      return e.errc();
    }
    ADD_FAILURE() << "staging succeeded";
    return rc::Errc::internal;
  }
  std::string last_message;
};

TEST_F(SageMakerEnv, RequestedOnlyWithHyperparameters) {
  EXPECT_TRUE(rc::train::sagemaker_training_requested(root));
  fs::remove(root / "input/config/hyperparameters.json");
  EXPECT_FALSE(rc::train::sagemaker_training_requested(root));
}

TEST_F(SageMakerEnv, HyperparametersAreStrings) {
  // The SDK's framework estimators JSON-encode strings once more; plain CreateTrainingJob does not.
  put(root / "input/config/hyperparameters.json",
      R"({"epochs": "3", "lr_scheduler": "\"cosine\"", "bf16": true, "seed": 7, "labels": "a,b"})");
  const auto env = load_sagemaker_env(root);
  std::map<std::string, std::string> hp(env.hyperparameters.begin(), env.hyperparameters.end());
  EXPECT_EQ(hp.at("epochs"), "3");
  EXPECT_EQ(hp.at("lr_scheduler"), "cosine");
  EXPECT_EQ(hp.at("bf16"), "true");
  EXPECT_EQ(hp.at("seed"), "7");
  EXPECT_EQ(hp.at("labels"), "a,b");
}

TEST_F(SageMakerEnv, MalformedConfigIsAFormatError) {
  put(root / "input/config/hyperparameters.json", "{\"epochs\": ");
  EXPECT_THROW(load_sagemaker_env(root), rc::Error);
  put(root / "input/config/hyperparameters.json", R"({"epochs": ["3"]})");
  try {
    load_sagemaker_env(root);
    FAIL();
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::format);
    EXPECT_NE(std::string(e.what()).find("epochs"), std::string::npos) << e.what();
  }
}

TEST_F(SageMakerEnv, ResourceAndInputConfig) {
  put(root / "input/config/resourceconfig.json",
      R"({"current_host": "algo-2", "hosts": ["algo-1", "algo-2"], "network_interface_name": "eth0"})");
  put(root / "input/config/inputdataconfig.json",
      R"({"train": {"TrainingInputMode": "File", "ContentType": "text/csv"}, "test": {"TrainingInputMode": "Pipe"}})");
  fs::create_directories(data("extra"));
  const auto env = load_sagemaker_env(root);
  EXPECT_EQ(env.current_host, "algo-2");
  EXPECT_EQ(env.hosts, (std::vector<std::string>{"algo-1", "algo-2"}));
  EXPECT_EQ(env.network_interface, "eth0");
  ASSERT_EQ(env.channels.size(), 3u);  // two listed, one found on disk
  EXPECT_EQ(env.channels.at("train").content_type, "text/csv");
  EXPECT_EQ(env.channels.at("test").input_mode, "Pipe");
  EXPECT_EQ(env.channels.at("extra").dir, data("extra"));
}

TEST_F(SageMakerEnv, StagesChannelsIntoOneDataset) {
  put(data("train") / "part-0000.csv", "text,label\nhello,pos\nbad day,neg\n");  // the only file: any name
  put(data("validation") / "validation.csv", "text,label\nok,pos\n");
  put(data("validation") / "notes.txt", "not data");
  put(data("test") / "test.csv", "text,label\nmeh,neg\n");
  const fs::path staged = stage_sagemaker_dataset(load_sagemaker_env(root), root / "staged");
  const auto ds = rc::train::load_dataset(staged);
  ASSERT_EQ(ds.splits.size(), 3u);
  EXPECT_EQ(ds.splits.at("train").texts, (std::vector<std::string>{"hello", "bad day"}));
  EXPECT_EQ(ds.splits.at("val").texts, (std::vector<std::string>{"ok"}));
  EXPECT_EQ(ds.splits.at("test").texts, (std::vector<std::string>{"meh"}));
}

TEST_F(SageMakerEnv, TrainChannelMayHoldAWholeTweetEvalFolder) {
  for (const char* s : {"train", "val", "test"}) {
    put(data("train") / (std::string(s) + "_text.txt"), std::string(s) + " one\n" + s + " two\n");
    put(data("train") / (std::string(s) + "_labels.txt"), "0\n1\n");
  }
  put(data("train") / "mapping.txt", "0\tneg\n1\tpos\n");
  const auto ds = rc::train::load_dataset(stage_sagemaker_dataset(load_sagemaker_env(root), root / "staged"));
  EXPECT_EQ(ds.splits.size(), 3u);
  EXPECT_EQ(ds.splits.at("val").texts[0], "val one");
  EXPECT_EQ(ds.label_names, (std::vector<std::string>{"neg", "pos"}));
}

TEST_F(SageMakerEnv, MissingTrainChannel) {
  put(data("validation") / "val.csv", "text,label\nok,pos\n");
  EXPECT_EQ(stage_error(), rc::Errc::not_found);
  EXPECT_NE(last_message.find("channel 'train' is missing"), std::string::npos) << last_message;
  EXPECT_NE(last_message.find("validation"), std::string::npos) << last_message;  // lists what exists
}

TEST_F(SageMakerEnv, ListedChannelWithoutFolder) {
  put(root / "input/config/inputdataconfig.json", R"({"train": {}})");
  EXPECT_EQ(stage_error(), rc::Errc::not_found);
}

TEST_F(SageMakerEnv, EmptyAmbiguousMixedAndPipeChannels) {
  fs::create_directories(data("train"));
  EXPECT_EQ(stage_error(), rc::Errc::not_found);  // empty
  put(data("train") / "a.csv", "text,label\nx,1\n");
  put(data("train") / "b.csv", "text,label\ny,1\n");
  EXPECT_EQ(stage_error(), rc::Errc::invalid_argument);  // which one is train?
  EXPECT_NE(last_message.find("a.csv b.csv"), std::string::npos) << last_message;
  fs::remove(data("train") / "b.csv");
  put(data("validation") / "v_text.txt", "x\n");
  put(data("validation") / "v_labels.txt", "1\n");
  EXPECT_EQ(stage_error(), rc::Errc::invalid_argument);  // CSV + TweetEval
  fs::remove_all(data("validation"));
  put(root / "input/config/inputdataconfig.json", R"({"train": {"TrainingInputMode": "Pipe"}})");
  EXPECT_EQ(stage_error(), rc::Errc::unsupported);
}

// pretrain's texts: the split's file by name, else the channel's only text file; validation
// optional; ambiguity, emptiness and Pipe mode refused as for train.
TEST_F(SageMakerEnv, PretrainTextFilesFromTheChannels) {
  auto files_error = [&] {
    try {
      rc::train::sagemaker_text_files(load_sagemaker_env(root));
    } catch (const rc::Error& e) {
      last_message = e.what();
      return e.errc();
    }
    ADD_FAILURE() << "no error";
    return rc::Errc::internal;
  };
  EXPECT_EQ(files_error(), rc::Errc::not_found);  // no train channel
  EXPECT_NE(last_message.find("channel 'train' is missing"), std::string::npos) << last_message;
  put(data("train") / "part-0.txt", "a tweet\n");
  auto f = rc::train::sagemaker_text_files(load_sagemaker_env(root));
  EXPECT_EQ(f.train, data("train") / "part-0.txt");
  EXPECT_TRUE(f.validation.empty());
  put(data("train") / "part-1.jsonl", "{\"text\": \"x\"}\n");
  EXPECT_EQ(files_error(), rc::Errc::invalid_argument);  // two files, neither named train
  EXPECT_NE(last_message.find("2 text files"), std::string::npos) << last_message;
  put(data("train") / "train.jsonl", "{\"text\": \"y\"}\n");  // the split's name wins
  put(data("validation") / "eval.csv", "text\nz\n");
  put(data("validation") / "notes.md", "not data");
  f = rc::train::sagemaker_text_files(load_sagemaker_env(root));
  EXPECT_EQ(f.train, data("train") / "train.jsonl");
  EXPECT_EQ(f.validation, data("validation") / "eval.csv");
  fs::remove(data("validation") / "eval.csv");
  EXPECT_EQ(files_error(), rc::Errc::not_found);  // a validation channel with no text file
  put(root / "input/config/inputdataconfig.json", R"({"train": {"TrainingInputMode": "Pipe"}})");
  EXPECT_EQ(files_error(), rc::Errc::unsupported);
}

TEST_F(SageMakerEnv, PublishCopiesTheModelNotTheCheckpoints) {
  const fs::path out = root / "checkpoints";
  put(out / "config.json", "{}");
  put(out / "model.safetensors", "weights");
  put(out / "checkpoint-4/model.safetensors", "old");
  put(out / ".checkpoint-5.tmp.1/x", "partial");
  rc::train::publish_model_files(out, root / "model");
  EXPECT_EQ(slurp(root / "model/model.safetensors"), "weights");
  EXPECT_TRUE(fs::exists(root / "model/config.json"));
  EXPECT_FALSE(fs::exists(root / "model/checkpoint-4"));
  EXPECT_FALSE(fs::exists(root / "model/.checkpoint-5.tmp.1"));
  fs::remove(out / "config.json");
  fs::remove_all(root / "model");
  EXPECT_THROW(rc::train::publish_model_files(out, root / "model"), rc::Error);  // no config.json: no model
}

TEST_F(SageMakerEnv, FailureFile) {
  rc::train::write_sagemaker_failure(root, "bad hyperparameter: --lr: Value fast could not be converted");
  EXPECT_EQ(slurp(root / "output/failure"), "bad hyperparameter: --lr: Value fast could not be converted\n");
  rc::train::write_sagemaker_failure(root / "no/such/dir/../..", "x");  // never throws
}

TEST_F(SageMakerEnv, FailureFileIsBoundedAndCutBetweenCharacters) {
  // SageMaker keeps the first 1,024 characters; an error quoting a whole input wrote 1 MB.
  // 1,019 ASCII bytes, then 3-byte characters: the 1,023 bytes that fit with the final newline
  // end inside the second of them.
  std::string reason = "bad hyperparameter " + std::string(1000, 'x');
  for (int i = 0; i < 400'000; ++i) reason += "\u20ac";  // the euro sign, E2 82 AC
  rc::train::write_sagemaker_failure(root, reason);
  const std::string got = slurp(root / "output/failure");
  ASSERT_LE(got.size(), rc::train::kSageMakerFailureBytes);
  EXPECT_EQ(got.size(), 1019u + 3 + 1);  // the ASCII, one whole euro sign (not 1 2/3 of them), '\n'
  EXPECT_EQ(got.back(), '\n');
  EXPECT_EQ(got.substr(0, got.size() - 1), reason.substr(0, got.size() - 1));
  EXPECT_TRUE(rc::is_valid_utf8(got));
  // A reason quoting bytes that are not UTF-8 is still valid UTF-8 on the way out.
  rc::train::write_sagemaker_failure(root, "bad file: \xff\xfe");
  EXPECT_EQ(slurp(root / "output/failure"), "bad file: \xEF\xBF\xBD\xEF\xBF\xBD\n");
}

}  // namespace
