"""One rank of test_distributed.py: builds the column- and row-parallel layers from the same nn.Linear as
every rank, runs them, and checks them against the single-device layer. Exits non-zero on a mismatch.

    python distributed_worker.py RANK WORLD INIT_FILE BACKEND
"""

import sys

import torch
import torch.distributed as dist

import tilevm
from tilevm.distributed import ColumnParallelQuantizedLinear, RowParallelQuantizedLinear


def main(rank, world, init_file, backend):
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world)
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    k, n, m, group = (256, 128, 3, 64) if device.type == "cpu" else (4096, 2048, 16, 128)
    torch.manual_seed(0)  # the same layer and input on every rank
    linear = torch.nn.Linear(k, n).half().to(device)
    up = torch.nn.Linear(n, k).half().to(device)
    x = torch.randn(m, k, dtype=torch.float16).to(device)
    for wtype, zp in [("u4", True), ("f4e2m1", False)]:
        single = tilevm.nn.QuantizedLinear.from_linear(linear, wtype, group=group, zero_point=zp)
        expected = single(x)
        col = ColumnParallelQuantizedLinear.from_linear(linear, wtype, group=group, zero_point=zp)
        assert col.local.out_features == n // world
        got = col(x)
        # the same codes and scales for each column: the same products, up to the kernel's summation order
        assert torch.allclose(got.float(), expected.float(), rtol=2e-3, atol=2e-3), (wtype, "column")
        row = RowParallelQuantizedLinear.from_linear(linear, wtype, group=group, zero_point=zp)
        got = row(x)
        # partial sums rounded to f16 per rank before the all-reduce: a few ulps
        assert torch.allclose(got.float(), expected.float(), rtol=1e-2, atol=1e-2), (wtype, "row",
                                                                                      (got - expected).abs().max())
        # Megatron's MLP: column-parallel (no gather) then row-parallel (input already sharded), against the
        # single-device pair
        col2 = ColumnParallelQuantizedLinear.from_linear(linear, wtype, group=group, zero_point=zp,
                                                         gather_output=False)
        row2 = RowParallelQuantizedLinear.from_linear(up, wtype, group=group, zero_point=zp, input_is_parallel=True)
        y = row2(col2(x))
        single_up = tilevm.nn.QuantizedLinear.from_linear(up, wtype, group=group, zero_point=zp)
        y_single = single_up(single(x))
        assert y.shape == (m, k)
        assert torch.allclose(y.float(), y_single.float(), rtol=1e-2, atol=2e-2), (wtype, "mlp",
                                                                                   (y - y_single).abs().max())
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: ok")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
