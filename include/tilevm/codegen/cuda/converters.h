// Generated register converters from every type of 8 bits or fewer to f16, bf16 and f32, and a scalar
// conversion library for every other cast: sub-byte casts are generated, not special-cased (docs/design.md).
//
// A vectorized converter is a straight-line CUDA function that turns `count` packed source codes into
// `count` destination values, two elements per 32-bit register word, with integer tricks instead of
// per-element decoding:
//
//   source (count codes, docs/language.md packing)   destination
//   in_words[i] holds stream bits [32i, 32i+32):             f16/bf16: out_words[k/2] holds element k in its
//   element k is bits [k*b, (k+1)*b), possibly straddling    low half (k even) or high half (k odd);
//   two words; bits after count*b are ignored                f32: out_words[k] holds element k
//
// Per pair of elements (2j, 2j+1) the converter first builds one word with the two codes at the same bit
// position t of each 16-bit half (two shifts or funnel shifts and a prmt; a single prmt for 8-bit types), and
// then works on both halves at once:
//   integers  (code & mask) ^ (magic | sign bit) with one lop3, then one f16x2/bf16x2 fma subtracting
//             magic + 2^(b-1) (signed) or magic (unsigned): magic is 1024 (0x6400) for f16, 128 (0x4300)
//             for bf16. u8/i8 to f16 is one prmt per pair; u8/i8 to bf16 and f32 go through the f32 magic
//             2^23 (one prmt and one f32 add per element, then a cvt.rn.bf16x2.f32).
//   floats    the mantissa aligned with the destination's mantissa (t = M_dst - M), the sign moved to bit
//             15 (shl, and, lop3), then one fma by 2^(bias_dst - bias_src): exact for normal and subnormal
//             sources because the destination has more exponent range. Infinity (E >= 5) and NaN (f8e4m3,
//             E >= 5) are fixed up with a mask built by an add and a sign-replicating prmt, and a lop3
//             select. f8e5m2 and f7e5m1 to f16 need no scale: the placed bits are the f16 code. f8e6m1 (the
//             only source with more exponent range than f16) to f16: exact bf16 first, then both values as
//             f32, clamped to +-65504 and rounded by cvt.rn.f16x2.f32 (round to nearest even, saturating as
//             Cast does), then the inf/NaN fix-up.
//   bool      nonzero bytes found with an add (one per 4 elements), then a sign-replicating prmt and an and.
//   to f32    the bf16 result widened by a shift (low half) and an and (high half): exact.
// Every result is bit-for-bit tilevm::cast_code(from, to, code) (NaN is the destination's canonical NaN).
//
// Reordering (ConverterSpec::order): output element k converts source code order[k]. Every step above reads
// its codes through the order, so every permutation of every source type gives a correct converter, at
// about the identity's cost: the prmts that place a pair already take bytes from two operands, so a pair
// whose codes lie in two words costs no more (bools, 8-bit floats, sub-byte integers inside bytes), except
// u8/i8 to f16, whose one-prmt trick needs the magic's byte as the second operand and so gathers the two
// bytes with a prmt and adds the magic with a lop3 (one instruction more per such pair).
// The order pays off where it puts the two codes of a pair 16 bits apart in one word, at offsets o and o + 16
// with o + b <= 16, as the quantized matmul's weight transform stores them (b = 1, 2, 4: pair p of word w
// reads bits p*b and 16 + p*b of w). Both codes then already sit at the same position of their halves, so
// placing them needs no prmt:
//   integers  the word shifted right by s puts both at offset o - s, inside the mantissa when
//             o - s + b <= 10 (f16) or 7 (bf16); then the usual lop3 at that offset and ONE f16x2/bf16x2 op:
//             where o == s an add.rn of -(magic + bias) (an immediate operand in SASS: no constant register),
//             else an fma by 2^-(o-s) plus -(magic*2^-(o-s) + bias), exact as before. All pairs of a word
//             share its shifts, chosen as few as possible (shift 0, the word itself, serves o <= M - b; each
//             further shift starts at the lowest offset not yet served). u4 to f16: the word for o = 0, 4 and
//             word >> 8 for o = 8, 12, 9 instructions per 4 pairs (2.25 per pair instead of 3); u2: 2.125;
//             u1: 2.06; to bf16 (shorter mantissa, more shifts) u4 2.75, u2 2.25, u1 2.125.
//   floats    one shift of the word by t - o places the pair (instead of two extracts and a prmt), and the
//             sign bits come from another shift of the word rather than of the placed pair, so amounts that
//             coincide are made once; the rest of the float steps stay (f4e2m1 to f16 or bf16: 4.75 per pair
//             instead of 7).
//
// The converter is built as a small straight-line program (ConverterProgram) that is both printed as CUDA and
// run on the CPU by an emulator of the PTX instructions it uses, so every converter is tested exhaustively
// without a GPU (tests/unit/codegen_converters_test.cpp) and again on the GPU
// (tests/unit/codegen_converters_gpu_test.cpp).
//
// Example:
//   std::string f = emit_converter({DataType::parse("u4"), DataType::f16(), 8}, "cvt_u4_f16_x8");
//   // __device__ __forceinline__ void cvt_u4_f16_x8(const unsigned int* in_words, unsigned int* out_words)
//   // reads in_words[0] (8 x 4 bits) and writes out_words[0..3]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilevm/type/data_type.h"

namespace tilevm::codegen::cuda {

struct ConverterSpec {
  DataType from;  // any type of 8 bits or fewer (bool, i1..i8, u1..u8, f<b>e<E>m<M>)
  DataType to;    // f16, bf16 or f32
  int count = 0;  // elements converted, >= 1 (any count; natural choices make count*bits a multiple of 32)
  // Output element k is the conversion of source code order[k] (a permutation of 0 .. count-1); empty means
  // code k. A Cast whose result layout orders a thread's slots differently from its operand's converts
  // through such a converter, so the reordering costs nothing where the codes are placed well: weights stored
  // with the codes of each output pair 16 bits apart in one word need no prmt to place the pair.
  std::vector<int> order;
};

// Whether `order` is empty or 0, 1, ..., n-1: a converter that does not reorder.
bool is_identity_order(const std::vector<int>& order);

// Whether a vectorized converter exists for (from, to): from has 8 bits or fewer and to is f16, bf16 or f32.
bool has_vectorized_converter(DataType from, DataType to);
// The same for a whole spec: (from, to) as above, count >= 1, and an order that is empty or a permutation
// of 0 .. count-1 (every permutation is supported, for every source type).
bool has_vectorized_converter(const ConverterSpec& spec);

// The natural element count for a source type: the smallest count >= 8 whose packed codes fill whole 32-bit
// words and whose f16 results fill whole words: 32 / gcd(32, bits) rounded up to at least 8 (u4: 8, u3: 32,
// u6: 16, u8: 8, bool: 8).
int natural_converter_count(DataType from);

// The deterministic function name used by tilevm for a converter, e.g. "tvm_convert_f6e3m2_to_f16_x16".
std::string converter_function_name(DataType from, DataType to, int count);
// The same for a spec; an order other than the identity adds a suffix naming it (a hash of the order:
// "tvm_convert_u4_to_f16_x128_o1a2b3c4d"). An explicit identity order names the same function as an empty
// one: the converters are the same.
std::string converter_function_name(const ConverterSpec& spec);

// Words read and written by a converter: ceil(count * from.bits() / 32) and ceil(count / 2) (f16, bf16) or
// count (f32).
int converter_input_words(const ConverterSpec& spec);
int converter_output_words(const ConverterSpec& spec);

// The CUDA source of `__device__ __forceinline__ void NAME(const unsigned int* in_words,
// unsigned int* out_words)` (unsigned int is uint32_t), preceded by a small guarded block of inline-PTX
// helpers (lop3, prmt, f16x2/bf16x2 fma and add, cvt) shared by all converters, so several converters may be
// concatenated into one translation unit. Needs sm_80 or newer (bf16x2 fma, cvt.*x2.f32). When count is
// odd, the high half of the last f16/bf16 word is +0. A Cast without a converter converts per element
// through the prelude's tv_cast; the scalar library below is for hand-written CUDA, codegen does not use it.
// @throws tilevm::InternalError when !has_vectorized_converter(spec).
std::string emit_converter(const ConverterSpec& spec, const std::string& function_name);

// ---------------------------------------------------------------------------------------------------------
// The scalar conversion library: plain device functions, one decoder and one encoder per type, with the Cast
// semantics of docs/language.md section 2 (exactly tilevm::decode / tilevm::encode, see type/convert.h):
//
//   float tvm_decode_NAME(unsigned int code)          every type of 16 bits or fewer, and f32: the exact
//   value
//                                                     (NaN codes give the canonical f32 NaN 0x7fc00000, so
//                                                     the result's bits equal cast_code(NAME, f32, code));
//                                                     bits above the type's width are ignored
//   unsigned int tvm_encode_NAME(float value)         every type of 32 bits or fewer: Cast(value) to NAME
//   unsigned long long tvm_encode_NAME(float value)   i64, u64, f64
//
// NAME is DataType::name() ("f6e3m2", "u4", "bool", "bf16"). Encoders round to nearest even and saturate;
// casts from sources wider than f32 (f64, i32, i64, u32, u64) are not covered (they would round twice).
// Every function is `__device__ __forceinline__` and guarded, so the library may appear more than once.
std::string emit_scalar_conversion_library();
// The decoder and encoder of one type (the part of the library above for `type`), also guarded.
std::string emit_scalar_conversion_functions(DataType type);
std::string scalar_decode_function_name(DataType type);  // "tvm_decode_f6e3m2"
std::string scalar_encode_function_name(DataType type);  // "tvm_encode_f6e3m2"
// Whether the library has tvm_decode_NAME: types of 16 bits or fewer, and f32.
bool has_scalar_decoder(DataType type);

// ---------------------------------------------------------------------------------------------------------
// Check kernels, shared by the NVRTC compile test and the GPU test (one thread per group / value):
//
//   extern "C" __global__ void tvm_check_convert_NAME(const unsigned int* in, unsigned int* out_f16,
//       unsigned int* out_bf16, unsigned int* out_f32, int groups)
//     group g converts in[g*I .. g*I+I) with the three converters of `count` elements and `order` (I input
//     words each) into out_X[g*O_X ..) (O_X = converter_output_words)
//   extern "C" __global__ void tvm_check_scalar_NAME(const unsigned int* codes, unsigned int* decoded, int n,
//       const float* values, unsigned long long* encoded, int m)
//     decoded[i] = bits of tvm_decode_NAME(codes[i]) for i < n (n must be 0 without a decoder),
//     encoded[i] = tvm_encode_NAME(values[i]) for i < m
std::string converter_check_kernel_name(DataType from);  // "tvm_check_convert_u4"
std::string emit_converter_check_kernel(DataType from, int count, const std::vector<int>& order = {});
std::string scalar_check_kernel_name(DataType type);  // "tvm_check_scalar_u4"
std::string emit_scalar_check_kernel(DataType type);

// ---------------------------------------------------------------------------------------------------------
// The converter as a program, for tests and for reading: straight-line SSA over 32-bit words.
struct ConverterOp {
  enum class Kind {
    Input,         // in_words[imm]
    Const,         // imm
    Shl,           // a << imm
    Shr,           // a >> imm (logical)
    FunnelShr,     // low 32 bits of ((b:a) >> imm)                    (shf.r, __funnelshift_r)
    Prmt,          // prmt.b32 a, b, imm (default mode: bit 3 of a selector nibble replicates a byte's sign)
    Lop3,          // lop3.b32 a, b, c, imm (imm is the 8-bit truth table: a = 0xf0, b = 0xcc, c = 0xaa)
    Add,           // a + b (32-bit integer, wrapping)
    FmaF16x2,      // fma.rn.f16x2 a, b, c
    FmaBf16x2,     // fma.rn.bf16x2 a, b, c
    AddF16x2,      // add.rn.f16x2 a, b
    AddBf16x2,     // add.rn.bf16x2 a, b (sm_90; on sm_80 printed as fma.rn.bf16x2 a, 1.0, b: the same result)
    AddF32,        // a + b as f32 (round to nearest even)
    MinF32,        // min.f32 a, b (a NaN operand gives the other)
    MaxF32,        // max.f32 a, b
    CvtF16x2F32,   // cvt.rn.f16x2.f32: high half from a, low half from b
    CvtBf16x2F32,  // cvt.rn.bf16x2.f32: high half from a, low half from b
    Output,        // out_words[imm] = a
  };
  Kind kind;
  int a = -1, b = -1, c = -1;  // operand value indices (earlier ops)
  uint32_t imm = 0;
};

struct ConverterProgram {
  ConverterSpec spec;
  std::vector<ConverterOp> ops;
  std::vector<std::string> notes;  // the strategy in words, printed as comments
};

// The program behind emit_converter. @throws tilevm::InternalError as emit_converter.
ConverterProgram build_converter_program(const ConverterSpec& spec);

// The CUDA text of a program (emit_converter prints build_converter_program's result with this).
std::string print_converter_program(const ConverterProgram& program, const std::string& function_name);

// Runs a program on the CPU with the PTX semantics of each op; returns converter_output_words words.
std::vector<uint32_t> emulate_converter_program(const ConverterProgram& program,
                                                const std::vector<uint32_t>& in_words);

}  // namespace tilevm::codegen::cuda
