// Scalar conversion between codes (raw bit patterns, see data_type.h) and values, with the Cast semantics of
// docs/language.md section 2. Every code of every type has an exact double value, so decode is exact, and
// encode(t, decode(s, c)) is the one correctly rounded Cast from s to t (single rounding) for every source
// except wide integers, which cast_code handles exactly.
//
// Cast rules, including tilevm's decisions (docs/language.md section 2):
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

// Whether a code of a float type is a NaN / an infinity (false for every code of other kinds).
bool is_nan_code(DataType type, uint64_t code);
bool is_inf_code(DataType type, uint64_t code);

// A signed integer's code read as two's complement in bits bits (1 <= bits <= 64).
int64_t sign_extend(uint64_t code, int bits);

// The shortest decimal that reads back as the same double ("1", "0.5", "1e+20", "448"), with "nan", "inf",
// "-inf" and "-0" for the special values. The format of `tilevm dtype --table`.
std::string format_value(double value);

}  // namespace tilevm
