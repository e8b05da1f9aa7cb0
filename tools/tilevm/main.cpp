// tilevm: the command-line tool. Exit status: 0 on success, 1 on an error in the input (diagnostics on
// stderr), 2 on bad command-line use.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "tilevm/support/error.h"

int main(int argc, char** argv) {
  CLI::App app{"tilevm: a compiler and runtime for tile-level GPU programs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tilevm ") + TILEVM_VERSION);
  tilevm::cli::add_dtype_command(app);
  tilevm::cli::add_layout_command(app);
  tilevm::cli::add_check_command(app);
  tilevm::cli::add_print_command(app);
  tilevm::cli::add_emit_command(app);
  tilevm::cli::add_run_command(app);
  tilevm::cli::add_qmatmul_command(app);
  tilevm::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const tilevm::cli::ExitStatus& e) {
    return e.code;
  } catch (const tilevm::cli::UsageError& e) {
    std::cerr << "tilevm: " << e.what() << "\n";
    return 2;
  } catch (const tilevm::Error& e) {
    std::cout.flush();
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const tilevm::InternalError& e) {
    std::cout.flush();
    std::cerr << e.what() << "\n";
    return 3;
  }
  return 0;
}
