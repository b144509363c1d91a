// One connection (see http_server_impl.h): a Session per socket, on its own strand; the
// router's answers come back to the strand via Exchange::deliver. And the Listener's
// accept, which starts one.
#include "serve/http_server_impl.h"

namespace rc::serve {
namespace {

using BeastRequest = http::request<http::string_body>;
using BeastResponse = http::response<http::string_body>;

// The transport's one conversion in: what Beast parsed, as the routes read it. Header lines
// keep their order, spelling and repeats; keep_alive is Beast's reading of the version and
// Connection header.
HttpRequest from_beast(BeastRequest&& in) {
  HttpRequest out;
  out.method = std::string(in.method_string());
  out.target = std::string(in.target());
  out.version = int(in.version());
  out.keep_alive = in.keep_alive();
  for (const auto& field : in) out.headers.add(std::string(field.name_string()), std::string(field.value()));
  out.body = std::move(in.body());
  return out;
}

// And out: the route's headers, then the framing, which is the transport's alone:
// Connection from keep_alive, Content-Length = content_length (the body's size; a HEAD
// answer keeps GET's length and sends no body).
BeastResponse to_beast(HttpResponse&& in, size_t content_length) {
  BeastResponse out{static_cast<http::status>(in.status), unsigned(in.version)};
  for (const auto& [name, value] : in.headers) out.insert(name, value);
  out.keep_alive(in.keep_alive);
  out.content_length(content_length);
  out.body() = std::move(in.body);
  return out;
}

}  // namespace

template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool is_tls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  Session(Server::Impl& srv, Stream stream, bool management)
      : srv_(srv), stream_(std::move(stream)), timer_(stream_.get_executor()), management_(management) {
    srv_.connections.fetch_add(1);
    srv_.metrics.add_connections(1);
  }
  template <class... Args>
  Session(Server::Impl& srv, bool management, tcp::socket socket, ssl::context& ctx)
      : srv_(srv), stream_(std::move(socket), ctx), timer_(stream_.get_executor()), management_(management) {
    srv_.connections.fetch_add(1);
    srv_.metrics.add_connections(1);
  }
  ~Session() override {
    release_answer();
    if (counted_) srv_.in_flight.fetch_sub(1);
    srv_.connections.fetch_sub(1);
    srv_.metrics.add_connections(-1);
    std::lock_guard lock(srv_.sessions_mu);
    srv_.sessions.erase(id_);
  }

  void start() {
    {
      std::lock_guard lock(srv_.sessions_mu);
      id_ = srv_.next_session++;
      srv_.sessions[id_] = this->weak_from_this();
    }
    auto self = this->shared_from_this();
    asio::dispatch(stream_.get_executor(), [self] {
      if constexpr (is_tls) {
        beast::get_lowest_layer(self->stream_).expires_after(self->srv_.config.read_timeout);
        self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
          if (!ec) self->do_read();
        });
      } else {
        self->do_read();
      }
    });
  }

  void close_if_idle() override {
    auto self = this->shared_from_this();
    asio::post(stream_.get_executor(), [self] {
      // Waiting for a next request that has not started: nobody loses anything.
      if (self->reading_ && self->parser_ && !self->parser_->got_some()) beast::get_lowest_layer(self->stream_).close();
    });
  }

 private:
  void do_read() {
    if (srv_.draining.load()) return do_close();
    parser_.emplace();
    parser_->body_limit(srv_.config.max_body_bytes);
    parser_->header_limit(64 * 1024);
    // One deadline for the whole request (head and body), so a client trickling bytes
    // (slowloris) cannot hold the connection longer than read_timeout.
    beast::get_lowest_layer(stream_).expires_after(srv_.config.read_timeout);
    reading_ = true;
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::on_header, this->shared_from_this()));
  }

  // The head is in: refuse what we cannot read before the body comes, and tell a client
  // that waits ("Expect: 100-continue", as curl does for bodies over 1 KB) to send it.
  void on_header(beast::error_code ec, size_t) {
    if (ec) return on_read(ec, 0);
    const auto& req = parser_->get();
    // Only chunked (and identity, its no-op) can be read: gzip and the like would be
    // taken for an empty or garbled body.
    if (auto te = req.find(http::field::transfer_encoding); te != req.end()) {
      if (auto bad = unsupported_transfer_coding(std::string_view(te->value().data(), te->value().size()))) {
        return reject(make_response(HttpRequest{}, 501, error_body(501, "NotImplemented", *bad)));
      }
    }
    if (parser_->is_done()) return on_read({}, 0);
    if (beast::iequals(req[http::field::expect], "100-continue") && req.version() >= 11) {
      continue_ = std::make_shared<http::response<http::empty_body>>(http::status::continue_, req.version());
      return http::async_write(stream_, *continue_, [self = this->shared_from_this()](beast::error_code wec, size_t) {
        self->continue_.reset();
        if (wec) return;
        http::async_read(self->stream_, self->buffer_, *self->parser_,
                         beast::bind_front_handler(&Session::on_read, self));
      });
    }
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, this->shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    reading_ = false;
    if (ec == http::error::end_of_stream) return do_close();
    if (ec) {
      const bool http_error = ec.category() == http::make_error_code(http::error::bad_method).category();
      if (ec == http::error::body_limit || ec == http::error::header_limit) {
        const int status = ec == http::error::body_limit ? 413 : 431;
        const std::string msg = ec == http::error::body_limit
                                    ? "request body exceeds " + std::to_string(srv_.config.max_body_bytes) + " bytes"
                                    : "request header too large";
        return reject(make_response(HttpRequest{}, status,
                                    error_body(status, status == 413 ? "PayloadTooLarge" : "HeaderTooLarge", msg)));
      }
      if (http_error && parser_ && parser_->got_some()) {
        return reject(make_response(HttpRequest{}, 400,
                                    error_body(400, "BadRequest", "malformed HTTP request: " + ec.message())));
      }
      return;  // timeout, reset, aborted: the connection just goes away
    }
    auto ex = std::make_shared<Exchange>();
    ex->request = from_beast(parser_->release());
    ex->management = management_;
    ex->start = Clock::now();
    beast::get_lowest_layer(stream_).expires_never();  // the request timer below takes over
    current_ = ex;
    counted_ = true;
    srv_.in_flight.fetch_add(1);

    // Answers are matched to the request by sequence number, not by pointer: a late answer
    // for a request that timed out must never go to the next request on this connection.
    auto self = this->shared_from_this();
    const uint64_t seq = ++seq_;
    // Answers are built (serialised) on the handler pool, then sent from this connection's
    // strand: an I/O thread never formats a large answer.
    auto head = std::make_shared<HttpRequest>();
    head->version = ex->request.version;
    head->keep_alive = ex->request.keep_alive;
    ex->deliver = [self, seq, head](std::function<HttpResponse()> make) {
      asio::post(self->srv_.handlers, [self, seq, head, make = std::move(make)] {
        auto res = std::make_shared<HttpResponse>();
        try {
          *res = make();
        } catch (...) {
          *res = error_response(*head, std::current_exception());
        }
        asio::post(self->stream_.get_executor(), [self, seq, res] {
          if (self->seq_ != seq || !self->current_) return;  // answered already (timeout)
          self->send(std::move(*res));
        });
      });
    };
    ex->deliver_ready = [self, seq](HttpResponse res) {
      auto shared = std::make_shared<HttpResponse>(std::move(res));
      asio::post(self->stream_.get_executor(), [self, seq, shared] {
        if (self->seq_ != seq || !self->current_) return;  // answered already (timeout)
        self->send(std::move(*shared));
      });
    };
    timer_.expires_after(srv_.config.request_timeout);
    timer_.async_wait([self, seq](beast::error_code tec) {
      if (tec || self->seq_ != seq || !self->current_) return;
      if (self->current_->job) self->current_->job->cancelled.store(true);  // rows not yet run are skipped
      self->send(error_response(
          self->current_->request,
          std::make_exception_ptr(HttpError(504, "GatewayTimeout",
                                            "the request did not finish within " +
                                                std::to_string(self->srv_.config.request_timeout.count()) + " ms")),
          self->current_->style));
    });
    // Authorization decides on the path as the router will match it (decoded, empty
    // segments dropped): "/%6dodels" and "//models" are "/models" to both.
    std::string path;
    try {
      path = route_path(ex->request.target);
    } catch (...) {
      return ex->reply(error_response(ex->request, std::current_exception()));
    }
    // One check for every route (serve/auth.h): a route added later is protected by default.
    const AuthDecision decision =
        authorize(srv_.auth, management_, ex->request.method, path, ex->request.header("Authorization"));
    if (decision.status != 0) {
      const char* type = decision.status == 401 ? "Unauthorized" : "Forbidden";
      HttpResponse res =
          error_response(ex->request, std::make_exception_ptr(HttpError(decision.status, type, decision.message)));
      if (decision.status == 401) res.headers.set("WWW-Authenticate", "Bearer");
      return ex->reply(std::move(res));
    }
    // Health probes answer at once on this thread; everything else (JSON, tokenizing,
    // registering) runs on the handler pool, so /ping stays prompt under any request.
    if (is_public_route(path)) return srv_.router.handle(ex);
    asio::post(srv_.handlers, [&srv = srv_, ex] { srv.router.handle(ex); });
  }

  void send(HttpResponse res) {
    // Later answers are dropped; resetting current_ also breaks the session <-> exchange
    // cycle (the exchange's deliver holds the session).
    std::shared_ptr<Exchange> ex = std::move(current_);
    current_.reset();
    timer_.cancel();
    size_t content_length = res.body.size();
    if (ex && ex->request.is_head()) {
      // HEAD: GET's headers, Content-Length included, and no body (RFC 9110 9.3.2); a body
      // here would be read as the start of the next answer on a kept-alive connection.
      res.body.clear();
    }
    if (!hold_answer(res.body.size())) {
      const size_t size = res.body.size();
      HttpRequest head;
      head.version = res.version;
      head.keep_alive = res.keep_alive;
      res = error_response(ex ? ex->request : head,
                           std::make_exception_ptr(HttpError(
                               503, "ServiceUnavailable",
                               "the server holds " + std::to_string(srv_.held_answer_bytes.load()) +
                                   " bytes of answers that clients have not read yet; this " + std::to_string(size) +
                                   "-byte answer would pass the " + std::to_string(srv_.config.max_held_answer_bytes) +
                                   "-byte limit. Retry later",
                               Errc::resource_exhausted)),
                           ex ? ex->style : ErrorStyle::torchserve);
      res.headers.set("Retry-After", "1");
      content_length = res.body.size();
      hold_answer(res.body.size());
    }
    if (ex) {
      const double seconds = std::chrono::duration<double>(Clock::now() - ex->start).count();
      srv_.metrics.observe_request(ex->route, res.status, seconds);
      log::debug("serve", ex->request.method, ' ', ex->request.target, " -> ", res.status, " in ", seconds * 1000,
                 " ms");
    }
    const bool keep = res.keep_alive && !srv_.draining.load();
    res.keep_alive = keep;
    res_ = std::make_shared<BeastResponse>(to_beast(std::move(res), content_length));
    beast::get_lowest_layer(stream_).expires_after(srv_.config.read_timeout);
    http::async_write(stream_, *res_, [self = this->shared_from_this(), keep](beast::error_code ec, size_t) {
      if (self->counted_) {
        self->counted_ = false;
        self->srv_.in_flight.fetch_sub(1);
      }
      self->res_.reset();
      self->release_answer();
      if (ec) return;
      if (keep)
        self->do_read();
      else
        self->do_close();
    });
  }

  // Counts an answer's bytes against the process-wide budget until it is written
  // (release_answer). Answers up to kAlwaysSent bytes always go (errors, probes, most
  // predictions), so a full budget never hides why a request failed; a larger one is
  // refused (false) when it would pass max_held_answer_bytes.
  static constexpr size_t kAlwaysSent = 64 * 1024;
  bool hold_answer(size_t bytes) {
    const int64_t n = int64_t(bytes);
    const int64_t before = srv_.held_answer_bytes.fetch_add(n);
    if (bytes > kAlwaysSent && before + n > int64_t(srv_.config.max_held_answer_bytes)) {
      srv_.held_answer_bytes.fetch_sub(n);
      return false;
    }
    held_answer_bytes_ += n;
    return true;
  }
  void release_answer() {
    srv_.held_answer_bytes.fetch_sub(held_answer_bytes_);
    held_answer_bytes_ = 0;
  }

  // An answer to a request we stop reading (too large, malformed): send it, then read and
  // discard what the client is still sending for a moment, so it sees our answer rather
  // than a reset.
  void reject(HttpResponse res) {
    res.keep_alive = false;
    const size_t content_length = res.body.size();
    res_ = std::make_shared<BeastResponse>(to_beast(std::move(res), content_length));
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
    http::async_write(stream_, *res_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      self->res_.reset();
      if (ec) return;
      if constexpr (is_tls) {
        self->do_close();
      } else {
        beast::error_code ignored;
        beast::get_lowest_layer(self->stream_).socket().shutdown(tcp::socket::shutdown_send, ignored);
        self->drain_.resize(64 * 1024);
        beast::get_lowest_layer(self->stream_).expires_after(std::chrono::seconds(2));
        self->discard();
      }
    });
  }
  void discard() {
    beast::get_lowest_layer(stream_).async_read_some(asio::buffer(drain_),
                                                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                                                       if (!ec) self->discard();
                                                     });
  }

  void do_close() {
    if constexpr (is_tls) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
    } else {
      beast::error_code ec;
      beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_send, ec);
    }
  }

  Server::Impl& srv_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Exchange> current_;
  std::shared_ptr<BeastResponse> res_;
  std::shared_ptr<http::response<http::empty_body>> continue_;
  std::vector<char> drain_;
  asio::steady_timer timer_;
  bool management_ = false;
  bool reading_ = false;
  bool counted_ = false;
  uint64_t id_ = 0;
  uint64_t seq_ = 0;               // requests read on this connection
  int64_t held_answer_bytes_ = 0;  // of the answer being written (hold_answer)
};

void Listener::on_accept(beast::error_code ec, tcp::socket socket) {
  if (!acceptor_.is_open()) return;
  if (ec) {
    // Out of descriptors and the like: back off a little instead of spinning.
    log::warn("serve", "accept failed: ", ec.message());
    retry_.expires_after(std::chrono::milliseconds(50));
    retry_.async_wait([self = shared_from_this()](beast::error_code rec) {
      if (!rec && self->acceptor_.is_open()) self->do_accept();
    });
    return;
  }
  const int open = srv_.connections.load();
  if (open >= srv_.config.max_connections && !srv_.draining.load()) srv_.close_idle_connections();
  if (srv_.draining.load() || open >= srv_.config.max_connections + Server::Impl::kOverCapSlack) {
    boost::system::error_code ignored;
    socket.close(ignored);  // over the cap and no idle one to drop: refuse rather than starve the others
  } else if (srv_.tls) {
    std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(srv_, management_, std::move(socket), *srv_.tls)
        ->start();
  } else {
    std::make_shared<Session<beast::tcp_stream>>(srv_, beast::tcp_stream(std::move(socket)), management_)->start();
  }
  do_accept();
}

}  // namespace rc::serve
