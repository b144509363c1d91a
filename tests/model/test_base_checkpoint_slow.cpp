// A roberta-base-sized random checkpoint, made at test time by tools/make_checkpoint.py
// (Debian python3-torch), against the reference's logits from tools/ref_predict.py.
// Labelled `slow` (file name): ~1 GB written, a few seconds of PyTorch. Skipped when
// /usr/bin/python3 has no torch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "roberta/classifier.h"
#include "support/allclose.h"

namespace rc {
namespace {
namespace fs = std::filesystem;

std::string capture(const std::string& cmd, int* code) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(BaseCheckpoint, RandomRobertaBaseMatchesPytorchReference) {
  int code = 0;
  capture("/usr/bin/python3 -c 'import torch' 2>/dev/null", &code);
  if (code != 0) GTEST_SKIP() << "/usr/bin/python3 has no torch (apt-get install python3-torch)";
  const std::string src = RC_SOURCE_DIR;
  const fs::path dir = fs::temp_directory_path() / ("rc_base_" + std::to_string(::getpid()));
  capture("/usr/bin/python3 " + src + "/tools/make_checkpoint.py --size base --format safetensors --seed 3 --out " +
              dir.string() + " >/dev/null 2>&1",
          &code);
  ASSERT_EQ(code, 0) << "tools/make_checkpoint.py failed";

  auto clf = Classifier::load(dir);
  EXPECT_EQ(clf->info().num_parameters, 124647939);  // roberta-base body + 3-label head
  const std::vector<std::string> texts = {"Covid cases are increasing fast!",
                                          "I love this new phone, the camera is amazing 😍 ",
                                          "@user meh. not sure what to think about the debate tonight "};
  std::vector<std::vector<int32_t>> ids;
  for (const auto& t : texts) ids.push_back(clf->tokenizer().encode(t, true, clf->max_length()));
  const fs::path ids_file = dir / "ids.json";
  std::ofstream(ids_file) << nlohmann::json(ids).dump();
  const std::string out = capture(
      "/usr/bin/python3 " + src + "/tools/ref_predict.py --model " + dir.string() + " --ids-json " + ids_file.string(),
      &code);
  ASSERT_EQ(code, 0) << "tools/ref_predict.py failed: " << out;
  const auto want = nlohmann::json::parse(out)["logits"].get<std::vector<std::vector<float>>>();
  const auto preds = clf->predict_ids(ids);  // one padded batch
  ASSERT_EQ(preds.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    // fp32 tolerance 1e-4 (issue 2); HF-init logits are small, so also compare relatively.
    EXPECT_ALLCLOSE(preds[i].logits.data(), want[i].data(), int64_t(want[i].size()), (test::Tol{1e-4, 1e-3}));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rc
