// tilevm.dtype(NAME): what `tilevm dtype NAME [--table]` prints (tools/tilevm/dtype_command.cpp), as data;
// and the weight types of the quantized matmul, by the names the CLI's --wtype takes.
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/data_type.h"

namespace tilevm::python {

namespace {

nb::dict describe(const std::string& name) {
  const DataType t = DataType::parse(name);
  nb::dict d;
  d["name"] = t.name();
  d["bits"] = t.bits();
  d["kind"] = std::string(to_string(t.kind()));
  if (t.is_float()) {
    d["exponent_bits"] = t.exponent_bits();
    d["mantissa_bits"] = t.mantissa_bits();
    d["bias"] = t.bias();
    d["min"] = t.min_value();
    d["max"] = t.max_value();
    d["smallest_normal"] = t.smallest_normal();
    d["smallest_subnormal"] = t.smallest_subnormal();
    d["has_inf"] = t.has_inf();
    d["has_nan"] = t.has_nan();
  } else {
    d["min"] = t.kind() == TypeKind::SignedInt ? t.int_min() : int64_t{0};
    d["max"] = t.int_max();
  }
  if (t.is_sub_byte()) {
    const int group = std::gcd(8, t.bits());  // the smallest whole-byte run holds 8 / group elements
    d["storage"] = std::to_string(8 / group) + " elements in " + std::to_string(t.bits() / group) + " byte" +
                   (t.bits() / group == 1 ? "" : "s");
  } else {
    d["storage"] = std::to_string(t.storage_bytes()) + " byte" + (t.storage_bytes() == 1 ? "" : "s");
  }
  return d;
}

std::vector<std::pair<uint64_t, double>> table(const std::string& name) {
  const DataType t = DataType::parse(name);
  if (t.bits() > 8) fail("a table needs a type of 8 bits or fewer, {} has {}", t.name(), t.bits());
  const uint64_t codes = t.is_bool() ? 2 : uint64_t{1} << t.bits();
  std::vector<std::pair<uint64_t, double>> rows;
  for (uint64_t code = 0; code < codes; ++code) rows.emplace_back(code, decode(t, code));
  return rows;
}

// Every type the quantized matmul takes as weights with f16 or bf16 activations (ops::check_problem decides),
// in the order u1..u8, i1..i8, the low-bit floats by width, f16, bf16.
std::vector<std::string> weight_types() {
  std::vector<DataType> candidates;
  for (int b = 1; b <= 8; ++b) candidates.push_back(DataType::uint(b));
  for (int b = 1; b <= 8; ++b) candidates.push_back(DataType::int_(b));
  for (int b = 3; b <= 8; ++b)
    for (int e = 1; e <= b - 1; ++e) {
      try {
        candidates.push_back(DataType::float_(e, b - 1 - e));
      } catch (const Error&) {
      }
    }
  candidates.push_back(DataType::f16());
  candidates.push_back(DataType::bf16());
  std::vector<std::string> names;
  for (DataType w : candidates) {
    for (DataType a : {DataType::f16(), DataType::bf16()}) {
      ops::QMatmulProblem p;
      p.m = 1;
      p.n = 64;
      p.k = 128;
      p.atype = a;
      p.wtype = w;
      try {
        ops::check_problem(p);
        names.push_back(w.name());
        break;
      } catch (const Error&) {
      }
    }
  }
  return names;
}

}  // namespace

void bind_dtype(nb::module_& m) {
  m.def("dtype_info", &describe, nb::arg("name"), "the properties `tilevm dtype NAME` prints, as a dict");
  m.def("dtype_table", &table, nb::arg("name"), "(code, value) for every code (types of 8 bits or fewer)");
  m.def("canonical_dtype_name", [](const std::string& name) { return DataType::parse(name).name(); });
  m.def("weight_types", &weight_types, "the quantized matmul's weight types, by name");
}

}  // namespace tilevm::python
