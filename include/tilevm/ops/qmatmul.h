// The quantized matmul program: C[M, N] = A[M, K] @ dequant(B)[K, N], one template for every low-bit weight
// type (u1..u8, i1..i8, f<b>e<E>m<M> of 3 to 8 bits), built with the IR builder. A first, correct version:
// registers only, one warp per block, no pipelining.
//
//   def qmatmul<ceil_div(m, BM), ceil_div(n, BN)>(f16* a_ptr, WTYPE* b_ptr, f16* scale_ptr, f16* c_ptr,
//                                                  i32 m, i32 n, i32 k)
//
//   a_ptr      f16[m, k] row-major
//   b_ptr      WTYPE[k, n] row-major codes, packed (sub-byte types little-endian, packing.h); the format of
//              ops::QuantizedWeight::codes (quantize.h)
//   scale_ptr  f16[k / G, n] row-major: scale of group g (rows g*G .. g*G+G-1) of column n
//   c_ptr      f16[m, n] row-major
//   dequant(B)[k, n] = f16(decode(WTYPE, code[k, n]) * scale[k / G, n]): each dequantized weight is rounded
//              once to f16 (the mma's operand type); products accumulate in f32; C is rounded to f16.
//
// m, n, k are runtime scalars: m and n need not be multiples of BM and BN (edge loads read 0, edge stores
// are dropped); k must be a multiple of G (the program does not check it).
//
// Per block (bi, bj): acc f32[BM, BN] in the mma.m16n8k16 C layout, repeated over (BM/16, BN/8) tiles
// per thread; for each k-step of BK: the A tile [BM, BK] (mma A layout), the B tile [BK, BN] straight from
// the packed [k, n] tensor (mma B layout), the scale row [1, BN] of group (k0 / G) in a layout that
// replicates the B layout over dim 0 (each thread holds the scale of every column it holds of B), Cast,
// Mul, Dot. At the end Cast to f16 and StoreGlobal.
#pragma once

#include <cstdint>

#include "tilevm/ir/program.h"
#include "tilevm/type/data_type.h"

namespace tilevm::ops {

struct QMatmulConfig {
  DataType atype = DataType::f16();  // only f16 for now
  DataType wtype = DataType::uint(4);
  int64_t group = 32;    // G: rows of K per scale
  int64_t block_m = 16;  // a multiple of 16
  int64_t block_n = 8;   // a multiple of 8
  int64_t block_k = 16;  // a multiple of 16 that divides group
};

// True when every finite value of `wtype` converts to f16 exactly (so the weights can be cast straight to
// f16 and scaled in f16); otherwise the program dequantizes in f32 and rounds the product to f16.
bool qmatmul_weight_fits_f16(DataType wtype);

// Builds the (unverified) program described above. Throws tilevm::Error for an unsupported configuration:
// atype other than f16; wtype not an integer or float type of 1 to 8 bits; block sizes that are not
// positive multiples of 16 / 8 / 16; block_k not dividing group.
ir::Program build_qmatmul(const QMatmulConfig& config);

}  // namespace tilevm::ops
