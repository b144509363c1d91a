// Loading for packed inference (CheckpointLoadOptions::pack, ParamStorage::packed_inference):
// the GEMM weights packed straight from the checkpoint (fp32, bf16 or f16 tensors) give bit for
// bit the logits of the fp32 master packed with set_weight_format, hold less memory, and every
// use that needs the fp32 weights is a clear Errc::unsupported.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "device/cpu_isa.h"
#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "roberta/classifier.h"
#include "roberta/error.h"
#include "support/golden.h"
#include "support/emulator.h"
#include "support/f16_bits.h"
#include "support/model_batches.h"
#include "tensor/bf16.h"

namespace rc::model {
namespace {
namespace fs = std::filesystem;
using test::batch_logits;
using test::Ids;
using test::random_batch;
using test::to_f16_bits;

RobertaConfig config_of(int64_t hidden, int64_t heads, int64_t ffn, int64_t layers, int64_t vocab) {
  RobertaConfig c = RobertaConfig::from_file(fs::path(test::tiny_dir()) / "config.json");
  c.hidden_size = hidden;
  c.num_attention_heads = heads;
  c.intermediate_size = ffn;
  c.num_hidden_layers = layers;
  c.vocab_size = vocab;
  return c;
}

// A random checkpoint folder (HF init, seed) with every tensor stored as `dt`; the tiny
// tokenizer files alongside. with_head = false: a body-only checkpoint.
class Folder {
 public:
  Folder(const RobertaConfig& c, DType dt, uint64_t seed, bool with_head = true) {
    dir_ = fs::temp_directory_path() / ("rc_packed_load_" + std::to_string(::getpid()) + "_" + std::to_string(seed) +
                                        "_" + std::string(dtype_name(dt)));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    RobertaModel m(c);
    m.init_weights(seed);
    std::vector<std::vector<unsigned char>> storage;
    std::vector<io::TensorToWrite> out;
    for (const ParamEntry& e : m.layout().entries()) {
      if (!with_head && e.is_head) continue;
      const float* p = m.params() + e.offset;
      std::vector<unsigned char> bytes(size_t(e.numel) * dtype_size(dt));
      for (int64_t i = 0; i < e.numel; ++i) {
        if (dt == DType::f32) {
          std::memcpy(bytes.data() + i * 4, p + i, 4);
        } else {
          const uint16_t h = dt == DType::bf16 ? f32_to_bf16(p[i]) : to_f16_bits(p[i]);
          std::memcpy(bytes.data() + i * 2, &h, 2);
        }
      }
      storage.push_back(std::move(bytes));
      out.push_back({e.name, dt, e.shape, nullptr});
    }
    for (size_t i = 0; i < out.size(); ++i) out[i].data = storage[i].data();
    io::write_safetensors(dir_ / "model.safetensors", out);
    io::write_file_atomic(dir_ / "config.json", c.to_json());
    for (const char* f : {"vocab.json", "merges.txt"}) fs::copy_file(fs::path(test::tiny_dir()) / f, dir_ / f);
  }
  ~Folder() { fs::remove_all(dir_); }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

std::unique_ptr<RobertaModel> load_packed(const fs::path& dir, WeightFormat f, bool init_head = false) {
  CheckpointLoadOptions o;
  o.pack = f;
  o.init_head = init_head;
  return load_checkpoint(dir, o);
}

// The old route: the full fp32 master, then packed from it.
std::unique_ptr<RobertaModel> load_then_pack(const fs::path& dir, WeightFormat f, bool init_head = false) {
  CheckpointLoadOptions o;
  o.init_head = init_head;
  auto m = load_checkpoint(dir, o);
  m->set_weight_format(f);
  return m;
}

void expect_same_logits(const RobertaModel& want, const RobertaModel& got, const std::string& what) {
  for (auto [B, T] : {std::pair<int64_t, int64_t>{1, 1}, {3, 9}, {2, 33}}) {
    const Ids in = random_batch(want.config(), B, T, uint64_t(B * 100 + T));
    const auto a = batch_logits(want, in), b = batch_logits(got, in);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << what << " at " << B << "x" << T;
  }
}

TEST(PackedLoad, SameLogitsBitForBitAsPackingTheFp32Master) {
  const RobertaConfig tiny = config_of(32, 4, 64, 2, 1000), mid = config_of(128, 4, 512, 2, 1000);
  for (const RobertaConfig* c : {&tiny, &mid}) {
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      const Folder folder(*c, dt, uint64_t(c->hidden_size));
      for (WeightFormat f : {WeightFormat::fp32_packed, WeightFormat::bf16, WeightFormat::int8}) {
        const std::string what = std::string(dtype_name(dt)) + " checkpoint, hidden " + std::to_string(c->hidden_size) +
                                 ", " + weight_format_name(f);
        const auto want = load_then_pack(folder.dir(), f);
        const auto got = load_packed(folder.dir(), f);
        EXPECT_EQ(got->storage(), ParamStorage::packed_inference);
        EXPECT_EQ(got->weight_format(), f);
        EXPECT_EQ(got->packed_bytes(), want->packed_bytes()) << what;
        expect_same_logits(*want, *got, what);
      }
    }
  }
}

TEST(PackedLoad, PytorchBinPacksAsTheMasterWould) {  // tensors from the unpickler's storage, not a mapping
  const fs::path dir = fs::temp_directory_path() / ("rc_packed_load_bin_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "pytorch_model.bin", "vocab.json", "merges.txt"})
    fs::copy_file(fs::path(test::tiny_dir()) / f, dir / f);
  for (WeightFormat f : {WeightFormat::fp32_packed, WeightFormat::bf16, WeightFormat::int8})
    expect_same_logits(*load_then_pack(dir, f), *load_packed(dir, f),
                       std::string("pytorch_model.bin, ") + weight_format_name(f));
  fs::remove_all(dir);
}

TEST(PackedLoad, FreshHeadPacksAsTheMasterWould) {
  const RobertaConfig c = config_of(64, 4, 128, 2, 1000);
  const Folder folder(c, DType::bf16, 7, /*with_head=*/false);
  for (WeightFormat f : {WeightFormat::fp32_packed, WeightFormat::bf16, WeightFormat::int8}) {
    const auto want = load_then_pack(folder.dir(), f, true);
    const auto got = load_packed(folder.dir(), f, true);
    expect_same_logits(*want, *got, std::string("initialised head, ") + weight_format_name(f));
  }
}

// fp32_packed is the fp32 forward in the GEMM library's layout: not bit for bit the master's
// (another GEMM kernel may sum in another order where the CPU has brgemm), but within fp32
// rounding of it. Measured: max |Δ| / max |logit| = 9.8e-7 (Zen 3, AVX2).
TEST(PackedLoad, PackedFp32AgreesWithTheFp32Master) {
  const RobertaConfig c = config_of(128, 4, 512, 3, 1000);
  const Folder folder(c, DType::f32, 13);
  const auto master = load_checkpoint(folder.dir(), {});
  const auto packed = load_packed(folder.dir(), WeightFormat::fp32_packed);
  EXPECT_EQ(packed->storage(), ParamStorage::packed_inference);
  EXPECT_GT(packed->packed_bytes(), 0u);
  double worst = 0;
  for (auto [B, T] : {std::pair<int64_t, int64_t>{1, 5}, {4, 17}, {3, 70}}) {
    const Ids in = random_batch(c, B, T, uint64_t(B * 10 + T));
    const auto a = batch_logits(*master, in), b = batch_logits(*packed, in);
    ASSERT_EQ(a.size(), b.size());
    double scale = 0, diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      scale = std::max(scale, double(std::fabs(a[i])));
      diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-6));
  }
  std::printf("fp32_packed vs fp32 master: max |d| / max |logit| = %.3g\n", worst);
  EXPECT_LT(worst, 1e-5);
}

// On oneDNN's gemm-based matmul (x86-64 without AVX-512) the fp32 GEMMs read W's own (N, K)
// rows, so a packed fp32 load reads every single-tensor weight in place from the mapped file
// (PackedLinear::pack's borrow) and copies only W_qkv (three tensors); the logits are those of
// the copying route (SameLogitsBitForBitAsPackingTheFp32Master above).
TEST(PackedLoad, Fp32WeightsAreReadInPlaceWhereTheGemmReadsTheirRows) {
  const RobertaConfig c = config_of(64, 4, 128, 2, 1000);
  const Folder folder(c, DType::f32, 17);
  const auto m = load_packed(folder.dir(), WeightFormat::fp32_packed);
  const LayerWeights w = m->layer_weights(1);
  ASSERT_EQ(w.attn_out.kind, kernels::LinearWeight::Kind::packed);
  if (!w.attn_out.packed->uses_onednn()) GTEST_SKIP() << "no oneDNN GEMM for fp32 here";
#if defined(__x86_64__)
  if (cpu_isa() >= CpuIsa::avx512) GTEST_SKIP() << "AVX-512: oneDNN's brgemm reads its own blocked layout (a copy)";
  EXPECT_TRUE(w.attn_out.packed->borrows());
  EXPECT_TRUE(w.ffn_in.packed->borrows());
  EXPECT_TRUE(w.ffn_out.packed->borrows());
  EXPECT_FALSE(w.qkv.packed->borrows());  // Q, K and V are three tensors: stacked into a copy
  // The copying route borrows nothing: the master it packs from is its own.
  const auto copied = load_then_pack(folder.dir(), WeightFormat::fp32_packed);
  EXPECT_FALSE(copied->layer_weights(1).ffn_in.packed->borrows());
  // bf16 / int8 weights are always converted copies.
  EXPECT_FALSE(load_packed(folder.dir(), WeightFormat::int8)->layer_weights(1).ffn_in.packed->borrows());
#else
  GTEST_SKIP() << "oneDNN's fp32 layout on this architecture: not measured";
#endif
}

template <class F>
std::string unsupported_error(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::unsupported) << e.what();
    return e.what() + std::string(" | ") + e.hint();
  }
  return "(no error)";
}

TEST(PackedLoad, UsesThatNeedTheFp32WeightsFailClearly) {
  const RobertaConfig c = config_of(32, 4, 64, 2, 1000);
  const Folder folder(c, DType::f32, 3);
  auto m = load_packed(folder.dir(), WeightFormat::int8);
  const fs::path out = folder.dir() / "saved";
  const std::string save = unsupported_error([&] { save_checkpoint(out, *m); });
  EXPECT_NE(save.find("int8 inference only"), std::string::npos) << save;
  EXPECT_NE(save.find("load the checkpoint again"), std::string::npos) << save;  // the hint
  EXPECT_FALSE(fs::exists(out / "model.safetensors"));
  std::vector<float> host(size_t(m->num_params()));
  unsupported_error([&] { m->copy_params_to_host(host.data()); });
  unsupported_error([&] { m->copy_params_from_host(host.data()); });
  unsupported_error([&] { m->set_weight_format(WeightFormat::fp32); });
  unsupported_error([&] { m->set_weight_format(WeightFormat::bf16); });
  unsupported_error([&] { m->param("roberta.encoder.layer.1.attention.self.value.weight"); });
  unsupported_error([&] { m->param("classifier.dense.weight"); });
  unsupported_error([&] { m->layer_weights(0, /*fp32_view=*/true); });
  unsupported_error([&] { m->head_dense_weight(/*fp32_view=*/true); });
  // Training reads the fp32 view: refused before any arithmetic.
  {
    TrainWorkspace ws(c, 1, 4);
    std::vector<float> grads(size_t(m->num_params()));
    const Ids in = random_batch(c, 1, 4, 1);
    const int32_t label = 0;
    unsupported_error([&] {
      forward_backward({}, *m, Batch{1, 4, in.ids.data(), in.lens.data(), nullptr}, &label, DropoutConfig{}, 1, 1.0f,
                       grads.data(), ws, nullptr);
    });
  }
  // Still fine: its own format again (a no-op), and what the forward reads as fp32.
  EXPECT_NO_THROW(m->set_weight_format(WeightFormat::int8));
  const auto full = load_checkpoint(folder.dir(), {});
  for (const char* name :
       {"roberta.encoder.layer.1.attention.self.value.bias", "classifier.out_proj.weight",
        "roberta.embeddings.word_embeddings.weight", "roberta.encoder.layer.0.output.LayerNorm.weight"}) {
    const auto a = std::as_const(*full).param(name), b = std::as_const(*m).param(name);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << name;
  }
  EXPECT_THROW(m->pack_from(WeightFormat::fp32, {}), Error);
}

TEST(PackedLoad, ClassifierLoadsPackedAndAgreesWithTheMasterRoute) {
  const RobertaConfig c = config_of(64, 4, 128, 2, 50265);  // the tiny tokenizer's vocabulary
  const Folder folder(c, DType::f32, 11);
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::int8}) {
    LoadOptions o;
    o.precision = p;
    const auto clf = Classifier::load(folder.dir(), o);
    const WeightFormat f = clf->info().precision == Precision::int8   ? WeightFormat::int8
                           : clf->info().precision == Precision::bf16 ? WeightFormat::bf16
                                                                      : WeightFormat::fp32_packed;
    if (p == Precision::bf16 && !cpu_has_bf16()) {
      EXPECT_EQ(f, WeightFormat::fp32_packed);
    }
    const auto want = load_then_pack(folder.dir(), f);
    const std::vector<int32_t> row = {0, 713, 16, 10, 1296, 2};
    const auto got = clf->predict_ids(std::span(&row, 1));
    const Ids in{row, {int32_t(row.size())}, 1, int64_t(row.size())};
    const auto ref = batch_logits(*want, in);
    ASSERT_EQ(got[0].logits.size(), ref.size());
    EXPECT_EQ(0, std::memcmp(got[0].logits.data(), ref.data(), ref.size() * sizeof(float))) << precision_name(p);
  }
}

// kB of a /proc/self/status line ("VmHWM:", "RssAnon:"), -1 when absent.
int64_t status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(std::strlen(key)));
  return -1;
}

// The child of the test below: loads RC_PACKED_LOAD_CHILD=<dir> one way (RC_PACKED_LOAD_MODE
// packed | master) in a fresh process and prints its peak and resident anonymous memory.
TEST(PackedLoad, MemoryChild) {
  const char* dir = std::getenv("RC_PACKED_LOAD_CHILD");
  if (!dir) GTEST_SKIP() << "run by PeakAndResidentMemoryDropByTheFp32GemmWeights";
  const bool packed = std::string(std::getenv("RC_PACKED_LOAD_MODE")) == "packed";
  const auto m = packed ? load_packed(dir, WeightFormat::bf16) : load_then_pack(dir, WeightFormat::bf16);
  std::printf("RC_MEM %lld %lld\n", (long long)status_kb("VmHWM:"), (long long)status_kb("RssAnon:"));
}

TEST(PackedLoad, PeakAndResidentMemoryDropByTheFp32GemmWeights) {
  if (std::getenv("RC_PACKED_LOAD_CHILD")) GTEST_SKIP() << "child process";
  if (status_kb("VmHWM:") < 0) GTEST_SKIP() << "no VmHWM in /proc/self/status";
  // 4 layers of hidden 512 / FFN 2048: 48 MiB of fp32 GEMM weights, small embeddings.
  const RobertaConfig c = config_of(512, 8, 2048, 4, 1000);
  const Folder folder(c, DType::f32, 5);
  const int64_t gemm_kb =
      c.num_hidden_layers * (4 * c.hidden_size * c.hidden_size + 2 * c.hidden_size * c.intermediate_size) * 4 / 1024;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  auto child = [&](const char* mode) {
    const std::string cmd = "RC_PACKED_LOAD_CHILD='" + folder.dir().string() + "' RC_PACKED_LOAD_MODE=" + mode + " " +
                            test::emulator_prefix() + exe + " --gtest_filter=PackedLoad.MemoryChild 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    EXPECT_NE(p, nullptr);
    if (!p) return std::pair<int64_t, int64_t>{-1, -1};
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, got);
    EXPECT_EQ(pclose(p), 0) << out;
    long long hwm = -1, anon = -1;
    const size_t at = out.find("RC_MEM ");
    EXPECT_NE(at, std::string::npos) << out;
    if (at != std::string::npos) std::sscanf(out.c_str() + at, "RC_MEM %lld %lld", &hwm, &anon);
    return std::pair<int64_t, int64_t>{hwm, anon};
  };
  const auto [packed_peak, packed_anon] = child("packed");
  const auto [full_peak, full_anon] = child("master");
  std::printf(
      "fp32 GEMM weights %lld kB; peak RSS %lld kB packed load vs %lld kB fp32 master, anonymous resident "
      "%lld vs %lld kB\n",
      (long long)gemm_kb, (long long)packed_peak, (long long)full_peak, (long long)packed_anon, (long long)full_anon);
  // Expected: both ~1× the fp32 GEMM weights lower (the master is never allocated; the
  // file's pages count in both peaks).
  EXPECT_LT(packed_peak + gemm_kb * 3 / 4, full_peak);
  EXPECT_LT(packed_anon + gemm_kb * 3 / 4, full_anon);
}

}  // namespace
}  // namespace rc::model
