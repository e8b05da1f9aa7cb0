"""tilevm.quantize / dequantize / qmatmul: weight quantization (the C++ ops::quantize) and the quantized
matmul, on torch tensors (through the registered op ``torch.ops.tilevm.qmatmul``) or NumPy arrays (on the
interpreter).

A weight is [K, N] with K the reduction axis, so that ``qmatmul(x, qw) ~= x @ w``; an ``nn.Linear``'s weight is
[N, K] and is passed transposed (``tilevm.nn.QuantizedLinear.from_linear`` does this).
"""

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from . import _tilevm as _C
from ._arrays import from_u16, is_tensor, require_torch, torch_module, u16_view
from ._dtype import check_weight_type

_ACT_NAMES = ("f16", "bf16")


def _scale_type_name(scale_dtype, w) -> str:
    torch = torch_module()
    if scale_dtype is None:
        if is_tensor(w) and w.dtype == torch.bfloat16:
            return "bf16"
        return "f16"
    if isinstance(scale_dtype, str) and scale_dtype in _ACT_NAMES:
        return scale_dtype
    if torch is not None and scale_dtype in (torch.float16, torch.bfloat16):
        return "f16" if scale_dtype == torch.float16 else "bf16"
    if not is_tensor(scale_dtype) and np.dtype(scale_dtype) == np.float16:
        return "f16"
    raise TypeError(f"scale_dtype must be float16 or bfloat16 ('f16' or 'bf16'), got {scale_dtype!r}")


def _group_size(group, k: int) -> int:
    if isinstance(group, str) and group.lower() == "k":
        return k
    if not isinstance(group, (int, np.integer)) or isinstance(group, bool):
        raise TypeError(f"group must be 32, 64, 128 or 'k' (one group per column), got {group!r}")
    return int(group)


@dataclass
class QuantizedWeight:
    """A [K, N] weight quantized to ``wtype``: ``codes`` (packed uint8 stream of the K*N codes, row-major,
    padded to 16 bytes), ``scales`` ([K/G, N], f16 or bf16), ``zeros`` ([K/G, N] like scales, or None),
    ``wtype`` (e.g. ``"u4"``), ``group`` (G), ``shape`` ((K, N)). Each element stands for
    ``(decode(code) - zero) * scale``. The arrays are torch tensors when the weight was a tensor, else NumPy
    arrays (scales as float16, or as uint16 bits for bf16).
    """

    codes: Any
    scales: Any
    zeros: Optional[Any]
    wtype: str
    group: int
    shape: Tuple[int, int]
    scale_type: str = "f16"

    @property
    def zero_point(self) -> bool:
        return self.zeros is not None

    @property
    def device(self):
        return self.codes.device if is_tensor(self.codes) else "cpu"

    def to(self, device) -> "QuantizedWeight":
        """The same weight with its tensors on ``device`` (torch weights only)."""
        if not is_tensor(self.codes):
            raise TypeError("QuantizedWeight.to() moves torch tensors; this weight holds NumPy arrays")
        z = None if self.zeros is None else self.zeros.to(device)
        return QuantizedWeight(self.codes.to(device), self.scales.to(device), z, self.wtype, self.group,
                               self.shape, self.scale_type)

    def state_dict(self) -> dict:
        """Tensors and metadata; ``QuantizedWeight.from_state_dict`` (or torch.save/load) round-trips it."""
        d = {"codes": self.codes, "scales": self.scales, "wtype": self.wtype, "group": self.group,
             "shape": tuple(self.shape), "scale_type": self.scale_type}
        if self.zeros is not None:
            d["zeros"] = self.zeros
        return d

    @classmethod
    def from_state_dict(cls, d: dict) -> "QuantizedWeight":
        return cls(d["codes"], d["scales"], d.get("zeros"), check_weight_type(d["wtype"]), int(d["group"]),
                   tuple(int(s) for s in d["shape"]), d.get("scale_type", "f16"))

    @property
    def nbytes(self) -> int:
        total = _nbytes(self.codes) + _nbytes(self.scales)
        return total + (0 if self.zeros is None else _nbytes(self.zeros))

    def __repr__(self):
        k, n = self.shape
        zp = ", zero_point=True" if self.zero_point else ""
        return (f"QuantizedWeight(shape=({k}, {n}), wtype={self.wtype!r}, group={self.group}{zp}, "
                f"scales={self.scale_type}, device={self.device})")


def _nbytes(a) -> int:
    return a.numel() * a.element_size() if is_tensor(a) else a.nbytes


def _host_u16(a):
    """uint16 bits of a scales/zeros array (torch f16/bf16 or NumPy float16/uint16), contiguous, on the CPU."""
    if is_tensor(a):
        return u16_view(a.detach().cpu().contiguous())
    return np.ascontiguousarray(a).view(np.uint16)


def _host_codes(a):
    if is_tensor(a):
        return a.detach().cpu().contiguous().numpy()
    return np.ascontiguousarray(a, dtype=np.uint8)


def quantize(w, wtype: str, group=128, zero_point: bool = False, scale_dtype=None) -> QuantizedWeight:
    """Quantizes a [K, N] weight to ``wtype`` with one scale per ``group`` rows of each column (the C++
    ``ops::quantize``; include/tilevm/ops/quantize.h says how scales and zero points are chosen).

    w: a float torch tensor (any device; quantization runs on the host) or NumPy array, [K, N].
    wtype: a name the CLI takes (``tilevm.weight_types()``); a bad one raises ValueError listing them all.
    group: 32, 64, 128, or ``"k"`` (one scale per column); K must be a multiple of it.
    zero_point: asymmetric quantization with zero points (unsigned types only). Without it an unsigned code
        cannot hold a negative weight: negatives become 0, so weights of both signs want zero_point=True or a
        signed or float type.
    scale_dtype: f16 or bf16 (torch dtype or ``"f16"``/``"bf16"``): the type of the scales and zeros, and the
        activation type the weight multiplies with. Default: the weight's if bf16, else f16.
    """
    wtype = check_weight_type(wtype)
    scale_type = _scale_type_name(scale_dtype, w)
    tensor = is_tensor(w)
    if tensor:
        if not w.is_floating_point():
            raise TypeError(f"quantize expects a floating-point weight, got {w.dtype}")
        host = w.detach().to("cpu", dtype=require_torch("quantize").float32).contiguous().numpy()
    else:
        host = np.asarray(w)
        if host.dtype.kind != "f":
            raise TypeError(f"quantize expects a floating-point weight, got {host.dtype}")
        host = np.ascontiguousarray(host, dtype=np.float32)
    if host.ndim != 2:
        raise ValueError(f"quantize expects a [K, N] weight (K the reduction axis), got shape {tuple(host.shape)}")
    k, n = host.shape
    g = _group_size(group, k)
    codes, scales, zeros = _C.quantize(host, wtype, g, scale_type, bool(zero_point))
    padded = -(-codes.size // 16) * 16  # the GPU transform reads whole 16-byte words
    codes = np.concatenate([codes, np.zeros(padded - codes.size, np.uint8)])
    if tensor:
        torch = torch_module()
        dt = torch.float16 if scale_type == "f16" else torch.bfloat16
        codes = torch.from_numpy(codes).to(w.device)
        scales = from_u16(scales, dt).to(w.device)
        zeros = None if zeros is None else from_u16(zeros, dt).to(w.device)
    elif scale_type == "f16":
        scales = scales.view(np.float16)
        zeros = None if zeros is None else zeros.view(np.float16)
    return QuantizedWeight(codes, scales, zeros, wtype, g, (k, n), scale_type)


def dequantize(qw: QuantizedWeight):
    """The [K, N] values the weight stands for, ``(code - zero) * scale``, exactly (float64): a torch tensor
    on the weight's device, or a NumPy array."""
    k, n = qw.shape
    z = None if qw.zeros is None else _host_u16(qw.zeros)
    w = _C.dequantize(k, n, qw.wtype, qw.group, qw.scale_type, qw.zero_point, _host_codes(qw.codes),
                      _host_u16(qw.scales), z)
    if is_tensor(qw.codes):
        return torch_module().from_numpy(w).to(qw.codes.device)
    return w


def qmatmul(x, qw: QuantizedWeight):
    """``x @ dequantize(qw)`` with f32 accumulation, rounded to x's type: x is [..., K] float16 or bfloat16
    (the scales' type), the result [..., N].

    torch tensors go through the registered op ``torch.ops.tilevm.qmatmul`` (torch.compile and CUDA graphs
    see one opaque op): on the GPU for CUDA tensors (on the current stream; the first call on a shape
    compiles the kernel and reorders the weight, so run it once before capturing a graph, or call
    ``precompile_qmatmul``), on the interpreter for CPU tensors. NumPy float16 arrays run on the
    interpreter. Wrong dtypes, devices, shapes or layouts raise TypeError/ValueError saying what was expected.
    """
    if not isinstance(qw, QuantizedWeight):
        raise TypeError(f"qmatmul's second argument must be a tilevm.QuantizedWeight, got {type(qw).__name__}")
    if is_tensor(x):
        if not is_tensor(qw.codes):
            raise TypeError("x is a torch tensor but the weight holds NumPy arrays: quantize a tensor instead")
        from . import _torch_ops

        return _torch_ops.qmatmul(x, qw)
    return _qmatmul_numpy(np.asarray(x), qw)


def _qmatmul_numpy(x, qw: QuantizedWeight):
    k, n = qw.shape
    if is_tensor(qw.codes):
        raise TypeError("x is a NumPy array but the weight holds torch tensors: pass a tensor")
    if qw.scale_type != "f16" or x.dtype != np.float16:
        raise TypeError(f"NumPy qmatmul multiplies float16 activations with f16 scales; got x {x.dtype}, "
                        f"scales {qw.scale_type}")
    if x.ndim < 1 or x.shape[-1] != k:
        raise ValueError(f"x has shape {x.shape} but the weight is [{k}, {n}]: x must be [..., {k}]")
    if not x.flags.c_contiguous:
        raise ValueError("x is not C-contiguous: pass np.ascontiguousarray(x)")
    a = x.reshape(-1, k).view(np.uint16)
    if a.shape[0] == 0:
        return np.zeros(x.shape[:-1] + (n,), np.float16)
    z = None if qw.zeros is None else _host_u16(qw.zeros)
    c = _C.qmatmul_interp(a, n, "f16", qw.wtype, qw.group, qw.zero_point, _host_codes(qw.codes),
                          _host_u16(qw.scales), z)
    return c.view(np.float16).reshape(x.shape[:-1] + (n,))


def precompile_qmatmul(qw: QuantizedWeight, m: int, tune: bool = False, config: str = "") -> str:
    """Compiles and loads the GPU kernel of ``qmatmul(x, qw)`` for x with ``m`` rows (on qw's CUDA device,
    with the scales' type) and reorders the weight for it, so that later calls, and CUDA-graph capture, only
    launch. ``tune=True`` autotunes instead of the heuristic configuration (cached on disk as the CLI's);
    ``config`` names a configuration to use instead (as ``tilevm qmatmul --config`` takes it, e.g.
    ``bm64_bn128_bk128_sk128_w1x8_s3_k2_wsr``; an invalid one raises saying why). Returns the configuration's
    name."""
    from . import _torch_ops

    return _torch_ops.precompile(qw, int(m), bool(tune), str(config))
