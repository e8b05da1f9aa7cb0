#include "tilevm/target/wgmma.h"

#include "layout_memo.h"

#include <string>

#include <fmt/format.h>

#include "tilevm/support/error.h"
#include "tilevm/target/limits.h"

namespace tilevm::target {

using layout::compose;
using layout::Layout;
using layout::local;
using layout::spatial;

Layout wgmma_accumulator(int64_t n) {
  return compose(spatial({4, 1}), local({1, n / 8}), local({2, 1}), spatial({8, 4}), local({1, 2}));
}

std::optional<WgmmaTiling> wgmma_tiling(DataType ab, DataType c, const Layout& c_layout, std::string* why) {
  const bool types = (ab == DataType::f16() && (c == DataType::f32() || c == DataType::f16())) ||
                     (ab == DataType::bf16() && c == DataType::f32());
  if (!types) {
    *why =
        fmt::format("wgmma takes f16 into f32 or f16, or bf16 into f32, not {} into {}", ab.name(), c.name());
    return std::nullopt;
  }
  if (c_layout.rank() != 2 || c_layout.shape()[0] % 64 != 0 || c_layout.shape()[1] % 8 != 0) {
    *why = "the accumulator must be a [64 m, 8 n] tile";
    return std::nullopt;
  }
  const int64_t cols = c_layout.shape()[1];
  for (int64_t n = std::min<int64_t>(256, cols); n >= 8; n -= 8) {
    if (cols % n != 0) continue;
    try {
      return WgmmaTiling{n, layout::divide(c_layout, wgmma_accumulator(n))};
    } catch (const Error&) {
    }
  }
  *why =
      "the accumulator layout is no arrangement of wgmma fragments (spatial(4, 1).local(1, N / 8)"
      ".local(2, 1).spatial(8, 4).local(1, 2) per warpgroup and 64 x N block)";
  return std::nullopt;
}

Layout wgmma_register_a() {
  return compose(spatial({4, 1}), layout::column_local({2, 2}), spatial({8, 4}), local({1, 2}));
}

std::optional<std::vector<int64_t>> wgmma_register_a_slots(const Layout& a, const WgmmaTiling& c,
                                                           std::string* why) {
  Layout qa;
  try {
    qa = layout::divide(a, wgmma_register_a());
  } catch (const Error&) {
    *why =
        "a's register layout is no arrangement of wgmma's A fragment (spatial(4, 1).column_local(2, 2)"
        ".spatial(8, 4).local(1, 2) per warpgroup and 64 x 16 block)";
    return std::nullopt;
  }
  const Layout& qc = c.quotient;
  if (qa.num_threads() != qc.num_threads()) {
    *why = fmt::format("a spans {} warpgroups but the accumulator {}", qa.num_threads(), qc.num_threads());
    return std::nullopt;
  }
  const int64_t ksteps = qa.shape()[1];
  std::vector<int64_t> slots(static_cast<size_t>(qc.num_locals() * ksteps), -1);
  for (int64_t w = 0; w < qc.num_threads(); ++w)
    for (int64_t s = 0; s < qc.num_locals(); ++s) {
      const int64_t mi = qc.map(w, s)[0];
      for (int64_t kk = 0; kk < ksteps; ++kk) {
        int64_t found = -1;
        for (const auto& [t, slot] : qa.owners({mi, kk}))
          if (t == w) found = slot;
        int64_t& cell = slots[static_cast<size_t>(s * ksteps + kk)];
        if (found < 0) {
          *why = fmt::format(
              "warpgroup {} computes rows {}..{} of c but does not hold a's block there for k {}..{}", w,
              64 * mi, 64 * mi + 63, 16 * kk, 16 * kk + 15);
          return std::nullopt;
        }
        if (cell >= 0 && cell != found) {
          *why = "a's blocks sit in different slots in different warpgroups";
          return std::nullopt;
        }
        cell = found;
      }
    }
  return slots;
}

namespace {

// The chunk permutation of each swizzle: chunk c of row r (r < 8) is stored at chunk c ^ xor_of(r).
int64_t swizzle_xor(int swizzle_bytes, int64_t r) {
  switch (swizzle_bytes) {
    case 128:
      return r % 8;
    case 64:
      return (r / 2) % 4;
    case 32:
      return (r / 4) % 2;
    default:
      return 0;
  }
}

}  // namespace

std::optional<WgmmaSharedForm> wgmma_k_major_form(const TileOffset& offset, int64_t rows, int64_t k,
                                                  int elem_bits, std::string* why) {
  const int64_t chunk = 128 / elem_bits;  // elements per 16 bytes
  if (rows % 8 != 0 || k % chunk != 0 || rows <= 0 || k <= 0) {
    *why =
        fmt::format("the tile is {} x {}; wgmma needs rows in groups of 8 and K in 16-byte units", rows, k);
    return std::nullopt;
  }
  auto bytes = [&](int64_t elements) { return elements * elem_bits / 8; };
  const int64_t sbo = rows > 8 ? offset(8, 0) : 0;
  std::string first_miss;
  for (int s : {128, 64, 32, 0}) {
    // Elements of one row of an 8-row group, and the stride between groups along K.
    const int64_t width = s ? s * 8 / elem_bits : chunk;
    if (k % width != 0) continue;
    const int64_t along_k = k > width ? offset(0, width) : 0;
    bool ok = true;
    for (int64_t r = 0; r < rows && ok; ++r)
      for (int64_t c = 0; c < k && ok; ++c) {
        const int64_t in_row =
            s ? ((c % width) / chunk ^ swizzle_xor(s, r % 8)) * chunk + c % chunk : c % chunk;
        const int64_t want = (r / 8) * sbo + (c / width) * along_k + (r % 8) * width + in_row;
        if (offset(r, c) != want) {
          ok = false;
          if (first_miss.empty())
            first_miss =
                fmt::format("element ({}, {}) is at offset {}, where the {} form would put it at {}", r, c,
                            offset(r, c), s ? fmt::format("{}-byte swizzled", s) : "unswizzled", want);
        }
      }
    if (!ok) continue;
    const int64_t unit = s ? 8 * s : 16;  // the group's alignment: the swizzle's pattern repeats every 8 rows
    if (bytes(sbo) % unit != 0 || bytes(along_k) % unit != 0) {
      if (first_miss.empty())
        first_miss =
            fmt::format("the groups of 8 rows are {} bytes apart down and {} along K, not multiples of {}",
                        bytes(sbo), bytes(along_k), unit);
      continue;
    }
    WgmmaSharedForm f;
    f.swizzle_bytes = s;
    f.sbo_bytes = rows > 8 ? bytes(sbo) : unit;
    f.lbo_bytes = s ? 16 : (k > width ? bytes(along_k) : 16);
    f.k_group_bytes = bytes(along_k);
    return f;
  }
  *why = first_miss.empty() ? "no swizzle width divides K" : first_miss;
  return std::nullopt;
}

namespace {

std::optional<WgmmaSharedForm> find_operand_form(const Layout& lay, int elem_bits, std::string* why) {
  const layout::Index& full = lay.shape();
  const int rank = lay.rank();
  if (rank < 2 || lay.num_threads() != 1) {
    *why = "a shared operand tile needs rank 2 or more";
    return std::nullopt;
  }
  const int64_t rows = full[static_cast<size_t>(rank - 2)], cols = full[static_cast<size_t>(rank - 1)];
  // The check below tabulates every element. A tensor larger than a block's shared memory was refused where
  // it was allocated; asked about it anyway (the verifier goes on after an error), say so rather than
  // tabulate billions of elements.
  if (!fits_shared(lay.num_locals(), elem_bits)) {
    *why = fmt::format("the tensor has {} elements of {} bits, more than a block's {} bytes of shared memory",
                       lay.num_locals(), elem_bits, kMaxSharedPerBlock);
    return std::nullopt;
  }
  // The storage offset of every logical element, by row-major linear index.
  std::vector<int64_t> offset_of(static_cast<size_t>(lay.num_locals()));
  const std::vector<int64_t> element_at = layout::row_major_offsets(lay);  // the inverse: offset o's element
  for (int64_t o = 0; o < lay.num_locals(); ++o) offset_of[static_cast<size_t>(element_at[o])] = o;
  const int64_t tile = rows * cols, tiles = tile > 0 ? lay.num_locals() / tile : 0;
  const std::optional<WgmmaSharedForm> form = wgmma_k_major_form(
      [&](int64_t r, int64_t k) { return offset_of[static_cast<size_t>(r * cols + k)] - offset_of[0]; }, rows,
      cols, elem_bits, why);
  if (!form) return std::nullopt;
  // Every tile the leading index can select has the same pattern, at an origin aligned for it.
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t origin = offset_of[static_cast<size_t>(t * tile)];
    if (origin * elem_bits / 8 % form->align_bytes() != 0) {
      *why = fmt::format("tile {} starts at byte {}, not a multiple of {}", t, origin * elem_bits / 8,
                         form->align_bytes());
      return std::nullopt;
    }
    for (int64_t e = 0; e < tile; ++e)
      if (offset_of[static_cast<size_t>(t * tile + e)] - origin !=
          offset_of[static_cast<size_t>(e)] - offset_of[0]) {
        *why = fmt::format("tile {} is not stored like tile 0", t);
        return std::nullopt;
      }
  }
  return form;
}

}  // namespace

std::optional<WgmmaSharedForm> wgmma_operand_form(const Layout& lay, int elem_bits, std::string* why) {
  struct Known {
    std::optional<WgmmaSharedForm> form;
    std::string why;
  };
  static LayoutMemo<Known> memo;  // layout_memo.h: why
  const Known k = memo.get(lay, elem_bits, [](const Layout& l, int bits) {
    Known r;
    r.form = find_operand_form(l, bits, &r.why);
    return r;
  });
  if (why && !k.form) *why = k.why;
  return k.form;
}

int64_t wgmma_block_offset(const WgmmaSharedForm& form, int64_t r, int64_t k, int elem_bits) {
  const int64_t width = form.swizzle_bytes ? form.swizzle_bytes * 8 / elem_bits : 128 / elem_bits;
  return (r / 8) * form.sbo_bytes + (k / width) * form.k_group_bytes + (k % width) * elem_bits / 8;
}

Layout wgmma_swizzled_tile(int64_t rows, int64_t k, int elem_bits, int swizzle_bytes) {
  const int64_t chunk = 128 / elem_bits;
  const int64_t chunks = swizzle_bytes / 16;
  if (rows % 8 != 0 || k * elem_bits != swizzle_bytes * 8 ||
      (swizzle_bytes != 32 && swizzle_bytes != 64 && swizzle_bytes != 128))
    fail(
        "a {}-byte swizzled wgmma tile has rows of {} bits and a multiple of 8 rows, not [{}, {}] of {} bits",
        swizzle_bytes, swizzle_bytes * 8, rows, k, elem_bits);
  const int log_step = swizzle_bytes == 128 ? 0 : swizzle_bytes == 64 ? 1 : 2;
  return compose(local({rows / 8, 1}), layout::make_swizzle(local({8, chunks}), 1, log_step),
                 local({1, chunk}));
}

}  // namespace tilevm::target
