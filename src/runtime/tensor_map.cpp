// Tensor-map encoding (tensor_map.h). The rules are checked here first so that a bad view gets a message
// with its numbers instead of the driver's CUDA_ERROR_INVALID_VALUE.
#include "tilevm/runtime/tensor_map.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cuda_driver.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {

TensorMap encode_tensor_map(const TensorMapDesc& d) {
  const size_t rank = d.dims.size();
  if (rank < 1 || rank > 5) fail("a tensor map has 1 to 5 dimensions, got {}", rank);
  if (d.strides.size() != rank || d.box.size() != rank)
    fail("a tensor map of rank {} got {} strides and a box of rank {}", rank, d.strides.size(), d.box.size());
  CUtensorMapDataType type;
  switch (d.element_bytes) {
    case 1:
      type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
      break;
    case 2:
      type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
      break;
    case 4:
      type = CU_TENSOR_MAP_DATA_TYPE_UINT32;
      break;
    case 8:
      type = CU_TENSOR_MAP_DATA_TYPE_UINT64;
      break;
    default:
      fail("a tensor map's elements are 1, 2, 4 or 8 bytes, got {}", d.element_bytes);
  }
  if (d.address % 16 != 0)
    fail("the tensor-memory accelerator needs a 16-byte aligned global address, got 0x{:x}", d.address);
  if (d.strides.back() != static_cast<std::uint64_t>(d.element_bytes))
    fail("a tensor map's last dimension must be contiguous: stride {} bytes for {}-byte elements",
         d.strides.back(), d.element_bytes);
  for (size_t i = 0; i < rank; ++i) {
    if (d.dims[i] < 1 || d.dims[i] > (std::uint64_t{1} << 32))
      fail("tensor map dimension {} has extent {}; it must be 1 to 2^32", i, d.dims[i]);
    if (d.box[i] < 1 || d.box[i] > 256)
      fail("tensor map box [{}]: extent {} is not 1 to 256", fmt::join(d.box, ", "), d.box[i]);
    if (i + 1 < rank && (d.strides[i] % 16 != 0 || d.strides[i] >= (std::uint64_t{1} << 40)))
      fail("tensor map dimension {} has a stride of {} bytes; it must be a multiple of 16 below 2^40", i,
           d.strides[i]);
  }
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  switch (d.swizzle_bytes) {
    case 0:
      break;
    case 32:
      swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
      break;
    case 64:
      swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
      break;
    case 128:
      swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
      break;
    default:
      fail("a tensor map swizzles rows of 32, 64 or 128 bytes, not {}", d.swizzle_bytes);
  }
  if (d.swizzle_bytes && d.box.back() * static_cast<std::uint64_t>(d.element_bytes) !=
                             static_cast<std::uint64_t>(d.swizzle_bytes))
    fail("a {}-byte swizzled tensor map needs box rows of {} bytes, got {} elements of {} bytes",
         d.swizzle_bytes, d.swizzle_bytes, d.box.back(), d.element_bytes);
  // The driver's order: innermost first; strides of all but the innermost dimension.
  std::vector<cuuint64_t> dims(d.dims.rbegin(), d.dims.rend());
  std::vector<cuuint64_t> strides;
  for (size_t i = rank - 1; i-- > 0;) strides.push_back(d.strides[i]);
  std::vector<cuuint32_t> box(d.box.rbegin(), d.box.rend());
  std::vector<cuuint32_t> element_strides(rank, 1);
  const detail::DriverApi& api = detail::driver_api();
  TensorMap map;
  detail::check_cuda(
      api,
      api.cuTensorMapEncodeTiled(
          reinterpret_cast<CUtensorMap*>(map.bytes.data()), type, static_cast<cuuint32_t>(rank),
          reinterpret_cast<void*>(static_cast<std::uintptr_t>(d.address)), dims.data(), strides.data(),
          box.data(), element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
          CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
      "cuTensorMapEncodeTiled", {},
      fmt::format("dims [{}], box [{}]", fmt::join(d.dims, ", "), fmt::join(d.box, ", ")));
  return map;
}

}  // namespace tilevm::runtime
