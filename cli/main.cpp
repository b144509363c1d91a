// roberta: the command-line entry point. The only place (with the server's handlers)
// that catches rc::Error: one line on stderr (plus a hint when there is one) and an exit
// code from the error's kind.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <string_view>
#include <thread>

#include "commands.h"
#include "roberta/runtime.h"
#include "roberta/error.h"
#include "roberta/version.h"

namespace rc::cli {

// Past a few threads per hardware thread OpenMP only adds contention, and libgomp dies
// creating 100,000 of them (issue #10 finding 6): refuse such counts as usage errors.
int max_threads() { return std::max(64, 4 * int(std::thread::hardware_concurrency())); }

void add_threads_option(CLI::App& cmd, int& threads) {
  cmd.add_option("--threads", threads,
                 "Compute threads (one OpenMP pool for everything). Default: the physical cores; more "
                 "than that only adds contention. At most " +
                     std::to_string(max_threads()) + " here")
      ->check(CLI::Range(0, max_threads()));
}

void apply_threads(int threads) { rc::set_num_threads(threads); }

void add_device_option(CLI::App& cmd, std::string& device) {
  cmd.add_option("--device", device,
                 "Where the model runs: cpu, cuda (device 0), cuda:N, or auto (CUDA when a device is "
                 "visible, else cpu). No CUDA device for cuda/cuda:N: exit code 4.")
      ->capture_default_str();
}

}  // namespace rc::cli

namespace {

// An error as one line of plain text: messages quote bytes from users' files (a merges.txt
// line, a config's model_type), and an ESC there would reach the terminal as a control
// sequence (OSC: retitle the window, CSI: clear it), a newline would forge a second line.
// Control bytes become \xNN; UTF-8 text passes as it is.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b != 0x7f) {
      out += c;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

void print_error(std::string_view message, std::string_view hint = {}) {
  std::fprintf(stderr, "roberta: error: %s\n", printable(message).c_str());
  if (!hint.empty()) std::fprintf(stderr, "hint: %s\n", printable(hint).c_str());
}

int exit_code_for(rc::Errc errc) {
  switch (errc) {
    case rc::Errc::invalid_argument:
      return 2;
    case rc::Errc::not_found:
    case rc::Errc::io:
    case rc::Errc::format:
    case rc::Errc::unsupported:
      return 3;
    case rc::Errc::device:
      return 4;
    default:
      return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"roberta.cpp: fine-tune and serve RoBERTa text classifiers (Hugging Face checkpoints)"};
  app.set_version_flag("--version", std::string("roberta ") + rc::version_string);
  app.require_subcommand(1);
  // Registered in the order --help lists them.
  for (auto* add : {rc::cli::add_predict_command, rc::cli::add_tokenize_command, rc::cli::add_inspect_command,
                    rc::cli::add_init_command, rc::cli::add_train_command, rc::cli::add_pretrain_command,
                    rc::cli::add_fill_mask_command, rc::cli::add_embed_command, rc::cli::add_rerank_command,
                    rc::cli::add_eval_command, rc::cli::add_convert_command, rc::cli::add_package_command,
                    rc::cli::add_serve_command, rc::cli::add_invoke_command, rc::cli::add_bench_command})
    add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the usage error
    return code == 0 ? 0 : 2;
  } catch (const rc::Error& e) {
    print_error(e.what(), e.hint());
    return exit_code_for(e.errc());
  } catch (const std::bad_alloc&) {
    print_error("out of memory", "use a smaller --batch-size or --max-length");
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A file-system call that throws (a symlink loop, EACCES on a folder) is about the
    // user's files, as Errc::io is: bad input, not a crash.
    print_error(e.what());
    return exit_code_for(rc::Errc::io);
  } catch (const std::exception& e) {
    print_error(e.what());
    return 1;
  }
  return 0;
}
