// Cast: a value conversion per slot through the prelude's tv_cast, which reproduces type/convert.cpp's
// cast_code for every pair of types (rounding to nearest even, saturation, NaN rules, integer clamping).
//
// Every type of 8 bits or fewer converts to f16, bf16 and f32 through a generated vectorized converter
// (lop3/prmt/magic numbers, src/codegen/cuda/converters/), emitted once per (types, count, order) after the
// prelude. With layout=, slot i of the result converts slot order[i] of the operand (the same renaming in
// every thread, layout/slot_permutation.h): the converter reads its codes in that order, so the renaming
// costs no instruction of its own.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emitter.h"
#include "tilevm/codegen/cuda/converters.h"
#include "tilevm/layout/slot_permutation.h"
#include "tilevm/support/error.h"

namespace tilevm::codegen::cuda {

void Emitter::emit_cast(const ir::InstStmt& s, const ir::CastInst& n) {
  const RegInfo& src = reg_arg(n.src);
  const layout::Layout result_layout = n.layout ? *n.layout : src.layout;
  const RegInfo& out = result_reg(s, n.out, n.dtype, result_layout);
  const int count = static_cast<int>(src.layout.num_locals());
  std::vector<int> order;  // empty: slot i from slot i
  if (n.layout) {
    const layout::SlotPermutation perm = layout::slot_permutation(src.layout, result_layout);
    TILEVM_ASSERT(perm.error.empty(), "Cast layout= passed the verifier: {}", perm.error);
    order.assign(perm.slots.begin(), perm.slots.end());
    if (is_identity_order(order)) order.clear();
  }
  // Registers hold each thread's elements as one packed bit stream in slot order, which is exactly the
  // converters' input and output format, so a whole tile converts with one call.
  const ConverterSpec spec{src.dtype, n.dtype, count, order};
  if (has_vectorized_converter(spec)) {
    std::string fn = converter_function_name(spec);
    // The name carries a 32-bit hash of the order: on a collision with another order, number this one.
    for (int k = 2; converter_orders_.count(fn) && converter_orders_.at(fn) != order; ++k)
      fn = fmt::format("{}_{}", converter_function_name(spec), k);
    converter_orders_[fn] = order;
    if (!helper_functions_.count(fn)) helper_functions_[fn] = emit_converter(spec, fn);
    note(s, "vectorized converter " + fn + (order.empty() ? "" : " (slots reordered by layout=)"));
    line(fmt::format("{}({}, {});", fn, src.name, out.name));
    return;
  }
  // Per element from here; with a reordering, slot i reads slot from[i] (a constant once unrolled).
  auto element_loop = [&](const std::string& convert) {
    line("#pragma unroll");
    if (order.empty()) {
      line(fmt::format("for (int i = 0; i < {}; ++i) tv_set<{}>({}, i, {}(tv_get<{}>({}, i)));", count,
                       n.dtype.bits(), out.name, convert, src.dtype.bits(), src.name));
      return;
    }
    line(fmt::format("for (int i = 0; i < {}; ++i) {{", count));
    line(fmt::format("  const int from[{}] = {{{}}};", count, fmt::join(order, ", ")));
    line(fmt::format("  tv_set<{}>({}, i, {}(tv_get<{}>({}, from[i])));", n.dtype.bits(), out.name, convert,
                     src.dtype.bits(), src.name));
    line("}");
  };
  auto per_element = [&](const std::string& what, const std::string& convert) {
    note(s, what + (order.empty() ? "" : ", slots reordered by layout="));
    element_loop(convert);
  };
  if (src.dtype == n.dtype) {
    per_element(fmt::format("slot copy ({} to {})", src.dtype.name(), n.dtype.name()), "");
    return;
  }
  // Between f32 and f16/bf16: one cvt per element (prelude), with the interpreter's saturation and NaN.
  const DataType f32 = DataType::f32(), f16 = DataType::f16(), bf16 = DataType::bf16();
  const char* fast = src.dtype == f16 && n.dtype == f32    ? "tv_f16_to_f32"
                     : src.dtype == bf16 && n.dtype == f32 ? "tv_bf16_to_f32"
                     : src.dtype == f32 && n.dtype == f16  ? "tv_f32_to_f16"
                     : src.dtype == f32 && n.dtype == bf16 ? "tv_f32_to_bf16"
                                                           : nullptr;
  if (fast && src.dtype == f32 && count >= 2) {
    // A narrowing (every GEMM's epilogue). cvt.rn alone is the Cast rule for every value whose magnitude
    // rounds below infinity: only NaN, inf and the finite values past the largest that round up to inf need
    // the rules on top (saturation, the one NaN). So the fragment is checked first, one compare per slot
    // (NaN fails it), and when every slot passes, pairs convert with one packing cvt each; else per element.
    // Per element everywhere cost 15-20 instructions a slot, most of a GEMM's epilogue (a tenth of the
    // kernel's issue slots at 2048^3).
    const bool bf = n.dtype == bf16;
    // The smallest magnitude that rounds to inf: halfway between the largest finite value and 2^(emax+1).
    const char* limit = bf ? "0x1.ffp+127f" : "65520.0f";
    std::string from_even = "2 * i", from_odd = "2 * i + 1";
    if (!order.empty()) {
      from_even = "tv_from[2 * i]";
      from_odd = "tv_from[2 * i + 1]";
    }
    note(s, fmt::format("f32 -> {}: pairs by cvt.rn.{}x2.f32 when every slot is below {} in magnitude, else "
                        "per element{}",
                        n.dtype.name(), n.dtype.name(), bf ? "the bf16 rounding limit" : "65520",
                        order.empty() ? "" : "; slots reordered by layout="));
    open("");
    if (!order.empty()) line(fmt::format("const int tv_from[{}] = {{{}}};", count, fmt::join(order, ", ")));
    line("bool tv_plain = true;");
    line("#pragma unroll");
    line(fmt::format("for (int i = 0; i < {}; ++i) tv_plain &= fabsf(__uint_as_float({}[i])) < {};", count,
                     src.name, limit));
    open("if (tv_plain)");
    line("#pragma unroll");
    line(fmt::format("for (int i = 0; i < {}; ++i) {}[i] = tv_pack_{}x2({}[{}], {}[{}]);", count / 2,
                     out.name, n.dtype.name(), src.name, from_even, src.name, from_odd));
    if (count % 2)
      line(fmt::format("{}[{}] = (tv_u32){}({}[{}]);", out.name, count / 2, fast, src.name,
                       order.empty() ? std::to_string(count - 1) : fmt::format("tv_from[{}]", count - 1)));
    close("} else {");
    ++indent_;
    element_loop(fast);
    close();
    close();
    return;
  }
  if (fast) {
    // A widening keeps the hardware's NaN where no reader sees its bits (transform/analyze_nan_payload.h).
    const bool keep = n.dtype == f32 && n.nan_payload_unobserved;
    per_element(fmt::format("per-element cvt {} -> {}{}", src.dtype.name(), n.dtype.name(),
                            keep ? " (NaN left as the hardware's: no reader sees its bits)" : ""),
                fmt::format("{}{}", fast, keep ? "<false>" : ""));
    return;
  }
  per_element(fmt::format("per-element conversion {} -> {}", src.dtype.name(), n.dtype.name()),
              fmt::format("tv_cast<{}, {}>", type_args(src.dtype), type_args(n.dtype)));
}

}  // namespace tilevm::codegen::cuda
