// Instruction atoms as layouts: the register fragments of the tensor-core and ldmatrix instructions.
//
// Instruction selection works by layout division (docs/design.md): a tile whose layout divides by an atom's
// layout can be computed or moved with that instruction, the quotient being the loop over atoms. Each
// fragment is written in the layout algebra; tests/unit/target_atoms_test.cpp checks every one element by
// element against the PTX ISA's fragment tables. Local slot i is the instruction's element i (a0, a1, ...).
//
//   mma.m16n8k16 (f16, bf16)   A 16x16  column_local(2, 2).spatial(8, 4).local(1, 2)
//                              B 16x8   local(2, 1).column_spatial(4, 8).local(2, 1)
//                              C 16x8   local(2, 1).spatial(8, 4).local(1, 2)   (f32 or f16 accumulator)
//   mma.m16n8k32 (s8, u8)      A 16x32  column_local(2, 2).spatial(8, 4).local(1, 4)
//                              B 32x8   local(2, 1).column_spatial(4, 8).local(4, 1)
//                              C 16x8   local(2, 1).spatial(8, 4).local(1, 2)   (s32)
//   ldmatrix .x1/.x2/.x4 (b16) spatial(8, 4).local(1, 2) per 8x8 matrix; register j holds matrix j, the
//                              matrices stacked down the rows (x2: 16x8) and then across the columns (x4:
//                              16x16, order top-left, bottom-left, top-right, bottom-right, as mma's A
//                              wants); and .x4 with the four matrices side by side (8x32: an [8, K] tile read
//                              as mma's B operand through a transposed layout, as the swapped qmatmul does)
#pragma once

#include <string>
#include <vector>

#include "tilevm/layout/layout.h"
#include "tilevm/type/data_type.h"

namespace tilevm::target {

struct MmaAtom {
  std::string name;  // the PTX instruction's shape and types, e.g. "mma.m16n8k16.f32.f16.f16.f32"
  int m, n, k;
  DataType a, b, c;  // operand types; c is also the result's
  layout::Layout layout_a, layout_b, layout_c;
};

// Every mma.sync atom the backend uses: m16n8k16 for f16 and bf16 with f32 or f16 (f16 inputs only)
// accumulation, m16n8k32 for s8 and u8 with s32 accumulation.
const std::vector<MmaAtom>& mma_atoms();

struct LdmatrixAtom {
  int num_matrices;  // 1, 2 or 4
  layout::Layout layout;
  // Matrices stacked down the rows (1 or 2) before going across the columns.
  int row_blocks() const { return static_cast<int>(layout.shape()[0] / 8); }
};

// ldmatrix.sync.aligned.m8n8 .x1, .x2, .x4 (.b16, not transposed).
const std::vector<LdmatrixAtom>& ldmatrix_atoms();

}  // namespace tilevm::target
