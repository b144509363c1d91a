// `roberta package` of a sentence-transformers folder: the module folders modules.json names
// (1_Pooling/, 2_Dense/) go into the archive, so the unpacked model embeds with the folder's
// pooling and Dense as the original does; module paths that leave the folder are refused.
#include <gtest/gtest.h>

#include <fstream>

#include "model/sentence_transformer.h"
#include "roberta/error.h"
#include "serve/package.h"
#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kStFolder = fs::path(RC_TEST_DATA_DIR) / "embed" / "st";

}  // namespace

TEST(PackageModules, SentenceTransformerFolderKeepsItsModules) {
  TempDir tmp;
  const auto members = write_package(kStFolder, tmp.path() / "st.tar.gz", {});
  for (const char* want : {"modules.json", "1_Pooling/config.json", "2_Dense/config.json", "2_Dense/model.safetensors"})
    EXPECT_NE(std::find(members.begin(), members.end(), want), members.end()) << want;
  extract_package(tmp.path() / "st.tar.gz", tmp.path() / "unpacked");
  const auto original = rc::model::Embedder::load(kStFolder);
  const auto packaged = rc::model::Embedder::load(tmp.path() / "unpacked");
  EXPECT_EQ(packaged->config().pooling.describe(), original->config().pooling.describe());
  ASSERT_EQ(packaged->config().dense.size(), 1u);
  EXPECT_EQ(packaged->dimension(), original->dimension());
  const std::vector<std::string> texts{"Covid cases are increasing fast!"};
  const auto a = original->encode_texts(texts, ""), b = packaged->encode_texts(texts, "");
  ASSERT_EQ(a[0].size(), b[0].size());
  for (size_t i = 0; i < a[0].size(); ++i) EXPECT_EQ(a[0][i], b[0][i]) << i;
}

TEST(PackageModules, ModulePathsOutsideTheFolderAreRefused) {
  TempDir tmp;
  const fs::path model = tmp.path() / "m";
  write_fake_model(model, 16, 0, {"a", "b"});
  fs::create_directories(tmp.path() / "secret");
  std::ofstream(tmp.path() / "secret" / "key") << "do not pack";
  for (const std::string path : {"../secret", "/etc", "1_Pooling/../../secret", "code", "a\\\\b"}) {
    std::ofstream(model / "modules.json")
        << R"([{"idx": 1, "name": "1", "path": ")" << path << R"(", "type": "sentence_transformers.models.Pooling"}])";
    try {
      write_package(model, tmp.path() / "out.tar.gz", {});
      ADD_FAILURE() << path << " must be refused";
    } catch (const rc::Error& e) {
      EXPECT_EQ(e.errc(), rc::Errc::format) << path;
    }
    EXPECT_FALSE(fs::exists(tmp.path() / "out.tar.gz")) << path;
  }
  // A module folder that is a link to elsewhere is refused too.
  fs::create_directory_symlink(tmp.path() / "secret", model / "1_Pooling");
  std::ofstream(model / "modules.json") << R"([{"idx": 1, "name": "1", "path": "1_Pooling", "type": "x"}])";
  EXPECT_THROW(write_package(model, tmp.path() / "out.tar.gz", {}), rc::Error);
  EXPECT_FALSE(fs::exists(tmp.path() / "out.tar.gz"));
}
