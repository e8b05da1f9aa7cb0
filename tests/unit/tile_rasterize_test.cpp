// Rasterize (TileLang's use_swizzle): the tile each block takes, run on the interpreter after lowering,
// against the grouped order computed here, and every tile taken exactly once, for groups that divide the
// rows and groups that leave a shorter last group.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/transform/lower.h"

namespace tilevm::tile {
namespace {

// Block pid of an R x C grid of tiles writes its (bm, bn) into row pid of out: bm in columns 0-31, bn in
// 32-63 (one value per thread).
std::string program_text(int r, int c, int g) {
  return fmt::format(
      "def raster<{0} * {1}>[threads=32](i32* out_ptr):\n"
      "    pid = BlockIndices()\n"
      "    bm, bn = Rasterize(pid, rows={0}, cols={1}, group={2})\n"
      "    out = ViewGlobal(out_ptr, dtype=i32, shape=[{0} * {1}, 64])\n"
      "    a = AllocateRegister(i32, layout=spatial(32), init=bm)\n"
      "    StoreGlobal(a, out[pid, 0:])\n"
      "    b = AllocateRegister(i32, layout=spatial(32), init=bn)\n"
      "    StoreGlobal(b, out[pid, 32:])\n",
      r, c, g);
}

// The grouped order, written out the long way: groups of g rows of tiles; in a group, column by column, each
// column's rows top to bottom.
std::vector<std::pair<int, int>> grouped_order(int rows, int cols, int g) {
  std::vector<std::pair<int, int>> order;
  for (int first = 0; first < rows; first += g)
    for (int col = 0; col < cols; ++col)
      for (int row = first; row < std::min(first + g, rows); ++row) order.emplace_back(row, col);
  return order;
}

TEST(TileRasterize, EveryTileOnceInGroupedOrder) {
  for (const auto& [r, c, g] : std::vector<std::tuple<int, int, int>>{
           {4, 3, 2}, {5, 3, 2}, {7, 4, 3}, {3, 5, 8}, {6, 2, 1}, {1, 6, 4}}) {
    SCOPED_TRACE(fmt::format("rows {}, cols {}, group {}", r, c, g));
    const std::string text = program_text(r, c, g);
    Diagnostics diags;
    std::optional<ir::Program> p = ir::parse_program(text, diags);
    if (p) p = transform::lower(*std::move(p), diags, {.verify_each_pass = true});
    ASSERT_TRUE(p) << diags.render("raster.tile", text);
    std::vector<uint8_t> out(static_cast<size_t>(r * c * 64 * 4), 0xff);  // -1 everywhere: poisoned
    interp::Arguments args;
    args.buffers["out_ptr"] = &out;
    ASSERT_TRUE(interp::run_program(*p, args, diags)) << diags.render("raster.tile", text);
    auto at = [&](int pid, int col) {
      int32_t v;
      std::memcpy(&v, &out[static_cast<size_t>((pid * 64 + col) * 4)], 4);
      return v;
    };
    const std::vector<std::pair<int, int>> want = grouped_order(r, c, g);
    std::set<std::pair<int, int>> taken;
    for (int pid = 0; pid < r * c; ++pid) {
      const std::pair<int, int> got{at(pid, 0), at(pid, 32)};
      EXPECT_EQ(got, want[static_cast<size_t>(pid)]) << "block " << pid;
      EXPECT_EQ(at(pid, 31), got.first);
      EXPECT_EQ(at(pid, 63), got.second);
      taken.insert(got);
    }
    EXPECT_EQ(taken.size(), static_cast<size_t>(r * c)) << "a tile taken twice";
  }
}

}  // namespace
}  // namespace tilevm::tile
