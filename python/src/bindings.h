// The pieces of the extension module tilevm._tilevm, one file each (module.cpp joins them). Each binds the
// library calls that a `tilevm` subcommand makes (tools/tilevm/*_command.cpp), on NumPy arrays and plain
// integers instead of files: tensors reach this module as addresses and shapes that tilevm/_torch.py checked,
// so the module links no libtorch.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <optional>

#include "tilevm/ops/quantize.h"

namespace tilevm::python {

namespace nb = nanobind;

// A program that does not parse or verify; the message is the rendered diagnostics (FILE:LINE:COL: error:
// ..., the source line and a caret). Raised in Python as tilevm.CompileError (a ValueError).
struct CompileFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A run that the interpreter or the GPU path reported as failed (a race, an out-of-bounds access, a launch
// error), with its diagnostics. Raised in Python as tilevm.RunError (a RuntimeError).
struct RunFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A NumPy array that owns `values` (moved to the heap and freed with the array).
template <typename T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& values, std::vector<size_t> shape) {
  auto* heap = new std::vector<T>(std::move(values));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.data(), owner);
}

// Host arrays as the Python side passes them (checked there; nanobind checks the dtype, rank and order).
using Bytes = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using U16Matrix = nb::ndarray<const uint16_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// The library's quantized weight from the arrays of a tilevm.QuantizedWeight (codes may be longer than the
// packed size: the Python side pads them to 16 bytes for the GPU transform). @throws tilevm::Error.
ops::QuantizedWeight make_weight(int64_t k, int64_t n, const std::string& wtype, int64_t group,
                                 const std::string& scale_type, bool zero_point, Bytes codes,
                                 U16Matrix scales, std::optional<U16Matrix> zeros);

void bind_dtype(nb::module_& m);
void bind_layout(nb::module_& m);
void bind_quantize(nb::module_& m);
void bind_qmatmul(nb::module_& m);
void bind_program(nb::module_& m);

}  // namespace tilevm::python
