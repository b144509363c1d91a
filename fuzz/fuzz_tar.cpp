// Tar extraction (model packages, the server's model upload) into a temp root. The first
// input byte picks the wrapping: even = the rest is a tar that the harness gzips (so the
// fuzzer mutates tar headers, not deflate streams), odd = the rest is given as is (gzip
// or plain tar, as a hostile client could send). After every run the harness checks that
// nothing was written outside the target: the scratch folder, the root and the working
// directory hold exactly what they held before, and the target holds only plain files
// and folders within the limits.
#include <sys/stat.h>
#include <zlib.h>

#include <set>

#include "fuzz/fuzz_util.h"
#include "io/archive.h"

using namespace rc;
namespace fs = std::filesystem;

namespace {

std::string gzip(std::string_view raw) {
  z_stream z{};
  RC_FUZZ_REQUIRE(deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, uLong(raw.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = uInt(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  RC_FUZZ_REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Small limits: the fuzzer should reach them with small inputs, and a bomb must not fill tmpfs.
constexpr io::ExtractLimits kLimits{.max_member_bytes = 1 << 20, .max_total_bytes = 2 << 20, .max_members = 64};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const fs::path scratch = fuzz::scratch_dir();
  static const fs::path root = scratch / "root", cwd = scratch / "cwd", archive = scratch / "upload.tar.gz";
  static const bool once = [] {
    fs::create_directories(root);
    fs::create_directories(cwd);
    // A member that escaped as a relative path would land here.
    RC_FUZZ_REQUIRE(::chdir(cwd.c_str()) == 0);
    ::umask(022);  // the modes checked below are 0644/0755 under the usual umask
    fuzz::write_file(scratch / "canary", "outside");
    return true;
  }();
  (void)once;

  const std::string_view body = fuzz::as_view(data + 1, size - 1);
  fuzz::write_file(archive, data[0] % 2 == 0 ? gzip(body) : std::string(body));
  const std::set<std::string> scratch_before = listing(scratch);
  const fs::path target = root / "model";

  const bool ok = fuzz::expect_rc_error([&] { io::extract_tar_gz(archive, target, kLimits); });

  RC_FUZZ_REQUIRE(listing(scratch) == scratch_before);
  RC_FUZZ_REQUIRE(listing(cwd).empty());
  const std::set<std::string> in_root = listing(root);
  RC_FUZZ_REQUIRE(ok ? in_root == std::set<std::string>{"model"} : in_root.empty());
  if (ok) {
    uint64_t members = 0, total = 0;
    for (const auto& e : fs::recursive_directory_iterator(target)) {
      struct stat st {};
      RC_FUZZ_REQUIRE(::lstat(e.path().c_str(), &st) == 0);
      RC_FUZZ_REQUIRE(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
      RC_FUZZ_REQUIRE((st.st_mode & 07777) == (S_ISREG(st.st_mode) ? 0644u : 0755u));
      if (S_ISREG(st.st_mode)) {
        ++members;
        RC_FUZZ_REQUIRE(uint64_t(st.st_size) <= kLimits.max_member_bytes);
        total += uint64_t(st.st_size);
      }
    }
    RC_FUZZ_REQUIRE(members <= kLimits.max_members && total <= kLimits.max_total_bytes);
    fs::remove_all(target);
  }
  return 0;
}
