// roberta fill-mask — HF's fill-mask pipeline on a RobertaForMaskedLM checkpoint
// (include/roberta/fill_mask.h). One JSON line per text: a list of candidates for one
// <mask>, a list of such lists for several, as the pipeline returns.
#include <cstdio>

#include "commands.h"
#include "core/check.h"
#include "io/text_lines.h"
#include "roberta/fill_mask.h"
#include "text_input.h"

namespace rc::cli {

void add_fill_mask_command(CLI::App& app) {
  struct Flags {
    std::string model;
    std::string precision = "fp32";
    std::vector<std::string> texts, targets;
    int top_k = 5;
    int threads = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("fill-mask", "Predict the tokens behind each <mask> (HF fill-mask pipeline)");
  cmd->add_option("--model", f->model, "RobertaForMaskedLM folder (`roberta pretrain` output)")->required();
  cmd->add_option("texts", f->texts, "Texts with <mask> (default: one per stdin line)");
  cmd->add_option("--top-k", f->top_k, "Candidates per <mask>")->capture_default_str();
  cmd->add_option("--targets", f->targets,
                  "Only these tokens are candidates (the pipeline's targets), e.g. --targets Ġhappy,Ġsad; a word "
                  "not in the vocabulary stands for its first token")
      ->delimiter(',')
      ->allow_extra_args(false);  // one comma-separated value: the texts after it stay texts
  // predict's flag and wording; the default stays fp32 here: fill-mask answers with
  // transformers' own scores unless asked otherwise (a debugging aid, not a throughput path).
  cmd->add_option("--precision", f->precision,
                  "fp32 (exact parity with transformers), bf16 (AVX512-BF16/AMX: several times faster; elsewhere "
                  "it runs fp32) or int8 (fastest): the encoder as `predict` runs it, the lm_head fp32 in each")
      ->capture_default_str();
  add_threads_option(*cmd, f->threads);
  cmd->callback([f] {
    apply_threads(f->threads);
    const auto fm = FillMasker::load(f->model, parse_precision(f->precision));
    auto run = [&](const std::string& text) {
      std::printf("%s\n", fm->fill_json({text}, f->top_k, true, 0, f->targets).c_str());
      std::fflush(stdout);
    };
    if (!f->texts.empty()) {
      for (const auto& t : f->texts) run(t);
    } else {
      // Each answer as soon as its line is read (interactive use), lines split and cleaned
      // as every text input is (io/text_lines.h).
      io::TextLineStream in(0, "stdin", kMaxStdinBytes);
      while (auto line = in.next()) run(*line);
    }
  });
}

}  // namespace rc::cli
