"""What the package needs to know about arrays without importing torch: NumPy arrays and, when torch is
already imported, torch tensors."""

import sys

import numpy as np


def torch_module():
    """torch if the program imported it (tilevm never imports it on its own for a NumPy caller)."""
    return sys.modules.get("torch")


def is_tensor(x) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


def require_torch(what: str):
    try:
        import torch
    except ImportError as e:  # pragma: no cover - the CI installs torch
        raise ImportError(f"{what} needs PyTorch (pip install torch)") from e
    return torch


# The NumPy dtype that holds each torch dtype's bytes (bf16 travels as its uint16 bits).
def torch_to_numpy_dtype(torch_dtype):
    torch = torch_module()
    table = {
        torch.float16: np.dtype("<f2"),
        torch.bfloat16: np.dtype("<u2"),
        torch.float32: np.dtype("<f4"),
        torch.float64: np.dtype("<f8"),
        torch.int8: np.dtype("|i1"),
        torch.uint8: np.dtype("|u1"),
        torch.int16: np.dtype("<i2"),
        torch.int32: np.dtype("<i4"),
        torch.int64: np.dtype("<i8"),
        torch.bool: np.dtype("|b1"),
    }
    return table.get(torch_dtype)


def tensor_bytes(t):
    """A writable uint8 NumPy view of a contiguous CPU tensor's bytes (no copy)."""
    torch = torch_module()
    flat = t.detach().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    return flat.view(torch.uint8).numpy()


def u16_view(t):
    """The uint16 bits of a contiguous CPU f16/bf16 tensor, as NumPy (no copy)."""
    torch = torch_module()
    return t.detach().view(torch.int16).numpy().view(np.uint16)


def from_u16(a, dtype):
    """A torch tensor of ``dtype`` (f16/bf16) over uint16 bits ``a``."""
    torch = torch_module()
    return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(dtype)
