"""Latency of tilevm.qmatmul (torch op, CUDA tensors) beside torch's fp16 matmul on the same shapes.

    python python/benchmarks/qmatmul_latency.py [--tune]

Each case is timed by replaying a CUDA graph of 20 calls (so Python and launch overhead are out of the
kernel number) and, separately, as eager calls (what a plain PyTorch loop pays per call, the op dispatch
included). Calls rotate between 4 copies of the weight, so that the L2 cache does not hold it.
Prints one line per case; docs/performance.md records the results.
"""

import argparse
import statistics
import sys

import torch

import tilevm
from cuda_timing import median_replay_us


def bench(fn, graph_calls=20, reps=30):
    # fn(i): call i of a sequence (i selects the weight copy)
    for i in range(4):
        fn(i)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(graph_calls):
            fn(i)
    graph.replay()
    graph_us = median_replay_us(graph, graph_calls, reps)
    eager = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(graph_calls):
            fn(i)
        end.record()
        end.synchronize()
        eager.append(start.elapsed_time(end) * 1000 / graph_calls)
    return graph_us, statistics.median(eager)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tune", action="store_true", help="autotune each problem (slower start)")
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, tilevm {tilevm.__version__}")
    print(f"{'case':<34} {'tilevm us':>10} {'eager us':>9} {'fp16 us':>8} {'speedup':>8}")
    for n, k, wtypes in [(8192, 8192, ["u4", "u4+zp", "f4e2m1", "u8"]), (28672, 8192, ["u4"])]:
        w = torch.randn(k, n, device="cuda") * 0.02
        dense = [w.half() for _ in range(4)]
        for wtype in wtypes:
            q0 = tilevm.quantize(w, wtype.split("+")[0], group=128, zero_point=wtype.endswith("+zp"))
            # four copies of the weight, called in turn, so that the L2 cache (50 MB) does not hold them
            qws = [tilevm.QuantizedWeight(q0.codes.clone(), q0.scales.clone(),
                                          None if q0.zeros is None else q0.zeros.clone(), q0.wtype, q0.group,
                                          q0.shape, q0.scale_type) for _ in range(4)]
            for m in [1, 16]:
                x = torch.randn(m, k, device="cuda", dtype=torch.float16)
                for qw in qws:
                    config = tilevm.precompile_qmatmul(qw, m, tune=args.tune)
                y = tilevm.qmatmul(x, qws[0])
                ref = x.double() @ tilevm.dequantize(qws[0])
                rel = ((y.double() - ref).norm() / ref.norm()).item()
                t, e = bench(lambda i: tilevm.qmatmul(x, qws[i % 4]))
                f, _ = bench(lambda i: x @ dense[i % 4])
                print(f"m{m} n{n} k{k} {wtype:<7} {t:10.2f} {e:9.2f} {f:8.2f} {f / t:7.2f}x  rel.err {rel:.1e} "
                      f"{config}", flush=True)
        del w, dense
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
