// tilevm._tilevm: the extension module. tilevm::Error (bad input, with the concrete values in its message)
// becomes ValueError; the two failures that carry diagnostics get their own classes (bindings.h).
#include <exception>
#include <string>

#include "bindings.h"
#include "tilevm/support/error.h"

NB_MODULE(_tilevm, m) {
  using namespace tilevm::python;
  m.doc() = "tilevm's C++ library; use the `tilevm` package, which checks arguments and wraps tensors";
  nb::exception<CompileFailure>(m, "CompileError", PyExc_ValueError);
  nb::exception<RunFailure>(m, "RunError", PyExc_RuntimeError);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tilevm::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const tilevm::InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, (std::string("tilevm internal error: ") + e.what()).c_str());
    }
  });
  m.attr("__version__") = TILEVM_VERSION;
  // The package keeps compiled kernels in module-level caches for the life of the process
  // (tilevm/_torch_ops.py), so they are still referenced when the interpreter exits; nanobind would report
  // each as a leak.
  nb::set_leak_warnings(false);
  bind_dtype(m);
  bind_layout(m);
  bind_quantize(m);
  bind_qmatmul(m);
  bind_program(m);
}
