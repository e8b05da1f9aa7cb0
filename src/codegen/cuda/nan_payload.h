// Which register tensors may hold a NaN of any bit pattern: those whose every reader ignores the NaN's bits.
//
// The interpreter's float arithmetic gives the canonical NaN, so a native f32/f16/bf16 Add/Sub/Mul (and a
// widening Cast f16/bf16 -> f32) replaces the hardware's NaN by it: two instructions per element, in the
// quantized matmul's per-slice scaling about a tenth of the loop. The replacement is only observable where
// the bits are read as they are (StoreGlobal, StoreShared, AtomicAddGlobal, View, Where, Print, ...). It is
// skipped for a tensor whose every reader maps any NaN to the same result: another native Add/Sub/Mul/Fma (a NaN
// operand gives a NaN, which that instruction makes canonical or whose readers are again of this kind), a
// Cast to a narrower float (it maps every NaN to the canonical NaN), and a Dot (the mma's NaN is the
// hardware's whatever its inputs are; the SIMT path decodes to double). The result is then bit-identical to
// the interpreter's wherever it can be seen.
#pragma once

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/program.h"

namespace tilevm::codegen::cuda {

// Whether Elementwise `n` with a result of type `result` runs as one native f32/f16/bf16 operation per slot
// (Add, Sub or Mul of two tensors of the result's type, or an f32 Fma of three): the emitter's choice and
// this analysis's rule.
bool is_native_float_arith(const ir::ElementwiseInst& n, DataType result);

// Whether every instruction of `program` that reads `var` ignores the bits of a NaN in it (see above).
bool nan_payload_unobserved(const ir::Program& program, const ir::Var& var);

}  // namespace tilevm::codegen::cuda
