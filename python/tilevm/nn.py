"""tilevm.nn: quantized linear layers for PyTorch models.

    layer = tilevm.nn.QuantizedLinear.from_linear(linear, "f6e3m2", group=128)
    tilevm.nn.quantize_(model, "u4", group=128)       # every nn.Linear (or those filter_fn accepts)
"""

from typing import Callable, Optional

import torch

from ._dtype import check_weight_type
from ._quant import QuantizedWeight, _group_size, qmatmul, quantize


class QuantizedLinear(torch.nn.Module):
    """``y = x @ dequant(W) + bias``, W the [in_features, out_features] weight quantized to ``wtype``.

    Buffers: ``codes`` (packed uint8), ``scales`` ([in/group, out], the activation dtype), ``zeros`` (with
    zero points); ``bias`` a parameter. The weight type, group and zero-point flag travel in the state dict
    (extra state), so ``load_state_dict`` into a layer of another configuration is refused. ``.to(device)``
    moves it like any module. On CUDA the first call for a batch size compiles the kernel (``precompile``
    does that ahead, e.g. before CUDA-graph capture).
    """

    def __init__(self, in_features: int, out_features: int, wtype: str, group=128, zero_point: bool = False,
                 bias: bool = True, dtype=torch.float16, device=None):
        super().__init__()
        if dtype not in (torch.float16, torch.bfloat16):
            raise TypeError(f"QuantizedLinear computes in float16 or bfloat16, got {dtype}")
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.wtype = check_weight_type(wtype)
        self.group = _group_size(group, self.in_features)
        self.zero_point = bool(zero_point)
        if self.group <= 0 or self.in_features % self.group:
            raise ValueError(f"in_features = {self.in_features} is not a multiple of group = {self.group}: use a "
                             "group that divides it (32, 64, 128) or group='k' (one scale per column)")
        from . import _tilevm as _C

        nbytes = -(-(self.in_features * self.out_features * _C.dtype_info(self.wtype)["bits"]) // 8)
        nbytes = -(-nbytes // 16) * 16
        groups = self.in_features // self.group
        self.register_buffer("codes", torch.zeros(nbytes, dtype=torch.uint8, device=device))
        self.register_buffer("scales", torch.ones(groups, self.out_features, dtype=dtype, device=device))
        if self.zero_point:
            self.register_buffer("zeros", torch.zeros(groups, self.out_features, dtype=dtype, device=device))
        else:
            self.zeros = None
        self.bias = (torch.nn.Parameter(torch.zeros(self.out_features, dtype=dtype, device=device), requires_grad=False)
                     if bias else None)

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, wtype: str, group=128, zero_point: bool = False,
                    dtype=None) -> "QuantizedLinear":
        """Quantizes ``linear``'s weight (ops::quantize, on the host) into a new layer on the same device.
        dtype: the activation, scale and output type; default the layer's if float16/bfloat16, else f16."""
        w = linear.weight.detach()
        if dtype is None:
            dtype = w.dtype if w.dtype in (torch.float16, torch.bfloat16) else torch.float16
        qw = quantize(w.t(), wtype, group=group, zero_point=zero_point, scale_dtype=dtype)
        layer = cls(linear.in_features, linear.out_features, qw.wtype, qw.group, zero_point,
                    bias=linear.bias is not None, dtype=dtype, device=w.device)
        layer.load_quantized(qw)
        if linear.bias is not None:
            layer.bias.data.copy_(linear.bias.detach().to(dtype))
        return layer

    def load_quantized(self, qw: QuantizedWeight) -> None:
        """Copies a QuantizedWeight of this layer's configuration into the buffers."""
        if (qw.shape != (self.in_features, self.out_features) or qw.wtype != self.wtype or qw.group != self.group
                or qw.zero_point != self.zero_point):
            raise ValueError(f"{qw} does not fit {self}")
        with torch.no_grad():
            self.codes.copy_(qw.codes)
            self.scales.copy_(qw.scales)
            if self.zero_point:
                self.zeros.copy_(qw.zeros)

    @property
    def weight(self) -> QuantizedWeight:
        # Kept while the buffers are the same tensors (.to(), load_state_dict with assign=True and the like
        # replace them), so that each forward does not rebuild it and qmatmul's checks run once.
        buffers = self._buffers
        codes, scales, zeros = buffers["codes"], buffers["scales"], buffers.get("zeros")
        cached = self.__dict__.get("_weight_cache")
        if cached is not None and cached.codes is codes and cached.scales is scales and cached.zeros is zeros:
            return cached
        qw = QuantizedWeight(codes, scales, zeros, self.wtype, self.group, (self.in_features, self.out_features),
                             "f16" if scales.dtype == torch.float16 else "bf16")
        self.__dict__["_weight_cache"] = qw
        return qw

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = qmatmul(x, self.weight)
        return y if self.bias is None else y + self.bias

    def precompile(self, batch_sizes=(1,), tune: bool = False):
        """Prepares the GPU kernels for inputs of these row counts (product of x's leading dimensions)."""
        from ._quant import precompile_qmatmul

        for m in batch_sizes:
            precompile_qmatmul(self.weight, m, tune=tune)
        return self

    def get_extra_state(self):
        return {"wtype": self.wtype, "group": self.group, "zero_point": self.zero_point}

    def set_extra_state(self, state):
        mine = self.get_extra_state()
        if dict(state) != mine:
            raise ValueError(f"the state dict is of a {state} layer but this QuantizedLinear is {mine}")

    def extra_repr(self):
        zp = ", zero_point=True" if self.zero_point else ""
        return (f"in_features={self.in_features}, out_features={self.out_features}, wtype={self.wtype!r}, "
                f"group={self.group}{zp}, bias={self.bias is not None}, dtype={self.scales.dtype}")


def quantize_(model: torch.nn.Module, wtype: str, group=128, zero_point: bool = False,
              filter_fn: Optional[Callable[[torch.nn.Module, str], bool]] = None, dtype=None) -> torch.nn.Module:
    """Replaces, in place, every ``nn.Linear`` of ``model`` for which ``filter_fn(module, fully_qualified_name)``
    is true (default: all) by ``QuantizedLinear.from_linear(linear, wtype, group, zero_point, dtype)``.
    Returns the model."""
    wtype = check_weight_type(wtype)

    def visit(module: torch.nn.Module, prefix: str):
        for name, child in list(module.named_children()):
            fqn = f"{prefix}.{name}" if prefix else name
            if isinstance(child, torch.nn.Linear) and (filter_fn is None or filter_fn(child, fqn)):
                setattr(module, name, QuantizedLinear.from_linear(child, wtype, group, zero_point, dtype))
            else:
                visit(child, fqn)

    if isinstance(model, torch.nn.Linear):
        raise TypeError("quantize_ swaps the Linear layers inside a model; for one layer use "
                        "QuantizedLinear.from_linear")
    visit(model, "")
    return model
