// roberta eval — placeholder until its issue lands; says so instead of pretending.
#include "commands.h"
#include "core/check.h"

namespace rc::cli {
void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "(not available yet in this build)");
  cmd->callback([] { RC_THROW(Errc::unsupported, "'roberta eval' is not implemented yet"); });
}
}  // namespace rc::cli
