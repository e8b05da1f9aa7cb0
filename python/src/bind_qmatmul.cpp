// tilevm.qmatmul: the quantized matmul (include/tilevm/ops/qmatmul/) the way `tilevm qmatmul` runs it
// (tools/tilevm/qmatmul_command.cpp): on the interpreter with the heuristic configuration, or on the GPU on
// memory and a stream that PyTorch owns (runtime::Device::wrap_memory / wrap_stream).
//
// The GPU path is split so that a launch does nothing but launch: QMatmulGpu.prepare compiles and loads the
// programs (and tunes, if asked), transform() reorders a weight once, run() launches on the caller's stream.
// tilevm/_torch.py does the first two outside CUDA-graph capture and raises a clear error inside it.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/ops/qmatmul/qmatmul_gpu.h"
#include "tilevm/ops/qmatmul/qmatmul_interp.h"
#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/runtime/device.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/target/target.h"

namespace tilevm::python {

namespace {

ops::QMatmulProblem make_problem(int64_t m, int64_t n, int64_t k, const std::string& atype,
                                 const std::string& wtype, int64_t group, bool zero_point) {
  ops::QMatmulProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.atype = DataType::parse(atype);
  p.wtype = DataType::parse(wtype);
  p.group = group;
  p.zero_point = zero_point;
  ops::check_problem(p);
  return p;
}

// C = A @ dequant(W) on the interpreter; A is [M, K] ATYPE codes.
nb::ndarray<nb::numpy, uint16_t> qmatmul_interp(U16Matrix a, int64_t n, const std::string& atype,
                                                const std::string& wtype, int64_t group, bool zero_point,
                                                Bytes codes, U16Matrix scales,
                                                std::optional<U16Matrix> zeros) {
  const int64_t m = static_cast<int64_t>(a.shape(0)), k = static_cast<int64_t>(a.shape(1));
  const ops::QMatmulProblem p = make_problem(m, n, k, atype, wtype, group, zero_point);
  const ops::QuantizedWeight w = make_weight(k, n, wtype, group, atype, zero_point, codes, scales, zeros);
  const ops::QMatmulConfig config =
      ops::heuristic_qmatmul_config(p, target::Target::h100_like(), /*allow_dequant_gemm=*/false);
  std::vector<uint16_t> c;
  Diagnostics diags;
  bool ok = false;
  {
    nb::gil_scoped_release release;
    ok = ops::run_qmatmul_interp(p, config, std::span<const uint16_t>(a.data(), a.size()), w, c, diags);
  }
  if (!ok) throw RunFailure(diags.render("qmatmul", ""));
  return to_numpy(std::move(c), {static_cast<size_t>(m), static_cast<size_t>(n)});
}

// Devices by ordinal, opened once (each holds the primary context, the one PyTorch uses).
const runtime::Device& open_device(int ordinal) {
  static std::mutex mutex;
  static std::map<int, runtime::Device> devices;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = devices.find(ordinal);
  if (it == devices.end()) it = devices.emplace(ordinal, runtime::Device::open(ordinal)).first;
  return it->second;
}

// The compiled and loaded programs of one problem on one device.
struct QMatmulKernel {
  runtime::Device device;
  std::shared_ptr<ops::QMatmulGpu> gpu;
  std::string layout;  // ops::qmatmul_layout, worked out once here (it builds and prints the transform)

  static QMatmulKernel prepare(int ordinal, int64_t m, int64_t n, int64_t k, const std::string& atype,
                               const std::string& wtype, int64_t group, bool zero_point,
                               const std::string& config, bool tune) {
    const ops::QMatmulProblem p = make_problem(m, n, k, atype, wtype, group, zero_point);
    nb::gil_scoped_release release;
    const runtime::Device& d = open_device(ordinal);
    ops::QMatmulConfig c;
    if (!config.empty()) {
      c = ops::QMatmulConfig::parse(config);
      ops::check_config(p, c);
    } else if (tune) {
      c = ops::autotune_qmatmul(d, p).config;
    } else {
      c = ops::heuristic_qmatmul_config(p, exec::device_target(d.info()),
                                        /*allow_dequant_gemm=*/false);
    }
    return QMatmulKernel{d,
                         std::make_shared<ops::QMatmulGpu>(ops::QMatmulGpu::load(
                             d, ops::compile_qmatmul(p, c, exec::device_target(d.info())))),
                         ops::qmatmul_layout(p, c)};
  }

  void transform(uint64_t stream, uint64_t codes, uint64_t transformed) const {
    gpu->transform(device.wrap_stream(reinterpret_cast<void*>(stream)), codes, transformed);
  }

  void run(uint64_t stream, uint64_t a, uint64_t transformed, uint64_t scales, uint64_t zeros, uint64_t c,
           uint64_t workspace, uint64_t counters) const {
    gpu->run(device.wrap_stream(reinterpret_cast<void*>(stream)),
             ops::QMatmulBuffers{.a = a,
                                 .transformed = transformed,
                                 .scales = scales,
                                 .zeros = zeros,
                                 .c = c,
                                 .workspace = workspace,
                                 .counters = counters});
  }
};

// Split-K's and stream-K's ticket counters for eager calls: one zeroed buffer per (device, stream), owned
// here and not by PyTorch. Every run leaves the counters at 0, so the calls of one stream, which run one
// after another, share it. The memory comes from the driver, not from torch's allocator: under
// torch.compile's CUDA graphs (mode="reduce-overhead") the warm-up calls allocate from the graph's private
// pool, where a tensor kept between calls is an error ("tensor(s) in the cudagraph pool not tracked as
// outputs"). A buffer outgrown by a larger kernel is kept, not freed: launches already queued may still use
// it. The few KiB per stream live as long as the process.
uint64_t stream_counters(int ordinal, uint64_t stream, int64_t bytes) {
  static std::mutex mutex;
  // Never destroyed: freeing at exit could run after the driver is gone.
  static auto* buffers = new std::map<std::pair<int, uint64_t>, std::vector<runtime::DeviceBuffer>>();
  if (bytes <= 0) return 0;
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<runtime::DeviceBuffer>& held = (*buffers)[{ordinal, stream}];
  if (held.empty() || held.back().size() < static_cast<size_t>(bytes)) {
    const size_t size =
        std::max<size_t>(static_cast<size_t>(bytes), held.empty() ? 0 : 2 * held.back().size());
    const runtime::Device& device = open_device(ordinal);
    runtime::DeviceBuffer b = device.allocate(size);
    // Zeroed on the caller's stream, ahead of the launch that first reads it (no host wait, and nothing on
    // the legacy stream).
    b.fill_bytes_async(0, device.wrap_stream(reinterpret_cast<void*>(stream)));
    held.push_back(std::move(b));
  }
  return held.back().device_ptr();
}

}  // namespace

void bind_qmatmul(nb::module_& m) {
  m.def("qmatmul_interp", &qmatmul_interp, nb::arg("a"), nb::arg("n"), nb::arg("atype"), nb::arg("wtype"),
        nb::arg("group"), nb::arg("zero_point"), nb::arg("codes"), nb::arg("scales"), nb::arg("zeros").none(),
        "C = A @ dequant(W) on the CPU interpreter (ATYPE codes as uint16)");
  m.def(
      "qmatmul_codes_bytes",
      [](int64_t n, int64_t k, const std::string& wtype) {
        return ops::qmatmul_codes_bytes(make_problem(1, n, k, "f16", wtype, k, false));
      },
      nb::arg("n"), nb::arg("k"), nb::arg("wtype"));
  m.def(
      "qmatmul_weights_rounded",
      [](const std::string& config, int64_t k, const std::string& wtype, int64_t group) {
        return ops::qmatmul_weights_rounded(make_problem(1, 1, k, "f16", wtype, group, false),
                                            ops::QMatmulConfig::parse(config));
      },
      nb::arg("config"), nb::arg("k"), nb::arg("wtype"), nb::arg("group"),
      "whether CONFIG rounds the scaled weights to the activation type before the product (the tests' "
      "tolerance counts that rounding, as check_qmatmul does)");
  m.def("gpu_available", [] { return runtime::Device::available(); });
  m.def(
      "stream_counters", &stream_counters, nb::arg("device"), nb::arg("stream"), nb::arg("bytes"),
      "a zeroed buffer of at least BYTES for the ticket counters of eager calls on STREAM (a device pointer "
      "that the package keeps; every run leaves it zeroed)");
  nb::class_<QMatmulKernel>(m, "QMatmulGpu")
      .def_static("prepare", &QMatmulKernel::prepare, nb::arg("device"), nb::arg("m"), nb::arg("n"),
                  nb::arg("k"), nb::arg("atype"), nb::arg("wtype"), nb::arg("group"), nb::arg("zero_point"),
                  nb::arg("config"), nb::arg("tune"),
                  "compile (or tune) and load the programs of one problem on one device")
      .def_prop_ro("config", [](const QMatmulKernel& q) { return q.gpu->config().name(); })
      .def_ro(
          "layout", &QMatmulKernel::layout,
          "the transformed weight's layout identity (ops::qmatmul_layout): kernels that share it read the "
          "same transformed copy")
      .def_prop_ro("transformed_bytes", [](const QMatmulKernel& q) { return q.gpu->transformed_bytes(); })
      .def_prop_ro("workspace_bytes", [](const QMatmulKernel& q) { return q.gpu->workspace_bytes(); })
      .def_prop_ro(
          "counter_bytes", [](const QMatmulKernel& q) { return q.gpu->counter_bytes(); },
          "bytes of the split-K ticket counters: 0 before the first run, and every run leaves them 0")
      .def("transform", &QMatmulKernel::transform, nb::arg("stream"), nb::arg("codes"),
           nb::arg("transformed"))
      .def("run", &QMatmulKernel::run, nb::arg("stream"), nb::arg("a"), nb::arg("transformed"),
           nb::arg("scales"), nb::arg("zeros"), nb::arg("c"), nb::arg("workspace"), nb::arg("counters"));
}

}  // namespace tilevm::python
