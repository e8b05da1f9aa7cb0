// A global view with a layout smaller than its shape (docs/language.md section 3, tiled global layouts): a
// row-major grid of tiles, each stored in the layout's order. The expected offsets are worked out here by
// hand for thread_major(local(2, 1).spatial(2, 2).local(1, 2)), not taken from the layout library.
#include <gtest/gtest.h>

#include "interp_test_util.h"

namespace tilevm::interp {
namespace {

using testing::int_arg;
using testing::run_text;

// Element (r, c) of a [4, 4] tile of L = local(2, 1).spatial(2, 2).local(1, 2) is held by thread
// t = (r % 2) * 2 + c / 2 in slot i = (r / 2) * 2 + c % 2; thread_major(L) stores it at t * 4 + i.
int64_t in_tile(int64_t r, int64_t c) {
  return ((r % 2) * 2 + c / 2) * 4 + (r / 2) * 2 + c % 2;
}

const char* kProgram = R"(L = local(2, 1).spatial(2, 2).local(1, 2)
def k<1>[threads=1](u8* w_ptr, f32* out_ptr, i32 N, i32 K):
    w = ViewGlobal(w_ptr, dtype=u8, shape=[N, K], layout=thread_major(L))
    o = ViewGlobal(out_ptr, dtype=f32, shape=[12, 12])
    x = LoadGlobal(w, layout=local(12, 12))
    y = Cast(x, dtype=f32)
    StoreGlobal(y, o)
)";

TEST(InterpTiledGlobal, ElementsLieInTheirTilesInTheLayoutsOrder) {
  // N = 10, K = 7: a grid of 3 x 2 tiles of 16 elements; row 10 and column 7 on are outside (read 0).
  const int64_t n = 10, k = 7, cols = 2;
  std::vector<uint8_t> w(3 * cols * 16, 0xff);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      w[static_cast<size_t>((r / 4 * cols + c / 4) * 16 + in_tile(r % 4, c % 4))] =
          static_cast<uint8_t>(r * 16 + c);
  std::vector<uint8_t> out(12 * 12 * 4, 0xee);
  auto result =
      run_text(kProgram, {{"w_ptr", &w}, {"out_ptr", &out}}, {{"N", int_arg(n)}, {"K", int_arg(k)}});
  ASSERT_TRUE(result.ok) << result.errors;
  const std::vector<double> got = testing::unpack_values(DataType::f32(), out, 12 * 12);
  for (int64_t r = 0; r < 12; ++r)
    for (int64_t c = 0; c < 12; ++c)
      EXPECT_EQ(got[static_cast<size_t>(r * 12 + c)], r < n && c < k ? static_cast<double>(r * 16 + c) : 0.0)
          << "element (" << r << ", " << c << ")";
}

TEST(InterpTiledGlobal, ABufferShortOfTheGridIsAnError) {
  // The last tile (2, 1) would start at element 80: a buffer of 80 elements holds only 5 of the 6 tiles.
  std::vector<uint8_t> w(80, 0), out(12 * 12 * 4, 0);
  auto result =
      run_text(kProgram, {{"w_ptr", &w}, {"out_ptr", &out}}, {{"N", int_arg(10)}, {"K", int_arg(7)}});
  EXPECT_FALSE(result.ok);
  EXPECT_NE(
      result.errors.find("outside its buffer of 80 u8 elements (view shape [10, 7] in tiles of a layout "
                         "of shape [4, 4])"),
      std::string::npos)
      << result.errors;
}

}  // namespace
}  // namespace tilevm::interp
