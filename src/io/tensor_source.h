// Read-only access to the tensors of a weights file (model.safetensors, pytorch_model.bin).
// io knows files and dtypes, never the model: mapping names to parameters is model/'s job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensor/dtype.h"

namespace rc::io {

struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  int64_t numel() const;
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual const std::filesystem::path& path() const = 0;
  // Every tensor, in the file's order.
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  // nullptr when the file has no such tensor.
  virtual const TensorInfo* find(std::string_view name) const = 0;
  // The tensor's bytes: dtype as in TensorInfo, little-endian, row-major contiguous,
  // exactly numel * dtype_size bytes. Valid while the source lives. Throws not_found.
  virtual std::span<const std::byte> data(std::string_view name) const = 0;
  // A hint that this process will not read the tensor's bytes again: a mapped file drops the
  // whole pages inside it from the resident set (the page cache keeps them; a later data()
  // read faults them back in). No-op for sources that are not mapped.
  virtual void release(std::string_view name) const {}
  // File-level metadata (safetensors "__metadata__"); empty for pickles.
  virtual const std::map<std::string, std::string>& metadata() const = 0;
};

// What both file formats keep alike: the path, the tensors in file order and the lookup by
// name. A format adds where each tensor's bytes are (same index as infos_).
class IndexedTensorSource : public TensorSource {
 public:
  const std::filesystem::path& path() const override { return path_; }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  const TensorInfo* find(std::string_view name) const override {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &infos_[it->second];
  }

 protected:
  explicit IndexedTensorSource(std::filesystem::path path) : path_(std::move(path)) {}
  // The index of a tensor in infos_; Errc::not_found naming the file when there is none.
  size_t index_of(std::string_view name) const;
  void add(TensorInfo info) {
    index_.emplace(info.name, infos_.size());
    infos_.push_back(std::move(info));
  }

  std::filesystem::path path_;
  std::vector<TensorInfo> infos_;
  std::unordered_map<std::string, size_t> index_;
};

// Memory-maps the file and validates the header completely before returning: offsets
// inside the data section, no overlaps, shape x dtype == byte length, known dtypes.
// Throws rc::Error(format) naming the file and the tensor.
std::unique_ptr<TensorSource> open_safetensors(const std::filesystem::path& path);

// A torch.save() zip archive. The pickle is read by a restricted unpickler that rebuilds
// tensors (plain dict or OrderedDict of them) and executes nothing: any global other than
// the handful torch uses for tensors is an error. Strided storages are made contiguous.
std::unique_ptr<TensorSource> open_pytorch_bin(const std::filesystem::path& path);

// Converts n elements of a floating dtype (f32, f16, bf16, f64) to f32. Throws unsupported.
void convert_to_f32(DType dtype, std::span<const std::byte> src, float* dst, int64_t n);

struct TensorToWrite {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // numel * dtype_size bytes, contiguous
};

// Writes a safetensors file atomically (temp file in the same folder, fsync, rename):
// on any failure the previous file at `path` is intact and rc::Error(io) is thrown.
void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace rc::io
