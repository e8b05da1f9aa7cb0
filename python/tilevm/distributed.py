"""Tensor-parallel quantized linear layers over torch.distributed (NCCL on GPUs, gloo on CPUs).

Each rank holds its shard of the packed weight, quantized from its slice of the full weight; groups of
scales never cross a shard (a column shard keeps whole columns, a row shard whole groups of rows), so a
shard's codes, scales and zeros are exactly the full layer's for that slice.

    col = ColumnParallelQuantizedLinear.from_linear(linear, "u4", group=128, zero_point=True)
    row = RowParallelQuantizedLinear.from_linear(linear, "u4", group=128, zero_point=True)
    y = row(col(x))           # Megatron's MLP pattern: no communication between the two

- ColumnParallel: rank r computes output features [r N/W, (r+1) N/W); gather_output=True all-gathers them
  into the full [..., N] output, else each rank returns its slice (the next layer row-parallel).
- RowParallel: rank r holds input features [r K/W, (r+1) K/W) (K/W a multiple of the group); it takes the
  full input (input_is_parallel=False: it uses its slice) or its slice, and the partial products are summed
  by an all-reduce (in the activation type), the bias added once after.
"""

from typing import Optional

import torch
import torch.distributed as dist

from .nn import QuantizedLinear


def _world(group):
    return dist.get_world_size(group), dist.get_rank(group)


class ColumnParallelQuantizedLinear(torch.nn.Module):
    def __init__(self, local: QuantizedLinear, out_features: int, gather_output: bool = True,
                 process_group: Optional[dist.ProcessGroup] = None):
        super().__init__()
        self.local = local
        self.out_features = out_features
        self.gather_output = gather_output
        self.process_group = process_group

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, wtype: str, group=128, zero_point: bool = False, dtype=None,
                    gather_output: bool = True, process_group=None) -> "ColumnParallelQuantizedLinear":
        world, rank = _world(process_group)
        n = linear.out_features
        if n % world:
            raise ValueError(f"out_features = {n} is not divisible by the world size {world}")
        part = n // world
        shard = torch.nn.Linear(linear.in_features, part, bias=linear.bias is not None, device="meta")
        shard.weight = torch.nn.Parameter(linear.weight.detach()[rank * part:(rank + 1) * part], requires_grad=False)
        if linear.bias is not None:
            shard.bias = torch.nn.Parameter(linear.bias.detach()[rank * part:(rank + 1) * part], requires_grad=False)
        local = QuantizedLinear.from_linear(shard, wtype, group=group, zero_point=zero_point, dtype=dtype)
        return cls(local, n, gather_output, process_group)

    def forward(self, x):
        y = self.local(x)
        if not self.gather_output:
            return y
        world, _ = _world(self.process_group)
        parts = [torch.empty_like(y) for _ in range(world)]
        dist.all_gather(parts, y.contiguous(), group=self.process_group)
        return torch.cat(parts, dim=-1)


class RowParallelQuantizedLinear(torch.nn.Module):
    def __init__(self, local: QuantizedLinear, in_features: int, bias: Optional[torch.Tensor],
                 input_is_parallel: bool = False, process_group: Optional[dist.ProcessGroup] = None):
        super().__init__()
        self.local = local
        self.in_features = in_features
        self.input_is_parallel = input_is_parallel
        self.process_group = process_group
        self.bias = None if bias is None else torch.nn.Parameter(bias, requires_grad=False)

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, wtype: str, group=128, zero_point: bool = False, dtype=None,
                    input_is_parallel: bool = False, process_group=None) -> "RowParallelQuantizedLinear":
        world, rank = _world(process_group)
        k = linear.in_features
        if k % world:
            raise ValueError(f"in_features = {k} is not divisible by the world size {world}")
        part = k // world
        if isinstance(group, int) and part % group:
            raise ValueError(f"each rank's in_features = {k} / {world} = {part} is not a multiple of group = "
                             f"{group}: use a smaller group or fewer ranks")
        shard = torch.nn.Linear(part, linear.out_features, bias=False, device="meta")
        shard.weight = torch.nn.Parameter(linear.weight.detach()[:, rank * part:(rank + 1) * part].contiguous(),
                                          requires_grad=False)
        local = QuantizedLinear.from_linear(shard, wtype, group=group, zero_point=zero_point, dtype=dtype)
        bias = None if linear.bias is None else linear.bias.detach().to(local.scales.dtype).clone()
        return cls(local, k, bias, input_is_parallel, process_group)

    def forward(self, x):
        if not self.input_is_parallel:
            world, rank = _world(self.process_group)
            part = self.in_features // world
            x = x[..., rank * part:(rank + 1) * part].contiguous()
        y = self.local(x)
        dist.all_reduce(y, group=self.process_group)
        return y if self.bias is None else y + self.bias
