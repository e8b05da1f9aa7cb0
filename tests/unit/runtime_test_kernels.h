// CUDA sources shared by the runtime tests: compiled by NVRTC everywhere (runtime_nvrtc_test.cpp) and
// launched where there is a GPU (runtime_gpu_test.cpp).
#pragma once

namespace tilevm::runtime::testing {

const char* const kSaxpy = R"(
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

// One warp: cp.async A (16x16 f16, row-major) and B (16x8 f16, row-major K x N) into shared memory, ldmatrix
// them into mma fragments (B transposed), one mma.sync.m16n8k16 with f32 accumulators; each lane writes its
// four accumulators (c0, c1: row lane/4, columns 2*(lane%4)+{0,1}; c2, c3: row lane/4+8).
const char* const kMmaTile = R"(
#include <cuda_fp16.h>
extern "C" __global__ void mma_tile(const half* a, const half* b, float* d) {
  __shared__ alignas(128) half sa[16 * 16];
  __shared__ alignas(128) half sb[16 * 8];
  int lane = threadIdx.x;
  unsigned sa_addr = static_cast<unsigned>(__cvta_generic_to_shared(sa + lane * 8));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(sa_addr), "l"(a + lane * 8));
  if (lane < 16) {
    unsigned sb_addr = static_cast<unsigned>(__cvta_generic_to_shared(sb + lane * 8));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(sb_addr), "l"(b + lane * 8));
  }
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
  unsigned a0, a1, a2, a3, b0, b1;
  unsigned a_row = static_cast<unsigned>(__cvta_generic_to_shared(sa + (lane % 16) * 16 + (lane / 16) * 8));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(a_row));
  unsigned b_row = static_cast<unsigned>(__cvta_generic_to_shared(sb + (lane % 16) * 8));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(b0), "=r"(b1) : "r"(b_row));
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  d[lane * 4 + 0] = c0; d[lane * 4 + 1] = c1; d[lane * 4 + 2] = c2; d[lane * 4 + 3] = c3;
}
)";

}  // namespace tilevm::runtime::testing
