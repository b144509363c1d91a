// roberta serve — placeholder until its issue lands; says so instead of pretending.
#include "commands.h"
#include "core/check.h"

namespace rc::cli {
void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "(not available yet in this build)");
  cmd->callback([] { RC_THROW(Errc::unsupported, "'roberta serve' is not implemented yet"); });
}
}  // namespace rc::cli
