// TMA tensor maps: the 128-byte descriptor (CUtensorMap) that a cp.async.bulk.tensor copy reads, encoded by
// the driver (cuTensorMapEncodeTiled, loaded at run time) from a global tensor and the tile (box) each copy
// moves. The kernel receives it by value as a __grid_constant__ parameter; exec/gpu_program.cpp encodes one
// per KernelParam::Kind::TensorMap at every launch, from the launch's pointer and scalar arguments.
//
//   TensorMap m = encode_tensor_map({.address = x.device_ptr(), .element_bytes = 2,
//                                    .dims = {M, N}, .strides = {N * 2, 2}, .box = {16, 64}});
//
// Dimensions are given outermost first (as the VM's shapes are); the driver's innermost-first order is this
// function's business. No interleave; elements outside the tensor read as zero. With swizzle_bytes S (32, 64,
// 128) the box's rows must be S bytes, and the TMA permutes their 16-byte chunks (target/tma_swizzle.h).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tilevm::runtime {

struct alignas(64) TensorMap {
  std::array<std::uint64_t, 16> bytes{};
};

struct TensorMapDesc {
  std::uint64_t address = 0;           // device address of element [0, ..., 0]: 16-byte aligned
  int element_bytes = 0;               // 1, 2, 4 or 8
  std::vector<std::uint64_t> dims;     // extents, outermost first (1 to 5 of them)
  std::vector<std::uint64_t> strides;  // bytes between consecutive indices, outermost first; the last is
                                       // element_bytes (contiguous), the others multiples of 16
  std::vector<std::uint32_t> box;      // the tile, outermost first: 1 to 256 each
  int swizzle_bytes = 0;               // 0, 32, 64 or 128
};

// @throws tilevm::Error naming the offending value when the descriptor breaks a rule above, or with the
// driver's message when encoding fails.
TensorMap encode_tensor_map(const TensorMapDesc& desc);

}  // namespace tilevm::runtime
