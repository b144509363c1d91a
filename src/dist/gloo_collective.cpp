// gloo collectives (collective.h). Errors from gloo (gloo::IoException: a peer closed its
// socket or the timeout passed) become one rc::Error naming this rank.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdlib>
#include <string>

#include "core/check.h"
#include "dist/collective.h"
#include "dist/tcp_store.h"

namespace rc::dist {
namespace {

class GlooCollective final : public Collective {
 public:
  GlooCollective(const LaunchInfo& li, std::chrono::milliseconds timeout) : rank_(li.rank), world_(li.world_size) {
    // Rank 0 serves the store; gloo's own pairs use ports the OS picks.
    if (li.rank == 0) server_ = std::make_unique<TcpStoreServer>(li.store_port);
    gloo::transport::tcp::attr attr;
    const char* iface = std::getenv("GLOO_SOCKET_IFNAME");  // as PyTorch: pin the interface
    if (iface && *iface)
      attr.iface = iface;
    else
      attr.hostname = local_address_towards(li.master_addr, li.store_port);
    attr.ai_family = AF_INET;
    store_ = std::make_unique<TcpStore>(li.master_addr, li.store_port, timeout);
    guarded("rendezvous", [&] {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(li.rank, li.world_size);
      ctx->setTimeout(timeout);
      gloo::rendezvous::PrefixStore prefixed("rc", *store_);
      ctx->connectFullMesh(prefixed, device_);
      ctx_ = ctx;
    });
    // Everyone is connected (a barrier over the new mesh): nobody reads the store again, so
    // rank 0 closes its port — it is open, unauthenticated like torchrun's, only this long.
    barrier();
    store_.reset();
    server_.reset();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  void allreduce_sum(float* data, int64_t n) override { allreduce(data, n, &gloo::sum<float>); }
  void allreduce_sum(double* data, int64_t n) override { allreduce(data, n, &gloo::sum<double>); }
  void allreduce_max(uint64_t* data, int64_t n) override { allreduce(data, n, &gloo::max<uint64_t>); }
  void allreduce_max(uint8_t* data, int64_t n) override { allreduce(data, n, &gloo::max<uint8_t>); }

  void broadcast(void* data, int64_t bytes, int root) override {
    // In chunks: gloo's element count is a size_t of bytes, but one huge message is slower.
    auto* p = static_cast<char*>(data);
    constexpr int64_t kChunk = 64 << 20;
    for (int64_t off = 0; off < bytes; off += kChunk) {
      guarded("broadcast", [&] {
        gloo::BroadcastOptions o(ctx_);
        o.setOutput(p + off, size_t(std::min(kChunk, bytes - off)));
        o.setRoot(root);
        o.setTag(next_tag());
        gloo::broadcast(o);
      });
    }
  }

  void barrier() override {
    guarded("barrier", [&] {
      gloo::BarrierOptions o(ctx_);
      o.setTag(next_tag());
      gloo::barrier(o);
    });
  }

 private:
  template <typename T>
  void allreduce(T* data, int64_t n, void (*fn)(void*, const void*, const void*, size_t)) {
    if (n <= 0) return;
    guarded("all-reduce", [&] {
      gloo::AllreduceOptions o(ctx_);
      o.setOutput(data, size_t(n));
      o.setReduceFunction(fn);
      o.setTag(next_tag());
      gloo::allreduce(o);
    });
  }

  uint32_t next_tag() { return tag_++; }

  template <typename F>
  void guarded(const char* what, F&& f) {
    try {
      f();
    } catch (const gloo::Exception& e) {
      std::string msg = e.what();
      for (char& c : msg)
        if (c == '\n') c = ' ';
      RC_THROW(Errc::resource_exhausted, "rank ", rank_, " of ", world_, ": ", what,
               " failed: another rank died, hung or is unreachable (", msg,
               ")\nHINT: see the other ranks' logs; resume with --resume (any rank count, same global batch)");
    }
  }

  int rank_, world_;
  uint32_t tag_ = 1;
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStore> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> ctx_;
};

}  // namespace

std::unique_ptr<Collective> connect_gloo(const LaunchInfo& li, std::chrono::milliseconds timeout) {
  return std::make_unique<GlooCollective>(li, timeout);
}

}  // namespace rc::dist
