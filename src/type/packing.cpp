#include "tilevm/type/packing.h"

#include <algorithm>

#include "tilevm/support/error.h"

namespace tilevm {

namespace {

uint64_t low_mask(int bits) {
  return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

void check_width(int bits) {
  TILEVM_ASSERT(bits >= 1 && bits <= 64, "packed element width {} is not in 1..64", bits);
}

}  // namespace

int64_t packed_bytes(int bits, int64_t count) {
  check_width(bits);
  TILEVM_ASSERT(count >= 0, "negative element count {}", count);
  return (count * bits + 7) / 8;
}

// Both accessors walk the element one byte-aligned piece at a time: at most 9 pieces for 64 bits.
uint64_t get_code(const uint8_t* stream, int bits, int64_t k) {
  check_width(bits);
  const int64_t first = k * bits;
  uint64_t code = 0;
  for (int done = 0; done < bits;) {
    const int64_t bit = first + done;
    const int shift = static_cast<int>(bit % 8);
    const int take = std::min(8 - shift, bits - done);
    const uint64_t piece = (static_cast<uint64_t>(stream[bit / 8]) >> shift) & low_mask(take);
    code |= piece << done;
    done += take;
  }
  return code;
}

void set_code(uint8_t* stream, int bits, int64_t k, uint64_t code) {
  check_width(bits);
  TILEVM_ASSERT((code & ~low_mask(bits)) == 0, "code {:#x} does not fit in {} bits", code, bits);
  const int64_t first = k * bits;
  for (int done = 0; done < bits;) {
    const int64_t bit = first + done;
    const int shift = static_cast<int>(bit % 8);
    const int take = std::min(8 - shift, bits - done);
    const auto mask = static_cast<uint8_t>(low_mask(take) << shift);
    const auto piece = static_cast<uint8_t>(((code >> done) & low_mask(take)) << shift);
    uint8_t& byte = stream[bit / 8];
    byte = static_cast<uint8_t>((byte & ~mask) | piece);
    done += take;
  }
}

void pack(int bits, std::span<const uint64_t> codes, std::span<uint8_t> out) {
  const int64_t bytes = packed_bytes(bits, static_cast<int64_t>(codes.size()));
  TILEVM_ASSERT(static_cast<int64_t>(out.size()) >= bytes,
                "packing {} codes of {} bits needs {} bytes, got {}", codes.size(), bits, bytes, out.size());
  std::fill_n(out.begin(), bytes, uint8_t{0});
  for (size_t k = 0; k < codes.size(); ++k) set_code(out.data(), bits, static_cast<int64_t>(k), codes[k]);
}

std::vector<uint8_t> pack(int bits, std::span<const uint64_t> codes) {
  std::vector<uint8_t> out(static_cast<size_t>(packed_bytes(bits, static_cast<int64_t>(codes.size()))));
  pack(bits, codes, out);
  return out;
}

void unpack(int bits, std::span<const uint8_t> stream, std::span<uint64_t> codes) {
  const int64_t bytes = packed_bytes(bits, static_cast<int64_t>(codes.size()));
  TILEVM_ASSERT(static_cast<int64_t>(stream.size()) >= bytes,
                "unpacking {} codes of {} bits needs {} bytes, got {}", codes.size(), bits, bytes,
                stream.size());
  for (size_t k = 0; k < codes.size(); ++k) codes[k] = get_code(stream.data(), bits, static_cast<int64_t>(k));
}

std::vector<uint64_t> unpack(int bits, std::span<const uint8_t> stream, int64_t count) {
  std::vector<uint64_t> codes(static_cast<size_t>(count));
  unpack(bits, stream, codes);
  return codes;
}

}  // namespace tilevm
