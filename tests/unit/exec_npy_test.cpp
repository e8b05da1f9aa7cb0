// .npy reading and writing: round trips for every supported dtype and shape rank, version 2 headers, and the
// errors for everything else.
#include <gtest/gtest.h>

#include <string>

#include "tilevm/exec/npy.h"
#include "tilevm/support/error.h"

namespace tilevm::npy {
namespace {

std::vector<uint8_t> file_bytes(const std::string& header, const std::vector<uint8_t>& data, int major = 1) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const size_t len = header.size();
  out.push_back(static_cast<uint8_t>(len & 0xff));
  out.push_back(static_cast<uint8_t>(len >> 8));
  if (major == 2) {
    out.push_back(0);
    out.push_back(0);
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    parse(bytes, "x.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  for (const char* descr :
       {"<f2", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"}) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, {5}, {2, 3}, {2, 1, 3}, {0, 4}}) {
      Array a;
      a.descr = descr;
      a.shape = shape;
      a.data.resize(static_cast<size_t>(a.count() * a.item_size()));
      for (size_t k = 0; k < a.data.size(); ++k) a.data[k] = static_cast<uint8_t>(k * 37 + 1);
      std::vector<uint8_t> bytes = serialize(a);
      EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u);  // header padded to 64 bytes
      Array b = parse(bytes, "rt.npy");
      EXPECT_EQ(b.descr, a.descr);
      EXPECT_EQ(b.shape, a.shape);
      EXPECT_EQ(b.data, a.data);
    }
  }
}

TEST(Npy, ReadsWhatNumpyWrites) {
  // numpy.save of np.arange(3, dtype=np.int16), and of a 2 x 2 uint8 array in format 2.0 with '<u1'.
  Array a = parse(file_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }          \n",
                             {1, 0, 2, 0, 0xff, 0xff}),
                  "a.npy");
  EXPECT_EQ(a.descr, "<i2");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  Array b = parse(
      file_bytes("{\"descr\": \"<u1\", \"shape\": (2, 2), \"fortran_order\": False}\n", {1, 2, 3, 4}, 2),
      "b.npy");
  EXPECT_EQ(b.descr, "|u1");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 2}));
}

TEST(Npy, Errors) {
  EXPECT_EQ(error_of({1, 2, 3}), "x.npy: not a .npy file (no \\x93NUMPY magic)");
  EXPECT_EQ(error_of(file_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", {0, 0, 0, 0})),
            "x.npy: big-endian .npy data ('>f4') is not supported");
  EXPECT_EQ(
      error_of(file_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", {})),
      "x.npy: unsupported .npy dtype '<c8' (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1)");
  EXPECT_EQ(error_of(file_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", {0, 0, 0, 0})),
            "x.npy: Fortran-order arrays are not supported");
  EXPECT_EQ(error_of(file_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", {0, 0, 0, 0})),
            "x.npy: the .npy data has 4 bytes but 2 elements of <f4 need 8");
  EXPECT_EQ(error_of(file_bytes("{'descr': '<f4', 'shape': (2,), }", {})),
            "x.npy: the .npy header lacks one of 'descr', 'fortran_order', 'shape'");
}

TEST(Npy, HostDtypes) {
  EXPECT_EQ(descr_for(DataType::f16()), "<f2");
  EXPECT_EQ(descr_for(DataType::bf16()), "<u2");
  EXPECT_EQ(descr_for(DataType::f32()), "<f4");
  EXPECT_EQ(descr_for(DataType::i8()), "|i1");
  EXPECT_EQ(descr_for(DataType::int_(6)), "|u1");
  EXPECT_EQ(descr_for(DataType::uint(4)), "|u1");
  EXPECT_EQ(descr_for(DataType::f8e4m3()), "|u1");
  EXPECT_EQ(descr_for(DataType::u32()), "<u4");
  EXPECT_EQ(descr_for(DataType::boolean()), "|b1");
}

}  // namespace
}  // namespace tilevm::npy
