// NaN-payload analysis: which results may hold a NaN of any bit pattern, because every reader ignores the
// NaN's bits.
//
// The interpreter's float arithmetic gives the canonical NaN, so a native f32/f16/bf16 Add/Sub/Mul/Fma (and
// a widening Cast f16/bf16 -> f32) replaces the hardware's NaN by it: two instructions per element, in the
// quantized matmul's per-slice scaling about a tenth of the loop. The replacement is only observable where
// the bits are read as they are (StoreGlobal, StoreShared, AtomicAddGlobal, View, Where, Print, ...). It can
// be skipped for a result whose every reader maps any NaN to the same result: another native Add/Sub/Mul/Fma
// (a NaN operand gives a NaN, which that instruction makes canonical or whose readers are again of this
// kind), a Cast f32 -> f16/bf16 (it maps every NaN to the canonical NaN), and a Dot (the mma's NaN is the
// hardware's whatever its inputs are; the SIMT path decodes to double; DotAsync likewise). A View,
// StoreShared, LoadShared or Cast to the same type (a slot copy) passes the bits on: its source is observed
// where its destination is (a tile dequantized into shared memory, or copied into a fragment, that only a
// DotAsync reads is not). The result is then bit-identical to the
// interpreter's wherever it can be seen.
//
// The pass sets `nan_payload_unobserved` on those instructions, native arithmetic and widening casts only
// (the ones whose code depends on it), in one walk over the program:
//
//   s = Mul(x, y)   # nan payload unobserved      (its one reader, the Add, ignores the bits)
//   z = Add(s, y)                                  (stored: its NaN must be canonical)
//   StoreGlobal(z, g)
//
// except that an f32 StoreGlobal is not such a reader where every value of its source is one the
// interpreter makes canonical (every writer native f32 arithmetic or a widening Cast, an allocation, or an
// f32 -> f32 passing of such a variable's bits): it makes the NaN canonical itself (a compare and a select
// per element, `canonicalizes_nan`) where its source may hold the hardware's, so that an accumulator summed
// in a loop and stored once after it (a split-K partial) pays once instead of in every iteration. A source
// that may also hold a loaded tile (a shared tensor written from both, a loaded accumulator a loop may not
// touch), or f16 words viewed as f32, is stored as it is: its store observes it, as before.
//
//   for t in range(n):
//       acc = Fma(p, s, acc)   # nan payload unobserved
//   StoreGlobal(acc, g)        # canonicalizes nan
#pragma once

#include "tilevm/ir/inst/elementwise.h"
#include "tilevm/ir/program.h"

namespace tilevm::transform {

// Whether Elementwise `n` with a result of type `result` runs as one native f32/f16/bf16 operation per slot
// (Add, Sub or Mul of two tensors of the result's type; for f32 also Div, Sqrt and Fma, with tensor or
// scalar operands of type f32): the code generator's choice and this analysis's rule.
bool is_native_float_arith(const ir::ElementwiseInst& n, DataType result);

// @pre `program` verifies.
ir::Program analyze_nan_payload(ir::Program program);

}  // namespace tilevm::transform
