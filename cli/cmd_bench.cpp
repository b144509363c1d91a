// roberta bench — placeholder until its issue lands; says so instead of pretending.
#include "commands.h"
#include "core/check.h"

namespace rc::cli {
void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "(not available yet in this build)");
  cmd->callback([] { RC_THROW(Errc::unsupported, "'roberta bench' is not implemented yet"); });
}
}  // namespace rc::cli
