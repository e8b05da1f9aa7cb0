// cuBLAS, loaded at run time: the dense fp16/bf16 GEMM the benchmarks compare against (docs/performance.md).
//
// tilevm links no CUDA library; libcublas is opened with dlopen on first use, from the first of:
//   1. $TILEVM_CUBLAS, when set (a path or a library name; if it cannot be loaded that is an error, no
//   fallback)
//   2. libcublas.so.13, libcublas.so.12, libcublas.so   (the dynamic loader's search: LD_LIBRARY_PATH,
//   ld.so.cache)
//   3. $CUDA_HOME/lib64/ and then /usr/local/cuda/lib64/, each with libcublas.so.13, .so.12, .so
//   4. the folders where pip puts NVIDIA's wheels (what PyTorch installs): nvidia/cu13/lib, nvidia/cublas/lib
//      and torch/lib under the site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, the python3 found on $PATH,
//      ~/.local/lib/python3*, /usr/local/lib/python3*, /usr/lib/python3*, /opt/conda/lib/python3*
//      (found with glob, without running Python)
// For a candidate in a folder, libcublasLt of the same version in that folder is opened first with
// RTLD_GLOBAL, so that libcublas finds it even when its own RUNPATH does not lead there.
//
// cuBLAS runs on the device's primary context, the one runtime::Device uses (cuBLAS's CUDA runtime adopts
// the context current on the calling thread).
//
//   Cublas blas = Cublas::open(device);
//   blas.gemm(stream, DataType::f16(), m, n, k, a.device_ptr(), w.device_ptr(), c.device_ptr());
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tilevm/runtime/device.h"
#include "tilevm/type/data_type.h"

namespace tilevm::runtime {

namespace detail {
struct CublasState;
}  // namespace detail

// The candidates of steps 2 to 4 above, in order (or only $TILEVM_CUBLAS when it is set). Folders that do
// not exist are left out; the bare library names of step 2 are always there.
std::vector<std::string> cublas_candidates();

// "CUBLAS_STATUS_NOT_SUPPORTED" for 15; "cuBLAS status 99" for an unknown value.
std::string cublas_status_name(int status);

// A cuBLAS handle bound to one device. Cheap to copy (copies share the handle). gemm may be called from one
// thread at a time per handle (it sets the handle's stream).
class Cublas {
 public:
  // Loads the library (once per process) and creates a handle on `device`.
  // @throws tilevm::Error when no libcublas can be loaded (naming what was tried, or $TILEVM_CUBLAS), or when
  //   cublasCreate fails (naming the cuBLAS status).
  static Cublas open(const Device& device);

  // Whether the library can be loaded and a device opened; never throws.
  static bool available() noexcept;
  // Whether the library can be loaded (no device needed); never throws. The error, when not, in *why.
  static bool library_available(std::string* why = nullptr) noexcept;

  // The file the library was loaded from, e.g. "/usr/local/cuda/lib64/libcublas.so.13".
  std::string library_path() const;
  // cuBLAS's version, e.g. 130100 for 13.1.0.
  int version() const;

  // C[m, n] = A[m, k] @ B[k, n], all row-major of type t (f16 or bf16), f32 accumulation (alpha 1, beta 0),
  // enqueued on `stream`. a, b, c are device addresses. batch > 1: that many products of matrices stored one
  // after another (A [batch, m, k], B [batch, k, n], C [batch, m, n]), in one strided batched call.
  // @throws tilevm::Error for another type, a non-positive or too large size (cuBLAS takes 32-bit sizes), or
  // a
  //   cuBLAS error ("cuBLAS error (cublasGemmEx): CUBLAS_STATUS_...: m=.., n=.., k=..").
  void gemm(const Stream& stream, DataType t, int64_t m, int64_t n, int64_t k, std::uint64_t a,
            std::uint64_t b, std::uint64_t c, int64_t batch = 1) const;

 private:
  explicit Cublas(std::shared_ptr<detail::CublasState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::CublasState> state_;
};

}  // namespace tilevm::runtime
