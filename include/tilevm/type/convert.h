// Scalar conversion between codes (raw bit patterns, see data_type.h) and values, with the Cast semantics of
// LANGUAGE.md section 2. Every code of every type has an exact double value, so decode is exact, and
// encode(t, decode(s, c)) is the one correctly rounded Cast from s to t (single rounding) for every source
// except wide integers, which cast_code handles exactly.
//
// Cast rules, including the decisions where the spec is silent:
//   to a float    round to nearest, ties to even; finite values beyond the range saturate to +-max (also for
//                 types that have infinity); +-inf stays +-inf where the type has it, else +-max; NaN becomes
//                 the type's canonical NaN (positive, quiet) where it has one, else +max; the sign of zero
//                 and of values that round to zero is kept (every float has -0).
//   to an integer round to nearest, ties to even, then clamp to [min, max]; +-inf clamps; NaN becomes 0 (as
//                 PTX cvt.rni.sat does).
//   to bool       value != 0, so NaN becomes 1 (as C++ does).
//   from bool     0 or 1 (any nonzero code reads as 1).
#pragma once

#include <cstdint>
#include <string>

#include "tilevm/type/data_type.h"

namespace tilevm {

// The exact value of a code (bits above bits() are ignored). NaN codes give a quiet NaN. Integers give their
// value (i64/u64 beyond 2^53 are rounded to the nearest double).
double decode(DataType type, uint64_t code);

// The code of Cast(value) to type (rules above).
uint64_t encode(DataType type, double value);

// Cast of one element from one type to another, exact in every case (integer-to-integer clamps without going
// through double; wide integers to narrow floats round once).
uint64_t cast_code(DataType from, DataType to, uint64_t code);

// Cast(biased=True) (an extension, docs/language.md): whether `from` may be cast biased (an integer of at
// most 8 bits; the result is f16), and the f16 code of the result: the code's value plus the bias of its
// operand slot, an integer below 2048 and so exact. It is what ORing a code into the mantissa of a power of
// two leaves when the subtraction of that power is left to the program (the quantized matmul subtracts the
// biases of all its codes at once: they are the biased cast of code 0).
//
// A code in operand slot i lies at bit p = (i * bits) mod 16 of its 16-bit half-word. Its mantissa
// position q (where its lowest bit lands in f16's 10-bit mantissa) takes p modulo a window w, raised by a
// base: q = p mod w + base, with (w, base) = (4, 6) for 1-bit codes, (8, 2) for 2-bit codes and (8, 0)
// otherwise. Codes of one window then share one shift of their word, and the bias 2^(10 - q) stays within
// 2^6 of the code's range for 1- to 4-bit codes, which keeps the f32 sums that subtract it accurate. The
// bias is 2^(10 - q), plus 2^(bits-1) for signed types, which are read in excess-2^(bits-1).
bool castable_biased(DataType from);
int biased_cast_position(DataType from, int64_t slot);  // q
double cast_bias(DataType from, int64_t slot);
uint64_t biased_cast_code(DataType from, uint64_t code, int64_t slot);

// Whether a code of a float type is a NaN / an infinity (false for every code of other kinds).
bool is_nan_code(DataType type, uint64_t code);
bool is_inf_code(DataType type, uint64_t code);

// A signed integer's code read as two's complement in bits bits (1 <= bits <= 64).
int64_t sign_extend(uint64_t code, int bits);

// The shortest decimal that reads back as the same double ("1", "0.5", "1e+20", "448"), with "nan", "inf",
// "-inf" and "-0" for the special values. The format of `tilevm dtype --table`.
std::string format_value(double value);

}  // namespace tilevm
