// The generated converters without a GPU: every converter from every type of 8 bits or fewer to f16, bf16 and
// f32 run on the CPU emulator of its PTX ops for every code at every element position, compared bit for bit
// with tilevm::cast_code; every converter, check kernel and the scalar library compiled by NVRTC for sm_80
// and sm_90 (skipped when NVRTC is missing).
#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "converter_orders.h"
#include "expect_error.h"
#include "tilevm/codegen/cuda/converters.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/data_type.h"
#include "tilevm/type/packing.h"

namespace tilevm::codegen::cuda {
namespace {

std::vector<DataType> small_types() {
  std::vector<DataType> types;
  for (DataType t : all_data_types()) {
    if (t.bits() <= 8) types.push_back(t);
  }
  return types;
}

const DataType kDestinations[] = {DataType::f16(), DataType::bf16(), DataType::f32()};

// bool reads any byte; other types read 2^bits codes.
uint64_t code_count(DataType t) {
  return t.is_bool() ? 256 : uint64_t{1} << t.bits();
}

// The packed words of `codes`, with every bit after the last code set (converters must ignore them).
std::vector<uint32_t> pack_words(DataType t, const std::vector<uint64_t>& codes) {
  std::vector<uint8_t> bytes = pack(t, codes);
  const int words = converter_input_words({t, DataType::f16(), static_cast<int>(codes.size())});
  bytes.resize(static_cast<size_t>(words) * 4, 0xff);
  const size_t used_bits = codes.size() * static_cast<size_t>(t.bits());
  if (used_bits % 8 != 0) bytes[used_bits / 8] |= static_cast<uint8_t>(0xff << (used_bits % 8));
  std::vector<uint32_t> result(static_cast<size_t>(words));
  std::memcpy(result.data(), bytes.data(), bytes.size());
  return result;
}

// Element k of a converter's output words.
uint32_t output_element(DataType to, const std::vector<uint32_t>& words, int k) {
  if (to == DataType::f32()) return words.at(static_cast<size_t>(k));
  return (words.at(static_cast<size_t>(k / 2)) >> (16 * (k % 2))) & 0xffff;
}

// A fixed pseudo-random permutation of 0 .. count-1 (Fisher-Yates over mt19937, whose output the standard
// fixes; the modulo keeps it independent of the library's distributions).
std::vector<int> shuffled_order(int count) {
  std::vector<int> order(static_cast<size_t>(count));
  for (int k = 0; k < count; ++k) order[static_cast<size_t>(k)] = k;
  std::mt19937 random(20261121u + static_cast<uint32_t>(count));
  for (int k = count - 1; k > 0; --k)
    std::swap(order[static_cast<size_t>(k)], order[random() % static_cast<uint32_t>(k + 1)]);
  return order;
}

// Instructions of a program: ops that are neither inputs, constants nor outputs.
int work_ops(const ConverterProgram& program) {
  return static_cast<int>(std::count_if(program.ops.begin(), program.ops.end(), [](const ConverterOp& op) {
    using Kind = ConverterOp::Kind;
    return op.kind != Kind::Input && op.kind != Kind::Const && op.kind != Kind::Output;
  }));
}

int count_ops(const ConverterProgram& program, ConverterOp::Kind kind) {
  return static_cast<int>(std::count_if(program.ops.begin(), program.ops.end(),
                                        [&](const ConverterOp& op) { return op.kind == kind; }));
}

// Printed ops whose value nothing reads (NVRTC warns about unused shifts). The f8e5m2 and f7e5m1 to f16
// converters compute an inf mask they do not need (the compiler drops it); reordering adds none.
int unused_ops(const ConverterProgram& program) {
  std::vector<bool> used(program.ops.size(), false);
  for (const ConverterOp& op : program.ops) {
    for (int operand : {op.a, op.b, op.c}) {
      if (operand >= 0) used[static_cast<size_t>(operand)] = true;
    }
  }
  int unused = 0;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const auto kind = program.ops[i].kind;
    if (!used[i] && kind != ConverterOp::Kind::Const && kind != ConverterOp::Kind::Output) ++unused;
  }
  return unused;
}

// Runs the converter of `count` elements on groups whose element i is code (start + i) mod code_count, for
// every start: every code at every position, next to many different neighbours. Output element k must be
// the conversion of source element order[k] (k without an order). Returns the mismatches.
int check_exhaustively(DataType from, DataType to, int count, const std::vector<int>& order = {}) {
  const ConverterProgram program = build_converter_program({from, to, count, order});
  if (!order.empty()) {
    EXPECT_LE(unused_ops(program), unused_ops(build_converter_program({from, to, count})))
        << from.name() << " -> " << to.name() << " x" << count;
  }
  const uint64_t codes = code_count(from);
  int mismatches = 0;
  for (uint64_t start = 0; start < codes; ++start) {
    std::vector<uint64_t> group(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i)
      group[static_cast<size_t>(i)] = (start + static_cast<uint64_t>(i) * 7) % codes;
    const std::vector<uint32_t> out = emulate_converter_program(program, pack_words(from, group));
    for (int i = 0; i < count; ++i) {
      const int source = order.empty() ? i : order[static_cast<size_t>(i)];
      const uint64_t code = group[static_cast<size_t>(source)];
      const uint64_t expected = cast_code(from, to, code);
      const uint32_t actual = output_element(to, out, i);
      if (actual != expected && ++mismatches <= 5) {
        ADD_FAILURE() << from.name() << " -> " << to.name() << " x" << count
                      << (order.empty() ? "" : " reordered") << ": element " << i << " (source " << source
                      << ") code 0x" << std::hex << code << " gives 0x" << actual << ", expected 0x"
                      << expected;
      }
    }
    if (to != DataType::f32() && count % 2 == 1) {
      EXPECT_EQ(out.back() >> 16, 0u) << from.name() << " -> " << to.name() << " x" << count << ": odd tail";
    }
  }
  return mismatches;
}

TEST(Converters, EveryTypeOf8BitsOrFewerHasOne) {
  const std::vector<DataType> types = small_types();
  EXPECT_EQ(types.size(), 1u + 8 + 8 + 21);  // bool, i1..i8, u1..u8, 21 float splits
  for (DataType from : types) {
    for (DataType to : kDestinations) {
      EXPECT_TRUE(has_vectorized_converter(from, to)) << from.name() << " -> " << to.name();
      EXPECT_FALSE(emit_converter({from, to, 8}, "f").empty());
    }
    EXPECT_FALSE(has_vectorized_converter(from, DataType::f64()));
    EXPECT_FALSE(has_vectorized_converter(from, DataType::i8()));
  }
  for (DataType wide : {DataType::f16(), DataType::bf16(), DataType::i16(), DataType::f32()}) {
    EXPECT_FALSE(has_vectorized_converter(ConverterSpec{wide, DataType::f16(), 8})) << wide.name();
  }
  EXPECT_FALSE(has_vectorized_converter(ConverterSpec{DataType::f8e4m3(), DataType::f16(), 0}));
  const ConverterSpec wide{DataType::f16(), DataType::f32(), 8};
  expect_error<InternalError>([&] { emit_converter(wide, "f"); }, "no vectorized converter from f16 to f32");
}

TEST(Converters, NaturalCountsNamesAndWords) {
  EXPECT_EQ(natural_converter_count(DataType::parse("u4")), 8);
  EXPECT_EQ(natural_converter_count(DataType::parse("u3")), 32);
  EXPECT_EQ(natural_converter_count(DataType::parse("f6e3m2")), 16);
  EXPECT_EQ(natural_converter_count(DataType::parse("i1")), 32);
  EXPECT_EQ(natural_converter_count(DataType::u8()), 8);
  EXPECT_EQ(natural_converter_count(DataType::boolean()), 8);
  EXPECT_EQ(converter_function_name(DataType::parse("f6e3m2"), DataType::f16(), 16),
            "tvm_convert_f6e3m2_to_f16_x16");
  const ConverterSpec u3{DataType::parse("u3"), DataType::bf16(), 32};
  EXPECT_EQ(converter_input_words(u3), 3);
  EXPECT_EQ(converter_output_words(u3), 16);
  EXPECT_EQ(converter_output_words({DataType::parse("u3"), DataType::f32(), 7}), 7);
  EXPECT_EQ(converter_output_words({DataType::parse("u3"), DataType::f16(), 7}), 4);
  for (DataType from : small_types()) {
    for (DataType to : kDestinations) {
      for (int count : {natural_converter_count(from), 7}) {
        const ConverterSpec spec{from, to, count};
        for (int k = 0; k < count; ++k) {
          // Every element lies inside the words the converter reads.
          EXPECT_LE((k + 1) * from.bits(), 32 * converter_input_words(spec));
        }
      }
    }
  }
}

TEST(Converters, EmulatedExhaustivelyAtNaturalCount) {
  int converters = 0;
  for (DataType from : small_types()) {
    for (DataType to : kDestinations) {
      EXPECT_EQ(check_exhaustively(from, to, natural_converter_count(from)), 0);
      ++converters;
    }
  }
  EXPECT_EQ(converters, 38 * 3);
}

TEST(Converters, EmulatedExhaustivelyAtOtherCounts) {
  for (DataType from : small_types()) {
    for (DataType to : kDestinations) {
      for (int count : {1, 2, 3, 5, 13, 40}) EXPECT_EQ(check_exhaustively(from, to, count), 0);
    }
  }
}

// The vectorized converters stay cheap: instructions per element (ops that are neither inputs, constants nor
// outputs) at the natural count.
TEST(Converters, InstructionBudget) {
  for (DataType from : small_types()) {
    for (DataType to : {DataType::f16(), DataType::bf16()}) {
      const int count = natural_converter_count(from);
      const ConverterProgram program = build_converter_program({from, to, count});
      const auto work = std::count_if(program.ops.begin(), program.ops.end(), [](const ConverterOp& op) {
        using Kind = ConverterOp::Kind;
        return op.kind != Kind::Input && op.kind != Kind::Const && op.kind != Kind::Output;
      });
      const double per_element = static_cast<double>(work) / count;
      // Integers: shifts, prmt, lop3, fma (<= 3 per element); floats add a sign move and a scale; inf/NaN
      // fix-ups and the f8e6m1 -> f16 rounding cost more.
      double budget = from.is_integer() || from.is_bool() ? 3.0 : 4.0;
      if (from.has_nan()) budget = 8.0;
      if (from.exponent_bits() > to.exponent_bits()) budget = 12.0;  // f8e6m1 -> f16
      EXPECT_LE(per_element, budget) << from.name() << " -> " << to.name();
    }
  }
}

// 1, 2 and 4-bit integer codes never straddle a byte: each pair of them takes one prmt, one lop3 and one fma
// (plus, for bf16's shorter mantissa, one shift per input word), at most 1.75 instructions per element.
TEST(Converters, ByteAlignedIntegersTakeThreeInstructionsPerPair) {
  for (const char* name : {"u1", "i1", "u2", "i2", "u4", "i4"}) {
    for (DataType to : {DataType::f16(), DataType::bf16()}) {
      const DataType from = DataType::parse(name);
      const int count = 64;
      const ConverterProgram program = build_converter_program({from, to, count});
      const auto work = std::count_if(program.ops.begin(), program.ops.end(), [](const ConverterOp& op) {
        using Kind = ConverterOp::Kind;
        return op.kind != Kind::Input && op.kind != Kind::Const && op.kind != Kind::Output;
      });
      EXPECT_LE(static_cast<double>(work) / count, 1.75) << name << " -> " << to.name() << ": " << work;
    }
  }
}

// 4-bit codes: the code at offset 4 of each byte comes from the word shifted right by 4, so that both halves
// end in an add of the subtrahend (an immediate operand in SASS) instead of an fma whose factor (1, 1/16)
// needs a register: ptxas rematerializes that register before each use where registers are short.
TEST(Converters, FourBitPairsEndInAnAdd) {
  using Kind = ConverterOp::Kind;
  for (const char* name : {"u4", "i4"}) {
    for (DataType to : {DataType::f16(), DataType::bf16()}) {
      const ConverterProgram program = build_converter_program({DataType::parse(name), to, 64});
      const bool f16 = to == DataType::f16();
      EXPECT_EQ(count_ops(program, f16 ? Kind::FmaF16x2 : Kind::FmaBf16x2), 0) << name << " -> " << to.name();
      EXPECT_EQ(count_ops(program, f16 ? Kind::AddF16x2 : Kind::AddBf16x2), 32)
          << name << " -> " << to.name();
      EXPECT_EQ(count_ops(program, Kind::Shr), 8) << name << " -> " << to.name();  // one per input word
    }
  }
}

// Reordering converters: output element k converts source code order[k], for every source type and
// destination, with the weight transform's interleaved order (types whose bits divide 16; two words of codes)
// and with a pseudo-random permutation (every type; the natural count, and 13 codes, whose pairs and codes
// cross words) and the reversed order.
TEST(Converters, InterleavedOrderEmulatedExhaustively) {
  int converters = 0;
  for (DataType from : small_types()) {
    if (16 % from.bits() != 0) continue;
    const int count = 2 * 32 / from.bits();
    for (DataType to : kDestinations) {
      EXPECT_EQ(check_exhaustively(from, to, count, testing::interleaved_order(from, count)), 0);
      ++converters;
    }
  }
  EXPECT_EQ(converters, (1 + 4 * 2 + 2 + 6) * 3);  // bool; i1, i2, i4, i8, u1, u2, u4, u8; 2 f4 and 6 f8
}

TEST(Converters, PermutedOrderEmulatedExhaustively) {
  for (DataType from : small_types()) {
    for (DataType to : kDestinations) {
      for (int count : {natural_converter_count(from), 13})
        EXPECT_EQ(check_exhaustively(from, to, count, shuffled_order(count)), 0);
      const int count = natural_converter_count(from) + 5;  // the GPU test's reversed order
      EXPECT_EQ(check_exhaustively(from, to, count, testing::reversed_order(count)), 0);
    }
  }
}

// With the interleaved order both codes of a pair sit 16 bits apart in one word: no prmt, one lop3 and one
// f16x2 op per pair, plus one shift per word for the pairs whose offset would overflow the mantissa.
TEST(Converters, InterleavedOrderBudget) {
  for (const char* name : {"u4", "i4"}) {
    const DataType from = DataType::parse(name);
    const ConverterProgram program =
        build_converter_program({from, DataType::f16(), 16, testing::interleaved_order(from, 16)});
    EXPECT_LE(work_ops(program), 9 * 2) << name << ": 9 instructions per 4 pairs";  // 8 pairs
    EXPECT_EQ(count_ops(program, ConverterOp::Kind::Prmt), 0) << name;
    EXPECT_EQ(count_ops(program, ConverterOp::Kind::AddF16x2), 4) << name << ": offsets 0 and 8 add";
  }
  for (const char* name : {"u2", "u1", "i2", "i1"}) {
    const DataType from = DataType::parse(name);
    const int count = 2 * 32 / from.bits();
    const ConverterProgram program =
        build_converter_program({from, DataType::f16(), count, testing::interleaved_order(from, count)});
    EXPECT_LE(work_ops(program), 2.25 * count / 2) << name;
    EXPECT_EQ(count_ops(program, ConverterOp::Kind::Prmt), 0) << name;
  }
  // Every type whose codes can be interleaved converts at most as dearly as with the identity order.
  for (DataType from : small_types()) {
    if (16 % from.bits() != 0) continue;
    for (DataType to : kDestinations) {
      const int count = 2 * 32 / from.bits();
      const int identity = work_ops(build_converter_program({from, to, count}));
      const int interleaved =
          work_ops(build_converter_program({from, to, count, testing::interleaved_order(from, count)}));
      EXPECT_LE(interleaved, identity) << from.name() << " -> " << to.name();
    }
  }
}

TEST(Converters, OrderNamesTheFunction) {
  const DataType u4 = DataType::parse("u4");
  const std::string plain = converter_function_name(u4, DataType::f16(), 16);
  EXPECT_EQ(converter_function_name({u4, DataType::f16(), 16}), plain);
  EXPECT_EQ(converter_function_name({u4, DataType::f16(), 16, shuffled_order(16)}).size(), plain.size() + 10);
  std::vector<int> identity(16);
  for (int k = 0; k < 16; ++k) identity[static_cast<size_t>(k)] = k;
  // An explicit identity order is the converter without an order: same name, same text.
  EXPECT_EQ(converter_function_name({u4, DataType::f16(), 16, identity}), plain);
  EXPECT_EQ(emit_converter({u4, DataType::f16(), 16, identity}, "f"),
            emit_converter({u4, DataType::f16(), 16}, "f"));
  const std::string interleaved =
      converter_function_name({u4, DataType::f16(), 16, testing::interleaved_order(u4, 16)});
  const std::string shuffled = converter_function_name({u4, DataType::f16(), 16, shuffled_order(16)});
  for (const std::string& name : {interleaved, shuffled}) {
    ASSERT_EQ(name.size(), plain.size() + 10) << name;
    EXPECT_EQ(name.substr(0, plain.size() + 2), plain + "_o") << name;
    EXPECT_EQ(name.find_first_not_of("0123456789abcdef", plain.size() + 2), std::string::npos) << name;
  }
  EXPECT_NE(interleaved, shuffled);
  std::vector<int> swapped = identity;
  std::swap(swapped[14], swapped[15]);
  EXPECT_NE(converter_function_name({u4, DataType::f16(), 16, swapped}), interleaved);
  EXPECT_NE(converter_function_name({u4, DataType::f16(), 16, swapped}), shuffled);
}

TEST(Converters, InvalidOrderHasNoConverter) {
  const DataType u4 = DataType::parse("u4");
  EXPECT_TRUE(has_vectorized_converter(ConverterSpec{u4, DataType::f16(), 8}));
  EXPECT_TRUE(has_vectorized_converter(ConverterSpec{u4, DataType::f16(), 8, {1, 0, 3, 2, 5, 4, 7, 6}}));
  EXPECT_TRUE(
      has_vectorized_converter(ConverterSpec{DataType::boolean(), DataType::f32(), 8, shuffled_order(8)}));
  const std::vector<std::vector<int>> invalid = {
      {1, 0, 3, 2, 5, 4, 7},        // too short
      {1, 0, 3, 2, 5, 4, 7, 6, 8},  // too long
      {1, 0, 3, 2, 5, 4, 7, 7},     // 6 missing, 7 twice
      {1, 0, 3, 2, 5, 4, 7, 8},     // 8 out of range
      {1, 0, 3, 2, 5, 4, 7, -6},    // negative
  };
  for (const std::vector<int>& order : invalid) {
    const ConverterSpec spec{u4, DataType::f16(), 8, order};
    EXPECT_FALSE(has_vectorized_converter(spec));
    expect_error<InternalError>([&] { emit_converter(spec, "f"); }, "x8 converter is not a permutation");
  }
  EXPECT_FALSE(has_vectorized_converter(ConverterSpec{DataType::f16(), DataType::f32(), 2, {1, 0}}));
  EXPECT_FALSE(has_vectorized_converter(ConverterSpec{u4, DataType::f16(), 0}));
}

TEST(Converters, PrintedSourceShape) {
  const std::string source = emit_converter({DataType::parse("u4"), DataType::f16(), 8}, "cvt_u4");
  EXPECT_NE(source.find("__device__ __forceinline__ void cvt_u4(const unsigned int* __restrict__ in_words, "
                        "unsigned int* __restrict__ out_words)"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("#ifndef TILEVM_CONVERTER_HELPERS"), std::string::npos);
  EXPECT_NE(source.find("tvm_fma_f16x2"), std::string::npos);
  EXPECT_NE(source.find("tvm_lop3<0x6au>"), std::string::npos);  // (code & mask) ^ magic
  EXPECT_NE(source.find("out_words[3] = "), std::string::npos);
  EXPECT_EQ(source.find("out_words[4]"), std::string::npos);
  EXPECT_EQ(source.find("in_words[1]"), std::string::npos);
  // Deterministic: the same spec prints the same text.
  EXPECT_EQ(source, emit_converter({DataType::parse("u4"), DataType::f16(), 8}, "cvt_u4"));
}

TEST(ScalarLibrary, NamesAndCoverage) {
  const std::string library = emit_scalar_conversion_library();
  std::set<std::string> seen;
  for (DataType t : all_data_types()) {
    EXPECT_NE(library.find(scalar_encode_function_name(t) + "(float value)"), std::string::npos) << t.name();
    EXPECT_EQ(library.find(scalar_decode_function_name(t) + "(unsigned int code)") != std::string::npos,
              has_scalar_decoder(t))
        << t.name();
    EXPECT_TRUE(seen.insert(scalar_encode_function_name(t)).second);
  }
  EXPECT_EQ(scalar_decode_function_name(DataType::parse("f6e3m2")), "tvm_decode_f6e3m2");
  EXPECT_EQ(scalar_encode_function_name(DataType::boolean()), "tvm_encode_bool");
  EXPECT_TRUE(has_scalar_decoder(DataType::bf16()));
  EXPECT_TRUE(has_scalar_decoder(DataType::f32()));
  EXPECT_FALSE(has_scalar_decoder(DataType::i32()));
  EXPECT_FALSE(has_scalar_decoder(DataType::f64()));
}

// ---- NVRTC ----------------------------------------------------------------------------------------------

class ConvertersNvrtc : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!runtime::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  }
  void compile(const std::string& source, const std::string& name) {
    try {
      const runtime::CompiledKernel kernel = runtime::compile_cuda(source, name, {.arch = GetParam()});
      EXPECT_GT(kernel.cubin.size(), 4u);
      EXPECT_EQ(kernel.log, "") << name;
    } catch (const Error& error) {
      ADD_FAILURE() << error.what();
    }
  }
};

// One translation unit per source type: its check kernel (the converters to f16, bf16 and f32 at the natural
// count) and converters at an odd count after it (helpers guarded, included twice).
TEST_P(ConvertersNvrtc, CheckKernelOfEveryTypeCompiles) {
  for (DataType from : small_types()) {
    std::string source = emit_converter_check_kernel(from, natural_converter_count(from));
    for (DataType to : kDestinations)
      source += emit_converter({from, to, 7}, converter_function_name(from, to, 7));
    compile(source, "convert_" + from.name() + ".cu");
  }
}

// Reordering converters (with the add helpers where the order puts pairs 16 bits apart; add.rn.bf16x2 is
// sm_90 PTX, sm_80 gets an fma) in the check kernel of every type, with an identity converter after it.
TEST_P(ConvertersNvrtc, ReorderedCheckKernelOfEveryTypeCompiles) {
  for (DataType from : small_types()) {
    const bool interleaves = 16 % from.bits() == 0;
    const int count = interleaves ? 2 * 32 / from.bits() : natural_converter_count(from);
    const std::vector<int> order =
        interleaves ? testing::interleaved_order(from, count) : shuffled_order(count);
    std::string source = emit_converter_check_kernel(from, count, order);
    for (DataType to : kDestinations)
      source += emit_converter({from, to, count}, converter_function_name(from, to, count));
    compile(source, "convert_reordered_" + from.name() + ".cu");
  }
}

TEST_P(ConvertersNvrtc, ScalarLibraryAndCheckKernelsCompile) {
  std::string source = emit_scalar_conversion_library();
  for (DataType t : all_data_types()) source += emit_scalar_check_kernel(t);  // guards: the library again
  compile(source, "scalar_library.cu");
}

INSTANTIATE_TEST_SUITE_P(Arch, ConvertersNvrtc, ::testing::Values("sm_80", "sm_90"));

}  // namespace
}  // namespace tilevm::codegen::cuda
