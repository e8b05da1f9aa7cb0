// PLACEHOLDER (being written): `tilevm bench`.
#include "commands.h"
#include "tilevm/support/error.h"

namespace tilevm::cli {

void add_bench_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "(not yet available)");
  cmd->callback([] { throw Error("tilevm bench is not built yet"); });
}

}  // namespace tilevm::cli
