// cuBLAS loaded at run time: the search order and status names on any machine, loading the library where it
// is installed (no GPU needed), and on a GPU a small GEMM of each type against a CPU reference.
// On a GPU machine: tilevm_unit_tests --gtest_filter='RuntimeCublas*'
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/runtime/cublas.h"
#include "tilevm/runtime/device.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"

namespace tilevm::runtime {
namespace {

// Sets an environment variable for the life of the object, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(RuntimeCublas, StatusNames) {
  EXPECT_EQ(cublas_status_name(0), "CUBLAS_STATUS_SUCCESS");
  EXPECT_EQ(cublas_status_name(13), "CUBLAS_STATUS_EXECUTION_FAILED");
  EXPECT_EQ(cublas_status_name(15), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_EQ(cublas_status_name(99), "cuBLAS status 99");
}

TEST(RuntimeCublas, OverrideIsTheOnlyCandidate) {
  ScopedEnv env("TILEVM_CUBLAS", "/opt/somewhere/libcublas.so.12");
  EXPECT_EQ(cublas_candidates(), std::vector<std::string>{"/opt/somewhere/libcublas.so.12"});
}

TEST(RuntimeCublas, SearchOrder) {
  ScopedEnv override_env("TILEVM_CUBLAS", nullptr);
  ScopedEnv cuda_home("CUDA_HOME", "/tmp");  // exists, but holds no lib64: left out
  const std::vector<std::string> c = cublas_candidates();
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[0], "libcublas.so.13");
  EXPECT_EQ(c[1], "libcublas.so.12");
  EXPECT_EQ(c[2], "libcublas.so");
  for (const std::string& path : c) EXPECT_EQ(path.find("/tmp/lib64"), std::string::npos) << path;
  for (size_t i = 3; i < c.size(); ++i) EXPECT_NE(c[i].find("/libcublas.so"), std::string::npos) << c[i];
}

TEST(RuntimeCublasGpu, LoadsWhereInstalled) {
  std::string why;
  if (!Cublas::library_available(&why)) GTEST_SKIP() << "no cuBLAS here: " << why;
  EXPECT_TRUE(why.empty());
}

TEST(RuntimeCublasGpu, GemmMatchesTheCpu) {
  std::string why;
  if (!Cublas::library_available(&why)) GTEST_SKIP() << "no cuBLAS here: " << why;
  if (!Device::available()) GTEST_SKIP() << "no GPU";
  Device device = Device::open();
  Cublas blas = Cublas::open(device);
  EXPECT_GT(blas.version(), 0);
  EXPECT_FALSE(blas.library_path().empty());
  Stream stream = device.create_stream();
  // Odd sizes, so that a swapped m and n or a wrong leading dimension cannot pass; a batch of 3, so that a
  // wrong stride cannot either.
  const int64_t m = 5, n = 24, k = 40;
  for (int64_t batch : {1, 3})
    for (DataType t : {DataType::f16(), DataType::bf16()}) {
      SCOPED_TRACE(fmt::format("{}, batch {}", t.name(), batch));
      std::vector<std::uint16_t> a(batch * m * k), b(batch * k * n);
      std::vector<double> av(a.size()), bv(b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        a[i] =
            static_cast<std::uint16_t>(encode(t, static_cast<double>(static_cast<int>(i * 7 % 11) - 5) / 4));
        av[i] = decode(t, a[i]);
      }
      for (size_t i = 0; i < b.size(); ++i) {
        b[i] =
            static_cast<std::uint16_t>(encode(t, static_cast<double>(static_cast<int>(i * 5 % 13) - 6) / 8));
        bv[i] = decode(t, b[i]);
      }
      DeviceBuffer da = device.allocate(a.size() * 2), db = device.allocate(b.size() * 2),
                   dc = device.allocate(batch * m * n * 2);
      da.upload(std::span<const std::uint16_t>(a));
      db.upload(std::span<const std::uint16_t>(b));
      blas.gemm(stream, t, m, n, k, da.device_ptr(), db.device_ptr(), dc.device_ptr(), batch);
      stream.synchronize();
      std::vector<std::uint16_t> c = dc.download<std::uint16_t>();
      for (int64_t h = 0; h < batch; ++h)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double expected = 0;
            for (int64_t l = 0; l < k; ++l) expected += av[(h * m + i) * k + l] * bv[(h * k + l) * n + j];
            // The sums of these small multiples of 1/32 are exact in f32; only the final rounding to t
            // differs.
            const size_t at = static_cast<size_t>((h * m + i) * n + j);
            EXPECT_EQ(c[at], encode(t, expected)) << "at (" << h << ", " << i << ", " << j << ") expected "
                                                  << expected << ", got " << decode(t, c[at]);
          }
    }
}

TEST(RuntimeCublasGpu, GemmRejectsOtherTypes) {
  std::string why;
  if (!Cublas::library_available(&why) || !Device::available()) GTEST_SKIP() << "no cuBLAS or no GPU";
  Device device = Device::open();
  Cublas blas = Cublas::open(device);
  Stream stream = device.create_stream();
  try {
    blas.gemm(stream, DataType::f32(), 1, 1, 1, 0, 0, 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "cuBLAS gemm: type must be f16 or bf16, got f32");
  }
}

}  // namespace
}  // namespace tilevm::runtime
