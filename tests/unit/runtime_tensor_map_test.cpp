// runtime::encode_tensor_map's rules (runtime/tensor_map.h): a descriptor the tensor-memory accelerator
// cannot use is an error with its numbers, found before the driver is asked (so these run without a GPU).
#include "tilevm/runtime/tensor_map.h"

#include <gtest/gtest.h>

#include "expect_error.h"

namespace tilevm::runtime {
namespace {

TensorMapDesc valid() {
  return {.address = 0x1000, .element_bytes = 2, .dims = {8, 8}, .strides = {16, 2}, .box = {8, 8}};
}

TEST(RuntimeTensorMap, RulesAreCheckedWithTheirNumbers) {
  TensorMapDesc d = valid();
  d.address = 0x1008;
  expect_error([&] { encode_tensor_map(d); }, "16-byte aligned global address, got 0x1008");
  d = valid();
  d.dims = {8, 12};
  d.strides = {24, 2};
  expect_error([&] { encode_tensor_map(d); }, "dimension 0 has a stride of 24 bytes");
  d = valid();
  d.box = {8, 512};
  expect_error([&] { encode_tensor_map(d); }, "extent 512 is not 1 to 256");
  d = valid();
  d.strides = {16, 4};
  expect_error([&] { encode_tensor_map(d); }, "last dimension must be contiguous: stride 4 bytes");
  d = valid();
  d.element_bytes = 3;
  expect_error([&] { encode_tensor_map(d); }, "1, 2, 4 or 8 bytes, got 3");
  d = valid();
  d.dims = {1, 1, 1, 1, 1, 8};
  expect_error([&] { encode_tensor_map(d); }, "1 to 5 dimensions, got 6");
  d = valid();
  d.box = {8};
  expect_error([&] { encode_tensor_map(d); }, "got 2 strides and a box of rank 1");
}

}  // namespace
}  // namespace tilevm::runtime
