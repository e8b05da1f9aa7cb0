// Fuzz target: reading .npy files (exec/npy.h, `tilevm run --in`).
//
// Located means: every error is a tilevm::Error that starts with the file's name (`input.npy: ...`), as
// `tilevm run` prints it. An array that parses must serialize to bytes that parse back to the same array.
#include <exception>
#include <string>

#include "fuzz_target.h"
#include "tilevm/exec/npy.h"
#include "tilevm/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilevm;
  const std::string_view name = "input.npy";
  npy::Array array;
  try {
    array = npy::parse({data, size}, name);
  } catch (const Error& e) {
    if (!std::string_view(e.what()).starts_with(std::string(name) + ": "))
      fuzz::failure("a .npy error that does not name the file", e.what());
    return 0;
  } catch (const std::exception& e) {
    fuzz::failure("npy::parse threw something other than tilevm::Error", e.what());
  }
  try {
    const std::vector<uint8_t> bytes = npy::serialize(array);
    const npy::Array again = npy::parse(bytes, "serialized.npy");
    if (again.descr != array.descr || again.shape != array.shape || again.data != array.data)
      fuzz::failure("parse(serialize(a)) != a", array.descr);
  } catch (const std::exception& e) {
    fuzz::failure("serializing a parsed array or reading it back threw", e.what());
  }
  return 0;
}
