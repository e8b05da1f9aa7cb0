// ConverterProgram: printing as CUDA and running on the CPU with the PTX semantics of each op.
#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "tilevm/codegen/cuda/converters.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"

namespace tilevm::codegen::cuda {

namespace {

using Kind = ConverterOp::Kind;

// Inline-PTX helpers shared by every converter; guarded so that converters can be concatenated.
constexpr const char* kHelpers = R"(#ifndef TILEVM_CONVERTER_HELPERS
#define TILEVM_CONVERTER_HELPERS
template <unsigned int kLut>
__device__ __forceinline__ unsigned int tvm_lop3(unsigned int a, unsigned int b, unsigned int c) {
  unsigned int d;
  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
  return d;
}
template <unsigned int kSelector>
__device__ __forceinline__ unsigned int tvm_prmt(unsigned int a, unsigned int b) {
  unsigned int d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "n"(kSelector));
  return d;
}
__device__ __forceinline__ unsigned int tvm_fma_f16x2(unsigned int a, unsigned int b, unsigned int c) {
  unsigned int d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned int tvm_fma_bf16x2(unsigned int a, unsigned int b, unsigned int c) {
  unsigned int d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// add.rn.bf16x2 needs sm_90; sm_80 gets the fma with 1.0 that cuda_bf16.h uses for __hadd2 there (one
// rounding of a + b either way).
__device__ __forceinline__ unsigned int tvm_add_f16x2(unsigned int a, unsigned int b) {
  unsigned int d;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ unsigned int tvm_add_bf16x2(unsigned int a, unsigned int b) {
  unsigned int d;
#if __CUDA_ARCH__ >= 900
  asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0x3f803f80u), "r"(b));
#endif
  return d;
}
__device__ __forceinline__ unsigned int tvm_cvt_f16x2_f32(unsigned int hi, unsigned int lo) {
  unsigned int d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(__uint_as_float(hi)), "f"(__uint_as_float(lo)));
  return d;
}
__device__ __forceinline__ unsigned int tvm_cvt_bf16x2_f32(unsigned int hi, unsigned int lo) {
  unsigned int d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(__uint_as_float(hi)), "f"(__uint_as_float(lo)));
  return d;
}
#endif  // TILEVM_CONVERTER_HELPERS
)";

std::string operand(const ConverterProgram& program, int index) {
  const ConverterOp& op = program.ops.at(static_cast<size_t>(index));
  if (op.kind == Kind::Const) return fmt::format("0x{:08x}u", op.imm);
  return fmt::format("v{}", index);
}

std::string expression(const ConverterProgram& p, const ConverterOp& op) {
  auto a = [&] { return operand(p, op.a); };
  auto b = [&] { return operand(p, op.b); };
  auto c = [&] { return operand(p, op.c); };
  switch (op.kind) {
    case Kind::Input:
      return fmt::format("in_words[{}]", op.imm);
    case Kind::Shl:
      return fmt::format("{} << {}", a(), op.imm);
    case Kind::Shr:
      return fmt::format("{} >> {}", a(), op.imm);
    case Kind::FunnelShr:
      return fmt::format("__funnelshift_r({}, {}, {})", a(), b(), op.imm);
    case Kind::Prmt:
      return fmt::format("tvm_prmt<0x{:04x}u>({}, {})", op.imm, a(), b());
    case Kind::Lop3:
      // Two-input functions print as C so that the compiler may fold them; the rest as lop3.
      if (op.imm == 0xc0) return fmt::format("{} & {}", a(), b());
      if (op.imm == 0xfc) return fmt::format("{} | {}", a(), b());
      if (op.imm == 0x3c) return fmt::format("{} ^ {}", a(), b());
      return fmt::format("tvm_lop3<0x{:02x}u>({}, {}, {})", op.imm, a(), b(), c());
    case Kind::Add:
      return fmt::format("{} + {}", a(), b());
    case Kind::FmaF16x2:
      return fmt::format("tvm_fma_f16x2({}, {}, {})", a(), b(), c());
    case Kind::FmaBf16x2:
      return fmt::format("tvm_fma_bf16x2({}, {}, {})", a(), b(), c());
    case Kind::AddF16x2:
      return fmt::format("tvm_add_f16x2({}, {})", a(), b());
    case Kind::AddBf16x2:
      return fmt::format("tvm_add_bf16x2({}, {})", a(), b());
    case Kind::AddF32:
      return fmt::format("__float_as_uint(__uint_as_float({}) + __uint_as_float({}))", a(), b());
    case Kind::MinF32:
      return fmt::format("__float_as_uint(fminf(__uint_as_float({}), __uint_as_float({})))", a(), b());
    case Kind::MaxF32:
      return fmt::format("__float_as_uint(fmaxf(__uint_as_float({}), __uint_as_float({})))", a(), b());
    case Kind::CvtF16x2F32:
      return fmt::format("tvm_cvt_f16x2_f32({}, {})", a(), b());
    case Kind::CvtBf16x2F32:
      return fmt::format("tvm_cvt_bf16x2_f32({}, {})", a(), b());
    case Kind::Const:
    case Kind::Output:
      break;
  }
  TILEVM_ASSERT(false, "no expression for converter op {}", static_cast<int>(op.kind));
  return {};
}

// ---- emulation -----------------------------------------------------------------------------------------

constexpr uint32_t kHardwareHalfNan = 0x7fff;  // what the PTX arithmetic produces for a NaN result

// IEEE rounding of an exact value to f16/bf16 (overflow gives infinity, unlike Cast, which saturates).
uint32_t round_to_half(DataType type, double value) {
  if (std::isnan(value)) return kHardwareHalfNan;
  // max + half an ulp: the first magnitude that rounds to infinity.
  const double overflow = type == DataType::f16() ? 65520.0 : std::ldexp(1.0, 128) - std::ldexp(1.0, 119);
  const uint32_t sign = std::signbit(value) ? 0x8000 : 0;
  if (std::fabs(value) >= overflow) return sign | static_cast<uint32_t>(type.inf_code(false));
  return static_cast<uint32_t>(encode(type, value));
}

uint32_t fma_x2(DataType type, uint32_t a, uint32_t b, uint32_t c) {
  uint32_t result = 0;
  for (int half = 0; half < 2; ++half) {
    const int shift = 16 * half;
    const double x = decode(type, (a >> shift) & 0xffff);
    const double y = decode(type, (b >> shift) & 0xffff);
    const double z = decode(type, (c >> shift) & 0xffff);
    // Exact for the products and sums a converter makes (a few significant bits, power-of-two scales).
    result |= round_to_half(type, std::fma(x, y, z)) << shift;
  }
  return result;
}

// a + b per half, rounded once: an fma by 1.0 (exactly how sm_80 adds bf16x2).
uint32_t add_x2(DataType type, uint32_t a, uint32_t b) {
  const uint32_t one = static_cast<uint32_t>(encode(type, 1.0));
  return fma_x2(type, a, one | one << 16, b);
}

uint32_t cvt_x2(DataType type, uint32_t hi, uint32_t lo) {
  const double high = std::bit_cast<float>(hi);
  const double low = std::bit_cast<float>(lo);
  return round_to_half(type, high) << 16 | round_to_half(type, low);
}

uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector) {
  const uint64_t bytes = static_cast<uint64_t>(b) << 32 | a;
  uint32_t result = 0;
  for (int n = 0; n < 4; ++n) {
    const uint32_t s = (selector >> (4 * n)) & 0xf;
    uint32_t byte = static_cast<uint32_t>(bytes >> (8 * (s & 7))) & 0xff;
    if (s & 8) byte = (byte & 0x80) ? 0xff : 0;
    result |= byte << (8 * n);
  }
  return result;
}

uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
  uint32_t result = 0;
  for (int i = 0; i < 32; ++i) {
    const uint32_t index = ((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1);
    result |= ((lut >> index) & 1) << i;
  }
  return result;
}

float as_float(uint32_t x) {
  return std::bit_cast<float>(x);
}
uint32_t as_bits(float x) {
  return std::bit_cast<uint32_t>(x);
}

}  // namespace

bool has_vectorized_converter(DataType from, DataType to) {
  return from.bits() <= 8 && (to == DataType::f16() || to == DataType::bf16() || to == DataType::f32());
}

bool is_identity_order(const std::vector<int>& order) {
  for (size_t k = 0; k < order.size(); ++k) {
    if (order[k] != static_cast<int>(k)) return false;
  }
  return true;
}

namespace {

// Whether `order` is empty or holds each of 0 .. count-1 once.
bool is_permutation_of(const std::vector<int>& order, int count) {
  if (order.empty()) return true;
  if (order.size() != static_cast<size_t>(count)) return false;
  std::vector<bool> seen(order.size(), false);
  for (int k : order) {
    if (k < 0 || k >= count || seen[static_cast<size_t>(k)]) return false;
    seen[static_cast<size_t>(k)] = true;
  }
  return true;
}

}  // namespace

bool has_vectorized_converter(const ConverterSpec& spec) {
  // Every permutation is generated: the builder reads each code through the order.
  return has_vectorized_converter(spec.from, spec.to) && spec.count >= 1 &&
         is_permutation_of(spec.order, spec.count);
}

int natural_converter_count(DataType from) {
  const int words_aligned = 32 / std::gcd(32, from.bits());
  return std::max(words_aligned, 8);
}

std::string converter_function_name(DataType from, DataType to, int count) {
  return fmt::format("tvm_convert_{}_to_{}_x{}", from.name(), to.name(), count);
}

std::string converter_function_name(const ConverterSpec& spec) {
  std::string name = converter_function_name(spec.from, spec.to, spec.count);
  if (is_identity_order(spec.order)) return name;
  uint32_t hash = 2166136261u;  // FNV-1a over the order's values
  for (int k : spec.order) {
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= static_cast<uint32_t>(k) >> (8 * byte) & 0xff;
      hash *= 16777619u;
    }
  }
  return fmt::format("{}_o{:08x}", name, hash);
}

int converter_input_words(const ConverterSpec& spec) {
  return (spec.count * spec.from.bits() + 31) / 32;
}

int converter_output_words(const ConverterSpec& spec) {
  return spec.to == DataType::f32() ? spec.count : (spec.count + 1) / 2;
}

std::string print_converter_program(const ConverterProgram& program, const std::string& function_name) {
  std::string out = kHelpers;
  const ConverterSpec& spec = program.spec;
  out += fmt::format("// {} x {} -> {}: {} input word(s), {} output word(s)\n", spec.from.name(), spec.count,
                     spec.to.name(), converter_input_words(spec), converter_output_words(spec));
  for (const std::string& note : program.notes) out += "// " + note + "\n";
  out += fmt::format(
      "__device__ __forceinline__ void {}(const unsigned int* __restrict__ in_words, "
      "unsigned int* __restrict__ out_words) {{\n",
      function_name);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const ConverterOp& op = program.ops[i];
    if (op.kind == Kind::Const) continue;
    if (op.kind == Kind::Output) {
      out += fmt::format("  out_words[{}] = {};\n", op.imm, operand(program, op.a));
      continue;
    }
    out += fmt::format("  const unsigned int v{} = {};\n", i, expression(program, op));
  }
  out += "}\n";
  return out;
}

std::vector<uint32_t> emulate_converter_program(const ConverterProgram& program,
                                                const std::vector<uint32_t>& in_words) {
  std::vector<uint32_t> out(static_cast<size_t>(converter_output_words(program.spec)), 0);
  std::vector<uint32_t> v(program.ops.size(), 0);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const ConverterOp& op = program.ops[i];
    auto a = [&] { return v.at(static_cast<size_t>(op.a)); };
    auto b = [&] { return v.at(static_cast<size_t>(op.b)); };
    auto c = [&] { return v.at(static_cast<size_t>(op.c)); };
    switch (op.kind) {
      case Kind::Input:
        v[i] = in_words.at(op.imm);
        break;
      case Kind::Const:
        v[i] = op.imm;
        break;
      case Kind::Shl:
        v[i] = a() << op.imm;
        break;
      case Kind::Shr:
        v[i] = a() >> op.imm;
        break;
      case Kind::FunnelShr:
        v[i] = static_cast<uint32_t>((static_cast<uint64_t>(b()) << 32 | a()) >> (op.imm & 31));
        break;
      case Kind::Prmt:
        v[i] = prmt(a(), b(), op.imm);
        break;
      case Kind::Lop3:
        v[i] = lop3(a(), b(), c(), op.imm);
        break;
      case Kind::Add:
        v[i] = a() + b();
        break;
      case Kind::FmaF16x2:
        v[i] = fma_x2(DataType::f16(), a(), b(), c());
        break;
      case Kind::FmaBf16x2:
        v[i] = fma_x2(DataType::bf16(), a(), b(), c());
        break;
      case Kind::AddF16x2:
        v[i] = add_x2(DataType::f16(), a(), b());
        break;
      case Kind::AddBf16x2:
        v[i] = add_x2(DataType::bf16(), a(), b());
        break;
      case Kind::AddF32:
        v[i] = as_bits(as_float(a()) + as_float(b()));
        break;
      case Kind::MinF32:
        v[i] = as_bits(std::fmin(as_float(a()), as_float(b())));
        break;
      case Kind::MaxF32:
        v[i] = as_bits(std::fmax(as_float(a()), as_float(b())));
        break;
      case Kind::CvtF16x2F32:
        v[i] = cvt_x2(DataType::f16(), a(), b());
        break;
      case Kind::CvtBf16x2F32:
        v[i] = cvt_x2(DataType::bf16(), a(), b());
        break;
      case Kind::Output:
        out.at(op.imm) = a();
        break;
    }
  }
  return out;
}

}  // namespace tilevm::codegen::cuda
