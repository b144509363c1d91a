// safetensors read (mmap + complete header validation) and write (atomic), plus
// convert_to_f32. Format: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the data section; offsets are relative to the data section.
// The file is hostile until proven otherwise: every number from the header is checked
// for overflow and against the file size before any byte of data is touched.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "core/check.h"
#include "core/json_depth.h"
#include "core/regular_file.h"
#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "tensor/bf16.h"

namespace rc::io {
namespace {

using ojson = nlohmann::ordered_json;

// The reference implementation caps the header at 100 MB (safetensors MAX_HEADER_SIZE);
// a header that large already describes millions of tensors.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

bool parse_dtype(std::string_view s, DType& out) {
  static constexpr std::pair<std::string_view, DType> kTable[] = {
      {"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F64", DType::f64}, {"I64", DType::i64},
      {"I32", DType::i32}, {"I16", DType::i16}, {"I8", DType::i8},     {"U8", DType::u8},   {"BOOL", DType::boolean}};
  for (auto [name, dt] : kTable)
    if (s == name) {
      out = dt;
      return true;
    }
  return false;
}

// dtypes the safetensors spec knows but we do not load: "unsupported", not "format".
bool known_but_unhandled(std::string_view s) {
  for (std::string_view n :
       {"U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64", "C128"})
    if (s == n) return true;
  return false;
}

// A real header nests three deep; checking before parsing keeps "[[[[..." from building
// millions of nested arrays (core/json_depth.h).
constexpr size_t kMaxHeaderDepth = 16;

// a * b, false on overflow (both non-negative).
bool mul_fits(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    // Never blocks: a FIFO named model.safetensors is refused, not waited on.
    const int fd = open_regular_file(path).release();
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      RC_THROW(Errc::io, "cannot stat '", path.string(), "': ", std::strerror(err));
    }
    size_ = size_t(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      const int err = errno;
      ::close(fd);
      RC_CHECK(p != MAP_FAILED, Errc::io, "cannot map '", path.string(), "': ", std::strerror(err));
      data_ = static_cast<const std::byte*>(p);
    } else {
      ::close(fd);
    }
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

class SafetensorsSource final : public IndexedTensorSource {
 public:
  explicit SafetensorsSource(std::filesystem::path path) : IndexedTensorSource(std::move(path)), file_(path_) {
    parse();
  }

  std::span<const std::byte> data(std::string_view name) const override {
    const auto [begin, end] = ranges_[index_of(name)];
    return {data_section_ + begin, size_t(end - begin)};
  }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  void release(std::string_view name) const override {
    const auto [begin, end] = ranges_[index_of(name)];
    static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t from = reinterpret_cast<uintptr_t>(data_section_ + begin),
                    to = reinterpret_cast<uintptr_t>(data_section_ + end);
    const uintptr_t a = (from + page - 1) / page * page, b = to / page * page;
    // Read-only private pages: dropping them loses nothing. A failure only keeps them resident.
    if (b > a) ::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
  }

 private:
  void parse();

  MappedFile file_;
  const std::byte* data_section_ = nullptr;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // by index in infos_
  std::map<std::string, std::string> metadata_;
};

void SafetensorsSource::parse() {
  const std::string file = path_.string();
  const size_t size = file_.size();
  RC_CHECK(size >= 8, Errc::format, "'", file, "': ", size,
           " bytes is too short for a safetensors file (needs an 8-byte header length)"
           "\nHINT: the file is truncated or not a safetensors file");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | uint64_t(file_.data()[i]);
  RC_CHECK(header_len <= size - 8, Errc::format, "'", file, "': header length ", header_len,
           " runs past the end of the ", size, "-byte file\nHINT: the file is truncated or not a safetensors file");
  RC_CHECK(header_len <= kMaxHeaderBytes, Errc::format, "'", file, "': header length ", header_len, " exceeds the ",
           kMaxHeaderBytes, "-byte limit");
  RC_CHECK(header_len >= 2, Errc::format, "'", file, "': header of ", header_len, " bytes cannot hold a JSON object");
  const char* hdr = reinterpret_cast<const char*>(file_.data() + 8);
  data_section_ = file_.data() + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  const size_t depth = json_nesting_depth(std::string_view(hdr, header_len), kMaxHeaderDepth);
  RC_CHECK(depth <= kMaxHeaderDepth, Errc::format, "'", file, "': header nests ", depth, " levels deep, at most ",
           kMaxHeaderDepth, " expected");

  // Duplicate top-level keys would be silently merged by the JSON library; catch them
  // while parsing so "names unique" is checked on the bytes, not on the parsed map.
  std::set<std::string> seen;
  std::string duplicate;
  auto on_event = [&](int depth, ojson::parse_event_t event, ojson& parsed) {
    if (event == ojson::parse_event_t::key && depth == 1) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  ojson header = ojson::parse(hdr, hdr + header_len, on_event, /*allow_exceptions=*/false);
  RC_CHECK(!header.is_discarded(), Errc::format, "'", file, "': header is not valid JSON");
  RC_CHECK(header.is_object(), Errc::format, "'", file, "': header is JSON ", header.type_name(),
           ", expected an object");
  RC_CHECK(duplicate.empty(), Errc::format, "'", file, "': tensor '", duplicate, "' appears twice in the header");

  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      RC_CHECK(entry.is_object(), Errc::format, "'", file, "': __metadata__ is ", entry.type_name(),
               ", expected an object of strings");
      for (auto& [k, v] : entry.items()) {
        RC_CHECK(v.is_string(), Errc::format, "'", file, "': __metadata__ entry '", k, "' is ", v.type_name(),
                 ", expected a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string where = "'" + file + "': tensor '" + name + "'";
    RC_CHECK(entry.is_object(), Errc::format, where, " is ", entry.type_name(), ", expected an object");
    RC_CHECK(entry.contains("dtype") && entry.contains("shape") && entry.contains("data_offsets"), Errc::format, where,
             " needs dtype, shape and data_offsets");
    TensorInfo info;
    info.name = name;
    const ojson& dt = entry["dtype"];
    RC_CHECK(dt.is_string(), Errc::format, where, ": dtype is ", dt.type_name(), ", expected a string");
    const std::string dts = dt.get<std::string>();
    if (!parse_dtype(dts, info.dtype)) {
      RC_CHECK(!known_but_unhandled(dts), Errc::unsupported, where, ": dtype ", dts, " is not supported",
               "\nHINT: convert the checkpoint to F32, F16 or BF16");
      RC_THROW(Errc::format, where, ": unknown dtype '", dts, "'");
    }
    const ojson& shape = entry["shape"];
    RC_CHECK(shape.is_array(), Errc::format, where, ": shape is ", shape.type_name(), ", expected an array");
    uint64_t numel = 1;
    for (const ojson& d : shape) {
      // is_number_unsigned: non-negative integer literal; floats, bools and negatives are refused.
      RC_CHECK(d.is_number_unsigned(), Errc::format, where, ": shape entry ", d.dump(),
               " is not a non-negative integer");
      const uint64_t v = d.get<uint64_t>();
      RC_CHECK(v <= uint64_t(std::numeric_limits<int64_t>::max()) && mul_fits(numel, v, numel) &&
                   numel <= uint64_t(std::numeric_limits<int64_t>::max()),
               Errc::format, where, ": shape ", shape.dump(), " overflows the element count");
      info.shape.push_back(int64_t(v));
    }
    uint64_t nbytes = 0;
    RC_CHECK(mul_fits(numel, dtype_size(info.dtype), nbytes), Errc::format, where, ": shape ", shape.dump(),
             " overflows the byte count");
    const ojson& offs = entry["data_offsets"];
    RC_CHECK(offs.is_array() && offs.size() == 2 && offs[0].is_number_unsigned() && offs[1].is_number_unsigned(),
             Errc::format, where, ": data_offsets ", offs.dump(), " is not [begin, end] of non-negative integers");
    const uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    RC_CHECK(begin <= end && end <= data_size, Errc::format, where, ": data_offsets [", begin, ", ", end,
             "] fall outside the ", data_size, "-byte data section\nHINT: the file is truncated or corrupt");
    RC_CHECK(end - begin == nbytes, Errc::format, where, ": data_offsets cover ", end - begin, " bytes but ", dts, " ",
             shape.dump(), " needs ", nbytes);
    add(std::move(info));
    ranges_.emplace_back(begin, end);
  }

  // Overlap check in offset order: the header's order means nothing. Empty tensors own no
  // bytes and cannot overlap anything.
  std::vector<size_t> order(infos_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges_[a] < ranges_[b]; });
  const size_t* prev = nullptr;
  for (const size_t& i : order) {
    if (ranges_[i].first == ranges_[i].second) continue;
    if (prev) {
      RC_CHECK(ranges_[*prev].second <= ranges_[i].first, Errc::format, "'", file, "': tensors '", infos_[*prev].name,
               "' [", ranges_[*prev].first, ", ", ranges_[*prev].second, ") and '", infos_[i].name, "' [",
               ranges_[i].first, ", ", ranges_[i].second, ") overlap");
    }
    prev = &i;
  }
}

}  // namespace

std::unique_ptr<TensorSource> open_safetensors(const std::filesystem::path& path) {
  return std::make_unique<SafetensorsSource>(path);
}

void convert_to_f32(DType dtype, std::span<const std::byte> src, float* dst, int64_t n) {
  RC_CHECK(n >= 0, Errc::invalid_argument, "convert_to_f32: negative count ", n);
  RC_CHECK(src.size() / dtype_size(dtype) >= uint64_t(n), Errc::invalid_argument, "convert_to_f32: ", n, " ",
           dtype_name(dtype), " elements need ", uint64_t(n) * dtype_size(dtype), " bytes, got ", src.size());
  const std::byte* p = src.data();
  // memcpy per element: tensor data inside a file need not be aligned for its type.
  switch (dtype) {
    case DType::f32:
      if (n) std::memcpy(dst, p, size_t(n) * 4);
      return;
    case DType::f16:
    case DType::bf16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = dtype == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    case DType::f64:
      for (int64_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        dst[i] = float(d);
      }
      return;
    default:
      RC_THROW(Errc::unsupported, "convert_to_f32: ", dtype_name(dtype), " is not a floating dtype");
  }
}

void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string file = path.string();
  // Data order as in HF's safetensors: larger elements first, then by name. With an
  // 8-aligned header this keeps every tensor aligned to its element size.
  std::vector<const TensorToWrite*> order;
  std::set<std::string> names;
  for (const TensorToWrite& t : tensors) {
    RC_CHECK(!t.name.empty() && t.name != "__metadata__", Errc::invalid_argument, "'", file, "': invalid tensor name '",
             t.name, "'");
    RC_CHECK(names.insert(t.name).second, Errc::invalid_argument, "'", file, "': tensor '", t.name, "' given twice");
    order.push_back(&t);
  }
  std::stable_sort(order.begin(), order.end(), [](const TensorToWrite* a, const TensorToWrite* b) {
    const size_t sa = dtype_size(a->dtype), sb = dtype_size(b->dtype);
    return sa != sb ? sa > sb : a->name < b->name;
  });

  ojson header = ojson::object();
  if (!metadata.empty()) {
    ojson meta = ojson::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const TensorToWrite* t : order) {
    uint64_t numel = 1;
    ojson shape = ojson::array();
    for (int64_t d : t->shape) {
      RC_CHECK(d >= 0 && mul_fits(numel, uint64_t(d), numel), Errc::invalid_argument, "'", file, "': tensor '", t->name,
               "' has a bad shape");
      shape.push_back(d);
    }
    uint64_t nbytes = 0;
    RC_CHECK(mul_fits(numel, dtype_size(t->dtype), nbytes), Errc::invalid_argument, "'", file, "': tensor '", t->name,
             "' is too large");
    RC_CHECK(nbytes == 0 || t->data != nullptr, Errc::invalid_argument, "'", file, "': tensor '", t->name,
             "' has no data");
    header[t->name] = {{"dtype", std::string(dtype_name(t->dtype))},
                       {"shape", std::move(shape)},
                       {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    sizes.push_back(nbytes);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // as the reference writer: data starts 8-aligned
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));

  AtomicFile out(path);
  out.write(len, 8);
  out.write(text.data(), text.size());
  for (size_t i = 0; i < order.size(); ++i) out.write(order[i]->data, sizes[i]);
  out.commit();
}

}  // namespace rc::io
