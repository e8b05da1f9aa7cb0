"""tilevm: low-bit quantized matmuls and tile-level GPU programs, from PyTorch or NumPy.

    import tilevm
    qw = tilevm.quantize(w, "u4", group=128)        # w: [K, N] (x @ w); torch tensor or NumPy array
    y = tilevm.qmatmul(x, qw)                        # x: [..., K] f16/bf16 -> [..., N]
    tilevm.nn.quantize_(model, "f6e3m2", group=128)  # swap a model's nn.Linear layers
    k = tilevm.compile("examples/matmul_f16_i6.tile", M=16)
    k(a, b, c, backend="interp")                     # NumPy arrays or tensors, updated in place

compile(), layout() and dtype() need only NumPy; quantize/qmatmul/nn work on torch tensors when torch is
installed (it is never required, and the extension does not link it). Nothing needs a GPU: the CPU
interpreter runs every program and the quantized matmul, slowly (keep shapes small).
"""

from ._tilevm import CompileError, RunError, __version__
from ._dtype import DType, dtype, weight_types
from ._layout import Layout, layout
from ._program import Kernel, compile
from ._quant import QuantizedWeight, dequantize, precompile_qmatmul, qmatmul, quantize
from ._tilevm import gpu_available

__all__ = [
    "CompileError",
    "RunError",
    "DType",
    "Kernel",
    "Layout",
    "QuantizedWeight",
    "compile",
    "dequantize",
    "dtype",
    "gpu_available",
    "layout",
    "nn",
    "precompile_qmatmul",
    "qmatmul",
    "quantize",
    "weight_types",
    "__version__",
]


def __getattr__(name):
    # tilevm.nn needs torch; import it only when asked for, so that `import tilevm` works without torch.
    if name == "nn":
        import importlib

        return importlib.import_module(".nn", __name__)
    raise AttributeError(f"module 'tilevm' has no attribute {name!r}")
