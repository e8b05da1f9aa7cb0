// Reading and writing NumPy .npy files (format versions 1.0 and 2.0), the host file format of `tilevm run`.
//
// Only little-endian, C-order arrays of these dtypes are accepted:
//
//   descr   meaning            descr   meaning
//   <f2     float16            |u1     uint8 (also the raw packed bytes of sub-byte and 8-bit float types)
//   <f4     float32            <u2     uint16 (also the raw bits of bf16)
//   <f8     float64            <u4     uint32
//   |i1     int8               <u8     uint64
//   <i2     int16              |b1     bool
//   <i4     int32
//   <i8     int64
//
// For one-byte types `|` and `<` are both accepted (NumPy writes `|`). Anything else (big-endian, Fortran
// order, object arrays, a truncated file) is a tilevm::Error naming the file and the problem.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tilevm/type/data_type.h"

namespace tilevm::npy {

struct Array {
  std::string descr;           // canonical: `<f2`, `|u1`, `|b1`, ...
  std::vector<int64_t> shape;  // empty for a 0-d array (one element)
  std::vector<uint8_t> data;   // little-endian elements in C order

  int64_t count() const;  // product of the shape
  int item_size() const;  // bytes per element of descr
};

// The largest .npy file read by default: the interpreter's default memory budget (interp::RunOptions).
inline constexpr int64_t kDefaultMaxBytes = int64_t{4} << 30;

// Parses the bytes of a .npy file; `name` is used in error messages.
Array parse(std::span<const uint8_t> bytes, std::string_view name);
// Reads a .npy file of at most `max_bytes` (tilevm::Error when it cannot be read or parsed: a directory, a
// device, a larger file, a malformed header, a shape whose size overflows or disagrees with the data).
Array read(const std::string& path, int64_t max_bytes = kDefaultMaxBytes);
// The bytes of a version 1.0 .npy file (version 2.0 when the header needs it).
std::vector<uint8_t> serialize(const Array& array);
// Writes a .npy file atomically (support/file_io.h: a temporary file renamed over `path` once every write
// and the close succeeded; tilevm::Error otherwise, and the old file is left as it was).
void write(const std::string& path, const Array& array);

// The descr of the host array that holds elements of `type` (see the table above): f16 `<f2`, bf16 `<u2`,
// f32 `<f4`, i32 `<i4`, bool `|b1`, types narrower than 8 bits and 8-bit floats `|u1` (raw packed bytes).
std::string descr_for(DataType type);

// The canonical form of a descr (`<i1` -> `|i1`), or a tilevm::Error naming `name` when it is not supported.
std::string canonical_descr(std::string_view descr, std::string_view name);

}  // namespace tilevm::npy
