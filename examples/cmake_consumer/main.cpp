// A program outside the tilevm tree, built against an installed tilevm (CMakeLists.txt beside it): parses a
// .tile kernel, lowers it, runs it on the CPU interpreter and checks the result.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/transform/lower.h"

int main() {
  const char* source = R"(
def scale<1>(f32* x_ptr, f32 s):
    gx = ViewGlobal(x_ptr, dtype=f32, shape=[8])
    x = LoadGlobal(gx, layout=spatial(8))
    y = Mul(x, s)
    StoreGlobal(y, gx)
)";
  tilevm::Diagnostics diags;
  std::optional<tilevm::ir::Program> program = tilevm::ir::parse_program(source, diags);
  std::optional<tilevm::ir::Program> lowered;
  if (program && !diags.has_errors()) lowered = tilevm::transform::lower(*program, diags);
  if (!lowered) {
    std::fputs(diags.render("scale.tile", source).c_str(), stderr);
    return 1;
  }
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<std::uint8_t> bytes(x.size() * sizeof(float));
  std::memcpy(bytes.data(), x.data(), bytes.size());
  tilevm::interp::Arguments args;
  args.scalars["s"] = {.is_float = true, .f = 0.5};
  args.buffers["x_ptr"] = &bytes;
  if (!tilevm::interp::run_program(*lowered, args, diags)) {
    std::fputs(diags.render("scale.tile", source).c_str(), stderr);
    return 1;
  }
  std::memcpy(x.data(), bytes.data(), bytes.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != 0.5f * static_cast<float>(i + 1)) {
      std::fprintf(stderr, "x[%zu] = %g, expected %g\n", i, x[i], 0.5 * static_cast<double>(i + 1));
      return 1;
    }
  }
  std::puts("scale on the interpreter: ok");
  return 0;
}
