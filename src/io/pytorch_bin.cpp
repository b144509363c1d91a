// pytorch_model.bin: torch.save() zip archives (PyTorch >= 1.6), read without Python.
//
// Layout: "<folder>/data.pkl" (a pickle of the state dict), "<folder>/data/<key>" (raw
// little-endian storages), "<folder>/version", maybe "<folder>/byteorder". The folder is the
// saved file's base name (or "archive"), so it is found, not assumed.
//
// The pickle goes through the restricted unpickler of torch_pickle.h (executes nothing);
// this file checks every view against its storage before copying a byte, and bounds what
// it allocates by what the file can really hold.
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <unordered_map>

#include "core/check.h"
#include "core/regular_file.h"
#include "io/tensor_source.h"
#include "io/torch_pickle.h"

namespace rc::io {
namespace {

constexpr uint64_t kMaxPickleBytes = 64ull << 20;  // real state dicts: tens of KB

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;
using ZipFilePtr = std::unique_ptr<zip_file_t, ZipFileCloser>;

bool mul_ok(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool add_ok(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out); }

class PytorchBinSource final : public IndexedTensorSource {
 public:
  explicit PytorchBinSource(std::filesystem::path path) : IndexedTensorSource(std::move(path)) { load(); }

  std::span<const std::byte> data(std::string_view name) const override {
    const auto& buf = buffers_[index_of(name)];
    return {buf.data(), buf.size()};
  }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }

 private:
  void load();
  std::vector<std::byte> read_member(zip_t* z, const std::string& name, uint64_t expected, uint64_t file_size);

  std::vector<std::vector<std::byte>> buffers_;  // by index in infos_
  std::map<std::string, std::string> metadata_;
};

std::vector<std::byte> PytorchBinSource::read_member(zip_t* z, const std::string& name, uint64_t expected,
                                                     uint64_t file_size) {
  const std::string file = path_.string();
  const zip_int64_t idx = zip_name_locate(z, name.c_str(), ZIP_FL_ENC_RAW);
  RC_CHECK(idx >= 0, Errc::format, "'", file, "': archive member '", name, "' is missing");
  zip_stat_t st;
  zip_stat_init(&st);
  RC_CHECK(zip_stat_index(z, zip_uint64_t(idx), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE) &&
               (st.valid & ZIP_STAT_COMP_SIZE),
           Errc::format, "'", file, "': cannot stat archive member '", name, "'");
  RC_CHECK(st.size == expected, Errc::format, "'", file, "': archive member '", name, "' holds ", st.size,
           " bytes, expected ", expected);
  // Bound what we allocate by what the file can really hold: torch stores members
  // uncompressed, and deflate cannot expand more than ~1032:1.
  RC_CHECK(st.comp_size <= file_size && (st.size <= st.comp_size || st.size / 1032 <= st.comp_size), Errc::format, "'",
           file, "': archive member '", name, "' claims ", st.size, " bytes from ", st.comp_size, " compressed in a ",
           file_size, "-byte file");
  ZipFilePtr f(zip_fopen_index(z, zip_uint64_t(idx), 0));
  RC_CHECK(f != nullptr, Errc::format, "'", file, "': cannot open archive member '", name, "': ", zip_strerror(z));
  std::vector<std::byte> buf(static_cast<size_t>(expected));
  uint64_t done = 0;
  while (done < expected) {
    const zip_int64_t got = zip_fread(f.get(), buf.data() + done, expected - done);
    RC_CHECK(got > 0, Errc::format, "'", file, "': archive member '", name, "' ends after ", done, " of ", expected,
             " bytes", got < 0 ? std::string(": ") + zip_file_strerror(f.get()) : std::string());
    done += uint64_t(got);
  }
  return buf;
}

void PytorchBinSource::load() {
  const std::string file = path_.string();
  const std::string short_name = path_.filename().string();
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path_, ec);
  if (ec) {
    RC_CHECK(ec != std::errc::no_such_file_or_directory, Errc::not_found, "cannot open '", file, "': ", ec.message());
    RC_THROW(Errc::io, "cannot open '", file, "': ", ec.message());
  }

  // Tell the pre-1.6 formats apart from garbage: both deserve a precise answer.
  // One descriptor for the whole load, opened without blocking: a FIFO is refused.
  Fd fd = open_regular_file(path_);
  char head[512] = {};
  RC_CHECK(::pread(fd.get(), head, sizeof head, 0) >= 0, Errc::io, "cannot read '", file, "': ", std::strerror(errno));
  if (std::memcmp(head, "PK\x03\x04", 4) != 0) {
    const bool legacy_pickle = uint8_t(head[0]) == 0x80;
    const bool legacy_tar = file_size >= 262 && std::memcmp(head + 257, "ustar", 5) == 0;
    RC_CHECK(!legacy_pickle && !legacy_tar, Errc::unsupported, "'", file,
             "' uses the legacy (pre-1.6, non-zip) torch.save format, which is not supported"
             "\nHINT: re-save with torch>=1.6 (torch.save(torch.load(f), f)) or convert to safetensors");
    RC_THROW(Errc::format, "'", file, "' is not a torch.save zip archive (no zip signature)");
  }

  int err = 0;
  ZipPtr z(zip_fdopen(fd.get(), ZIP_RDONLY, &err));
  if (z) fd.release();  // libzip owns it now
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    const std::string why = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    RC_THROW(Errc::format, "'", file, "' is not a readable zip archive: ", why);
  }

  // Find "<folder>/data.pkl": exactly one, at depth one.
  std::string folder;
  int found = 0;
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z.get(), zip_uint64_t(i), ZIP_FL_ENC_RAW);
    if (!name) continue;
    const std::string_view s(name);
    const size_t slash = s.find('/');
    if (slash != std::string_view::npos && slash > 0 && s.substr(slash) == "/data.pkl") {
      folder = std::string(s.substr(0, slash));
      ++found;
    }
  }
  RC_CHECK(found == 1, Errc::format, "'", file, "': expected one '<folder>/data.pkl' in the archive, found ", found,
           "\nHINT: is this a torch.save() file?");

  if (zip_name_locate(z.get(), (folder + "/byteorder").c_str(), ZIP_FL_ENC_RAW) >= 0) {
    std::vector<std::byte> order = read_member(z.get(), folder + "/byteorder", 6, file_size);
    RC_CHECK(std::memcmp(order.data(), "little", 6) == 0, Errc::unsupported, "'", file,
             "': big-endian checkpoints are not supported");
  }

  // data.pkl's size comes from the zip directory; capped before anything is allocated.
  std::vector<std::byte> pickle;
  {
    const zip_int64_t idx = zip_name_locate(z.get(), (folder + "/data.pkl").c_str(), ZIP_FL_ENC_RAW);
    zip_stat_t st;
    zip_stat_init(&st);
    RC_CHECK(zip_stat_index(z.get(), zip_uint64_t(idx), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE), Errc::format, "'",
             file, "': cannot stat data.pkl");
    RC_CHECK(st.size <= kMaxPickleBytes, Errc::format, "'", file, "': data.pkl is ", st.size, " bytes, more than the ",
             kMaxPickleBytes, "-byte limit for a state dict");
    pickle = read_member(z.get(), folder + "/data.pkl", st.size, file_size);
  }

  pickle::StateDict sd = pickle::parse_state_dict(
      std::string_view(reinterpret_cast<const char*>(pickle.data()), pickle.size()), short_name);
  pickle.clear();
  pickle.shrink_to_fit();

  // Bound the total we materialise: a stride-0 view of a tiny storage could otherwise
  // claim petabytes. Real checkpoints stay near the file size (tied weights: 2x). What is
  // held is every referenced storage, inflated whole and kept to the end, plus each
  // tensor's copy: both count, each storage once, before anything is inflated. (Counting
  // tensors alone let 1,100 deflated 1 MB storages, each seen through a 1-element tensor,
  // hold 1.1 GB from a 1.26 MB file.)
  const uint64_t budget = 4 * file_size + (64ull << 20);
  uint64_t total = 0;
  std::vector<int> uses(sd.storages.size(), 0);
  for (const pickle::TensorRef& t : sd.tensors) {
    const pickle::StorageRef& s = sd.storages[t.storage];
    const std::string where = "'" + file + "': tensor '" + t.name + "'";
    if (uses[t.storage] == 0) {
      // numel x element size is what read_member inflates: it checks the zip entry's
      // uncompressed size against exactly this.
      uint64_t storage_bytes = 0;
      RC_CHECK(mul_ok(s.numel, dtype_size(s.dtype), storage_bytes) && storage_bytes <= file_size, Errc::format, "'",
               file, "': storage '", s.key, "' claims ", s.numel, " elements, more than the file holds");
      RC_CHECK(add_ok(total, storage_bytes, total) && total <= budget, Errc::format, where, ": storage '", s.key, "' (",
               storage_bytes, " bytes inflated) would need more than ", budget, " bytes in all from a ", file_size,
               "-byte file", "\nHINT: the file is corrupt or hostile; a real checkpoint needs about its own size");
    }
    uint64_t numel = 1, last = t.offset;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      uint64_t span = 0;
      RC_CHECK(mul_ok(numel, uint64_t(t.shape[d]), numel) &&
                   (t.shape[d] == 0 ||
                    (mul_ok(uint64_t(t.shape[d] - 1), uint64_t(t.stride[d]), span) && add_ok(last, span, last))),
               Errc::format, where, ": size/stride overflow");
    }
    uint64_t nbytes = 0;
    RC_CHECK(mul_ok(numel, dtype_size(s.dtype), nbytes) && add_ok(total, nbytes, total) && total <= budget,
             Errc::format, where, ": tensors would need more than ", budget, " bytes from a ", file_size, "-byte file");
    RC_CHECK(numel == 0 || last < s.numel, Errc::format, where, ": reads element ", last, " of storage '", s.key,
             "', which has ", s.numel, " elements");
    ++uses[t.storage];
    TensorInfo info;
    info.name = t.name;
    info.dtype = s.dtype;
    info.shape = t.shape;
    add(std::move(info));
  }

  // Each storage is read once; a tensor that is exactly its whole, unshared storage takes
  // the buffer over, the rest are copied into contiguous row-major buffers.
  std::vector<std::vector<std::byte>> storage_bytes(sd.storages.size());
  std::vector<bool> loaded(sd.storages.size(), false);
  buffers_.resize(sd.tensors.size());
  for (size_t e = 0; e < sd.tensors.size(); ++e) {
    const pickle::TensorRef& t = sd.tensors[e];
    const pickle::StorageRef& s = sd.storages[t.storage];
    const size_t es = dtype_size(s.dtype);
    if (!loaded[t.storage]) {
      // Sized and counted against the budget above. Keys name zip members; they are never
      // used as file-system paths.
      storage_bytes[t.storage] = read_member(z.get(), folder + "/data/" + s.key, s.numel * es, file_size);
      loaded[t.storage] = true;
    }
    const std::vector<std::byte>& src = storage_bytes[t.storage];
    const int64_t numel = infos_[e].numel();
    bool contiguous = true;
    int64_t expect = 1;
    for (size_t d = t.shape.size(); d-- > 0;) {
      if (t.shape[d] != 1 && t.stride[d] != expect) contiguous = false;
      expect *= t.shape[d];
    }
    std::vector<std::byte>& dst = buffers_[e];
    if (contiguous && t.offset == 0 && uint64_t(numel) == s.numel && uses[t.storage] == 1) {
      dst = std::move(storage_bytes[t.storage]);
      continue;
    }
    dst.resize(size_t(numel) * es);
    if (numel == 0) continue;
    if (contiguous) {
      std::memcpy(dst.data(), src.data() + t.offset * es, dst.size());
      continue;
    }
    // Odometer over the multi-index; the innermost dimension is copied as one run when
    // its stride is 1.
    const size_t nd = t.shape.size();
    const bool inner_run = t.stride[nd - 1] == 1;
    const int64_t run = inner_run ? t.shape[nd - 1] : 1;
    const size_t outer_dims = inner_run ? nd - 1 : nd;
    std::vector<int64_t> idx(nd, 0);
    std::byte* out = dst.data();
    for (int64_t done = 0; done < numel; done += run) {
      uint64_t off = t.offset;
      for (size_t d = 0; d < outer_dims; ++d) off += uint64_t(idx[d]) * uint64_t(t.stride[d]);
      std::memcpy(out, src.data() + off * es, size_t(run) * es);
      out += size_t(run) * es;
      for (size_t d = outer_dims; d-- > 0;) {
        if (++idx[d] < t.shape[d]) break;
        idx[d] = 0;
      }
    }
  }
}

}  // namespace

std::unique_ptr<TensorSource> open_pytorch_bin(const std::filesystem::path& path) {
  return std::make_unique<PytorchBinSource>(path);
}

}  // namespace rc::io
