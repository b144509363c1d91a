// model.tar.gz packaging: what goes in, determinism, atomic replacement, the serving
// settings, and serving straight from the archive (fake model; the refusal cases of
// extraction are io's tests/io/test_archive.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "io/archive.h"
#include "io/atomic_file.h"
#include "serve/package.h"
#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;
namespace fs = std::filesystem;

TEST(Package, LayoutSettingsAndDeterminism) {
  TempDir tmp;
  const fs::path model = tmp.path() / "my-model";
  write_fake_model(model, 16, 0, {"neg", "neu", "pos"});
  std::ofstream(model / "optimizer.pt") << "training state";
  std::ofstream(model / "rng_state.pth") << "rng";
  fs::create_directories(model / "checkpoint-100");
  std::ofstream(model / "checkpoint-100" / "x") << "x";

  PackageOptions opts;
  opts.version = "2.1";
  opts.max_batch_size = 8;
  opts.max_batch_delay_ms = 0;
  const auto members = write_package(model, tmp.path() / "a.tar.gz", opts);
  EXPECT_EQ(members, (std::vector<std::string>{"config.json", "fake_model.json", "code/serving.json"}));
  // Same inputs, same bytes.
  write_package(model, tmp.path() / "b.tar.gz", opts);
  EXPECT_EQ(rc::io::read_file(tmp.path() / "a.tar.gz"), rc::io::read_file(tmp.path() / "b.tar.gz"));
  EXPECT_TRUE(is_tar_gz(tmp.path() / "a.tar.gz"));
  EXPECT_FALSE(is_tar_gz(model / "config.json"));

  const fs::path out = tmp.path() / "unpacked";
  extract_package(tmp.path() / "a.tar.gz", out);
  EXPECT_EQ(rc::io::read_file(out / "config.json"), rc::io::read_file(model / "config.json"));
  EXPECT_FALSE(fs::exists(out / "optimizer.pt"));
  const ServingSettings s = read_settings(out);
  EXPECT_EQ(s.name, "my-model");
  EXPECT_EQ(s.version, "2.1");
  EXPECT_EQ(s.max_batch_size, 8);
  EXPECT_EQ(s.max_batch_delay_ms, 0);
  EXPECT_EQ(s.labels, (std::vector<std::string>{"neg", "neu", "pos"}));
}

TEST(Package, RefusesAFolderWithoutConfigAndKeepsTheOldArchive) {
  TempDir tmp;
  const fs::path good = tmp.path() / "good";
  write_fake_model(good);
  const fs::path archive = tmp.path() / "model.tar.gz";
  write_package(good, archive, {});
  const std::string before = rc::io::read_file(archive);
  const fs::path empty = tmp.path() / "empty";
  fs::create_directories(empty);
  EXPECT_THROW(write_package(empty, archive, {}), rc::Error);
  EXPECT_THROW(write_package(tmp.path() / "missing", archive, {}), rc::Error);
  EXPECT_EQ(rc::io::read_file(archive), before);
}

// Session 9's red team: special_tokens_map.json -> /etc/passwd was packed (and, with
// --output s3://, would be uploaded). Links are followed only inside the folder, or into the
// blobs of the Hugging Face cache repo the folder is a snapshot of.
TEST(Package, LinksOutsideTheFolderAreRefused) {
  TempDir tmp;
  const fs::path model = tmp.path() / "model";
  write_fake_model(model);
  const fs::path archive = tmp.path() / "model.tar.gz";
  write_package(model, archive, {});
  const std::string before = rc::io::read_file(archive);
  std::ofstream(tmp.path() / "secret.txt") << "not for the archive";
  fs::create_symlink(tmp.path() / "secret.txt", model / "special_tokens_map.json");
  try {
    write_package(model, archive, {});
    FAIL() << "packed a link to a file outside the folder";
  } catch (const rc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("links outside the model folder"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rc::io::read_file(archive), before);
  // A link within the folder is packed as the file it names.
  fs::remove(model / "special_tokens_map.json");
  std::ofstream(model / "real_map.json") << "{}";
  fs::create_symlink("real_map.json", model / "special_tokens_map.json");
  EXPECT_NO_THROW(write_package(model, archive, {}));
  // The Hugging Face cache layout: snapshots/<rev>/<file> -> ../../blobs/<etag>.
  const fs::path repo = tmp.path() / "hub" / "models--org--name";
  const fs::path snapshot = repo / "snapshots" / "abc123";
  write_fake_model(tmp.path() / "staged");
  fs::create_directories(repo / "blobs");
  fs::create_directories(snapshot);
  for (const auto& e : fs::directory_iterator(tmp.path() / "staged")) {
    const std::string etag = "etag-" + e.path().filename().string();
    fs::copy_file(e.path(), repo / "blobs" / etag);
    fs::create_symlink(fs::path("../../blobs") / etag, snapshot / e.path().filename());
  }
  EXPECT_NO_THROW(write_package(snapshot, tmp.path() / "hub.tar.gz", {}));
  EXPECT_NO_THROW(write_package(snapshot.string() + "/", tmp.path() / "hub2.tar.gz", {}));
}

TEST(Package, SettingsRejectNewerFormat) {
  EXPECT_THROW(settings_from_json(R"({"format_version": 99})", "x"), rc::Error);
  EXPECT_THROW(settings_from_json(R"([1])", "x"), rc::Error);
  EXPECT_THROW(settings_from_json(R"({"max_batch_size": -2})", "x"), rc::Error);
  const auto s = settings_from_json(settings_to_json({"n", "1.5", 64, 4, 7, {"a"}, "bf16", "sigmoid", "tweet"}), "x");
  EXPECT_EQ(s.version, "1.5");
  EXPECT_EQ(s.max_length, 64);
  EXPECT_EQ(s.precision, "bf16");
  EXPECT_EQ(s.function_to_apply, "sigmoid");
  EXPECT_EQ(s.preprocess, "tweet");
}

TEST(Package, ServedFromTheArchiveWithItsSettings) {
  LiveServer s;
  const fs::path model = s.tmp.path() / "src";
  write_fake_model(model, 16, 0, {"bad-label", "good-label"});
  PackageOptions opts;
  opts.version = "3.0";
  opts.max_batch_size = 7;
  write_package(model, s.store / "pkg.tar.gz", opts);
  auto reg = call("POST", s.mgmt("/models?url=pkg.tar.gz"), "", "");
  ASSERT_EQ(reg.status, 200) << reg.body;
  EXPECT_NE(reg.body.find("Version: 3.0"), std::string::npos) << reg.body;
  auto desc = call("GET", s.mgmt("/models/pkg"), "", "");
  ASSERT_EQ(desc.status, 200);
  EXPECT_EQ(json::parse(desc.body)[0]["batchSize"], 7);  // from code/serving.json
  auto r = call("POST", s.url("/predictions/pkg"), R"({"inputs": "bad"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)[0]["label"], "bad-label");
  // Unloading removes the unpacked copy.
  size_t unpacked = 0;
  for (const auto& e : fs::directory_iterator(s.tmp.path()))
    if (e.path().filename().string().rfind("rc-serve-", 0) == 0) ++unpacked;
  EXPECT_EQ(unpacked, 1u);
  ASSERT_EQ(call("DELETE", s.mgmt("/models/pkg"), "", "").status, 200);
  // The unpacked folder goes when the last request holding the model is done.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = true;
    for (const auto& e : fs::directory_iterator(s.tmp.path()))
      if (e.path().filename().string().rfind("rc-serve-", 0) == 0) gone = false;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone);
}

TEST(Package, CorruptArchiveIsAnErrorNotACrash) {
  LiveServer s;
  {
    std::ofstream f(s.store / "broken.tar.gz", std::ios::binary);
    f << "\x1f\x8b" << std::string(100, '\x07');
  }
  auto r = call("POST", s.mgmt("/models?url=broken.tar.gz"), "", "");
  EXPECT_GE(r.status, 400);
  EXPECT_LT(r.status, 600);
  EXPECT_EQ(call("GET", s.url("/ping")).status, 200);
}
