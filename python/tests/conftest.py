"""Shared helpers of the tests: the repository's examples, the float64 reference of the quantized matmul and
its tolerance (the one include/tilevm/ops/qmatmul/qmatmul_reference.h documents), and the GPU marker."""

import os
import pathlib

import numpy as np
import pytest

import tilevm

REPO = pathlib.Path(os.environ.get("TILEVM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
EXAMPLES = REPO / "examples"


def _cuda_ready() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and tilevm.gpu_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_ready():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and torch with CUDA (bench/gpu.sh runs these)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def unpack_codes(codes, bits: int, count: int) -> np.ndarray:
    """The codes of a packed little-endian bit stream (type/packing.h), independently of the C++ side."""
    raw = np.unpackbits(np.asarray(codes, dtype=np.uint8), bitorder="little")[: count * bits]
    return raw.reshape(count, bits).astype(np.int64) @ (1 << np.arange(bits, dtype=np.int64))


def code_values(wtype: str) -> np.ndarray:
    """value of every code of a 1-8-bit type, from `tilevm dtype --table`."""
    return np.array([v for _, v in tilevm.dtype(wtype).table()], dtype=np.float64)


def as_float64(a) -> np.ndarray:
    """f16 / bf16 (torch) / float arrays as float64 NumPy."""
    try:
        import torch

        if isinstance(a, torch.Tensor):
            return a.detach().cpu().double().numpy()
    except ImportError:
        pass
    return np.asarray(a, dtype=np.float64)


def reference_dequantize(qw) -> np.ndarray:
    """(value(code) - zero) * scale in float64, from the packed codes, in Python."""
    k, n = qw.shape
    bits = tilevm.dtype(qw.wtype).bits
    codes = qw.codes.cpu().numpy() if hasattr(qw.codes, "cpu") else qw.codes
    if qw.wtype == "f16":
        values = np.asarray(codes)[: 2 * k * n].view(np.float16).astype(np.float64).reshape(k, n)
    elif qw.wtype == "bf16":
        bits16 = np.asarray(codes)[: 2 * k * n].view(np.uint16).astype(np.uint32) << 16
        values = bits16.view(np.float32).astype(np.float64).reshape(k, n)
    else:
        values = code_values(qw.wtype)[unpack_codes(codes, bits, k * n)].reshape(k, n)
    if qw.scale_type == "bf16" and not hasattr(qw.scales, "cpu"):
        raise AssertionError("bf16 scales travel as torch tensors in these tests")
    scales = np.repeat(as_float64(qw.scales), qw.group, axis=0)
    zeros = 0 if qw.zeros is None else np.repeat(as_float64(qw.zeros), qw.group, axis=0)
    return (values - zeros) * scales


def qmatmul_tolerance(x64, w64, ref, atype: str, weights_fit: bool) -> np.ndarray:
    """Per output: 2u|r| + s + (K/8 + 16) 2^-24 S (+ u S when the weights are rounded to ATYPE)."""
    u, s = (2.0**-11, 2.0**-24) if atype == "f16" else (2.0**-8, 2.0**-133)
    k = x64.shape[-1]
    mag = np.abs(x64) @ np.abs(w64)
    tol = 2 * u * np.abs(ref) + s + (k / 8 + 16) * 2.0**-24 * mag
    if not weights_fit:
        tol = tol + u * mag
    return tol


def weights_fit(wtype: str, atype: str) -> bool:
    """Every value of the weight type is exact in ATYPE (the kernel's fast path)."""
    if wtype in ("f16", "bf16"):
        return wtype == atype
    v = code_values(wtype)
    v = v[np.isfinite(v)]
    if atype == "f16":
        with np.errstate(over="ignore"):
            return bool(np.all(v.astype(np.float16).astype(np.float64) == v))
    # bf16: 8 exponent bits, 7 mantissa bits; every 1-8-bit value has at most 7 significant bits
    return True


def weights_rounded(config: str, qw) -> bool:
    """Whether the kernel configuration (precompile_qmatmul's name) rounds the scaled weights to the
    activation type before the product: the library's own rule (qmatmul.h, qmatmul_weights_rounded)."""
    from tilevm import _tilevm as _C

    return _C.qmatmul_weights_rounded(config, qw.shape[0], qw.wtype, qw.group)


def assert_close_to_reference(y, x, qw, atype="f16", rounded=False):
    """``rounded``: the kernel rounded the scaled weights to ATYPE (weights_rounded), one more rounding."""
    x64 = as_float64(x).reshape(-1, qw.shape[0])
    w64 = reference_dequantize(qw)
    ref = x64 @ w64
    out = as_float64(y).reshape(ref.shape)
    tol = qmatmul_tolerance(x64, w64, ref, atype, weights_fit(qw.wtype, atype) and not rounded)
    bad = ~(np.abs(out - ref) <= tol)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} outputs off; worst error "
                           f"{np.nanmax(np.abs(out - ref) - tol):.3g} over tolerance")
