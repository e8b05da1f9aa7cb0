// The emitter's divisibility analysis (src/codegen/cuda/emitter.h: CExpr::log2_div, pow2_divisor,
// log2_divisor): examples from the emitted code, and its law on random expressions: the proven power of two
// divides the value for every value of the variables, in 64-bit and in wrapped 32-bit arithmetic (CExpr),
// and under the interpreter's evaluation (IR expressions).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../../src/codegen/cuda/emitter.h"
#include "tilevm/interp/scalar_eval.h"

namespace tilevm {
namespace {

using namespace codegen::cuda;

TEST(CodegenDivisibility, ConstantsProveTheirTrailingZeroBits) {
  EXPECT_EQ(pow2_divisor(cconst(12)), 4);
  EXPECT_EQ(pow2_divisor(cconst(-8)), 8);
  EXPECT_EQ(pow2_divisor(cconst(1)), 1);
  EXPECT_EQ(pow2_divisor(cconst(7)), 1);
  EXPECT_EQ(pow2_divisor(cconst(int64_t{1} << 40)), int64_t{1} << 40);
  EXPECT_EQ(pow2_divisor(cconst(0)), int64_t{1} << kMaxLog2Div);  // 0 is a multiple of everything
  EXPECT_TRUE(divisible(cconst(4096), 4096));
  EXPECT_FALSE(divisible(cconst(4096 + 2048), 4096));
}

TEST(CodegenDivisibility, ExpressionsOfTheEmitter) {
  const CExpr t = cvar("t"), c = cvar("c"), g = cvar("g"), cur = cvar("(int)(cur)");
  EXPECT_EQ(pow2_divisor(t), 1);  // loop variables and thread indices prove nothing
  EXPECT_EQ(pow2_divisor(t * cconst(4096)), 4096);
  EXPECT_EQ(pow2_divisor(t * cconst(12)), 4);
  EXPECT_EQ(pow2_divisor((t * cconst(4)) * (g * cconst(8))), 32);
  EXPECT_EQ(pow2_divisor(t * cconst(16) + g * cconst(4)), 4);
  EXPECT_EQ(pow2_divisor(t * cconst(16) - g * cconst(64)), 16);
  EXPECT_EQ(pow2_divisor((t * cconst(8)) ^ (g * cconst(32))), 8);
  EXPECT_EQ(pow2_divisor(t % cconst(4)), 1);
  EXPECT_EQ(pow2_divisor((t % cconst(4)) * cconst(2)), 2);
  // The chunk walk of CopyAsync: column (c * 8) % 128 keeps 8, row (c * 8) / 128 keeps nothing.
  EXPECT_EQ(pow2_divisor((c * cconst(8)) % cconst(128)), 8);
  EXPECT_EQ(pow2_divisor(((c * cconst(8)) % cconst(128)) % cconst(8)), 8);
  EXPECT_EQ(pow2_divisor((c * cconst(8)) / cconst(128)), 1);
  EXPECT_EQ(pow2_divisor((c * cconst(4096)) / cconst(8)), 512);
  EXPECT_EQ(pow2_divisor((c * cconst(12)) / cconst(3)), 1);  // exact, but 3 is not a power of two
  EXPECT_EQ(pow2_divisor(shr(t * cconst(16), 2)), 4);
  EXPECT_EQ(pow2_divisor(shr(t * cconst(2), 3)), 1);
  // The offset of the quantized matmul's 16-byte shared loads: a multiple of 4 elements.
  const CExpr off =
      cvar("(int)((uk * 4096))", 12) +
      ((g * cconst(4)) % cconst(4) + t * cconst(4) + (g * cconst(4)) / cconst(4) * cconst(1024)) +
      cur * cconst(4096);
  EXPECT_EQ(pow2_divisor(off), 4);
  EXPECT_TRUE(divisible(off, 4));
  EXPECT_FALSE(divisible(off, 8));
  // Folding keeps the proof: x + 0 is x, x * 1 is x.
  EXPECT_EQ(pow2_divisor(t * cconst(64) + cconst(0)), 64);
  EXPECT_EQ(pow2_divisor(cconst(1) * (t * cconst(64))), 64);
}

TEST(CodegenDivisibility, IrExpressions) {
  using ir::BinaryOp;
  const ir::Var uk = ir::make_var("uk", ir::ValueType::scalar(DataType::i32()));
  const ir::Expr x = ir::make_var_ref(uk);
  auto bin = [](BinaryOp op, ir::Expr a, ir::Expr b) {
    return ir::make_binary(op, std::move(a), std::move(b));
  };
  auto k = [](int64_t v) { return ir::make_int(v); };
  EXPECT_EQ(log2_divisor(x), 0);
  EXPECT_EQ(log2_divisor(k(96)), 5);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::Mul, x, k(128))), 7);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::Mul, bin(BinaryOp::Add, x, k(4)), k(8))), 3);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::Add, bin(BinaryOp::Mul, x, k(64)), k(16))), 4);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::Shl, x, k(3))), 3);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::Shr, bin(BinaryOp::Mul, x, k(16)), k(2))), 2);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::Div, bin(BinaryOp::Mul, x, k(16)), k(4))), 2);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::Div, x, k(4))), 0);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::BitAnd, x, k(-8))), 3);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::Min, bin(BinaryOp::Mul, x, k(8)), k(16))), 3);
  EXPECT_EQ(log2_divisor(ir::make_unary(ir::UnaryOp::Neg, bin(BinaryOp::Mul, x, k(32)))), 5);
  EXPECT_EQ(log2_divisor(bin(BinaryOp::CeilDiv, bin(BinaryOp::Mul, x, k(32)), k(4))), 0);  // not analyzed
  EXPECT_EQ(log2_divisor(ir::make_float(64.0)), 0);                                        // only integers
}

// ---- the law on random expressions ----

// A random CExpr over the variables a, b, c together with its value in 64-bit and in 32-bit two's complement
// arithmetic (the emitted code computes in int and in tv_i64, and both wrap).
struct Valued {
  CExpr e;
  int64_t v64;
  int32_t v32;
};

int64_t wrap_mul64(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
}
int32_t wrap32(int64_t x) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(x)));
}

Valued random_cexpr(int depth, const std::vector<int64_t>& vars) {
  const int pick = depth == 0 ? *rc::gen::inRange(0, 2) : *rc::gen::inRange(2, 9);
  if (pick == 0) {  // a constant m * 2^s, small enough that folding cannot overflow
    const int64_t v = *rc::gen::inRange<int64_t>(-7, 8) * (int64_t{1} << *rc::gen::inRange(0, 5));
    return {cconst(v), v, wrap32(v)};
  }
  if (pick == 1) {
    const size_t i = static_cast<size_t>(*rc::gen::inRange(0, static_cast<int>(vars.size())));
    return {cvar(std::string(1, static_cast<char>('a' + i))), vars[i], wrap32(vars[i])};
  }
  const Valued x = random_cexpr(depth - 1, vars);
  if (pick >= 6) {  // an operation with a constant, as the emitter writes them: / % >>
    if (pick == 8) {
      const int s = *rc::gen::inRange(0, 6);
      return {shr(x.e, s), x.v64 >> s, static_cast<int32_t>(x.v32 >> s)};
    }
    const int64_t d = *rc::gen::element<int64_t>(1, 2, 3, 4, 6, 8, 16, 24, 64, 128, 4096);
    if (pick == 6) return {x.e / cconst(d), x.v64 / d, static_cast<int32_t>(x.v32 / d)};
    return {x.e % cconst(d), x.v64 % d, static_cast<int32_t>(x.v32 % d)};
  }
  const Valued y = random_cexpr(depth - 1, vars);
  switch (pick) {
    case 2:
      return {x.e + y.e, static_cast<int64_t>(static_cast<uint64_t>(x.v64) + static_cast<uint64_t>(y.v64)),
              wrap32(int64_t{x.v32} + y.v32)};
    case 3:
      return {x.e - y.e, static_cast<int64_t>(static_cast<uint64_t>(x.v64) - static_cast<uint64_t>(y.v64)),
              wrap32(int64_t{x.v32} - y.v32)};
    case 4:
      return {x.e * y.e, wrap_mul64(x.v64, y.v64), wrap32(int64_t{x.v32} * y.v32)};
    default:
      return {x.e ^ y.e, x.v64 ^ y.v64, x.v32 ^ y.v32};
  }
}

// Whether 2^log2 divides v as a `bits`-bit two's complement value (from 2^bits on: v is 0).
bool divides_value(int log2, int64_t v, int bits) {
  const uint64_t u = bits == 64 ? static_cast<uint64_t>(v) : static_cast<uint64_t>(v) & 0xffffffffu;
  if (log2 >= bits) return u == 0;
  return (u & ((uint64_t{1} << log2) - 1)) == 0;
}

RC_GTEST_PROP(CodegenDivisibility, TheProvenPowerOfTwoDividesEveryValue, ()) {
  std::vector<int64_t> vars;
  for (int i = 0; i < 3; ++i)
    vars.push_back(*rc::gen::oneOf(rc::gen::inRange<int64_t>(-300, 300),
                                   rc::gen::cast<int64_t>(rc::gen::arbitrary<int32_t>())));
  const Valued x = random_cexpr(*rc::gen::inRange(1, 4), vars);
  RC_ASSERT(x.e.log2_div >= 0 && x.e.log2_div <= kMaxLog2Div);
  if (x.e.value) RC_ASSERT(*x.e.value == x.v64);
  RC_ASSERT(divides_value(x.e.log2_div, x.v64, 64));
  RC_ASSERT(divides_value(x.e.log2_div, x.v32, 32));
}

// A random integer IR expression over the i32 variables a, b, c; divisors and shift counts are constants.
ir::Expr random_ir(int depth, const std::vector<ir::Var>& vars) {
  using ir::BinaryOp;
  const int pick = depth == 0 ? *rc::gen::inRange(0, 2) : *rc::gen::inRange(2, 8);
  if (pick == 0)
    return ir::make_int(*rc::gen::inRange<int64_t>(-7, 8) * (int64_t{1} << *rc::gen::inRange(0, 6)));
  if (pick == 1)
    return ir::make_var_ref(vars[static_cast<size_t>(*rc::gen::inRange(0, static_cast<int>(vars.size())))]);
  const ir::Expr x = random_ir(depth - 1, vars);
  if (pick == 2) return ir::make_unary(ir::UnaryOp::Neg, x);
  if (pick == 3) {
    const BinaryOp op = *rc::gen::element(BinaryOp::Div, BinaryOp::Mod, BinaryOp::Shl, BinaryOp::Shr);
    const int64_t c = op == BinaryOp::Shl || op == BinaryOp::Shr
                          ? *rc::gen::inRange<int64_t>(0, 8)
                          : *rc::gen::element<int64_t>(1, 2, 3, 4, 8, 12, 64);
    return ir::make_binary(op, x, ir::make_int(c));
  }
  const BinaryOp op = *rc::gen::element(BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::BitAnd,
                                        BinaryOp::BitOr, BinaryOp::BitXor, BinaryOp::Min, BinaryOp::Max);
  return ir::make_binary(op, x, random_ir(depth - 1, vars));
}

RC_GTEST_PROP(CodegenDivisibility, TheIrAnalysisHoldsUnderTheInterpreter, ()) {
  std::vector<ir::Var> vars;
  std::vector<int64_t> values;
  for (const char* name : {"a", "b", "c"}) {
    vars.push_back(ir::make_var(name, ir::ValueType::scalar(DataType::i32())));
    values.push_back(*rc::gen::arbitrary<int32_t>());
  }
  const ir::Expr e = random_ir(*rc::gen::inRange(1, 4), vars);
  const interp::ScalarValue v = interp::eval_scalar(e, [&](const ir::Var& var, SourceLoc) {
    for (size_t i = 0; i < vars.size(); ++i)
      if (vars[i] == var) return interp::ScalarValue{false, values[i], 0.0};
    throw Error("unknown variable " + var->name);
  });
  RC_ASSERT(divides_value(log2_divisor(e), v.i, 32));
}

}  // namespace
}  // namespace tilevm
