// Each `roberta <command>` lives in cli/cmd_<command>.cpp and registers itself on the
// CLI11 app here. A command's callback throws rc::Error on failure; main() maps it to an
// exit code (0 ok, 2 usage, 3 input/format/io, 4 device, 1 anything else).
//
// Each command's option table is its own. The tables are alike in shape (one add_option a
// flag; `duplicates` pairs them) but not duplicates: a flag's help text is written for its
// command (--max-length truncates texts in predict, sets serving defaults in package). A flag
// with one meaning and one text everywhere goes through a shared add_*_option below.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace rc::cli {

// One registration function a command (declarations alike in shape by nature; main()
// calls them in --help order).
void add_predict_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_init_command(CLI::App& app);
void add_package_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_invoke_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_pretrain_command(CLI::App& app);
void add_fill_mask_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_embed_command(CLI::App& app);
void add_rerank_command(CLI::App& app);

// --threads N for any command: sets the one OpenMP pool (0 = physical cores).
void add_threads_option(CLI::App& cmd, int& threads);
void apply_threads(int threads);

// --device cpu|cuda|cuda:N|auto for train, eval, predict, serve and bench (default cpu).
// Resolve it with rc::resolve_device_choice (device/device_choice.h): no CUDA device → exit 4.
void add_device_option(CLI::App& cmd, std::string& device);

}  // namespace rc::cli
