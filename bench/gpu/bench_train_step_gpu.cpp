// Training throughput of the CUDA kernels on a RoBERTa-shaped classifier, end to end on one
// GPU: embeddings → L post-LN encoder layers → <s> head → cross-entropy, the full backward,
// and the fused AdamW over the flat fp32 buffers, with bf16 activations and bf16 GEMM
// operands (fp32 master weights, moments and gradients), dropout 0.1 everywhere HF has it.
// The step is captured once per padded length as a CUDA graph and replayed.
//
// It drives kernels/cuda directly rather than the model layer so that the kernels' speed is
// measured while the model's GPU path is being written; the sequence of ops is the one
// tools/roberta_ref.py (HF modeling_roberta) runs. Prints one JSON line per run:
//   {"mode":..., "batch":..., "tokens_per_s":..., "mfu":..., "ms_per_step":...}
// Usage:
//   bench_train_step_gpu --batch 32 --seq 128 [--steps 30] [--layers 12] [--peak-tflops 790]
//   bench_train_step_gpu --batch 32 --lengths bench/gpu/tweeteval_train_lengths.txt [--steps 200]
// FLOPs counted (for MFU) are the useful ones, over real tokens only: 6·(12·C²·L + head)·tokens
// + 12·L·C·Σ len² (attention), as llm.c's and PaLM's MFU definitions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device/cuda/device.h"
#include "kernels/cuda/cuda_kernels.h"
#include "roberta/error.h"
#include "tensor/bf16.h"

namespace {

namespace kc = rc::kernels::cuda;
using rc::cuda::DeviceArray;
using Bf16 = kc::Bf16;

struct Args {
  int64_t batch = 32, seq = 128, steps = 30, warmup = 3, layers = 12, hidden = 768, heads = 12, vocab = 50265,
          labels = 3;
  std::string lengths;
  double peak_tflops = 790.0;
  bool graph = true;
  int device = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::printf("usage: bench_train_step_gpu [--batch B] [--seq T | --lengths FILE] [--steps N] [--warmup N]\n"
                  "       [--layers L] [--peak-tflops X] [--no-graph] [--device N]\n");
      std::exit(0);
    }
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_train_step_gpu: %s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--batch") a.batch = std::stoll(next());
    else if (k == "--seq") a.seq = std::stoll(next());
    else if (k == "--steps") a.steps = std::stoll(next());
    else if (k == "--warmup") a.warmup = std::stoll(next());
    else if (k == "--layers") a.layers = std::stoll(next());
    else if (k == "--lengths") a.lengths = next();
    else if (k == "--peak-tflops") a.peak_tflops = std::stod(next());
    else if (k == "--no-graph") a.graph = false;
    else if (k == "--device") a.device = std::stoi(next());
    else {
      std::fprintf(stderr, "bench_train_step_gpu: unknown flag %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

// ---- parameters: one flat fp32 buffer described by a table --------------------------------
struct Layout {
  struct Entry {
    int64_t offset, n;
    bool decay;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  int64_t add(int64_t n, bool decay) {
    const int64_t off = total;
    entries.push_back({off, n, decay});
    total += (n + 63) / 64 * 64;  // 256-byte alignment of every tensor (cuBLASLt's preferred)
    return off;
  }
};

struct LayerParams {
  int64_t wqkv, bqkv, wo, bo, ln1g, ln1b, w1, b1, w2, b2, ln2g, ln2b;
};

struct Model {
  int64_t C, H, D, L, V, P = 514, K;
  Layout layout;
  int64_t wte, wpe, tte, leg, leb, wd, bd, wout, bout;
  std::vector<LayerParams> layers;
  DeviceArray<float> params, grads, m, v;
  DeviceArray<Bf16> params16;

  explicit Model(const Args& a) : C(a.hidden), H(a.heads), D(a.hidden / a.heads), L(a.layers), V(a.vocab), K(a.labels) {
    wte = layout.add(V * C, true);
    wpe = layout.add(P * C, true);
    tte = layout.add(C, true);
    leg = layout.add(C, false);
    leb = layout.add(C, false);
    for (int64_t l = 0; l < L; ++l) {
      LayerParams p{};
      p.wqkv = layout.add(3 * C * C, true);
      p.bqkv = layout.add(3 * C, false);
      p.wo = layout.add(C * C, true);
      p.bo = layout.add(C, false);
      p.ln1g = layout.add(C, false);
      p.ln1b = layout.add(C, false);
      p.w1 = layout.add(4 * C * C, true);
      p.b1 = layout.add(4 * C, false);
      p.w2 = layout.add(4 * C * C, true);
      p.b2 = layout.add(C, false);
      p.ln2g = layout.add(C, false);
      p.ln2b = layout.add(C, false);
      layers.push_back(p);
    }
    wd = layout.add(C * C, true);
    bd = layout.add(C, false);
    wout = layout.add(K * C, true);
    bout = layout.add(K, false);
    const int64_t n = layout.total;
    std::vector<float> host(size_t(n), 0.0f);
    std::mt19937_64 gen(0);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    for (const auto& e : layout.entries)
      for (int64_t i = e.offset; i < e.offset + e.n; ++i) host[i] = e.decay ? dist(gen) : 0.0f;
    auto ones = [&](int64_t off) { std::fill(host.begin() + off, host.begin() + off + C, 1.0f); };
    ones(leg);
    for (auto& p : layers) ones(p.ln1g), ones(p.ln2g);
    params = DeviceArray<float>(host.data(), host.size());
    grads = DeviceArray<float>(size_t(n));
    m = DeviceArray<float>(size_t(n));
    v = DeviceArray<float>(size_t(n));
    m.zero();
    v.zero();
    std::vector<Bf16> h16(host.size());
    for (size_t i = 0; i < host.size(); ++i) h16[i] = rc::f32_to_bf16(host[i]);
    params16 = DeviceArray<Bf16>(h16.data(), h16.size());
  }
  float* p(int64_t off) { return params.data() + off; }
  float* g(int64_t off) { return grads.data() + off; }
  Bf16* p16(int64_t off) { return params16.data() + off; }
  int64_t matmul_params_per_token() const { return L * 12 * C * C + C * C + K * C; }
};

// ---- activations for a (B, T) batch ------------------------------------------------------
struct Acts {
  int64_t B, T, BT;
  DeviceArray<int32_t> ids, pos, lens;
  DeviceArray<Bf16> emb_sum, x0;  // embedding sum (LN input) and layer-0 input
  DeviceArray<float> emb_mean, emb_rstd;
  struct Layer {
    DeviceArray<Bf16> qkv, att, sum1, y1, h, g, sum2, out;
    DeviceArray<float> probs, mean1, rstd1, mean2, rstd2;
  };
  std::vector<Layer> layer;
  DeviceArray<Bf16> tmp_c, pooled16, dX, dS, dF, dH, dQKV, dAtt, dXin;
  DeviceArray<float> pooled, z, t, logits, probs, losses, dlogits, dt, dz, dpooled;
  DeviceArray<int32_t> labels;

  Acts(const Model& md, int64_t B_, int64_t T_) : B(B_), T(T_), BT(B_ * T_) {
    const int64_t C = md.C;
    ids = DeviceArray<int32_t>(BT), pos = DeviceArray<int32_t>(BT), lens = DeviceArray<int32_t>(B);
    emb_sum = DeviceArray<Bf16>(BT * C), x0 = DeviceArray<Bf16>(BT * C);
    emb_mean = DeviceArray<float>(BT), emb_rstd = DeviceArray<float>(BT);
    for (int64_t l = 0; l < md.L; ++l) {
      Layer a;
      a.qkv = DeviceArray<Bf16>(BT * 3 * C), a.att = DeviceArray<Bf16>(BT * C), a.sum1 = DeviceArray<Bf16>(BT * C);
      a.y1 = DeviceArray<Bf16>(BT * C), a.h = DeviceArray<Bf16>(BT * 4 * C), a.g = DeviceArray<Bf16>(BT * 4 * C);
      a.sum2 = DeviceArray<Bf16>(BT * C), a.out = DeviceArray<Bf16>(BT * C);
      a.probs = DeviceArray<float>(B * md.H * T * T);
      a.mean1 = DeviceArray<float>(BT), a.rstd1 = DeviceArray<float>(BT);
      a.mean2 = DeviceArray<float>(BT), a.rstd2 = DeviceArray<float>(BT);
      layer.push_back(std::move(a));
    }
    tmp_c = DeviceArray<Bf16>(BT * C), pooled16 = DeviceArray<Bf16>(B * C);
    dX = DeviceArray<Bf16>(BT * C), dS = DeviceArray<Bf16>(BT * C), dF = DeviceArray<Bf16>(BT * C);
    dH = DeviceArray<Bf16>(BT * 4 * C), dQKV = DeviceArray<Bf16>(BT * 3 * C), dAtt = DeviceArray<Bf16>(BT * C);
    dXin = DeviceArray<Bf16>(BT * C);
    pooled = DeviceArray<float>(B * C), z = DeviceArray<float>(B * C), t = DeviceArray<float>(B * C);
    logits = DeviceArray<float>(B * md.K), probs = DeviceArray<float>(B * md.K), losses = DeviceArray<float>(B);
    dlogits = DeviceArray<float>(B * md.K), dt = DeviceArray<float>(B * C), dz = DeviceArray<float>(B * C);
    dpooled = DeviceArray<float>(B * C);
    labels = DeviceArray<int32_t>(B);
  }
};

// y(M,N) = x(M,K)·W(N,K)ᵀ + b, bf16 in/out, fp32 bias.
void linear_fwd(Model& md, Bf16* y, const Bf16* x, int64_t w, int64_t b, int64_t M, int64_t N, int64_t K, void* s) {
  kc::Gemm g;
  g.op = kc::Gemm::Op::nt, g.M = M, g.N = N, g.K = K;
  g.in_type = kc::GemmType::bf16, g.out_type = kc::GemmType::bf16, g.bias = md.p(b);
  kc::matmul(g, y, x, md.p16(w), s);
}
// dW(N,K) += dyᵀ·x, db(N) = Σ dy (fused BGRADB; one micro-batch per step), dx = dy·W.
void linear_bwd(Model& md, Bf16* dx, const Bf16* dy, const Bf16* x, int64_t w, int64_t b, int64_t M, int64_t N,
                int64_t K, void* s) {
  kc::Gemm gw;
  gw.op = kc::Gemm::Op::tn, gw.M = N, gw.N = K, gw.K = M, gw.accumulate = true;
  gw.in_type = kc::GemmType::bf16, gw.out_type = kc::GemmType::f32, gw.bias_grad = md.g(b);
  kc::matmul(gw, md.g(w), dy, x, s);
  if (!dx) return;
  kc::Gemm gx;
  gx.op = kc::Gemm::Op::nn, gx.M = M, gx.N = K, gx.K = N;
  gx.in_type = kc::GemmType::bf16, gx.out_type = kc::GemmType::bf16;
  kc::matmul(gx, dx, dy, md.p16(w), s);
}

constexpr float kDrop = 0.1f;

void train_step(Model& md, Acts& a, uint64_t step, void* s) {
  const int64_t C = md.C, BT = a.BT, B = a.B, T = a.T;
  const uint64_t seed0 = step * 100003;
  kc::zero(md.grads.data(), md.layout.total, s);
  // ---- forward
  kc::embedding_forward(a.emb_sum.data(), a.ids.data(), a.pos.data(), nullptr, md.p(md.wte), md.p(md.wpe),
                        md.p(md.tte), BT, C, s);
  kc::layernorm_forward(a.x0.data(), a.emb_mean.data(), a.emb_rstd.data(), a.emb_sum.data(), md.p(md.leg),
                        md.p(md.leb), BT, C, 1e-5f, s);
  kc::dropout_forward(a.x0.data(), a.x0.data(), BT * C, kDrop, seed0 + 1, s);
  for (int64_t l = 0; l < md.L; ++l) {
    auto& A = a.layer[l];
    const LayerParams& P = md.layers[l];
    const Bf16* x = l == 0 ? a.x0.data() : a.layer[l - 1].out.data();
    const uint64_t sd = seed0 + 10 * (l + 1);
    linear_fwd(md, A.qkv.data(), x, P.wqkv, P.bqkv, BT, 3 * C, C, s);
    kc::attention_forward(A.att.data(), A.probs.data(), A.qkv.data(), a.lens.data(), B, T, md.H, md.D, kDrop, sd, s);
    linear_fwd(md, a.tmp_c.data(), A.att.data(), P.wo, P.bo, BT, C, C, s);
    kc::dropout_forward(a.tmp_c.data(), a.tmp_c.data(), BT * C, kDrop, sd + 1, s);
    kc::add_layernorm_forward(A.y1.data(), A.sum1.data(), A.mean1.data(), A.rstd1.data(), a.tmp_c.data(), x,
                              md.p(P.ln1g), md.p(P.ln1b), BT, C, 1e-5f, s);
    linear_fwd(md, A.h.data(), A.y1.data(), P.w1, P.b1, BT, 4 * C, C, s);
    kc::gelu_erf_forward(A.g.data(), A.h.data(), BT * 4 * C, s);
    linear_fwd(md, a.tmp_c.data(), A.g.data(), P.w2, P.b2, BT, C, 4 * C, s);
    kc::dropout_forward(a.tmp_c.data(), a.tmp_c.data(), BT * C, kDrop, sd + 2, s);
    kc::add_layernorm_forward(A.out.data(), A.sum2.data(), A.mean2.data(), A.rstd2.data(), a.tmp_c.data(),
                              A.y1.data(), md.p(P.ln2g), md.p(P.ln2b), BT, C, 1e-5f, s);
  }
  // head on <s> (row 0 of every sequence), fp32: dense → tanh → out_proj (dropouts omitted:
  // B×C elements, nothing to measure)
  const Bf16* last = a.layer[md.L - 1].out.data();
  rc::cuda::copy_device_2d(a.pooled16.data(), C * 2, last, T * C * 2, C * 2, B, s);
  kc::cast(a.pooled.data(), a.pooled16.data(), B * C, s);
  kc::matmul_nt(a.z.data(), a.pooled.data(), md.p(md.wd), md.p(md.bd), B, C, C, rc::kernels::MatmulPrecision::bf16, s);
  kc::tanh_forward(a.t.data(), a.z.data(), B * C, s);
  kc::matmul_nt(a.logits.data(), a.t.data(), md.p(md.wout), md.p(md.bout), B, md.K, C,
                rc::kernels::MatmulPrecision::bf16, s);
  kc::cross_entropy_forward(a.losses.data(), a.probs.data(), a.logits.data(), a.labels.data(), B, md.K, s);
  // ---- backward
  kc::cross_entropy_backward(a.dlogits.data(), a.probs.data(), a.labels.data(), B, md.K, 1.0f / float(B), s);
  {
    kc::Gemm g;
    g.op = kc::Gemm::Op::tn, g.M = md.K, g.N = C, g.K = B, g.accumulate = true, g.bias_grad = md.g(md.bout);
    kc::matmul(g, md.g(md.wout), a.dlogits.data(), a.t.data(), s);
    kc::matmul_nn(a.dt.data(), a.dlogits.data(), md.p(md.wout), B, C, md.K, false, rc::kernels::MatmulPrecision::bf16, s);
    kc::tanh_backward(a.dz.data(), a.dt.data(), a.t.data(), B * C, s);
    kc::Gemm g2 = g;
    g2.M = C, g2.bias_grad = md.g(md.bd);
    kc::matmul(g2, md.g(md.wd), a.dz.data(), a.pooled.data(), s);
    kc::matmul_nn(a.dpooled.data(), a.dz.data(), md.p(md.wd), B, C, C, false, rc::kernels::MatmulPrecision::bf16, s);
  }
  rc::cuda::memset_device(a.dX.data(), 0, size_t(BT * C) * 2, s);
  kc::cast(a.pooled16.data(), a.dpooled.data(), B * C, s);
  rc::cuda::copy_device_2d(a.dX.data(), T * C * 2, a.pooled16.data(), C * 2, C * 2, B, s);
  for (int64_t l = md.L - 1; l >= 0; --l) {
    auto& A = a.layer[l];
    const LayerParams& P = md.layers[l];
    const Bf16* x = l == 0 ? a.x0.data() : a.layer[l - 1].out.data();
    const uint64_t sd = seed0 + 10 * (l + 1);
    kc::layernorm_backward(a.dS.data(), md.g(P.ln2g), md.g(P.ln2b), a.dX.data(), A.sum2.data(), md.p(P.ln2g),
                           A.mean2.data(), A.rstd2.data(), BT, C, s);
    kc::dropout_forward(a.dF.data(), a.dS.data(), BT * C, kDrop, sd + 2, s);
    linear_bwd(md, a.dH.data(), a.dF.data(), A.g.data(), P.w2, P.b2, BT, C, 4 * C, s);
    kc::gelu_erf_backward(a.dH.data(), a.dH.data(), A.h.data(), BT * 4 * C, s);
    linear_bwd(md, a.dXin.data(), a.dH.data(), A.y1.data(), P.w1, P.b1, BT, 4 * C, C, s);
    kc::add(a.dXin.data(), a.dXin.data(), a.dS.data(), BT * C, s);
    kc::layernorm_backward(a.dS.data(), md.g(P.ln1g), md.g(P.ln1b), a.dXin.data(), A.sum1.data(), md.p(P.ln1g),
                           A.mean1.data(), A.rstd1.data(), BT, C, s);
    kc::dropout_forward(a.dF.data(), a.dS.data(), BT * C, kDrop, sd + 1, s);
    linear_bwd(md, a.dAtt.data(), a.dF.data(), A.att.data(), P.wo, P.bo, BT, C, C, s);
    kc::attention_backward(a.dQKV.data(), a.dAtt.data(), A.qkv.data(), A.probs.data(), a.lens.data(), B, T, md.H, md.D,
                           kDrop, sd, s);
    linear_bwd(md, a.dX.data(), a.dQKV.data(), x, P.wqkv, P.bqkv, BT, 3 * C, C, s);
    kc::add(a.dX.data(), a.dX.data(), a.dS.data(), BT * C, s);
  }
  kc::dropout_forward(a.dX.data(), a.dX.data(), BT * C, kDrop, seed0 + 1, s);
  kc::layernorm_backward(a.dS.data(), md.g(md.leg), md.g(md.leb), a.dX.data(), a.emb_sum.data(), md.p(md.leg),
                         a.emb_mean.data(), a.emb_rstd.data(), BT, C, s);
  kc::embedding_backward(md.g(md.wte), md.g(md.wpe), md.g(md.tte), a.dS.data(), a.ids.data(), a.pos.data(), nullptr, BT,
                         C, /*pad_id=*/1, s);
  // ---- optimizer
  std::vector<rc::kernels::AdamWSegment> segs;
  for (const auto& e : md.layout.entries) {
    if (!segs.empty() && segs.back().decay == e.decay && segs.back().offset + segs.back().n == e.offset)
      segs.back().n += e.n;
    else
      segs.push_back({e.offset, e.n, e.decay});
  }
  rc::kernels::AdamWHyper h;
  h.lr = 1e-5f, h.weight_decay = 0.01f, h.step = int64_t(step + 1);
  kc::adamw_step(md.params.data(), md.grads.data(), md.m.data(), md.v.data(), segs.data(), int64_t(segs.size()), h,
                 md.params16.data(), s);
}

// Fills ids/positions/lengths for a batch of real lengths (right padding, RoBERTa positions).
void load_batch(Acts& a, const std::vector<int32_t>& lens, const Model& md, std::mt19937_64& gen, void* s) {
  std::vector<int32_t> ids(a.BT, 1), pos(a.BT, 1), labels(a.B);
  std::uniform_int_distribution<int32_t> tok(3, int32_t(md.V - 1));
  for (int64_t b = 0; b < a.B; ++b) {
    for (int64_t t = 0; t < lens[b]; ++t) {
      ids[b * a.T + t] = t == 0 ? 0 : t == lens[b] - 1 ? 2 : tok(gen);
      pos[b * a.T + t] = int32_t(t + 2);
    }
    labels[b] = int32_t(b % md.K);
  }
  rc::cuda::copy_to_device(a.ids.data(), ids.data(), ids.size() * 4, s);
  rc::cuda::copy_to_device(a.pos.data(), pos.data(), pos.size() * 4, s);
  rc::cuda::copy_to_device(a.lens.data(), lens.data(), lens.size() * 4, s);
  // Pageable sources: cudaMemcpyAsync returns once they are staged, so they may die here.
  rc::cuda::copy_to_device(a.labels.data(), labels.data(), labels.size() * 4, s);
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  if (rc::cuda::device_count() == 0) {
    std::fprintf(stderr, "bench_train_step_gpu: no CUDA device\n");
    return 3;
  }
  rc::cuda::set_device(args.device);
  std::fprintf(stderr, "device: %s\n", rc::cuda::device_description(args.device).c_str());
  Model md(args);
  rc::cuda::Stream stream;
  void* s = stream.handle();

  // Batches: fixed (B, seq) or the real length distribution (shuffled, dynamic padding to a
  // multiple of 8 so that a handful of graphs cover every batch).
  std::vector<std::vector<int32_t>> batches;
  std::mt19937_64 gen(1234);
  if (args.lengths.empty()) {
    for (int64_t i = 0; i < args.steps; ++i) batches.emplace_back(args.batch, int32_t(args.seq));
  } else {
    std::ifstream in(args.lengths);
    std::vector<int32_t> all;
    for (int32_t x; in >> x;) all.push_back(std::min<int32_t>(x, 512));
    if (all.empty()) {
      std::fprintf(stderr, "bench_train_step_gpu: no lengths in %s\n", args.lengths.c_str());
      return 2;
    }
    std::shuffle(all.begin(), all.end(), gen);
    for (int64_t i = 0; i < args.steps; ++i) {
      std::vector<int32_t> b(args.batch);
      for (int64_t j = 0; j < args.batch; ++j) b[j] = all[size_t((i * args.batch + j) % all.size())];
      batches.push_back(std::move(b));
    }
  }
  auto padded_T = [&](const std::vector<int32_t>& b) {
    const int32_t mx = *std::max_element(b.begin(), b.end());
    return args.lengths.empty() ? int64_t(mx) : int64_t((mx + 7) / 8 * 8);
  };

  std::map<int64_t, std::unique_ptr<Acts>> acts;  // per padded T
  std::map<int64_t, rc::cuda::Graph> graphs;
  // Warm-up, outside the timed window: every padded length gets its buffers, `warmup`
  // uncaptured steps (allocator, scratch workspace, cuBLASLt plans) and its graph. Longest
  // first: the scratch workspace only grows, and growing would free memory that graphs
  // captured earlier still point to (kernels/cuda/workspace.h).
  std::vector<const std::vector<int32_t>*> firsts;
  {
    std::map<int64_t, const std::vector<int32_t>*> by_T;
    for (const auto& b : batches) by_T.emplace(padded_T(b), &b);
    for (auto it = by_T.rbegin(); it != by_T.rend(); ++it) firsts.push_back(it->second);
  }
  for (const auto* bp : firsts) {
    const auto& b = *bp;
    const int64_t T = padded_T(b);
    auto& a = acts[T];
    a = std::make_unique<Acts>(md, args.batch, T);
    load_batch(*a, b, md, gen, s);
    for (int64_t w = 0; w < std::max<int64_t>(1, args.warmup); ++w) train_step(md, *a, uint64_t(w), s);
    rc::cuda::stream_synchronize(s);
    if (args.graph) {
      graphs[T].begin_capture(s);
      train_step(md, *a, 0, s);  // NOTE: replays reuse this capture's dropout seeds and AdamW step
      graphs[T].end_capture(s);
    }
  }
  double flops = 0, tokens = 0;
  rc::cuda::Event t0(true), t1(true);
  t0.record(s);
  for (int64_t i = 0; i < args.steps; ++i) {
    const auto& b = batches[size_t(i)];
    const int64_t T = padded_T(b);
    Acts& a = *acts[T];
    load_batch(a, b, md, gen, s);
    if (args.graph) graphs[T].launch(s);
    else train_step(md, a, uint64_t(i), s);
    for (int32_t len : b) {
      tokens += len;
      flops += 6.0 * double(md.matmul_params_per_token()) * len + 12.0 * double(md.L * md.C) * double(len) * len;
    }
  }
  t1.record(s);
  t1.synchronize();
  const double ms = t1.elapsed_ms_since(t0);
  const double sec = ms / 1e3;
  const double tflops = flops / sec / 1e12;
  std::printf(
      "{\"mode\":\"%s\",\"batch\":%lld,\"seq\":%lld,\"steps\":%lld,\"graphs\":%zu,\"ms_per_step\":%.3f,"
      "\"tokens_per_s\":%.1f,\"tflops\":%.1f,\"mfu\":%.4f,\"peak_tflops\":%.1f,\"graph\":%s}\n",
      args.lengths.empty() ? "fixed" : "lengths", (long long)args.batch, (long long)args.seq, (long long)args.steps,
      graphs.size(), ms / double(args.steps), tokens / sec, tflops, tflops / args.peak_tflops, args.peak_tflops,
      args.graph ? "true" : "false");
  return 0;
} catch (const rc::Error& e) {
  std::fprintf(stderr, "bench_train_step_gpu: %s\n", e.what());
  return 4;
}
