// Option parsing shared by the subcommands (commands.h).
#include <fmt/format.h>

#include "commands.h"
#include "tilevm/support/error.h"

namespace tilevm::cli {

DataType parse_type_option(const std::string& option, const std::string& text) {
  try {
    return DataType::parse(text);
  } catch (const Error& e) {
    throw UsageError(fmt::format("{} '{}': {}", option, text, e.what()));
  }
}

}  // namespace tilevm::cli
