#include "tilevm/support/error.h"

namespace tilevm {

void internal_failure(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("internal error at {}:{}: {} ({})", file, line, message, condition));
}

}  // namespace tilevm
