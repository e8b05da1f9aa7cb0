// The check kernels of converters.h: the converters and the scalar library wrapped in kernels for the tests.
#include <fmt/format.h>

#include "tilevm/codegen/cuda/converters.h"

namespace tilevm::codegen::cuda {

std::string converter_check_kernel_name(DataType from) {
  return "tvm_check_convert_" + from.name();
}

std::string emit_converter_check_kernel(DataType from, int count, const std::vector<int>& order) {
  std::string out;
  std::string body;
  const int in_words = converter_input_words({from, DataType::f16(), count});
  for (DataType to : {DataType::f16(), DataType::bf16(), DataType::f32()}) {
    const ConverterSpec spec{from, to, count, order};
    const std::string name = converter_function_name(spec);
    out += emit_converter(spec, name);
    const int out_words = converter_output_words(spec);
    body += fmt::format(
        "  {{\n"
        "    unsigned int result[{0}];\n"
        "    {1}(source, result);\n"
        "    for (int i = 0; i < {0}; ++i) out_{2}[g * {0} + i] = result[i];\n"
        "  }}\n",
        out_words, name, to.name());
  }
  out += fmt::format(
      "extern \"C\" __global__ void {0}(const unsigned int* in, unsigned int* out_f16, unsigned int* "
      "out_bf16,\n"
      "                                 unsigned int* out_f32, int groups) {{\n"
      "  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);\n"
      "  if (g >= groups) return;\n"
      "  unsigned int source[{1}];\n"
      "  for (int i = 0; i < {1}; ++i) source[i] = in[g * {1} + i];\n"
      "{2}"
      "}}\n",
      converter_check_kernel_name(from), in_words, body);
  return out;
}

std::string scalar_check_kernel_name(DataType type) {
  return "tvm_check_scalar_" + type.name();
}

std::string emit_scalar_check_kernel(DataType type) {
  std::string out = emit_scalar_conversion_functions(type);
  const std::string decode = has_scalar_decoder(type)
                                 ? fmt::format("  if (i < n) decoded[i] = __float_as_uint({}(codes[i]));\n",
                                               scalar_decode_function_name(type))
                                 : std::string();
  out += fmt::format(
      "extern \"C\" __global__ void {0}(const unsigned int* codes, unsigned int* decoded, int n,\n"
      "                                 const float* values, unsigned long long* encoded, int m) {{\n"
      "  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);\n"
      "{1}"
      "  if (i < m) encoded[i] = static_cast<unsigned long long>({2}(values[i]));\n"
      "}}\n",
      scalar_check_kernel_name(type), decode, scalar_encode_function_name(type));
  return out;
}

}  // namespace tilevm::codegen::cuda
