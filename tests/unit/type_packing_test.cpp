// Packed little-endian bit streams: a hand-computed example, and every width 1..64 against a bit-by-bit
// reference on seeded random codes.
#include "tilevm/type/packing.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tilevm {
namespace {

// The stream written one bit at a time straight from the definition: bit j of the stream is bit j % 8 of
// byte j / 8, and element k's bit i is stream bit k * bits + i.
std::vector<uint8_t> reference_pack(int bits, const std::vector<uint64_t>& codes) {
  std::vector<uint8_t> bytes((codes.size() * bits + 7) / 8, 0);
  for (size_t k = 0; k < codes.size(); ++k) {
    for (int i = 0; i < bits; ++i) {
      const size_t j = k * bits + i;
      if ((codes[k] >> i) & 1) bytes[j / 8] |= static_cast<uint8_t>(1u << (j % 8));
    }
  }
  return bytes;
}

TEST(Packing, U3ExampleByHand) {
  // Octal digits are 3-bit codes: the 24-bit little-endian number 0o07654321 = 0x1f58d1.
  const std::vector<uint64_t> codes{1, 2, 3, 4, 5, 6, 7, 0};
  const std::vector<uint8_t> expected{0xd1, 0x58, 0x1f};
  EXPECT_EQ(pack(3, codes), expected);
  EXPECT_EQ(unpack(3, expected, 8), codes);
}

TEST(Packing, HeaderExampleAndPadding) {
  const std::vector<uint64_t> codes{5, 2, 7};
  EXPECT_EQ(pack(DataType::parse("u3"), codes), (std::vector<uint8_t>{0xd5, 0x01}));
  // i4: -1, 2 -> codes 0xf, 0x2 -> one byte 0x2f; u1 bits fill from the least significant bit.
  EXPECT_EQ(pack(4, std::vector<uint64_t>{0xf, 0x2}), (std::vector<uint8_t>{0x2f}));
  EXPECT_EQ(pack(1, std::vector<uint64_t>{1, 0, 0, 0, 0, 0, 0, 1, 1}), (std::vector<uint8_t>{0x81, 0x01}));
  EXPECT_EQ(pack(16, std::vector<uint64_t>{0x1234}), (std::vector<uint8_t>{0x34, 0x12}));
  EXPECT_EQ(packed_bytes(3, 8), 3);
  EXPECT_EQ(packed_bytes(3, 3), 2);
  EXPECT_EQ(packed_bytes(7, 0), 0);
}

TEST(Packing, EveryWidthRoundTripsAgainstReference) {
  std::mt19937_64 random(20240601);
  for (int bits = 1; bits <= 64; ++bits) {
    const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{8}, size_t{9}, size_t{131}}) {
      std::vector<uint64_t> codes(count);
      for (auto& c : codes) c = random() & mask;
      if (count > 2) codes[1] = mask;  // all ones and zero, to catch masking mistakes at the edges
      const std::vector<uint8_t> packed = pack(bits, codes);
      ASSERT_EQ(packed, reference_pack(bits, codes)) << "bits=" << bits << " count=" << count;
      ASSERT_EQ(unpack(bits, packed, static_cast<int64_t>(count)), codes) << "bits=" << bits;
      for (size_t k = 0; k < count; ++k)
        ASSERT_EQ(get_code(packed.data(), bits, static_cast<int64_t>(k)), codes[k]);
    }
  }
}

TEST(Packing, SetCodeLeavesNeighboursAlone) {
  std::mt19937_64 random(7);
  for (int bits = 1; bits <= 64; ++bits) {
    const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    std::vector<uint64_t> codes(40);
    for (auto& c : codes) c = random() & mask;
    std::vector<uint8_t> stream = pack(bits, codes);
    for (int round = 0; round < 100; ++round) {
      const size_t k = random() % codes.size();
      codes[k] = random() & mask;
      set_code(stream.data(), bits, static_cast<int64_t>(k), codes[k]);
    }
    ASSERT_EQ(stream, reference_pack(bits, codes)) << "bits=" << bits;
  }
}

TEST(Packing, PackIntoLargerBufferZeroesOnlyItsBytes) {
  std::vector<uint8_t> out(4, 0xff);
  pack(3, std::vector<uint64_t>{5, 2, 7}, out);
  EXPECT_EQ(out, (std::vector<uint8_t>{0xd5, 0x01, 0xff, 0xff}));
}

}  // namespace
}  // namespace tilevm
