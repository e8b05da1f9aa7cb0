"""PyTorch eager and torch.compile on the superoptimizer's benchmark workloads (bench/superopt/*.graph), timed
as docs/performance.md asks: CUDA events around each run, the L2 flushed before every run, the median of
many. bench/gpu.sh runs it beside `tilevm superopt` in the same session on the same GPU. Eager attention at
these sizes is a few small kernels, so its time follows the host's launch latency, which moved by up to 4 x
between machines; "eager in a CUDA graph" (each workload captured once and replayed) leaves that out.

    python3 bench/superopt_torch.py            # prints one line per workload and mode
    python3 bench/superopt_torch.py lora gqa_decode   # only these workloads (and their SDPA lines)
"""
import statistics
import sys

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
    yield from attention_workloads(h)
    x = torch.randn(16, 4096, **h)
    w = torch.randn(4096, 4096, **h) / 64
    a = torch.randn(4096, 16, **h) / 64
    b = torch.randn(16, 4096, **h) / 4
    yield "lora", lambda: x @ w + (x @ a) @ b


def attention_workloads(h):
    """The decode attention workloads of bench/superopt (uniform inputs in [-1, 1], as tilevm's timing fills
    them). "eager" is the program as the .graph file writes it (query rows of a KV head together, K
    transposed, softmax(Q K * scale) V); "SDPA" is PyTorch's fused attention on the usual layouts
    ([batch, heads, tokens, dim], the query heads grouped over the KV heads with enable_gqa)."""

    def uniform(*shape):
        return torch.rand(*shape, **h) * 2 - 1

    scale128 = 0.08838834764831845
    # LLaMA-2-70B on one of 4 GPUs: 2 KV heads of 8 query heads, dimension 128, 4096 cached tokens.
    for name, tokens in (("gqa_decode", 1), ("gqa_spec", 32)):
        q = uniform(2, 8 * tokens, 128)  # [KV head, query head x token, dim]
        k = uniform(2, 4096, 128)
        v = uniform(2, 4096, 128)
        kt = k.transpose(-1, -2).contiguous()
        yield name, lambda q=q, kt=kt, v=v: torch.softmax((q @ kt) * scale128, dim=-1) @ v
        qs = q.view(2, 8, tokens, 128).reshape(1, 16, tokens, 128)
        ks, vs = k.unsqueeze(0), v.unsqueeze(0)
        yield f"{name} (SDPA)", lambda qs=qs, ks=ks, vs=vs: F.scaled_dot_product_attention(
            qs, ks, vs, scale=scale128, enable_gqa=True)
        if tokens == 32:
            # QK-norm: RMSNorm of each query and key over the head dimension before the scores.
            def qknorm(q=q, k=k, v=v):
                qn = F.rms_norm(q, (128,), eps=1e-6)
                kn = F.rms_norm(k, (128,), eps=1e-6)
                return torch.softmax((qn @ kn.transpose(-1, -2)) * scale128, dim=-1) @ v

            yield "qknorm_attention", qknorm

            def qknorm_sdpa(q=q, k=k, v=v):
                qn = F.rms_norm(q, (128,), eps=1e-6).view(2, 8, 32, 128).reshape(1, 16, 32, 128)
                kn = F.rms_norm(k, (128,), eps=1e-6).unsqueeze(0)
                return F.scaled_dot_product_attention(qn, kn, v.unsqueeze(0), scale=scale128, enable_gqa=True)

            yield "qknorm_attention (SDPA)", qknorm_sdpa
    # Falcon-7B with 64 query heads: one KV head of dimension 64, 4096 cached tokens.
    for name, tokens in (("mqa_decode", 1), ("mqa_spec", 32)):
        q = uniform(64 * tokens, 64)
        k = uniform(4096, 64)
        v = uniform(4096, 64)
        kt = k.t().contiguous()
        yield name, lambda q=q, kt=kt, v=v: torch.softmax((q @ kt) * 0.125, dim=-1) @ v
        qs = q.view(1, 64, tokens, 64)
        ks, vs = k.view(1, 1, 4096, 64), v.view(1, 1, 4096, 64)
        yield f"{name} (SDPA)", lambda qs=qs, ks=ks, vs=vs: F.scaled_dot_product_attention(
            qs, ks, vs, scale=0.125, enable_gqa=True)


def graphed(fn):
    """fn captured once in a CUDA graph (as serving engines run decode steps): replaying it launches all its
    kernels at once, so the time no longer includes the host's per-kernel launch latency."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def main():
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    only = set(sys.argv[1:])
    for name, fn in workloads():
        if only and name.split(" ")[0] not in only:
            continue
        eager = median_us(fn)
        try:
            in_graph = f"{median_us(graphed(fn)):.1f} us"
        except Exception as e:  # an op that cannot be captured: say so, keep the other figures
            in_graph = f"not captured ({type(e).__name__})"
        compiled_fn = torch.compile(fn)
        compiled = median_us(compiled_fn)
        print(f"{name}: eager {eager:.1f} us, eager in a CUDA graph {in_graph}, torch.compile {compiled:.1f} us")


if __name__ == "__main__":
    main()
