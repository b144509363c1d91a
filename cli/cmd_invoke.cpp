// roberta invoke: call a running endpoint (roberta serve, or any SageMaker/TorchServe
// compatible one) and print the JSON answer. Exit code 3 with the server's message on
// any HTTP error or when the server cannot be reached.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/check.h"
#include "core/json_depth.h"
#include "net/http.h"
#include "text_input.h"

namespace rc::cli {
namespace {

// Answers are JSON for a batch of texts: megabytes at most. A larger one is an error, not
// memory.
constexpr size_t kMaxAnswerBytes = size_t(64) << 20;

}  // namespace

void add_invoke_command(CLI::App& app) {
  struct Opts {
    std::string url, model, version, input, token, accept = "application/json";
    std::vector<std::string> texts;
    bool all_scores = false, insecure = false;
    double timeout = 60;
  };
  auto o = std::make_shared<Opts>();
  // The option table: alike in shape to every command's, on purpose (see commands.h).
  auto* cmd = app.add_subcommand("invoke", "Send texts to a serving endpoint and print its JSON answer");
  cmd->add_option("--url", o->url,
                  "Endpoint, e.g. http://127.0.0.1:8080 (then /invocations, or /predictions/MODEL with "
                  "--model) or a full URL with its path")
      ->required();
  cmd->add_option("--model", o->model, "Model name: POST /predictions/NAME");
  cmd->add_option("--version", o->version, "Model version: POST /predictions/NAME/VERSION");
  cmd->add_option("texts", o->texts, "Texts (default: --input, else one per stdin line)");
  cmd->add_option("--input", o->input, "A .txt file (one text per line) or .jsonl ({\"text\": ...} per line)");
  cmd->add_flag("--all-scores", o->all_scores, "Every label's score (return_all_scores)");
  cmd->add_option("--accept", o->accept, "application/json or text/csv");
  cmd->add_option("--token", o->token, "Bearer token (default: $RC_AUTH_TOKEN when set)");
  cmd->add_flag("--insecure", o->insecure, "HTTPS without certificate verification (self-signed test servers)");
  cmd->add_option("--timeout", o->timeout, "Seconds to wait for the answer")->check(CLI::Range(0.001, 3600.0));
  cmd->callback([o] {
    RC_CHECK(o->version.empty() || !o->model.empty(), Errc::invalid_argument, "--version needs --model");
    const std::vector<std::string> texts = gather_texts(o->texts, o->input);
    RC_CHECK(!texts.empty(), Errc::invalid_argument, "no texts to send");
    RC_CHECK(net::is_http_url(o->url) && !net::origin_of(o->url).empty(), Errc::invalid_argument, "URL '", o->url,
             "' is not an http:// or https:// URL\nHINT: e.g. http://127.0.0.1:8080");
    std::string url = o->url;
    while (!url.empty() && url.back() == '/') url.pop_back();
    const bool bare_origin = url.find('/', url.find("://") + 3) == std::string::npos;  // no path
    if (!o->model.empty())
      url += "/predictions/" + o->model + (o->version.empty() ? "" : "/" + o->version);
    else if (bare_origin)
      url += "/invocations";

    nlohmann::json body;
    body["inputs"] = texts.size() == 1 ? nlohmann::json(texts[0]) : nlohmann::json(texts);
    if (o->all_scores) body["parameters"] = {{"return_all_scores", true}};
    net::Request call;
    call.method = "POST";
    call.url = url;
    call.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    call.headers = {{"Content-Type", "application/json"}, {"Accept", o->accept}};
    const char* env_token = std::getenv("RC_AUTH_TOKEN");
    const std::string token = !o->token.empty() ? o->token : env_token ? env_token : "";
    if (!token.empty()) call.headers.emplace_back("Authorization", "Bearer " + token);
    call.total_timeout_ms = long(o->timeout * 1000);
    call.follow_redirects = false;  // an endpoint answers itself; a redirect is reported
    call.verify_tls = !o->insecure;
    const net::Response r = net::perform(call, {}, kMaxAnswerBytes);
    RC_CHECK(r.status != 0, Errc::io, "no answer from ", url, ": ", r.error,
             "\nHINT: is the server running (roberta serve) and the URL right?");
    RC_CHECK(!r.body_truncated, Errc::io, "the answer from ", url, " is larger than ", kMaxAnswerBytes >> 20, " MiB");
    if (r.status >= 400) {
      std::string message = r.body;
      nlohmann::json j =
          json_nesting_depth(r.body) > kMaxJsonDepth ? nlohmann::json() : nlohmann::json::parse(r.body, nullptr, false);
      if (j.is_object() && j.contains("message") && j["message"].is_string()) message = j["message"].get<std::string>();
      RC_THROW(Errc::io, "HTTP ", r.status, " from ", url, ": ", message);
    }
    std::fwrite(r.body.data(), 1, r.body.size(), stdout);
    if (r.body.empty() || r.body.back() != '\n') std::fputc('\n', stdout);
    std::fflush(stdout);
  });
}

}  // namespace rc::cli
