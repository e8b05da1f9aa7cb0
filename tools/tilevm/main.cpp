// tilevm: the command-line tool. Exit status: 0 on success, 1 on an error in the input (diagnostics on
// stderr), 2 on bad command-line use.
#include <cstdio>
#include <iostream>
#include <new>
#include <string>

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
  tilevm::cli::add_recommend_command(app);
  tilevm::cli::add_superopt_command(app);
  // CLI11 reports a misspelled subcommand as "A subcommand is required"; name it and the valid ones.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->check_name(argv[1]);
    }
    if (!known) {
      std::cerr << "tilevm: unknown subcommand '" << argv[1] << "' (one of: " << names << ")\n";
      return 2;
    }
  }
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
  } catch (const std::bad_alloc&) {
    // The input asked for more memory than the host has, past every size check: still a located exit.
    std::cout.flush();
    std::cerr << "error: out of host memory\n";
    return 1;
  } catch (const tilevm::InternalError& e) {
    std::cout.flush();
    std::cerr << e.what() << "\n";
    return 3;
  }
  return 0;
}
