// gloo collectives (collective.h). Errors from gloo (gloo::IoException: a peer closed its
// socket or the timeout passed) become one rc::Error naming this rank.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/check.h"
#include "dist/collective.h"
#include "dist/tcp_store.h"

namespace rc::dist {
namespace {

// What gloo's connectFullMesh reads back from the store, checked before gloo parses it. The
// store's port is open to anyone who reaches it, and gloo trusts every byte: a forged entry
// ended the rendezvous in a bare "enforce fail" from deep inside gloo. Now it is an error that
// names the store and the rank whose entry is wrong. The layout is that of Debian's libgloo
// (2022-05, rendezvous::Context::connectFullMesh): key "<r>" holds rank r's world-1 pair
// addresses (tcp::Address records, the one for rank q at index q - (q > r)), key "rank_<r>"
// its host name.
class CheckedStore final : public gloo::rendezvous::Store {
 public:
  CheckedStore(gloo::rendezvous::Store& inner, std::string where, int rank, int world)
      : inner_(inner), where_(std::move(where)), rank_(rank), world_(world) {}

  void set(const std::string& key, const std::vector<char>& data) override { inner_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    std::vector<char> v = inner_.get(key);
    check(key, v);
    return v;
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    try {
      inner_.wait(keys, timeout);
    } catch (const Error& e) {
      const int peer = keys.size() == 1 ? peer_of(keys[0]) : -1;
      if (peer < 0) throw;
      throw Error(e.errc(),
                  "rank " + std::to_string(rank_) + " of " + std::to_string(world_) + ", waiting for rank " +
                      std::to_string(peer) + ": " + e.what(),
                  e.hint());
    }
  }

 private:
  // The rank a key of gloo's belongs to; -1 for other keys.
  int peer_of(const std::string& key) const {
    const std::string digits = key.rfind("rank_", 0) == 0 ? key.substr(5) : key;
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    const int peer = std::stoi(digits);
    return peer < world_ ? peer : -1;
  }

  void check(const std::string& key, const std::vector<char>& v) const {
    const int peer = peer_of(key);
    if (peer < 0) return;
    auto malformed = [&](const std::string& what) {
      RC_THROW(Errc::format, "rank ", rank_, " of ", world_, ": the rendezvous store at ", where_,
               " holds a malformed entry for rank ", peer, " (", what, "), not what gloo writes",
               "\nHINT: is another job or a stray client using this MASTER_ADDR:MASTER_PORT, or a rank built with "
               "another gloo? give each job its own port, unreachable from outside the job's hosts");
    };
    if (key.rfind("rank_", 0) == 0) {  // a host name
      if (v.empty() || v.size() > 255) malformed("a host name of " + std::to_string(v.size()) + " bytes");
      return;
    }
    const size_t record = gloo::transport::tcp::Address(sockaddr_storage{}, 0).bytes().size();
    if (v.size() != size_t(world_ - 1) * record)
      malformed(std::to_string(v.size()) + " bytes of pair addresses; expected " + std::to_string(world_ - 1) + " x " +
                std::to_string(record));
    sockaddr_storage ss{};
    std::memcpy(&ss, v.data() + size_t(rank_ - (rank_ > peer)) * record, sizeof ss);
    uint16_t port = 0;
    if (ss.ss_family == AF_INET)
      port = reinterpret_cast<const sockaddr_in*>(&ss)->sin_port;
    else if (ss.ss_family == AF_INET6)
      port = reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port;
    else
      malformed("address family " + std::to_string(ss.ss_family) + ", not IPv4 or IPv6");
    if (port == 0) malformed("port 0");
  }

  gloo::rendezvous::Store& inner_;
  std::string where_;
  int rank_, world_;
};

class GlooCollective final : public Collective {
 public:
  GlooCollective(const LaunchInfo& li, std::chrono::milliseconds timeout) : rank_(li.rank), world_(li.world_size) {
    // Rank 0 serves the store; gloo's own pairs use ports the OS picks.
    if (li.rank == 0)
      server_ = std::make_unique<TcpStoreServer>(li.master_addr, li.store_port, rendezvous_store_limits(timeout));
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
      CheckedStore checked(prefixed, store_->where(), rank_, world_);
      ctx->connectFullMesh(checked, device_);
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
    } catch (const gloo::EnforceNotMet& e) {  // gloo's own checks: say who failed, on one line
      std::string msg = e.what();
      for (char& c : msg)
        if (c == '\n') c = ' ';
      RC_THROW(Errc::resource_exhausted, "rank ", rank_, " of ", world_, ": ", what, " failed inside gloo (", msg, ")",
               "\nHINT: see the other ranks' logs; if it repeats, report it with this message");
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
