// tilevm.compile: a .tile program parsed and lowered once (transform::lower verifies it), then run as
// `tilevm run` runs it (tools/tilevm/run_command.cpp): on the interpreter or, from host arrays, through
// exec::run_on_gpu; or, for tensors already on the GPU, compiled and loaded once (exec::compile_program,
// GpuProgram::load) and launched on the caller's stream with the tensors' addresses.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/exec/gpu_program.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/exec/npy.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/runtime/device.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/packing.h"

namespace tilevm::python {

namespace {

using Buffer = nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

struct Program {
  ir::Program program;
  std::string file, source;
  std::string arch;  // what the tile layer lowered for (its Gemms' instructions, layout=auto's choice)

  // `arch` empty: the first GPU's (a Hopper gets wgmma and TMA), else the generic sm_80 target. The lowered
  // program is what the interpreter runs and what a GPU launch compiles (lowering again for the device
  // changes nothing once the tile operators are gone), so the host's packing (param_layouts) and every run
  // agree on one choice.
  static Program parse(const std::string& source, const std::string& file,
                       const std::map<std::string, std::string>& defines, const std::string& arch) {
    target::Target target = target::Target::generic_sm80();
    if (!arch.empty()) {
      target = target::Target::for_arch(arch);
    } else if (runtime::Device::available()) {
      // A GPU tilevm cannot target (before sm_80), or one the driver will not open, leaves the generic
      // target: the kernel still runs on the interpreter, and a launch there says why it cannot.
      try {
        target = exec::device_target(runtime::Device::open(0).info());
      } catch (const Error&) {
      }
    }
    Diagnostics diags;
    ir::ParseOptions options;
    options.defines = defines;
    std::optional<ir::Program> p = ir::parse_program(source, diags, options);
    if (p && !diags.has_errors()) p = transform::lower(*std::move(p), diags, {.target = target});
    if (!p || diags.has_errors()) throw CompileFailure(diags.render(file, source));
    return Program{*std::move(p), file, source, target.arch};
  }

  // (name, "pointer" | "scalar", dtype name, host dtype descr) per parameter, in launch order.
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> params() const {
    std::vector<std::tuple<std::string, std::string, std::string, std::string>> out;
    for (const ir::Var& v : program.params) {
      const bool pointer = v->type.is_pointer();
      out.emplace_back(v->name, pointer ? "pointer" : "scalar", v->type.dtype.name(),
                       pointer ? npy::descr_for(v->type.dtype) : "");
    }
    return out;
  }

  // Runs on the interpreter (or, with gpu, through exec::run_on_gpu, which copies the buffers to a device and
  // back). `buffers` are the bytes of each pointer parameter, updated in place; returns what Print() wrote.
  std::string run(std::map<std::string, Buffer> buffers, const std::map<std::string, int64_t>& ints,
                  const std::map<std::string, double>& floats, bool gpu) const {
    interp::Arguments args;
    for (const auto& [name, v] : ints) args.scalars[name] = interp::ScalarValue{false, v, 0.0};
    for (const auto& [name, v] : floats) args.scalars[name] = interp::ScalarValue{true, 0, v};
    std::map<std::string, std::vector<uint8_t>> host;
    for (auto& [name, b] : buffers) {
      host[name].assign(b.data(), b.data() + b.size());
      args.buffers[name] = &host[name];
    }
    Diagnostics diags;
    std::ostringstream printed;
    bool ok = false;
    {
      nb::gil_scoped_release release;
      if (gpu) {
        ok = exec::run_on_gpu(program, args, diags);
      } else {
        interp::RunOptions options;
        options.print_stream = &printed;
        ok = interp::run_program(program, args, diags, options);
      }
    }
    if (!ok) throw RunFailure(diags.render(file, source));
    for (auto& [name, b] : buffers) std::copy(host[name].begin(), host[name].end(), b.data());
    return printed.str();
  }
};

// A program compiled and loaded on one device, launched on device memory the caller owns.
struct GpuKernel {
  runtime::Device device;
  std::shared_ptr<exec::GpuProgram> gpu;

  static GpuKernel load(const Program& p, int ordinal) {
    nb::gil_scoped_release release;
    runtime::Device d = runtime::Device::open(ordinal);
    auto gpu = std::make_shared<exec::GpuProgram>(
        exec::GpuProgram::load(d, exec::compile_program(p.program, exec::device_target(d.info()))));
    return GpuKernel{d, gpu};
  }

  static exec::ProgramArgs make_args(const std::map<std::string, uint64_t>& pointers,
                                     const std::map<std::string, int64_t>& ints,
                                     const std::map<std::string, double>& floats) {
    exec::ProgramArgs args;
    args.pointers = pointers;
    args.scalars = ints;
    args.float_scalars = floats;
    return args;
  }

  // The workspace's initial bytes (every AllocateGlobal's init value written in), empty when the program has
  // none: the caller copies them to device memory and passes its address to launch.
  nb::ndarray<nb::numpy, uint8_t> workspace_image(const std::map<std::string, int64_t>& ints,
                                                  const std::map<std::string, double>& floats) const {
    const exec::ProgramArgs args = make_args({}, ints, floats);
    std::vector<uint8_t> image(gpu->workspace_bytes(args), 0);
    for (const exec::WorkspaceSlot& slot : gpu->workspace_slots(args)) {
      if (!slot.init_code) continue;
      for (int64_t e = 0; e < slot.elements; ++e)
        set_code(image.data() + slot.offset, slot.inst->dtype.bits(), e, *slot.init_code);
    }
    const size_t size = image.size();
    return to_numpy(std::move(image), {size});
  }

  void launch(uint64_t stream, const std::map<std::string, uint64_t>& pointers,
              const std::map<std::string, int64_t>& ints, const std::map<std::string, double>& floats,
              uint64_t workspace) const {
    exec::ProgramArgs args = make_args(pointers, ints, floats);
    args.workspace = workspace;
    args.workspace_initialized = true;  // workspace_image() was copied there
    gpu->launch(device.wrap_stream(reinterpret_cast<void*>(stream)), args);
  }
};

// Named layouts as (name, canonical text) pairs: Python builds its Layout objects from the text.
std::vector<std::pair<std::string, std::string>> layout_texts(
    const std::vector<std::pair<std::string, layout::Layout>>& layouts) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, l] : layouts) out.emplace_back(name, layout::print_layout(l));
  return out;
}

}  // namespace

void bind_program(nb::module_& m) {
  nb::class_<Program>(m, "Program")
      .def_static("parse", &Program::parse, nb::arg("source"), nb::arg("file"), nb::arg("defines"),
                  nb::arg("arch"),
                  "parse and lower (verify) a .tile program for `arch` (empty: the first GPU's, else sm_80); "
                  "tilevm.CompileError with the diagnostics")
      .def_prop_ro("arch", [](const Program& p) { return p.arch; })
      .def_prop_ro("name", [](const Program& p) { return p.program.name; })
      .def_prop_ro("params", &Program::params)
      .def_prop_ro("text", [](const Program& p) { return ir::print_program(p.program); })
      .def_prop_ro("layouts", [](const Program& p) { return layout_texts(p.program.layouts); })
      .def_prop_ro("param_layouts",
                   [](const Program& p) { return layout_texts(ir::pointer_layouts(p.program)); })
      .def("run", &Program::run, nb::arg("buffers"), nb::arg("ints"), nb::arg("floats"), nb::arg("gpu"));
  nb::class_<GpuKernel>(m, "GpuKernel")
      .def_static("load", &GpuKernel::load, nb::arg("program"), nb::arg("device"))
      .def("workspace_image", &GpuKernel::workspace_image, nb::arg("ints"), nb::arg("floats"))
      .def("launch", &GpuKernel::launch, nb::arg("stream"), nb::arg("pointers"), nb::arg("ints"),
           nb::arg("floats"), nb::arg("workspace"));
}

}  // namespace tilevm::python
