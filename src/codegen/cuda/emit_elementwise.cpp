// Elementwise instructions, per slot, with the interpreter's arithmetic (interp/compute.cpp): Add/Sub/Mul of
// f32/f16/bf16 tensors, and f32 Div, Sqrt and Fma (scalar operands too), as one native instruction; other
// floats computed in double (no fma
// contraction except Fma's own) and rounded once to the result type, integers in 64-bit wrapping
// arithmetic; comparisons give bool; Where copies the chosen operand's code when its type is the result's.
// Integer division by zero, an error in the interpreter, gives 0 here.
#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/analyze_nan_payload.h"

namespace tilevm::codegen::cuda {

void Emitter::emit_elementwise(const ir::InstStmt& s, const ir::ElementwiseInst& n) {
  using Op = ir::ElementwiseOp;
  // The result's layout and type are those of its variable (the verifier checked them).
  const ir::Var& var = n.out ? n.out : s.results.at(0);
  const RegInfo& out = reg(var);
  const DataType dt = out.dtype;
  bool any_float = dt.is_float() && !ir::is_comparison(n.op);
  for (size_t a = 0; a < n.args.size(); ++a) {
    if (n.op == Op::Where && a == 0) continue;
    const DataType at = n.args[a].is_tensor() ? n.args[a].tensor->type().dtype : n.args[a].scalar->type;
    any_float = any_float || at.is_float();
  }
  if (n.op == Op::Where) any_float = dt.is_float();
  // Add, Sub and Mul of two tensors of the result's type f32, f16 or bf16, and f32 Div, Sqrt and Fma (of
  // f32 tensors or scalars): one native operation per slot (prelude: tv_fast_*, tv_sqrt_f32, tv_fma_f32),
  // bit-identical to the interpreter and many times faster than the double path below.
  const char* fast = dt == DataType::f32()    ? "tv_fast_f32"
                     : dt == DataType::f16()  ? "tv_fast_f16"
                     : dt == DataType::bf16() ? "tv_fast_bf16"
                                              : nullptr;
  const int fast_op = n.op == Op::Add   ? 0
                      : n.op == Op::Sub ? 1
                      : n.op == Op::Mul ? 2
                      : n.op == Op::Div ? 3
                                        : -1;
  if (transform::is_native_float_arith(n, dt) && n.op != Op::Fma && dt.bits() == 16 &&
      out.layout.num_locals() % 2 == 0) {
    // f16 and bf16 two slots a word: one packed instruction per word. An operand's two halves are its word
    // (consecutive slots from an even one), one slot twice (a broadcast along the pair) or two slots joined.
    const bool canonical = !n.nan_payload_unobserved;
    note(s, fmt::format("two slots a word, native {}x2{}", dt.name(),
                        canonical ? "" : " (NaN left as the hardware's: no reader sees its bits)"));
    std::vector<std::vector<int64_t>> slots;
    for (const ir::Operand& a : n.args) slots.push_back(operand_slots(*a.tensor, out));
    auto half = [](const std::string& name, int64_t slot) {
      return fmt::format("tv_get<16>({}, {})", name, slot);
    };
    for (int64_t w = 0; w < out.layout.num_locals() / 2; ++w) {
      std::vector<std::string> x;
      for (size_t a = 0; a < n.args.size(); ++a) {
        const std::string& name = reg_arg(*n.args[a].tensor).name;
        const int64_t lo = slots[a][static_cast<size_t>(2 * w)],
                      hi = slots[a][static_cast<size_t>(2 * w + 1)];
        if (lo % 2 == 0 && hi == lo + 1)
          x.push_back(fmt::format("{}[{}]", name, lo / 2));
        else if (lo == hi)
          x.push_back(fmt::format("(tv_u32){} * 0x10001u", half(name, lo)));
        else
          x.push_back(fmt::format("((tv_u32){} | ((tv_u32){} << 16))", half(name, lo), half(name, hi)));
      }
      line(fmt::format("{}[{}] = tv_fast_{}x2<{}{}>({}, {});", out.name, w, dt.name(), fast_op,
                       canonical ? "" : ", false", x[0], x[1]));
    }
    return;
  }
  if (transform::is_native_float_arith(n, dt)) {
    const bool canonical = !n.nan_payload_unobserved;  // transform/analyze_nan_payload.h
    note(s, fmt::format("per slot, native {}{}", dt.name(),
                        canonical ? "" : " (NaN left as the hardware's: no reader sees its bits)"));
    open("");
    line("#pragma unroll");
    open(fmt::format("for (int i = 0; i < {}; ++i)", out.layout.num_locals()));
    std::vector<std::string> x;
    for (const ir::Operand& a : n.args)
      x.push_back(a.is_tensor() ? operand_code(*a.tensor, out, "i", s.loc)
                                : fmt::format("(tv_u64)__float_as_uint((float)({}))", expr(a.scalar)));
    if (n.op == Op::Fma) {
      line(fmt::format("tv_set<32>({}, i, tv_fma_f32<{}>({}, {}, {}));", out.name,
                       canonical ? "true" : "false", x[0], x[1], x[2]));
    } else if (n.op == Op::Sqrt) {
      line(fmt::format("tv_set<32>({}, i, tv_sqrt_f32<{}>({}));", out.name, canonical ? "true" : "false",
                       x[0]));
    } else {
      line(fmt::format("tv_set<{}>({}, i, {}<{}{}>({}, {}));", dt.bits(), out.name, fast, fast_op,
                       canonical ? "" : ", false", x[0], x[1]));
    }
    close();
    close();
    return;
  }
  const bool float_math = any_float || ir::is_float_only(n.op);
  note(s, fmt::format("per slot, in {}",
                      float_math || (ir::is_comparison(n.op) && any_float) ? "double" : "64-bit integers"));
  open("");
  // Operand codes need the slot loop's variable: open the loop first, then bind operands.
  std::vector<std::string> code(n.args.size()), dtype_args(n.args.size());
  std::vector<bool> is_float(n.args.size());
  std::vector<std::string> pre;
  line("#pragma unroll");
  open(fmt::format("for (int i = 0; i < {}; ++i)", out.layout.num_locals()));
  for (size_t a = 0; a < n.args.size(); ++a) {
    if (n.args[a].is_tensor()) {
      const DataType at = n.args[a].tensor->type().dtype;
      code[a] = operand_code(*n.args[a].tensor, out, "i", s.loc);
      dtype_args[a] = type_args(at);
      is_float[a] = at.is_float();
    } else {
      is_float[a] = n.args[a].scalar->type.is_float();
    }
  }
  auto as_double = [&](size_t a) {
    if (!n.args[a].is_tensor()) return fmt::format("(double)({})", expr(n.args[a].scalar));
    return fmt::format("tv_decode<{}>({})", dtype_args[a], code[a]);
  };
  auto as_int = [&](size_t a) {
    if (!n.args[a].is_tensor()) return fmt::format("(tv_i64)({})", expr(n.args[a].scalar));
    const DataType at = n.args[a].tensor->type().dtype;
    return fmt::format("tv_to_int<{}, {}>({})",
                       at.is_bool()                       ? 0
                       : at.kind() == TypeKind::SignedInt ? 1
                                                          : 2,
                       at.bits(), code[a]);
  };
  const std::string set = fmt::format("tv_set<{}>({}, i, ", dt.bits(), out.name);
  if (n.op == Op::Where) {
    const std::string cond = is_float[0] ? as_double(0) + " != 0.0" : as_int(0) + " != 0";
    auto pick = [&](size_t a) {
      if (n.args[a].is_tensor() && n.args[a].tensor->type().dtype == dt) return code[a];
      return is_float[a] ? fmt::format("tv_round<{}>({})", type_args(dt), as_double(a))
                         : fmt::format("tv_wrap<{}>({})", type_args(dt), as_int(a));
    };
    line(fmt::format("{}({}) ? {} : {});", set, cond, pick(1), pick(2)));
  } else if (ir::is_comparison(n.op)) {
    static const std::map<Op, const char*> cmp = {{Op::Lt, "<"},  {Op::Le, "<="}, {Op::Gt, ">"},
                                                  {Op::Ge, ">="}, {Op::Eq, "=="}, {Op::Ne, "!="}};
    const bool f = is_float[0] || is_float[1];
    line(fmt::format("{}({} {} {}) ? 1ull : 0ull);", set, f ? as_double(0) : as_int(0), cmp.at(n.op),
                     f ? as_double(1) : as_int(1)));
  } else if (float_math) {
    line(fmt::format("const double x = {};", as_double(0)));
    if (n.args.size() > 1) line(fmt::format("const double y = {};", as_double(1)));
    if (n.args.size() > 2) line(fmt::format("const double z = {};", as_double(2)));  // Fma in f64
    std::string r;
    switch (n.op) {
      case Op::Add:
        r = "tv_dadd(x, y)";
        break;
      case Op::Sub:
        r = "__dsub_rn(x, y)";
        break;
      case Op::Mul:
        r = "tv_dmul(x, y)";
        break;
      case Op::Div:
        r = "__ddiv_rn(x, y)";
        break;
      case Op::Mod:
        r = "fmod(x, y)";
        break;
      case Op::Max:
        r = "tv_fmax(x, y)";
        break;
      case Op::Min:
        r = "tv_fmin(x, y)";
        break;
      case Op::Neg:
        r = "-x";
        break;
      case Op::Abs:
        r = "fabs(x)";
        break;
      case Op::Exp:
        r = "exp(x)";
        break;
      case Op::Exp2:
        r = "exp2(x)";
        break;
      case Op::Log:
        r = "log(x)";
        break;
      case Op::Sqrt:
        r = "__dsqrt_rn(x)";
        break;
      case Op::Rsqrt:
        r = "__ddiv_rn(1.0, __dsqrt_rn(x))";
        break;
      case Op::Erf:
        r = "erf(x)";
        break;
      case Op::Tanh:
        r = "tanh(x)";
        break;
      case Op::Fma:
        r = "__fma_rn(x, y, z)";
        break;
      default:
        break;
    }
    TILEVM_ASSERT(!r.empty(), "{} has no double form for {}", n.name(), dt.name());
    line(fmt::format("{}tv_round<{}>({}));", set, type_args(dt), r));
  } else {
    line(fmt::format("const tv_i64 x = {};", as_int(0)));
    line(fmt::format("const tv_i64 y = {};", n.args.size() > 1 ? as_int(1) : "0"));
    line("(void)y;");
    std::string r;
    switch (n.op) {
      case Op::Add:
        r = "(tv_i64)((tv_u64)x + (tv_u64)y)";
        break;
      case Op::Sub:
        r = "(tv_i64)((tv_u64)x - (tv_u64)y)";
        break;
      case Op::Mul:
        r = "(tv_i64)((tv_u64)x * (tv_u64)y)";
        break;
      case Op::Div:
        r = "y == 0 ? 0 : y == -1 ? (tv_i64)(0ull - (tv_u64)x) : x / y";
        break;
      case Op::Mod:
        r = "y == 0 || y == -1 ? 0 : x % y";
        break;
      case Op::Max:
        r = "x > y ? x : y";
        break;
      case Op::Min:
        r = "x < y ? x : y";
        break;
      case Op::Neg:
        r = "(tv_i64)(0ull - (tv_u64)x)";
        break;
      case Op::Abs:
        r = "x < 0 ? (tv_i64)(0ull - (tv_u64)x) : x";
        break;
      default:
        r = "0";
        break;
    }
    line(fmt::format("{}tv_wrap<{}>({}));", set, type_args(dt), r));
  }
  close();
  close();
}

}  // namespace tilevm::codegen::cuda
