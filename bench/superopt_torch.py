"""PyTorch eager and torch.compile on the superoptimizer's benchmark workloads (bench/superopt/*.graph), timed
as docs/performance.md asks: CUDA events around each run, the L2 flushed before every run, the median of
many. bench/gpu.sh runs it beside `tilevm superopt` in the same session on the same GPU.

    python3 bench/superopt_torch.py            # prints one line per workload and mode
"""
import statistics

import torch
import torch.nn.functional as F


def median_us(fn, repeats=50, warmup=5):
    flush = torch.empty(2 * 50 * 1024 * 1024, dtype=torch.uint8, device="cuda")  # twice the H100's L2
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        flush.fill_(1)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def workloads():
    h = dict(device="cuda", dtype=torch.float16)
    x = torch.randn(16, 4096, **h)
    w = torch.randn(4096, 4096, **h) / 64
    yield "rmsnorm_linear", lambda: F.rms_norm(x, (4096,), eps=1e-6) @ w
    w1, w3, w2 = (torch.randn(4096, 4096, **h) / 64 for _ in range(3))
    yield "gated_mlp", lambda: (F.silu(x @ w1) * (x @ w3)) @ w2
    s = torch.randn(64, 512, **h)
    yield "softmax", lambda: torch.softmax(s, dim=1)
    q = torch.rand(32, 128, 128, **h) * 2 - 1
    k = torch.rand(32, 128, 1024, **h) * 2 - 1
    v = torch.rand(32, 1024, 128, **h) * 2 - 1
    yield "attention_heads", lambda: torch.softmax((q @ k) * 0.125, dim=-1) @ v
    kt = k.transpose(-1, -2).contiguous()
    yield "attention_heads (SDPA)", lambda: F.scaled_dot_product_attention(q, kt, v, scale=0.125)


def main():
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name, fn in workloads():
        eager = median_us(fn)
        compiled_fn = torch.compile(fn)
        compiled = median_us(compiled_fn)
        print(f"{name}: eager {eager:.1f} us, torch.compile {compiled:.1f} us")


if __name__ == "__main__":
    main()
