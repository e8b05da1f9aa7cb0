// PLACEHOLDER (being written): `tilevm qmatmul`.
#include "commands.h"
#include "tilevm/support/error.h"

namespace tilevm::cli {

void add_qmatmul_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("qmatmul", "(not yet available)");
  cmd->callback([] { throw Error("tilevm qmatmul is not built yet"); });
}

}  // namespace tilevm::cli
