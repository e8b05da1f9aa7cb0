"""The torch.library custom ops: ``tilevm::qmatmul`` and ``tilevm::launch`` (a compiled program's launch).

Each has a fake (meta) implementation, so torch.compile(fullgraph=True) traces them as single opaque ops and
``torch.library.opcheck`` passes. The real implementations run CPU tensors on the interpreter and CUDA tensors
on the GPU, on the tensors' device and the caller's current stream. A launch only launches: the kernel is
compiled and loaded, and a weight reordered for it, by the first call on a shape (or by precompile), and
inside CUDA-graph capture a missing kernel is an error that says so, never a compile, a module load, an
allocation outside torch's allocator or a synchronization.
"""

from typing import List, Optional, Tuple

import numpy as np
import torch
from torch import Tensor

from . import _tilevm as _C
from ._arrays import from_u16, u16_view

_ATYPE = {torch.float16: "f16", torch.bfloat16: "bf16"}


def _describe(t: Tensor) -> str:
    return f"{t.dtype} {tuple(t.shape)} on {t.device}"


_CODES_BYTES = {}


def _codes_bytes(wtype: str, k: int, n: int) -> int:
    """The bytes of a [k, n] weight's packed codes, padded to 16 (what tilevm.quantize stores)."""
    key = (wtype, k, n)
    if key not in _CODES_BYTES:
        bits = _C.dtype_info(wtype)["bits"]
        _CODES_BYTES[key] = (k * n * bits + 127) // 128 * 16
    return _CODES_BYTES[key]


def check_qmatmul_args(x: Tensor, codes: Tensor, scales: Tensor, zeros: Optional[Tensor], wtype: str,
                       group: int, n: int) -> None:
    """The checks every qmatmul call makes before it launches: TypeError for a wrong dtype, ValueError for a
    wrong device, shape or layout, each saying what was expected and how to get it."""
    if x.dtype not in _ATYPE:
        raise TypeError(f"qmatmul: x must be float16 or bfloat16, got {x.dtype}: convert it with x.half()")
    if scales.dtype != x.dtype:
        raise TypeError(f"qmatmul: x is {x.dtype} but the weight's scales are {scales.dtype}: quantize with "
                        f"scale_dtype={x.dtype}, or convert x to {scales.dtype}")
    if codes.dtype != torch.uint8 or codes.dim() != 1:
        raise TypeError(f"qmatmul: the codes must be a 1-D uint8 tensor, got {_describe(codes)}")
    if zeros is not None and zeros.dtype != x.dtype:
        raise TypeError(f"qmatmul: the zeros are {zeros.dtype} but x is {x.dtype}")
    for name, t in (("codes", codes), ("scales", scales), ("zeros", zeros)):
        if t is not None and t.device != x.device:
            raise ValueError(f"qmatmul: x is on {x.device} but the weight's {name} on {t.device}: move the "
                             f"weight with qw.to(x.device) (or the module with .to(device))")
    if x.device.type not in ("cpu", "cuda"):
        raise ValueError(f"qmatmul runs on CUDA tensors (GPU) and CPU tensors (interpreter), not {x.device}")
    if x.dim() < 1:
        raise ValueError("qmatmul: x must have at least one dimension, [..., K]")
    k = x.shape[-1]
    if scales.dim() != 2 or scales.shape[1] != n or group <= 0 or k % group or scales.shape[0] != k // group:
        raise ValueError(f"qmatmul: x is [..., {k}] but the weight's scales are {tuple(scales.shape)} with "
                         f"group {group} and N {n}: x's last dimension must be the weight's K")
    # (while tracing for torch.compile the op's body checks this when it runs: dtype_info is not traceable)
    need = 0 if torch.compiler.is_compiling() else _codes_bytes(wtype, k, n)
    if codes.numel() < need:
        raise ValueError(f"qmatmul: the codes hold {codes.numel()} bytes but a [{k}, {n}] {wtype} weight needs {need} "
                         "(packed, padded to 16 bytes): pass the codes tilevm.quantize made")
    if zeros is not None and zeros.shape != scales.shape:
        raise ValueError(f"qmatmul: zeros {tuple(zeros.shape)} and scales {tuple(scales.shape)} differ in shape")
    for name, t in (("x", x), ("codes", codes), ("scales", scales), ("zeros", zeros)):
        if t is not None and not t.is_contiguous():
            raise ValueError(f"qmatmul: {name} is not contiguous (strides {t.stride()}): pass {name}.contiguous()")


def _check_aligned(**tensors) -> None:
    for name, t in tensors.items():
        if t is not None and t.data_ptr() % 16:
            raise ValueError(f"qmatmul: {name}'s address {t.data_ptr():#x} is not 16-byte aligned (a view at an "
                             f"offset?): pass {name}.clone()")


def _capturing(device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


_KERNELS = {}  # (device index, m, n, k, atype, wtype, group, zero point) -> _C.QMatmulGpu
_TUNED = set()  # the keys of _KERNELS whose configuration was autotuned


def _kernel(device, m, n, k, atype, wtype, group, zero_point, tune=False, config=""):
    key = (device.index, m, n, k, atype, wtype, group, zero_point)
    kern = _KERNELS.get(key)
    if kern is None or (tune and key not in _TUNED) or (config and kern.config != config):
        if _capturing(device):
            raise RuntimeError(f"tilevm.qmatmul: no kernel for M={m}, N={n}, K={k}, {atype} x {wtype} on {device} "
                               "while a CUDA graph is being captured (compiling is not allowed there): run the "
                               "call once before capturing, or tilevm.precompile_qmatmul(qw, m)")
        idx = device.index if device.index is not None else torch.cuda.current_device()
        kern = _C.QMatmulGpu.prepare(idx, m, n, k, atype, wtype, group, zero_point, config, tune and not config)
        _KERNELS[key] = kern
        if tune:
            _TUNED.add(key)
    return kern


def _transformed(codes: Tensor, kern, device) -> Tensor:
    # The codes reordered tile by tile for the kernel's layout (qmatmul.h: the transform program), kept on the
    # codes tensor, one copy per layout (kern.layout: the configurations of different batch sizes that share a
    # layout share the copy). A copy is never freed or moved while the weight lives: a CUDA graph captured
    # earlier reads it by address, so dropping the M = 1 copy when an M = 64 call wants another layout (as
    # this cache once did) would leave that graph reading freed memory. After an in-place update of the codes
    # (a new tensor version) the next eager call rewrites every copy in place, on the current stream, so
    # graphs captured earlier see the new weight from then on (not before that call; and `codes.data.copy_`
    # does not count as an update: it keeps the version).
    cache = codes.__dict__.setdefault("_tilevm_transformed", {})  # layout -> [tensor, kernel, version]
    entry = cache.get(kern.layout)
    if entry is not None and entry[2] == codes._version:
        return entry[0]
    if _capturing(device):
        what = "has not been prepared for this kernel" if entry is None else "changed since it was prepared"
        raise RuntimeError(f"tilevm.qmatmul: the weight {what} and a CUDA graph is being captured: run the "
                           "call once before capturing, or tilevm.precompile_qmatmul(qw, m)")
    if entry is None:
        t = torch.empty(max(kern.transformed_bytes, 16), dtype=torch.uint8, device=device)
        entry = cache[kern.layout] = [t, kern, -1]
    for e in cache.values():  # the new layout, or every layout after an in-place update
        if e[2] != codes._version:
            e[1].transform(_stream(device), codes.data_ptr(), e[0].data_ptr())
            e[2] = codes._version
    return entry[0]


# Split-K's and stream-K's ticket counters. Every run of a kernel leaves them at 0 (the last block of a tile
# takes the ticket back), so one zeroed buffer per stream serves every eager call on that stream: the calls
# of one stream run one after another. The extension owns those buffers (_C.stream_counters: driver memory,
# not torch's, since a tensor kept between calls breaks torch.compile's CUDA graphs, whose warm-up calls
# allocate from the graph's pool). A CUDA graph gets counters of its own, zeroed inside the capture, so
# that no replay shares them with the eager calls of another stream.
def _counters(kern, device, stream: int) -> Tuple[int, Optional[Tensor]]:
    """The counters' device pointer (0: the kernel has none), and the tensor that holds them in a capture."""
    nbytes = kern.counter_bytes
    if not nbytes:
        return 0, None
    if _capturing(device):
        held = torch.zeros(nbytes, dtype=torch.uint8, device=device)
        return held.data_ptr(), held
    return _C.stream_counters(device.index, stream, nbytes), None


def _stream(device) -> int:
    # The current stream's handle; torch's raw query, cheaper than torch.cuda.current_stream(device).cuda_stream
    return torch._C._cuda_getCurrentRawStream(device.index)


def _qmatmul_impl(x: Tensor, codes: Tensor, scales: Tensor, zeros: Optional[Tensor], wtype: str, group: int,
                  n: int) -> Tensor:
    k = x.shape[-1]
    flat = x.dim() == 2
    x2 = x if flat else x.reshape(-1, k)
    m = x2.shape[0]
    atype = _ATYPE[x.dtype]
    if m == 0:
        return x.new_zeros(tuple(x.shape[:-1]) + (n,))
    if x.device.type == "cpu":
        z = None if zeros is None else u16_view(zeros)
        c = _C.qmatmul_interp(u16_view(x2), n, atype, wtype, group, zeros is not None, codes.numpy(),
                              u16_view(scales), z)
        c = from_u16(c, x.dtype)
    else:
        device = x.device
        _check_aligned(x=x2, codes=codes, scales=scales, zeros=zeros)
        kern = _kernel(device, m, n, k, atype, wtype, group, zeros is not None)
        t = _transformed(codes, kern, device)
        c = torch.empty((m, n), dtype=x.dtype, device=device)
        ws = kern.workspace_bytes
        workspace = torch.empty(ws, dtype=torch.uint8, device=device) if ws else None
        stream = _stream(device)
        counters, _held = _counters(kern, device, stream)
        kern.run(stream, x2.data_ptr(), t.data_ptr(), scales.data_ptr(),
                 0 if zeros is None else zeros.data_ptr(), c.data_ptr(),
                 0 if workspace is None else workspace.data_ptr(), counters)
    return c if flat else c.reshape(tuple(x.shape[:-1]) + (n,))


@torch.library.custom_op("tilevm::qmatmul", mutates_args=())
def qmatmul_op(x: Tensor, codes: Tensor, scales: Tensor, zeros: Optional[Tensor], wtype: str, group: int,
               n: int) -> Tensor:
    """C[..., N] = x[..., K] @ dequant(codes, scales, zeros): the quantized matmul (tilevm.qmatmul)."""
    check_qmatmul_args(x, codes, scales, zeros, wtype, group, n)
    return _qmatmul_impl(x, codes, scales, zeros, wtype, group, n)


@qmatmul_op.register_fake
def _qmatmul_fake(x, codes, scales, zeros, wtype, group, n):
    torch._check(x.dtype in _ATYPE, lambda: f"qmatmul: x must be float16 or bfloat16, got {x.dtype}")
    torch._check(scales.dtype == x.dtype, lambda: "qmatmul: x and the scales differ in dtype")
    return x.new_empty(tuple(x.shape[:-1]) + (n,))


def qmatmul(x: Tensor, qw) -> Tensor:
    k, n = qw.shape
    if x.dim() >= 1 and x.shape[-1] != k:
        raise ValueError(f"qmatmul: x has shape {tuple(x.shape)} but the weight is [{k}, {n}]: x must be [..., {k}]")
    if torch.compiler.is_compiling():
        # traced once per guard set: the checks are free, and id() below is not traceable (torch 2.11)
        check_qmatmul_args(x, qw.codes, qw.scales, qw.zeros, qw.wtype, qw.group, n)
        return torch.ops.tilevm.qmatmul(x, qw.codes, qw.scales, qw.zeros, qw.wtype, qw.group, n)
    # The full checks once per weight (its tensors' identities) and x's dtype and device; after that only what
    # can differ between calls of the same x type: the shape (checked above) and the layout.
    key = (x.dtype, x.device, id(qw.codes), id(qw.scales), id(qw.zeros))
    if qw.__dict__.get("_tilevm_checked") != key or not x.is_contiguous():
        check_qmatmul_args(x, qw.codes, qw.scales, qw.zeros, qw.wtype, qw.group, n)
        qw.__dict__["_tilevm_checked"] = key
    # Eager: the op's body directly. Going through the dispatcher (torch.library.custom_op) costs tens of
    # microseconds per call (docs/performance.md), more than the kernel itself at decode sizes.
    return _qmatmul_impl(x, qw.codes, qw.scales, qw.zeros, qw.wtype, qw.group, n)


def precompile(qw, m: int, tune: bool, config: str = "") -> str:
    if not torch.is_tensor(qw.codes) or qw.codes.device.type != "cuda":
        raise ValueError(f"precompile_qmatmul prepares a GPU kernel; the weight is on {qw.device}: qw.to('cuda')")
    k, n = qw.shape
    kern = _kernel(qw.codes.device, m, n, k, qw.scale_type, qw.wtype, qw.group, qw.zero_point, tune, config)
    _transformed(qw.codes, kern, qw.codes.device)
    return kern.config


# ---- tilevm.compile's launches -------------------------------------------------------------------------

_PROGRAMS = {}  # kernel id -> tilevm.Kernel, for the launch op (its schema carries the id, not the object)


def register_kernel(kernel) -> str:
    key = f"k{len(_PROGRAMS)}"
    _PROGRAMS[key] = kernel
    return key


def is_compiling() -> bool:
    return torch.compiler.is_compiling()


@torch.library.custom_op("tilevm::launch", mutates_args=("buffers",))
def launch_op(kernel: str, buffers: List[Tensor], ints: List[int], floats: List[float]) -> None:
    """One launch of a tilevm.compile'd program over its pointer parameters (updated in place)."""
    _PROGRAMS[kernel]._launch_tensors(buffers, ints, floats)


@launch_op.register_fake
def _launch_fake(kernel, buffers, ints, floats):
    return None


def current_stream(device) -> int:
    return _stream(device)


def capturing(device) -> bool:
    return _capturing(device)


def upload(image: np.ndarray, device) -> Tensor:
    return torch.from_numpy(image).to(device)
