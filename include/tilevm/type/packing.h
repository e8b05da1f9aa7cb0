// Dense little-endian bit streams (docs/language.md section 2, "Packed storage"): element k of width b
// occupies bits [k*b, (k+1)*b) of the stream, and bit j of the stream is bit (j % 8) of byte j / 8. An
// element may straddle bytes. For example three u3 codes 5, 2, 7 (binary 101, 010, 111) fill bits 0..8 as
//
//   stream bit  0 1 2 | 3 4 5 | 6 7 8
//   value       1 0 1 | 0 1 0 | 1 1 1      -> bytes 0b11010101 = 0xd5, 0b00000001 = 0x01
//
// Every width from 1 to 64 is supported; for widths that are multiples of 8 this is plain little-endian
// storage. Codes are raw bit patterns (see data_type.h); a code must fit in its width.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tilevm/type/data_type.h"

namespace tilevm {

// Bytes that hold count elements of the given width: ceil(count * bits / 8).
int64_t packed_bytes(int bits, int64_t count);
inline int64_t packed_bytes(DataType type, int64_t count) {
  return packed_bytes(type.bits(), count);
}

// Element k of a stream; reads only the bytes that hold it.
uint64_t get_code(const uint8_t* stream, int bits, int64_t k);
// Overwrites element k of a stream, leaving every other bit unchanged.
void set_code(uint8_t* stream, int bits, int64_t k, uint64_t code);

// Packs codes into out (at least packed_bytes(bits, codes.size()) bytes); the padding bits after the last
// element, up to the end of its byte, are zero. Bytes of out beyond that are left alone.
void pack(int bits, std::span<const uint64_t> codes, std::span<uint8_t> out);
std::vector<uint8_t> pack(int bits, std::span<const uint64_t> codes);
inline std::vector<uint8_t> pack(DataType type, std::span<const uint64_t> codes) {
  return pack(type.bits(), codes);
}

// Unpacks codes.size() elements from stream (at least packed_bytes(bits, codes.size()) bytes).
void unpack(int bits, std::span<const uint8_t> stream, std::span<uint64_t> codes);
std::vector<uint64_t> unpack(int bits, std::span<const uint8_t> stream, int64_t count);
inline std::vector<uint64_t> unpack(DataType type, std::span<const uint8_t> stream, int64_t count) {
  return unpack(type.bits(), stream, count);
}

}  // namespace tilevm
