// roberta invoke — placeholder until its issue lands; says so instead of pretending.
#include "commands.h"
#include "core/check.h"

namespace rc::cli {
void add_invoke_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("invoke", "(not available yet in this build)");
  cmd->callback([] { RC_THROW(Errc::unsupported, "'roberta invoke' is not implemented yet"); });
}
}  // namespace rc::cli
