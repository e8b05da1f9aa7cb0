"""The tile layer's kernels called from PyTorch (tilevm.compile, CUDA tensors) beside torch's fp16 matmul,
each lowered for the GPU it runs on (the default: wgmma, TMA and a producer warpgroup on a Hopper) and for
sm_80 (mma.sync and cp.async, what tilevm.compile gave before it chose the GPU's architecture).

    python python/benchmarks/tile_kernels.py

Each time is the median of 30 replays of a CUDA graph of 10 calls (the launch overhead out), in us. The
dequantize-GEMM's u4 weights (group 128) are packed in the order each lowering chose (param_layouts).
Prints one line per case; docs/performance.md records the results.
"""

import pathlib

import numpy as np
import torch

import tilevm
from cuda_timing import median_replay_us

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "tile"


def graph_time(fn, calls=10, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    return median_replay_us(graph, calls, reps)


def main():
    torch.manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}")
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192)):
        a = torch.randn(m, k, dtype=torch.float16, device="cuda")
        b = torch.randn(n, k, dtype=torch.float16, device="cuda")
        c = torch.empty(m, n, dtype=torch.float16, device="cuda")
        line = [f"gemm_f16 {m}x{n}x{k}: torch.matmul {graph_time(lambda: torch.matmul(a, b.T, out=c)):.1f}"]
        for arch, constants in ((None, dict(WS=True)), ("sm_80", {})):
            kern = tilevm.compile(EXAMPLES / "gemm_f16.tile", arch=arch, **constants)
            kern.precompile("cuda")
            line.append(f"{kern.arch} {graph_time(lambda: kern(a, b, c, m, n, k)):.1f}")
        print(", ".join(line), flush=True)
    rng = np.random.default_rng(1)
    for m, n, k in ((64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192)):
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        codes = rng.integers(0, 16, size=(n, k))
        scales = torch.rand(k // 128, n, dtype=torch.float16, device="cuda") + 0.5
        w = torch.randn(n, k, dtype=torch.float16, device="cuda")
        c = torch.empty(m, n, dtype=torch.float16, device="cuda")
        line = [f"dequant_gemm_rs_packed u4 M={m} {n}x{k}: torch.matmul f16 {graph_time(lambda: torch.matmul(x, w.T, out=c)):.1f}"]
        for arch, constants in ((None, dict(TMA=True, WS=True, THREADS=256, BN=128, BM=max(64, min(m, 128)))),
                                ("sm_80", {})):
            kern = tilevm.compile(EXAMPLES / "dequant_gemm_rs_packed.tile", arch=arch, **constants)
            packed = torch.from_numpy(kern.param_layouts["w_ptr"].pack_tiled(codes, "u4")).cuda()
            kern.precompile("cuda")
            line.append(f"{kern.arch} {graph_time(lambda: kern(x, packed, scales, c, m, n, k)):.1f}")
        print(", ".join(line), flush=True)


if __name__ == "__main__":
    main()
