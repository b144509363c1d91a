// Hub downloads against tests/hub/mock_hub.py on loopback: the huggingface_hub cache
// layout, warm-cache behaviour, redirects without the token, resume, retries, the sha256
// check, errors with hints, offline mode, and a cache laid out by hand as Python does.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "hub/fifo_feeder.h"
#include "hub/hub.h"
#include "hub_fixture.h"
#include "net/http.h"
#include "roberta/error.h"
#include "support/files.h"

namespace fs = std::filesystem;
using rc::test::MockHub;
using rc::test::slurp;

namespace {

using rc::test::kTiny;

class HubDownload : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("RC_NET_RETRIES", "4", 1);
    ::setenv("RC_NET_BACKOFF_MS", "20", 1);  // retries stay, the waiting does not
    ::setenv("RC_PROGRESS", "0", 1);
    dir_ = rc::test::fresh_dir("rc-test-hub");
    hub_ = new MockHub;
    ASSERT_TRUE(hub_->start(dir_)) << "mock Hub did not start (python3 tests/hub/mock_hub.py)";
  }
  static void TearDownTestSuite() {
    delete hub_;
    fs::remove_all(dir_);
  }
  void SetUp() override {
    hub_->control({{"reset", true}});
    cache_ = dir_ / ("cache-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(cache_);
    settings_.endpoint = hub_->endpoint();
    settings_.cache = cache_;
    settings_.token.clear();
    settings_.offline = false;
  }
  rc::hub::RepoCache repo(const std::string& id = "org/tiny") const { return rc::hub::RepoCache(cache_, id); }
  // The settings from_env() makes (with the RC_HUB_* bounds a test set), on this test's Hub and cache.
  rc::hub::HubSettings settings_from_env() const {
    rc::hub::HubSettings s = rc::hub::HubSettings::from_env();
    s.endpoint = settings_.endpoint;
    s.cache = settings_.cache;
    s.token.clear();
    s.offline = false;
    return s;
  }
  // The error `f` throws ("no error" when it returns), with its hint.
  static std::string error_of(const std::function<void()>& f, rc::Errc* errc = nullptr) {
    try {
      f();
    } catch (const rc::Error& e) {
      if (errc) *errc = e.errc();
      return std::string(e.what()) + "\nhint: " + e.hint();
    }
    return "no error";
  }
  fs::path blobs() const { return cache_ / "models--org--tiny" / "blobs"; }
  fs::path incomplete() const { return blobs() / (hub_->sha256() + ".incomplete"); }

  static fs::path dir_;
  static MockHub* hub_;
  fs::path cache_;
  rc::hub::HubSettings settings_;
};
fs::path HubDownload::dir_;
MockHub* HubDownload::hub_ = nullptr;

TEST_F(HubDownload, LaysOutTheCacheAsHuggingfaceHub) {
  const auto r = rc::hub::fetch(settings_, "org/tiny", "", rc::hub::Want::model);
  EXPECT_EQ(r.commit, hub_->commit());
  EXPECT_EQ(r.snapshot, cache_ / "models--org--tiny" / "snapshots" / hub_->commit());
  EXPECT_EQ(slurp(cache_ / "models--org--tiny" / "refs" / "main"), hub_->commit());  // bare hash, no newline
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) {
    const fs::path p = r.snapshot / f;
    ASSERT_TRUE(fs::is_symlink(p)) << f;
    const fs::path target = fs::read_symlink(p);
    EXPECT_TRUE(target.is_relative()) << target;
    EXPECT_EQ(target.parent_path(), fs::path("../../blobs")) << target;
    EXPECT_EQ(slurp(p), slurp(kTiny / f)) << f;
  }
  // LFS blobs are stored under their sha256, as huggingface_hub names them.
  EXPECT_EQ(fs::read_symlink(r.snapshot / "model.safetensors").filename(), hub_->sha256());
  // safetensors exists, so the .bin is not fetched; absent tokenizer files are marked.
  EXPECT_FALSE(fs::exists(r.snapshot / "pytorch_model.bin"));
  EXPECT_TRUE(fs::exists(cache_ / "models--org--tiny" / ".no_exist" / hub_->commit() / "tokenizer.json"));
  EXPECT_TRUE(fs::exists(cache_ / ".locks" / "models--org--tiny" / (hub_->sha256() + ".lock")));
  EXPECT_EQ(r.bytes_downloaded, fs::file_size(kTiny / "model.safetensors") + fs::file_size(kTiny / "config.json") +
                                    fs::file_size(kTiny / "vocab.json") + fs::file_size(kTiny / "merges.txt"));
  for (const auto& e : fs::directory_iterator(cache_ / "models--org--tiny" / "blobs"))
    EXPECT_NE(e.path().extension(), ".incomplete");
}

TEST_F(HubDownload, WarmCacheDownloadsNothing) {
  rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  hub_->control({{"reset", true}});
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_EQ(r.bytes_downloaded, 0u);
  const auto log = hub_->log();
  EXPECT_EQ(MockHub::count(log, "hub", "GET") + MockHub::count(log, "storage", "GET"), 0) << log.dump();
  EXPECT_EQ(MockHub::count(log, "hub", "HEAD"), 1) << "a branch is asked once for its commit: " << log.dump();
  uint64_t bytes = 0;
  for (const auto& e : log) bytes += e["bytes"].get<uint64_t>();
  EXPECT_EQ(bytes, 0u);
  // A commit sha names immutable content: no request at all.
  const uint64_t before = rc::net::request_count();
  rc::hub::fetch(settings_, "org/tiny", hub_->commit(), rc::hub::Want::model);
  EXPECT_EQ(rc::net::request_count(), before);
}

TEST_F(HubDownload, RedirectToStorageDropsTheToken) {
  settings_.token = "secret-token";
  rc::hub::fetch(settings_, "org/private", "main", rc::hub::Want::model);
  const auto log = hub_->log();
  int storage_gets = 0;
  for (const auto& e : log) {
    if (e["port"] == "hub") {
      EXPECT_EQ(e["auth"], "Bearer secret-token") << e.dump();
    } else {
      EXPECT_TRUE(e["auth"].is_null()) << "the token leaked to the storage host: " << e.dump();
      storage_gets += e["method"] == "GET";
    }
  }
  EXPECT_EQ(storage_gets, 1);
}

TEST_F(HubDownload, PrivateModelWithoutTokenSaysSetHfToken) {
  try {
    rc::hub::fetch(settings_, "org/private", "main", rc::hub::Want::model);
    FAIL() << "expected an error";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::not_found);
    EXPECT_NE(std::string(e.what()).find("no model 'org/private'"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("HF_TOKEN"), std::string::npos) << e.hint();
  }
  EXPECT_FALSE(fs::exists(cache_ / "models--org--private" / "snapshots"));
}

TEST_F(HubDownload, GatedModelSaysAcceptTermsAndSetToken) {
  try {
    rc::hub::fetch(settings_, "org/gated", "main", rc::hub::Want::model);
    FAIL() << "expected an error";
  } catch (const rc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gated"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("HF_TOKEN"), std::string::npos) << e.hint();
  }
}

TEST_F(HubDownload, MissingModelRevisionAndFileEachSaySo) {
  auto message = [&](const std::string& repo, const std::string& rev) -> std::string {
    try {
      rc::hub::fetch(settings_, repo, rev, rc::hub::Want::model);
    } catch (const rc::Error& e) {
      EXPECT_EQ(e.errc(), rc::Errc::not_found) << e.what();
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message("org/nothing-here", "main").find("no model 'org/nothing-here'"), std::string::npos);
  EXPECT_NE(message("org/tiny", "no-such-branch").find("has no revision 'no-such-branch'"), std::string::npos);
  EXPECT_THROW(rc::hub::download_file(settings_, "org/tiny", "main", "nope.bin", false, nullptr), rc::Error);
  EXPECT_TRUE(rc::hub::download_file(settings_, "org/tiny", "main", "nope.bin", true, nullptr).empty());
  EXPECT_THROW(rc::hub::fetch(settings_, "../etc", "main", rc::hub::Want::model), rc::Error);
}

TEST_F(HubDownload, FetchesTheSlowTokenizerFileOfARepoWithoutTokenizerJson) {
  // cardiffnlp/twitter-xlm-roberta-base-sentiment ships sentencepiece.bpe.model and no
  // tokenizer.json; many BERT repos ship only vocab.txt. Each must come down with the model.
  const fs::path pipeline = kTiny.parent_path() / "tokenizer" / "pipeline";
  const auto spm = rc::hub::fetch(settings_, "org/sentencepiece", "main", rc::hub::Want::model);
  EXPECT_EQ(slurp(spm.snapshot / "sentencepiece.bpe.model"), slurp(pipeline / "xlmr-slow" / "sentencepiece.bpe.model"));
  EXPECT_FALSE(fs::exists(spm.snapshot / "vocab.txt"));  // not asked once a tokenizer is there
  const auto wp = rc::hub::fetch(settings_, "org/wordpiece", "main", rc::hub::Want::model);
  EXPECT_EQ(slurp(wp.snapshot / "vocab.txt"), slurp(pipeline / "bert-cased-slow" / "vocab.txt"));
  // Warm: the cached slow tokenizer is enough, nothing is asked again.
  settings_.offline = true;
  EXPECT_EQ(rc::hub::fetch(settings_, "org/sentencepiece", "main", rc::hub::Want::model).snapshot, spm.snapshot);
}

TEST_F(HubDownload, FallsBackToPytorchBinWithoutSafetensors) {
  const auto r = rc::hub::fetch(settings_, "org/nosafetensors", "main", rc::hub::Want::model);
  EXPECT_EQ(slurp(r.snapshot / "pytorch_model.bin"), slurp(kTiny / "pytorch_model.bin"));
  EXPECT_FALSE(fs::exists(r.snapshot / "model.safetensors"));
}

TEST_F(HubDownload, ServerErrorsAreRetried) {
  hub_->control({{"fail_500", 3}});
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_EQ(slurp(r.snapshot / "model.safetensors"), slurp(kTiny / "model.safetensors"));
  int five_hundreds = 0;
  for (const auto& e : hub_->log()) five_hundreds += e["status"] == 500;
  EXPECT_EQ(five_hundreds, 3);
}

TEST_F(HubDownload, DroppedConnectionResumesWithRange) {
  hub_->control({{"drop_after", 1 << 20}});
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_EQ(slurp(r.snapshot / "model.safetensors"), slurp(kTiny / "model.safetensors"));
  std::vector<std::string> ranges;
  uint64_t storage_bytes = 0;
  for (const auto& e : hub_->log())
    if (e["port"] == "storage" && e["method"] == "GET") {
      ranges.push_back(e["range"].is_null() ? "" : e["range"].get<std::string>());
      storage_bytes += e["bytes"].get<uint64_t>();
    }
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], "");
  EXPECT_EQ(ranges[1], "bytes=1048576-");
  EXPECT_EQ(storage_bytes, fs::file_size(kTiny / "model.safetensors")) << "resumed, not restarted";
}

// Dropped past the 256 KiB write buffer, at an offset aligned to nothing: the resume must start
// exactly there (bytes still buffered when the connection dropped are on disk first).
TEST_F(HubDownload, DropPastTheWriteBufferResumesAtTheExactByte) {
  const uint64_t drop = 5000001;
  ASSERT_GT(fs::file_size(kTiny / "model.safetensors"), drop);
  hub_->control({{"drop_after", drop}});
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_TRUE(slurp(r.snapshot / "model.safetensors") == slurp(kTiny / "model.safetensors"));
  std::vector<std::string> ranges;
  for (const auto& e : hub_->log())
    if (e["port"] == "storage" && e["method"] == "GET")
      ranges.push_back(e["range"].is_null() ? "" : e["range"].get<std::string>());
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[1], "bytes=" + std::to_string(drop) + "-");
}

// No retries left: the error leaves every byte received in .incomplete (none lost in a
// buffer), and the next run resumes from there.
TEST_F(HubDownload, FailedDownloadKeepsWhatItGotForTheNextRun) {
  const uint64_t drop = 4500007;
  const std::string full = slurp(kTiny / "model.safetensors");
  const fs::path incomplete = cache_ / "models--org--tiny" / "blobs" / (hub_->sha256() + ".incomplete");
  ::setenv("RC_NET_RETRIES", "1", 1);
  hub_->control({{"drop_after", drop}});
  EXPECT_THROW(rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model), rc::Error);
  ::setenv("RC_NET_RETRIES", "4", 1);
  ASSERT_TRUE(fs::exists(incomplete));
  EXPECT_EQ(fs::file_size(incomplete), drop);
  EXPECT_TRUE(slurp(incomplete) == full.substr(0, drop)) << "the bytes kept are not the first ones sent";
  hub_->control({{"reset", true}});
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_TRUE(slurp(r.snapshot / "model.safetensors") == full);
  for (const auto& e : hub_->log())
    if (e["port"] == "storage" && e["method"] == "GET") {
      EXPECT_EQ(e["range"], "bytes=" + std::to_string(drop) + "-");
    }
}

// RC_HUB_FSYNC=1 (durable blobs) takes the same path plus an fsync: same bytes, same layout.
TEST_F(HubDownload, FsyncOptionStillCachesTheSameBlob) {
  ::setenv("RC_HUB_FSYNC", "1", 1);
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  ::unsetenv("RC_HUB_FSYNC");
  EXPECT_TRUE(slurp(r.snapshot / "model.safetensors") == slurp(kTiny / "model.safetensors"));
  EXPECT_TRUE(fs::is_symlink(r.snapshot / "model.safetensors"));
  EXPECT_FALSE(fs::exists(cache_ / "models--org--tiny" / "blobs" / (hub_->sha256() + ".incomplete")));
}

TEST_F(HubDownload, IncompleteFileFromAnEarlierRunIsResumed) {
  const std::string full = slurp(kTiny / "model.safetensors");
  const fs::path blobs = cache_ / "models--org--tiny" / "blobs";
  fs::create_directories(blobs);
  {
    std::ofstream out(blobs / (hub_->sha256() + ".incomplete"), std::ios::binary);
    out.write(full.data(), 1000);
  }
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_EQ(slurp(r.snapshot / "model.safetensors"), full);
  for (const auto& e : hub_->log())
    if (e["port"] == "storage" && e["method"] == "GET") {
      EXPECT_EQ(e["range"], "bytes=1000-");
      EXPECT_EQ(e["bytes"].get<uint64_t>(), full.size() - 1000);
    }
}

TEST_F(HubDownload, WrongSha256CachesNothing) {
  hub_->control({{"corrupt", true}});
  try {
    rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
    FAIL() << "a corrupted blob was accepted";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::format);
    EXPECT_NE(std::string(e.what()).find("sha256"), std::string::npos) << e.what();
  }
  const fs::path blobs = cache_ / "models--org--tiny" / "blobs";
  EXPECT_FALSE(fs::exists(blobs / hub_->sha256()));
  EXPECT_FALSE(fs::exists(blobs / (hub_->sha256() + ".incomplete")));
  EXPECT_FALSE(fs::exists(cache_ / "models--org--tiny" / "snapshots" / hub_->commit() / "model.safetensors"));
}

TEST_F(HubDownload, SizeOtherThanAnnouncedCachesNothing) {
  for (int delta : {-100, 100}) {  // the server sends more than announced (stopped early), or fewer
    hub_->control({{"reset", true}, {"size_delta", delta}});
    try {
      rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
      FAIL() << "accepted a blob of the wrong size, delta " << delta;
    } catch (const rc::Error& e) {
      EXPECT_EQ(e.errc(), rc::Errc::format) << e.what();
      EXPECT_NE(std::string(e.what()).find("nothing was cached"), std::string::npos) << e.what();
    }
    const fs::path blobs = cache_ / "models--org--tiny" / "blobs";
    EXPECT_FALSE(fs::exists(blobs / hub_->sha256()));
    EXPECT_FALSE(fs::exists(blobs / (hub_->sha256() + ".incomplete")));
  }
}

TEST_F(HubDownload, ConcurrentFetchesDownloadEachBlobOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] {
      try {
        rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
        ++ok;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(MockHub::count(hub_->log(), "storage", "GET"), 1) << "the blob lock let two downloads through";
}

TEST_F(HubDownload, OfflineUsesTheCacheAndMakesNoCall) {
  rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  settings_.offline = true;
  const uint64_t before = rc::net::request_count();
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_TRUE(r.from_cache_only);
  EXPECT_EQ(rc::net::request_count(), before);
  EXPECT_EQ(slurp(r.snapshot / "config.json"), slurp(kTiny / "config.json"));
  // Nothing cached for that revision: one line that says offline, and how to fix it.
  try {
    rc::hub::fetch(settings_, "org/tiny", "v1", rc::hub::Want::model);
    FAIL() << "expected an error";
  } catch (const rc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("HF_HUB_OFFLINE"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("online"), std::string::npos) << e.hint();
  }
  EXPECT_EQ(rc::net::request_count(), before);
}

// A cache as huggingface_hub writes it (blobs + relative symlinks + refs), built by hand:
// used with no network call, offline or with a commit sha.
TEST_F(HubDownload, UsesACacheLaidOutByHuggingfaceHub) {
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const fs::path root = cache_ / "models--cardiffnlp--twitter-roberta-base-sep2022";
  fs::create_directories(root / "blobs");
  fs::create_directories(root / "refs");
  fs::create_directories(root / "snapshots" / commit);
  int i = 0;
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) {
    const std::string etag = std::string(40, char('a' + i++));
    fs::copy_file(kTiny / f, root / "blobs" / etag);
    fs::create_symlink(fs::path("../../blobs") / etag, root / "snapshots" / commit / f);
  }
  { std::ofstream(root / "refs" / "main") << commit; }
  settings_.endpoint = "http://127.0.0.1:9";  // nothing listens: any call would fail
  const uint64_t before = rc::net::request_count();
  const auto by_sha =
      rc::hub::fetch(settings_, "cardiffnlp/twitter-roberta-base-sep2022", commit, rc::hub::Want::model);
  EXPECT_EQ(by_sha.snapshot, root / "snapshots" / commit);
  settings_.offline = true;
  const auto by_ref =
      rc::hub::fetch(settings_, "cardiffnlp/twitter-roberta-base-sep2022", "main", rc::hub::Want::model);
  EXPECT_EQ(by_ref.snapshot, root / "snapshots" / commit);
  EXPECT_EQ(rc::net::request_count(), before);
}

TEST_F(HubDownload, UnreachableHubFallsBackToTheCache) {
  rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  settings_.endpoint = "http://127.0.0.1:9";
  ::setenv("RC_NET_RETRIES", "1", 1);
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  ::setenv("RC_NET_RETRIES", "4", 1);
  EXPECT_EQ(r.commit, hub_->commit());
  EXPECT_EQ(slurp(r.snapshot / "model.safetensors"), slurp(kTiny / "model.safetensors"));
}

// Issue 27, finding 5: a link planted in a shared cache is refused, never followed: as the
// partial download (it would truncate and overwrite its target), as a blob, or as a
// snapshot entry that leads out of the blobs folder.
TEST_F(HubDownload, LinksPlantedInTheCacheAreRefusedNotFollowed) {
  const fs::path victim = dir_ / "victim.txt";
  { std::ofstream(victim) << "precious"; }
  fs::create_directories(blobs());
  fs::create_symlink(victim, incomplete());
  rc::Errc errc{};
  std::string msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); }, &errc);
  EXPECT_NE(msg.find(incomplete().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
  EXPECT_EQ(slurp(victim), "precious") << "the download wrote through the planted link";
  EXPECT_EQ(MockHub::count(hub_->log(), "storage", "GET"), 0);
  fs::remove(incomplete());

  fs::create_symlink(victim, blobs() / hub_->sha256());  // a blob that is a link
  msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); });
  EXPECT_NE(msg.find((blobs() / hub_->sha256()).string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(cache_ / "models--org--tiny" / "snapshots" / hub_->commit() / "model.safetensors"));
  fs::remove(blobs() / hub_->sha256());

  // A snapshot entry linking outside blobs/: refused even for a commit sha (no question asked).
  const fs::path snap = cache_ / "models--org--tiny" / "snapshots" / hub_->commit();
  fs::create_directories(snap);
  fs::create_symlink(victim, snap / "config.json");
  msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", hub_->commit(), rc::hub::Want::model); });
  EXPECT_NE(msg.find("outside the model's blobs folder"), std::string::npos) << msg;
}

// Finding 6: an announced size the disk cannot hold is refused before a byte is fetched.
TEST_F(HubDownload, AnnouncedSizeLargerThanTheFreeSpaceIsRefusedFirst) {
  hub_->control({{"file_fault", {{"file", "model.safetensors"}, {"size", "1125899906842624"}}}});  // 1 PiB
  const std::string msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); });
  EXPECT_NE(msg.find("not enough free space"), std::string::npos) << msg;
  EXPECT_EQ(MockHub::count(hub_->log(), "storage", "GET"), 0) << hub_->log().dump();
  EXPECT_FALSE(fs::exists(incomplete()));
}

// Finding 6: weights whose size the Hub does not give are not downloaded (unbounded).
TEST_F(HubDownload, WeightsWithoutAnAnnouncedSizeAreRefused) {
  hub_->control({{"file_fault", {{"file", "model.safetensors"}, {"size", nullptr}}}});
  rc::Errc errc{};
  const std::string msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); }, &errc);
  EXPECT_EQ(errc, rc::Errc::format) << msg;
  EXPECT_NE(msg.find("gave no size for org/tiny/model.safetensors"), std::string::npos) << msg;
  EXPECT_EQ(MockHub::count(hub_->log(), "storage", "GET"), 0) << hub_->log().dump();
}

// Finding 6: a small file without a size is read only up to RC_HUB_MAX_UNSIZED_BYTES.
TEST_F(HubDownload, FileWithoutASizeIsBounded) {
  ::setenv("RC_HUB_MAX_UNSIZED_BYTES", "100000", 1);
  const rc::hub::HubSettings s = settings_from_env();
  ::unsetenv("RC_HUB_MAX_UNSIZED_BYTES");
  // vocab.json redirected to the 6.5 MB weights blob, with no X-Linked-Size.
  hub_->control(
      {{"file_fault", {{"file", "vocab.json"}, {"location", "http://127.0.0.1:{storage}/blobs/" + hub_->sha256()}}}});
  rc::Errc errc{};
  const std::string msg =
      error_of([&] { rc::hub::download_file(s, "org/tiny", "main", "vocab.json", false, nullptr); }, &errc);
  EXPECT_EQ(errc, rc::Errc::format) << msg;
  EXPECT_NE(msg.find("announced no size and sent more than"), std::string::npos) << msg;
  for (const auto& e : fs::directory_iterator(blobs())) ADD_FAILURE() << "left in the cache: " << e.path();
}

// Finding 6: a full disk (here: a file-size limit, EFBIG) removes the partial file.
TEST_F(HubDownload, FullDiskRemovesThePartialFile) {
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit small = old;
  small.rlim_cur = 1 << 20;  // the weights are 6.5 MB; config, vocab and merges fit
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); });
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_NE(msg.find("the partial download was removed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("HF_HUB_CACHE"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(incomplete()));
}

// Finding 7: a server trickling below RC_HUB_MIN_RATE for RC_HUB_MIN_RATE_SECONDS is cut off.
TEST_F(HubDownload, TrickleBelowTheMinimumRateIsCutOff) {
  ::setenv("RC_HUB_MIN_RATE", "1024", 1);
  ::setenv("RC_HUB_MIN_RATE_SECONDS", "1", 1);
  ::setenv("RC_NET_RETRIES", "1", 1);
  const rc::hub::HubSettings s = settings_from_env();
  hub_->control({{"slow", {{"rate", 100}, {"seconds", 20}}}});  // 100 bytes/s for 20 s, then the rest
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { rc::hub::fetch(s, "org/tiny", "main", rc::hub::Want::model); });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::setenv("RC_NET_RETRIES", "4", 1);
  ::unsetenv("RC_HUB_MIN_RATE");
  ::unsetenv("RC_HUB_MIN_RATE_SECONDS");
  EXPECT_NE(msg.find("too slow"), std::string::npos) << msg;
  EXPECT_LT(secs, 12.0) << msg;
}

// Finding 7: a download above the minimum rate still ends, at a deadline that grows with the
// size: RC_HUB_DEADLINE_SECONDS + size / RC_HUB_DEADLINE_RATE.
TEST_F(HubDownload, SlowDownloadEndsAtADeadlineThatGrowsWithTheSize) {
  ::setenv("RC_HUB_DEADLINE_SECONDS", "1", 1);
  ::setenv("RC_HUB_DEADLINE_RATE", "4194304", 1);  // 6.5 MB: 1 + 1 s
  const rc::hub::HubSettings s = settings_from_env();
  ::unsetenv("RC_HUB_DEADLINE_SECONDS");
  ::unsetenv("RC_HUB_DEADLINE_RATE");
  hub_->control({{"slow", {{"rate", 20000}, {"seconds", 20}}}});  // above 1 KiB/s, but 20 s
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { rc::hub::fetch(s, "org/tiny", "main", rc::hub::Want::model); });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(msg.find("took longer than the 2 s allowed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("RC_HUB_DEADLINE_SECONDS"), std::string::npos) << msg;
  EXPECT_LT(secs, 10.0) << msg;
}

// Finding 8: a 5xx or a timeout on an optional tokenizer file fails the run and writes no
// snapshot; only the Hub's EntryNotFound means absent. The next run asks again.
TEST_F(HubDownload, ServerErrorOnAnOptionalFileFailsTheRun) {
  const fs::path snap = cache_ / "models--org--tiny" / "snapshots" / hub_->commit();
  hub_->control({{"file_fault", {{"file", "tokenizer.json"}, {"status", 500}}}});
  rc::Errc errc{};
  std::string msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); }, &errc);
  EXPECT_EQ(errc, rc::Errc::io) << msg;
  EXPECT_NE(msg.find("'tokenizer.json'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("HTTP 500"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("using the cached"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(snap)) << "a snapshot was written by a failed run";
  EXPECT_FALSE(fs::exists(cache_ / "models--org--tiny" / ".no_exist" / hub_->commit() / "tokenizer.json"))
      << "a 500 was recorded as absent";

  settings_.etag_timeout_ms = 1500;  // a Hub that does not answer in time, likewise
  ::setenv("RC_NET_RETRIES", "1", 1);
  hub_->control({{"reset", true}, {"file_fault", {{"file", "merges.txt"}, {"hang", 4}}}});
  msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); });
  ::setenv("RC_NET_RETRIES", "4", 1);
  settings_.etag_timeout_ms = 10000;
  EXPECT_NE(msg.find("'merges.txt'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("timed out"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(snap));

  hub_->control({{"reset", true}});  // the next run asks again, and succeeds
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_EQ(slurp(r.snapshot / "merges.txt"), slurp(kTiny / "merges.txt"));
}

// Finding 9: a failure on the weights names its cause, not "has neither model.safetensors ...".
TEST_F(HubDownload, FailureOnTheWeightsNamesItsCause) {
  ::setenv("RC_NET_RETRIES", "1", 1);
  settings_.etag_timeout_ms = 1500;
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"file", "model.safetensors"}, {"status", 503}}, "HTTP 503"},
      {{{"file", "model.safetensors"}, {"location", "{self}"}}, "redirect"},
      {{{"file", "model.safetensors"}, {"hang", 4}}, "timed out"},
  };
  for (const auto& [fault, cause] : cases) {
    hub_->control({{"reset", true}, {"file_fault", fault}});
    const std::string msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); });
    EXPECT_NE(msg.find(cause), std::string::npos) << fault.dump() << ": " << msg;
    EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("has neither"), std::string::npos) << fault.dump() << ": " << msg;
  }
  ::setenv("RC_NET_RETRIES", "4", 1);
}

// Findings 10 and 11: an ETag must be a git blob id or a sha256 (it names the blob).
TEST_F(HubDownload, EtagThatIsNotAHashIsRefused) {
  for (const std::string& etag : {std::string("\".\""), std::string("\"..\""), "\"" + std::string(5000, 'a') + "\""}) {
    hub_->control({{"reset", true}, {"file_fault", {{"file", "config.json"}, {"etag", etag}}}});
    rc::Errc errc{};
    const std::string msg =
        error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); }, &errc);
    EXPECT_EQ(errc, rc::Errc::format) << msg;
    EXPECT_NE(msg.find("ETag"), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 600u) << "the ETag is quoted whole";
    EXPECT_FALSE(fs::exists(cache_ / "models--org--tiny" / "snapshots" / hub_->commit() / "config.json"));
  }
}

// Finding 12: a redirect to file:// is refused with a clear error, and leaves no partial file.
TEST_F(HubDownload, RedirectToAFileUrlIsRefusedAndLeavesNothing) {
  hub_->control({{"file_fault", {{"file", "model.safetensors"}, {"location", "file:///etc/passwd"}}}});
  const std::string msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); });
  EXPECT_NE(msg.find("file:///etc/passwd"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not an http(s) URL"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("resumes"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(incomplete()));
}

// Finding 13: "http:/host:port/..." (one slash) is absolute: HEAD does not follow it.
TEST_F(HubDownload, OneSlashAbsoluteRedirectIsNotFollowedOnHead) {
  hub_->control({{"file_fault", {{"file", "config.json"}, {"location", "http:/127.0.0.1:{storage}/blobs/x"}}}});
  error_of([&] { rc::hub::download_file(settings_, "org/tiny", "main", "config.json", false, nullptr); });
  EXPECT_EQ(MockHub::count(hub_->log(), "storage", "HEAD"), 0) << hub_->log().dump();
}

// Finding 14: a FIFO (or /dev/zero) as refs/<revision> is refused, not waited on or read.
TEST_F(HubDownload, RefThatIsAFifoIsRefused) {
  const fs::path refs = cache_ / "models--org--tiny" / "refs";
  fs::create_directories(refs);
  settings_.offline = true;
  {
    rc::test::FifoFeeder fifo(refs / "main", hub_->commit());
    ASSERT_TRUE(fifo.ok());
    rc::Errc errc{};
    const std::string msg =
        error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); }, &errc);
    ASSERT_EQ(errc, rc::Errc::format) << msg;  // before /dev/zero, which old code read until out of memory
    EXPECT_NE(msg.find("FIFO"), std::string::npos) << msg;
    EXPECT_NE(msg.find((refs / "main").string()), std::string::npos) << msg;
  }
  fs::create_symlink("/dev/zero", refs / "main");
  const std::string msg = error_of([&] { rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model); });
  EXPECT_NE(msg.find("character device"), std::string::npos) << msg;
  // Online, a bad ref is replaced by the commit the Hub names.
  settings_.offline = false;
  const auto r = rc::hub::fetch(settings_, "org/tiny", "main", rc::hub::Want::model);
  EXPECT_EQ(slurp(refs / "main"), hub_->commit());
  EXPECT_EQ(r.commit, hub_->commit());
}

// Where the cache and the token come from, in huggingface_hub's order of precedence.
TEST(HubSettingsEnv, CacheAndTokenAsHuggingfaceHubFindsThem) {
  const fs::path home = rc::test::fresh_dir("rc-test-hf-home");
  std::map<std::string, std::string> saved;
  for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HOME", "HF_TOKEN",
                        "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "HF_ENDPOINT"}) {
    if (const char* x = std::getenv(v)) saved[v] = x;
    ::unsetenv(v);
  }
  ::setenv("HOME", (home / "user").c_str(), 1);
  auto s = rc::hub::HubSettings::from_env();
  EXPECT_EQ(s.cache, home / "user" / ".cache" / "huggingface" / "hub");
  EXPECT_EQ(s.endpoint, "https://huggingface.co");
  EXPECT_TRUE(s.token.empty());
  ::setenv("HF_HOME", (home / "hf").c_str(), 1);
  fs::create_directories(home / "hf");
  { std::ofstream(home / "hf" / "token") << "hf_from_file\n"; }
  s = rc::hub::HubSettings::from_env();
  EXPECT_EQ(s.cache, home / "hf" / "hub");
  EXPECT_EQ(s.token, "hf_from_file");  // what `huggingface-cli login` writes, newline trimmed
  ::setenv("HF_TOKEN", "hf_from_env", 1);
  ::setenv("HF_HUB_CACHE", (home / "elsewhere").c_str(), 1);
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  ::setenv("HF_ENDPOINT", "http://mirror.example/", 1);
  s = rc::hub::HubSettings::from_env();
  EXPECT_EQ(s.cache, home / "elsewhere");
  EXPECT_EQ(s.token, "hf_from_env");
  EXPECT_TRUE(s.offline);
  EXPECT_EQ(s.endpoint, "http://mirror.example");
  for (const char* v : {"HF_HUB_CACHE", "HF_HOME", "HOME", "HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"}) ::unsetenv(v);
  for (const auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
  fs::remove_all(home);
}

// Finding 14: a FIFO or a device as the token file is refused with its name, not waited on.
TEST(HubSettingsEnv, TokenFileThatIsAFifoOrDeviceIsRefused) {
  const fs::path home = rc::test::fresh_dir("rc-test-hf-token");
  std::map<std::string, std::string> saved;
  for (const char* v : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HOME"}) {
    if (const char* x = std::getenv(v)) saved[v] = x;
    ::unsetenv(v);
  }
  auto message = [] {
    try {
      rc::hub::HubSettings::from_env();
    } catch (const rc::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  {
    rc::test::FifoFeeder fifo(home / "token", "hf_from_a_fifo\n");
    ASSERT_TRUE(fifo.ok());
    ::setenv("HF_HOME", home.c_str(), 1);  // $HF_HOME/token
    const std::string msg = message();
    ASSERT_NE(msg.find("FIFO"), std::string::npos) << msg;  // before /dev/zero, which old code read until out of memory
    EXPECT_NE(msg.find((home / "token").string()), std::string::npos) << msg;
  }
  ::unsetenv("HF_HOME");
  ::setenv("HF_TOKEN_PATH", "/dev/zero", 1);
  EXPECT_NE(message().find("character device"), std::string::npos) << message();
  ::unsetenv("HF_TOKEN_PATH");
  for (const auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
  fs::remove_all(home);
}

// Issue 27, finding 7's goal (every question bounded in time): HF_HUB_ETAG_TIMEOUT=0 or
// garbage is the default 10 s, as in huggingface_hub, not libcurl's "no timeout".
TEST(HubSettingsEnv, EtagTimeoutOfZeroOrGarbageIsTheDefault) {
  std::string saved;
  if (const char* x = std::getenv("HF_HUB_ETAG_TIMEOUT")) saved = x;
  for (const char* v : {"0", "-5", "soon"}) {
    ::setenv("HF_HUB_ETAG_TIMEOUT", v, 1);
    EXPECT_EQ(rc::hub::HubSettings::from_env().etag_timeout_ms, 10000) << v;
  }
  ::setenv("HF_HUB_ETAG_TIMEOUT", "2.5", 1);
  EXPECT_EQ(rc::hub::HubSettings::from_env().etag_timeout_ms, 2500);
  if (saved.empty())
    ::unsetenv("HF_HUB_ETAG_TIMEOUT");
  else
    ::setenv("HF_HUB_ETAG_TIMEOUT", saved.c_str(), 1);
}

TEST(HubNames, RepoIdsAsHuggingfaceHubValidatesThem) {
  using rc::hub::is_valid_repo_id;
  EXPECT_TRUE(is_valid_repo_id("cardiffnlp/twitter-roberta-base-sep2022"));
  EXPECT_TRUE(is_valid_repo_id("roberta-base"));
  EXPECT_FALSE(is_valid_repo_id("a/b/c"));
  EXPECT_FALSE(is_valid_repo_id("org/-name"));
  EXPECT_FALSE(is_valid_repo_id("org--x/name"));
  EXPECT_FALSE(is_valid_repo_id("../name"));
  EXPECT_FALSE(is_valid_repo_id("/abs"));
  EXPECT_FALSE(is_valid_repo_id(std::string(97, 'a')));
  EXPECT_EQ(rc::hub::normalize_etag("W/\"abc\""), "abc");
  EXPECT_TRUE(rc::hub::is_sha256(std::string(64, 'f')));
  EXPECT_FALSE(rc::hub::is_commit_hash("main"));
  EXPECT_TRUE(rc::hub::is_valid_etag(std::string(40, 'a')));
  EXPECT_TRUE(rc::hub::is_valid_etag(std::string(64, '0')));
  EXPECT_FALSE(rc::hub::is_valid_etag("."));
  EXPECT_FALSE(rc::hub::is_valid_etag(std::string(64, 'A')));
  EXPECT_FALSE(rc::hub::is_valid_etag(std::string(50, 'a')));
}

}  // namespace
