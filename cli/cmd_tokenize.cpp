// roberta tokenize — placeholder until its issue lands; says so instead of pretending.
#include "commands.h"
#include "core/check.h"

namespace rc::cli {
void add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "(not available yet in this build)");
  cmd->callback([] { RC_THROW(Errc::unsupported, "'roberta tokenize' is not implemented yet"); });
}
}  // namespace rc::cli
