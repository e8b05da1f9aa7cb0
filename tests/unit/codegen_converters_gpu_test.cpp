// The generated converters and the scalar conversion library on the GPU, bit for bit against the CPU
// reference (tilevm::cast_code, decode, encode). Skipped, and reported as skipped, without a GPU or NVRTC.
// On a GPU machine: tilevm_unit_tests --gtest_filter='ConvertersGpu*'
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "converter_orders.h"
#include "tilevm/codegen/cuda/converters.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/module.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::codegen::cuda {
namespace {

using runtime::Device;
using runtime::DeviceBuffer;
using runtime::Module;

uint64_t code_count(DataType t) {
  return t.is_bool() ? 256 : uint64_t{1} << t.bits();
}

class ConvertersGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Device::available()) GTEST_SKIP() << "no CUDA device";
    if (!runtime::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
    device_ = Device::open();
  }

  Module load(const std::string& source, const std::string& name) {
    const runtime::CompiledKernel compiled = runtime::compile_cuda(source, name, {.arch = device_->arch()});
    return Module::load(*device_, compiled.cubin, name);
  }

  template <typename T>
  DeviceBuffer upload(const std::vector<T>& data) {
    DeviceBuffer buffer = device_->allocate(std::max<size_t>(data.size() * sizeof(T), 4));
    if (!data.empty()) buffer.copy_from_host(data.data(), data.size() * sizeof(T));
    return buffer;
  }

  // Runs the check kernel of `from` (count elements, `order`) on groups g holding codes (g + 7i) mod
  // code_count, packed with every padding bit set: output element k of group g must be the cast of its code
  // order[k].
  void check_on_gpu(const runtime::Stream& stream, DataType from, int count, const std::vector<int>& order);

  std::optional<Device> device_;
};

void ConvertersGpu::check_on_gpu(const runtime::Stream& stream, DataType from, int count,
                                 const std::vector<int>& order) {
  const int in_words = converter_input_words({from, DataType::f16(), count});
  const auto groups = static_cast<int>(code_count(from));
  std::vector<uint64_t> codes;
  std::vector<uint32_t> words;
  for (int g = 0; g < groups; ++g) {
    std::vector<uint64_t> group;
    for (int i = 0; i < count; ++i)
      group.push_back((static_cast<uint64_t>(g) + 7 * static_cast<uint64_t>(i)) % code_count(from));
    std::vector<uint8_t> bytes = pack(from, group);
    bytes.resize(static_cast<size_t>(in_words) * 4, 0xff);
    const size_t used = static_cast<size_t>(count * from.bits());
    if (used % 8 != 0) bytes[used / 8] |= static_cast<uint8_t>(0xff << (used % 8));
    std::vector<uint32_t> group_words(static_cast<size_t>(in_words));
    std::memcpy(group_words.data(), bytes.data(), bytes.size());
    words.insert(words.end(), group_words.begin(), group_words.end());
    codes.insert(codes.end(), group.begin(), group.end());
  }
  const std::string name = "convert_" + from.name() + (order.empty() ? "" : "_reordered") + ".cu";
  const Module module = load(emit_converter_check_kernel(from, count, order), name);
  const DeviceBuffer in = upload(words);
  const DataType destinations[] = {DataType::f16(), DataType::bf16(), DataType::f32()};
  std::vector<DeviceBuffer> outs;
  for (DataType to : destinations) {
    outs.push_back(
        device_->allocate(static_cast<size_t>(groups * converter_output_words({from, to, count})) * 4));
  }
  module.kernel(converter_check_kernel_name(from))
      .launch({.grid = {static_cast<unsigned>((groups + 127) / 128)}, .block = {128}}, stream,
              in.device_ptr(), outs[0].device_ptr(), outs[1].device_ptr(), outs[2].device_ptr(), groups);
  stream.synchronize();
  for (size_t d = 0; d < 3; ++d) {
    const DataType to = destinations[d];
    const std::vector<uint32_t> out = outs[d].download<uint32_t>();
    const int out_words = converter_output_words({from, to, count});
    int mismatches = 0;
    for (int g = 0; g < groups; ++g) {
      for (int i = 0; i < count; ++i) {
        const size_t word = static_cast<size_t>(g * out_words) + (to == DataType::f32() ? i : i / 2);
        const uint32_t actual = to == DataType::f32() ? out[word] : (out[word] >> (16 * (i % 2))) & 0xffff;
        const int source = order.empty() ? i : order[static_cast<size_t>(i)];
        const uint64_t code = codes[static_cast<size_t>(g * count + source)];
        const uint64_t expected = cast_code(from, to, code);
        if (actual != expected && ++mismatches <= 5) {
          ADD_FAILURE() << from.name() << " -> " << to.name() << (order.empty() ? "" : " reordered")
                        << ": element " << i << " code 0x" << std::hex << code << " gives 0x" << actual
                        << ", expected 0x" << expected;
        }
      }
    }
    EXPECT_EQ(mismatches, 0) << from.name() << " -> " << to.name() << (order.empty() ? "" : " reordered");
  }
}

TEST_F(ConvertersGpu, EveryConverterMatchesCastCodeBitForBit) {
  const runtime::Stream stream = device_->create_stream();
  for (DataType from : all_data_types()) {
    if (from.bits() <= 8) check_on_gpu(stream, from, natural_converter_count(from), {});
  }
}

// The quantized matmul's weight order (pair p of word w reads bits p*b and 16 + p*b: shared shifts, add.rn
// and fma per pair, no prmt) for the types whose bits divide 16, and a reversed order (pairs across words,
// two-word prmts) for every type.
TEST_F(ConvertersGpu, ReorderingConvertersMatchCastCodeBitForBit) {
  const runtime::Stream stream = device_->create_stream();
  for (DataType from : all_data_types()) {
    if (from.bits() > 8) continue;
    if (16 % from.bits() == 0) {
      const int count = 2 * 32 / from.bits();
      const std::vector<int> order = testing::interleaved_order(from, count);
      check_on_gpu(stream, from, count, order);
    }
    const int count = natural_converter_count(from) + 5;
    check_on_gpu(stream, from, count, testing::reversed_order(count));
  }
}

// Values an encoder must get right: every value of the type that f32 holds, every midpoint between
// neighbours, the floats next to them, values beyond the range, and the special values.
std::vector<float> encode_probes(DataType t) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> probes{0.0f,
                            -0.0f,
                            kInf,
                            -kInf,
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::lowest(),
                            1e30f,
                            -1e30f,
                            0.5f,
                            -0.5f,
                            1.5f,
                            2.5f,
                            -2.5f};
  for (int e = -40; e <= 70; ++e) {
    for (float m : {1.0f, 1.5f, 0.75f}) {
      probes.push_back(std::ldexp(m, e));
      probes.push_back(-std::ldexp(m, e));
    }
  }
  auto add_around = [&](double value) {
    const auto f = static_cast<float>(value);
    if (static_cast<double>(f) != value || std::isinf(f)) return;
    probes.push_back(f);
    probes.push_back(std::nextafter(f, kInf));
    probes.push_back(std::nextafter(f, -kInf));
  };
  if (t.bits() <= 16) {
    const uint64_t codes = code_count(t);
    std::vector<double> values;
    for (uint64_t c = 0; c < codes; ++c) {
      const double v = decode(t, c);
      if (std::isnan(v)) continue;
      add_around(v);
      if (t.is_integer()) {
        for (double frac : {0.25, 0.5, 0.75}) add_around(v + frac);
      }
    }
    if (t.is_float()) {
      for (uint64_t c = 0; c < t.max_code(); ++c) {
        const double mid = (decode(t, c) + decode(t, c + 1)) / 2;
        add_around(mid);
        add_around(-mid);
      }
      add_around(t.max_value() * 2);
      add_around(-t.max_value() * 2);
    }
  } else {
    for (double v :
         {2147483648.0, 2147483520.0, 4294967296.0, 4294967040.0, 9223372036854775808.0,
          18446744073709551616.0, 9223371487098961920.0, 18446742974197923840.0, 16777217.0, 16777216.0}) {
      add_around(v);
      add_around(-v);
    }
  }
  return probes;
}

TEST_F(ConvertersGpu, ScalarLibraryMatchesDecodeAndEncode) {
  const runtime::Stream stream = device_->create_stream();
  for (DataType t : all_data_types()) {
    std::vector<uint32_t> codes;
    if (has_scalar_decoder(t)) {
      if (t.bits() <= 16) {
        for (uint64_t c = 0; c < code_count(t); ++c) codes.push_back(static_cast<uint32_t>(c));
      } else {  // f32: a sample, including NaN payloads and subnormals
        for (uint32_t c : {0u, 0x80000000u, 1u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,
                           0x3f800000u, 0x007fffffu, 0xff7fffffu})
          codes.push_back(c);
      }
    }
    const std::vector<float> values = encode_probes(t);
    const Module module = load(emit_scalar_check_kernel(t), "scalar_" + t.name() + ".cu");
    DeviceBuffer code_buffer = upload(codes);
    DeviceBuffer value_buffer = upload(values);
    DeviceBuffer decoded = device_->allocate(std::max<size_t>(codes.size(), 1) * 4);
    DeviceBuffer encoded = device_->allocate(values.size() * 8);
    const int n = static_cast<int>(codes.size());
    const int m = static_cast<int>(values.size());
    const unsigned blocks = static_cast<unsigned>((std::max(n, m) + 255) / 256);
    module.kernel(scalar_check_kernel_name(t))
        .launch({.grid = {blocks}, .block = {256}}, stream, code_buffer.device_ptr(), decoded.device_ptr(), n,
                value_buffer.device_ptr(), encoded.device_ptr(), m);
    stream.synchronize();
    const std::vector<uint32_t> decoded_host = decoded.download<uint32_t>();
    int mismatches = 0;
    for (int i = 0; i < n; ++i) {
      const uint64_t expected = cast_code(t, DataType::f32(), codes[static_cast<size_t>(i)]);
      if (decoded_host[static_cast<size_t>(i)] != expected && ++mismatches <= 5) {
        ADD_FAILURE() << "decode " << t.name() << " code 0x" << std::hex << codes[static_cast<size_t>(i)]
                      << " gives 0x" << decoded_host[static_cast<size_t>(i)] << ", expected 0x" << expected;
      }
    }
    const std::vector<uint64_t> encoded_host = encoded.download<uint64_t>();
    for (int i = 0; i < m; ++i) {
      const float value = values[static_cast<size_t>(i)];
      const uint64_t expected = encode(t, static_cast<double>(value));
      if (encoded_host[static_cast<size_t>(i)] != expected && ++mismatches <= 10) {
        ADD_FAILURE() << "encode " << t.name() << " of " << value << " (0x" << std::hex
                      << std::bit_cast<uint32_t>(value) << ") gives 0x"
                      << encoded_host[static_cast<size_t>(i)] << ", expected 0x" << expected;
      }
    }
    EXPECT_EQ(mismatches, 0) << t.name();
  }
}

}  // namespace
}  // namespace tilevm::codegen::cuda
