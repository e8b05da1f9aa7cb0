// The verifier's cost does not grow with the number of elements of a tile where the question can be
// answered on the layouts' modes or factors (issue 18: `check` and `print` once ran for tens of seconds on
// such programs). The programs here took 4 to 19 s of CPU at 842e291; the bound of 2 s leaves a loaded
// machine room while still failing on that behavior. Dot's SIMT check was bounded by skipping large tiles
// instead, which golden/check/error_large_tiles shows is no longer so.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/transform/lower.h"

namespace tilevm {
namespace {

// Parses, verifies, lowers and prints `source` (what `tilevm check` and `print` do); returns the seconds it
// took and fails the test on any diagnostic.
double check_and_print(const std::string& source) {
  const auto start = std::chrono::steady_clock::now();
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(source, diags);
  if (program) program = transform::lower(*program, diags);
  EXPECT_TRUE(program && !diags.has_errors()) << diags.render("test.tile", source);
  if (program) ir::print_program(*program);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Two copies of one swizzled layout of 2^22 elements (one named, one written out): their equality was
// decided element by element, in the verifier and in the printer's search for a layout's name.
TEST(IrVerifierCost, SwizzledLayoutEqualityIsDecidedOnTheFactors) {
  EXPECT_LT(check_and_print(R"(
layout_s = swizzle(local(8, 8), dim=1).local(256, 256)

def f<1>(f32* x_ptr):
    a = AllocateRegister(f32, layout=layout_s, init=0.0)
    b = AllocateRegister(f32, layout=swizzle(local(8, 8), dim=1).local(256, 256), init=0.0)
    c = Add(a, b)
)"),
            2.0);
}

// An operand that gives each thread the same elements in another slot order, and a broadcast one: which
// thread holds what was enumerated over all 2^24 (thread, element) pairs of each.
TEST(IrVerifierCost, BroadcastChecksAreDecidedOnTheModes) {
  EXPECT_LT(check_and_print(R"(
def f<1>[threads=4]():
    x = AllocateRegister(f32, layout=spatial(2, 2).local(2048, 2048), init=1.0)
    y = AllocateRegister(f32, layout=spatial(2, 2).column_local(2048, 2048), init=1.0)
    row = AllocateRegister(f32, layout=replicate(2).spatial(1, 2).local(1, 2048), init=1.0)
    z = Add(x, y)
    w = Mul(x, row)
)"),
            2.0);
}

// A Dot of tiles of the mma fragments, [2048, 4096] @ [4096, 4096]: whether tensor cores apply walked every
// (k step, result atom, warp), 2^21 of them with an owners() search each (19 s of CPU at 842e291).
TEST(IrVerifierCost, TensorCoreSelectionIsDecidedOnTheModes) {
  EXPECT_LT(check_and_print(R"(
def f<1>[threads=32]():
    a = AllocateRegister(f16, layout=local(128, 256).column_local(2, 2).spatial(8, 4).local(1, 2), init=1.0)
    b = AllocateRegister(f16, layout=local(256, 512).local(2, 1).column_spatial(4, 8).local(2, 1), init=1.0)
    c = AllocateRegister(f32, layout=local(128, 512).local(2, 1).spatial(8, 4).local(1, 2), init=0.0)
    d = Dot(a, b, c)
)"),
            2.0);
}

}  // namespace
}  // namespace tilevm
