// layout::TiledStorage (tiled_storage.h), the host's half of a tiled global view: offsets worked out by
// hand, and bytes it packs read back by the interpreter through ViewGlobal(..., layout=L) for several
// layouts and ragged shapes, so that host and interpreter agree on the order.
#include <gtest/gtest.h>

#include <random>

#include "expect_error.h"
#include "interp_test_util.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/layout/tiled_storage.h"
#include "tilevm/type/packing.h"

namespace tilevm::layout {
namespace {

TEST(LayoutTiledStorage, RowMajorTilesOfTheHeaderExample) {
  const TiledStorage s(parse_layout("local(2, 2)"), {3, 4});
  EXPECT_EQ(s.grid(), (Index{2, 2}));
  EXPECT_EQ(s.size(), 16);
  const int64_t want[3][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}};
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(s.offset({r, c}), want[r][c]) << r << ", " << c;
  // u8 codes r * 16 + c at those offsets; the padding (offsets 10, 11, 14, 15) is 0.
  std::vector<uint64_t> codes;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 4; ++c) codes.push_back(static_cast<uint64_t>(r * 16 + c));
  const std::vector<uint8_t> bytes = s.pack(8, codes);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0, 1, 16, 17, 2, 3, 18, 19, 32, 33, 0, 0, 34, 35, 0, 0}));
}

TEST(LayoutTiledStorage, ThreadMajorOffsetsWorkedOutByHand) {
  // As interp_tiled_global_test.cpp: element (r, c) of a 4 x 4 tile of L = local(2, 1).spatial(2, 2).local(1,
  // 2) is thread (r % 2) * 2 + c / 2's slot (r / 2) * 2 + c % 2, stored at t * 4 + i; a [10, 7] tensor is a
  // grid of 3 x 2 tiles.
  const TiledStorage s(parse_layout("thread_major(local(2, 1).spatial(2, 2).local(1, 2))"), {10, 7});
  EXPECT_EQ(s.size(), 3 * 2 * 16);
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t c = 0; c < 7; ++c) {
      const int64_t in_tile = ((r % 4 % 2) * 2 + c % 4 / 2) * 4 + (r % 4 / 2) * 2 + c % 4 % 2;
      EXPECT_EQ(s.offset({r, c}), (r / 4 * 2 + c / 4) * 16 + in_tile) << r << ", " << c;
    }
}

// The interpreter loads a [N, K] tensor of u4 through a tiled view from the bytes pack() wrote and stores it
// row-major: the codes come back, for every layout and shape here.
TEST(LayoutTiledStorage, TheInterpreterReadsWhatPackWrote) {
  const char* layouts[] = {
      "thread_major(local(2, 1).spatial(2, 2).local(1, 2))",
      "thread_major(spatial(2, 1).local(1, 4).spatial(2, 4).local(1, 2), chunk=4)",
      "swizzle(local(4, 8), dim=1)",
      "local(2, 8)",
  };
  std::mt19937_64 rng(11);
  for (const char* text : layouts) {
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{8, 16}, {9, 21}, {3, 5}}) {
      SCOPED_TRACE(fmt::format("{} over [{}, {}]", text, n, k));
      const TiledStorage s(parse_layout(text), {n, k});
      std::vector<uint64_t> codes(static_cast<size_t>(n * k));
      for (uint64_t& c : codes) c = rng() % 16;
      std::vector<uint8_t> w = s.pack(4, codes);
      std::vector<uint8_t> out(static_cast<size_t>(packed_bytes(4, n * k)), 0xff);
      const std::string program = fmt::format(R"(L = {}
def k<1>[threads=1](u4* w_ptr, u4* out_ptr):
    w = ViewGlobal(w_ptr, dtype=u4, shape=[{}, {}], layout=L)
    o = ViewGlobal(out_ptr, dtype=u4, shape=[{}, {}])
    x = LoadGlobal(w, layout=local({}, {}))
    StoreGlobal(x, o)
)",
                                              text, n, k, n, k, n, k);
      auto result = interp::testing::run_text(program, {{"w_ptr", &w}, {"out_ptr", &out}});
      ASSERT_TRUE(result.ok) << result.errors;
      EXPECT_EQ(unpack(4, out, n * k), codes);
    }
  }
}

// unpack (tilevm run --pack's --out) reads back what pack wrote, for sub-byte and wide codes, ragged shapes
// and a thread-major order; the padding is not read.
TEST(LayoutTiledStorage, UnpackReadsBackWhatPackWrote) {
  std::mt19937_64 rng(7);
  for (const char* text :
       {"local(2, 2)", "thread_major(spatial(2, 1).local(1, 4).spatial(2, 4).local(1, 2), chunk=4)"})
    for (int bits : {1, 3, 4, 8, 16, 64})
      for (const Index& shape : {Index{4, 16}, Index{5, 19}, Index{1, 1}}) {
        const TiledStorage s(parse_layout(text), shape);
        std::vector<uint64_t> codes(static_cast<size_t>(s.elements()));
        for (uint64_t& c : codes) c = bits == 64 ? rng() : rng() % (uint64_t{1} << bits);
        std::vector<uint8_t> bytes = s.pack(bits, codes);
        EXPECT_EQ(s.unpack(bits, bytes), codes) << text << " " << bits << " bits";
      }
  const TiledStorage s(parse_layout("local(2, 2)"), {3, 4});
  expect_error([&] { (void)s.unpack(4, std::vector<uint8_t>(7)); },
               "7 bytes given for a tiled tensor of shape [3, 4] that takes 8 (4 tiles of 4 4-bit elements)");
}

TEST(LayoutTiledStorage, BadLayoutsShapesAndCodesAreErrors) {
  expect_error(
      [&] {
        (void)TiledStorage(parse_layout("spatial(2, 2)"), {4, 4});
      },
      "a tiled storage layout must have one thread and no replication, but spatial(2, 2) has 4 threads");
  expect_error([&] { (void)TiledStorage(parse_layout("local(2, 2)"), {4}); },
               "the tile layout local(2, 2) has rank 2, the tensor's shape [4] rank 1");
  expect_error(
      [&] {
        (void)TiledStorage(parse_layout("local(2, 2)"), {4, 0});
      },
      "the tensor's shape [4, 0] has an extent below 1");
  const TiledStorage s(parse_layout("local(2, 2)"), {2, 2});
  expect_error(
      [&] {
        (void)s.pack(4, std::vector<uint64_t>{1, 2, 3});
      },
      "3 codes given for a tensor of shape [2, 2] (4 elements)");
  expect_error(
      [&] {
        (void)s.pack(4, std::vector<uint64_t>{1, 2, 16, 3});
      },
      "code 16 of element [1, 0] does not fit in 4 bits");
}

}  // namespace
}  // namespace tilevm::layout
