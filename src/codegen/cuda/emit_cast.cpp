// Cast: a value conversion per slot through the prelude's tv_cast, which reproduces type/convert.cpp's
// cast_code for every pair of types (rounding to nearest even, saturation, NaN rules, integer clamping).
//
// Every type of 8 bits or fewer converts to f16, bf16 and f32 through a generated vectorized converter
// (lop3/prmt/magic numbers, src/codegen/cuda/converters/), emitted once per (types, count) after the prelude.
#include <fmt/format.h>

#include "emitter.h"
#include "nan_payload.h"
#include "tilevm/codegen/cuda/converters.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

void Emitter::emit_cast(const ir::InstStmt& s, const ir::CastInst& n) {
  const RegInfo& src = reg_arg(n.src);
  const RegInfo& out = result_reg(s, n.out, n.dtype, src.layout);
  // Registers hold each thread's elements as one packed bit stream in slot order, which is exactly the
  // converters' input and output format, so a whole tile converts with one call.
  const int count = static_cast<int>(src.layout.num_locals());
  if (has_vectorized_converter(src.dtype, n.dtype)) {
    std::string fn = converter_function_name(src.dtype, n.dtype, count);
    if (!helper_functions_.count(fn)) {
      if (auto code = vectorized_converter(src.dtype, n.dtype, count, fn)) helper_functions_[fn] = *code;
    }
    if (helper_functions_.count(fn)) {
      note(s, "vectorized converter " + fn);
      line(fmt::format("{}({}, {});", fn, src.name, out.name));
      return;
    }
  }
  // Between f32 and f16/bf16: one cvt per element (prelude), with the interpreter's saturation and NaN.
  const DataType f32 = DataType::f32(), f16 = DataType::f16(), bf16 = DataType::bf16();
  const char* fast = src.dtype == f16 && n.dtype == f32    ? "tv_f16_to_f32"
                     : src.dtype == bf16 && n.dtype == f32 ? "tv_bf16_to_f32"
                     : src.dtype == f32 && n.dtype == f16  ? "tv_f32_to_f16"
                     : src.dtype == f32 && n.dtype == bf16 ? "tv_f32_to_bf16"
                                                           : nullptr;
  if (fast) {
    // A widening keeps the hardware's NaN where no reader sees its bits (nan_payload.h).
    const ir::Var& var = n.out ? n.out : s.results.at(0);
    const bool keep = n.dtype == f32 && nan_payload_unobserved(program_, var);
    note(s, fmt::format("per-element cvt {} -> {}{}", src.dtype.name(), n.dtype.name(),
                        keep ? " (NaN left as the hardware's: no reader sees its bits)" : ""));
    line("#pragma unroll");
    line(fmt::format("for (int i = 0; i < {}; ++i) tv_set<{}>({}, i, {}{}(tv_get<{}>({}, i)));", count,
                     n.dtype.bits(), out.name, fast, keep ? "<false>" : "", src.dtype.bits(), src.name));
    return;
  }
  note(s, fmt::format("per-element conversion {} -> {}", src.dtype.name(), n.dtype.name()));
  line("#pragma unroll");
  line(fmt::format("for (int i = 0; i < {}; ++i) tv_set<{}>({}, i, tv_cast<{}, {}>(tv_get<{}>({}, i)));",
                   src.layout.num_locals(), n.dtype.bits(), out.name, type_args(src.dtype),
                   type_args(n.dtype), src.dtype.bits(), src.name));
}

}  // namespace tilevm::codegen::cuda
