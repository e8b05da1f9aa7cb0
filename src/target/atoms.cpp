#include "tilevm/target/atoms.h"

namespace tilevm::target {
namespace {

using layout::column_local;
using layout::column_spatial;
using layout::compose;
using layout::Layout;
using layout::local;
using layout::spatial;

Layout chain(std::initializer_list<Layout> factors) {
  Layout out;
  for (const Layout& f : factors) out = compose(out, f);
  return out;
}

// PTX spells signed integers s8, s32; every other type as tilevm does.
std::string ptx_name(DataType t) {
  return t.kind() == TypeKind::SignedInt ? "s" + std::to_string(t.bits()) : t.name();
}

// The accumulator fragment is the same for every m16n8 shape: rows groupID and groupID + 8, two adjacent
// columns per thread.
Layout mma_c() {
  return chain({local({2, 1}), spatial({8, 4}), local({1, 2})});
}

MmaAtom m16n8k16(DataType in, DataType acc) {
  return MmaAtom{
      "mma.m16n8k16." + ptx_name(acc) + "." + ptx_name(in) + "." + ptx_name(in) + "." + ptx_name(acc),
      16,
      8,
      16,
      in,
      in,
      acc,
      chain({column_local({2, 2}), spatial({8, 4}), local({1, 2})}),
      chain({local({2, 1}), column_spatial({4, 8}), local({2, 1})}),
      mma_c()};
}

MmaAtom m16n8k32(DataType in) {
  return MmaAtom{"mma.m16n8k32.s32." + ptx_name(in) + "." + ptx_name(in) + ".s32",
                 16,
                 8,
                 32,
                 in,
                 in,
                 DataType::i32(),
                 chain({column_local({2, 2}), spatial({8, 4}), local({1, 4})}),
                 chain({local({2, 1}), column_spatial({4, 8}), local({4, 1})}),
                 mma_c()};
}

}  // namespace

const std::vector<MmaAtom>& mma_atoms() {
  static const std::vector<MmaAtom> atoms = {
      m16n8k16(DataType::f16(), DataType::f32()), m16n8k16(DataType::f16(), DataType::f16()),
      m16n8k16(DataType::bf16(), DataType::f32()), m16n8k32(DataType::i8()), m16n8k32(DataType::u8())};
  return atoms;
}

const std::vector<LdmatrixAtom>& ldmatrix_atoms() {
  static const std::vector<LdmatrixAtom> atoms = {
      {1, chain({spatial({8, 4}), local({1, 2})})},
      {2, chain({local({2, 1}), spatial({8, 4}), local({1, 2})})},
      {4, chain({column_local({2, 2}), spatial({8, 4}), local({1, 2})})},
      {4, chain({local({1, 4}), spatial({8, 4}), local({1, 2})})}};
  return atoms;
}

}  // namespace tilevm::target
