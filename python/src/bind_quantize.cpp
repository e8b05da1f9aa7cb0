// tilevm.quantize / tilevm.dequantize: ops::quantize and ops::dequantize (include/tilevm/ops/quantize.h) on
// NumPy arrays. The weight is [K, N] (K the reduction axis), as the library and `x @ W` have it.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "tilevm/ops/quantize.h"
#include "tilevm/support/error.h"
#include "tilevm/type/packing.h"

namespace tilevm::python {

namespace {

using F32Matrix = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

ops::QuantSpec make_spec(const std::string& wtype, int64_t group, const std::string& scale_type,
                         bool zero_point) {
  return ops::QuantSpec{DataType::parse(wtype), group, DataType::parse(scale_type), zero_point};
}

nb::tuple quantize(F32Matrix w, const std::string& wtype, int64_t group, const std::string& scale_type,
                   bool zero_point) {
  const ops::QuantSpec spec = make_spec(wtype, group, scale_type, zero_point);
  const int64_t k = static_cast<int64_t>(w.shape(0)), n = static_cast<int64_t>(w.shape(1));
  ops::QuantizedWeight q;
  {
    nb::gil_scoped_release release;
    q = ops::quantize(std::span<const float>(w.data(), w.size()), k, n, spec);
  }
  const size_t groups = static_cast<size_t>(k / spec.group);
  const size_t code_bytes = q.codes.size();
  nb::object zeros = nb::none();
  if (spec.zero_point) zeros = nb::cast(to_numpy(std::move(q.zeros), {groups, static_cast<size_t>(n)}));
  return nb::make_tuple(to_numpy(std::move(q.codes), {code_bytes}),
                        to_numpy(std::move(q.scales), {groups, static_cast<size_t>(n)}), zeros);
}

}  // namespace

// The library's weight from arrays the Python side checked (shared with bind_qmatmul.cpp).
ops::QuantizedWeight make_weight(int64_t k, int64_t n, const std::string& wtype, int64_t group,
                                 const std::string& scale_type, bool zero_point, Bytes codes,
                                 U16Matrix scales, std::optional<U16Matrix> zeros) {
  ops::QuantizedWeight q;
  q.k = k;
  q.n = n;
  q.spec = make_spec(wtype, group, scale_type, zero_point);
  const int64_t packed = packed_bytes(q.spec.wtype, k * n);
  if (static_cast<int64_t>(codes.size()) < packed)
    fail("the codes hold {} bytes but a {} x {} {} weight packs into {}", codes.size(), k, n,
         q.spec.wtype.name(), packed);
  q.codes.assign(codes.data(), codes.data() + packed);
  q.scales.assign(scales.data(), scales.data() + scales.size());
  if (zeros) q.zeros.assign(zeros->data(), zeros->data() + zeros->size());
  return q;
}

void bind_quantize(nb::module_& m) {
  m.def(
      "quantize", &quantize, nb::arg("w"), nb::arg("wtype"), nb::arg("group"), nb::arg("scale_type"),
      nb::arg("zero_point"),
      "ops::quantize of a float32 [K, N] array: (packed codes uint8, scales uint16 [K/G, N], zeros or None)");
  m.def(
      "dequantize",
      [](int64_t k, int64_t n, const std::string& wtype, int64_t group, const std::string& scale_type,
         bool zero_point, Bytes codes, U16Matrix scales, std::optional<U16Matrix> zeros) {
        const ops::QuantizedWeight q =
            make_weight(k, n, wtype, group, scale_type, zero_point, codes, scales, zeros);
        std::vector<double> w;
        {
          nb::gil_scoped_release release;
          w = ops::dequantize(q);
        }
        return to_numpy(std::move(w), {static_cast<size_t>(k), static_cast<size_t>(n)});
      },
      nb::arg("k"), nb::arg("n"), nb::arg("wtype"), nb::arg("group"), nb::arg("scale_type"),
      nb::arg("zero_point"), nb::arg("codes"), nb::arg("scales"), nb::arg("zeros").none(),
      "ops::dequantize: the float64 [K, N] values");
}

}  // namespace tilevm::python
