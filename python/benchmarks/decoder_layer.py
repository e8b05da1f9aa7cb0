"""End to end: one Llama-style decoder layer at Llama-3.3-70B sizes, its linear layers quantized by tilevm.

    python python/benchmarks/decoder_layer.py [--types u4,u3,u2,f4e2m1,u8] [--batches 1,16,64] [--ctx 1024]
                                              [--compile] [--layers 1]

The layer (random weights, std 0.02): RMSNorm, q/k/v projections (64 query heads, 8 KV heads of 128),
rotary embeddings, attention over a KV cache of --ctx positions and the new one (torch's scaled_dot_product_attention),
o projection, RMSNorm, the SwiGLU MLP (8192 -> 2 x 28672 -> 8192). Hidden 8192, all in f16.

For the fp16 layer, each tilevm weight type (tilevm.nn.quantize_ on a copy: group 128, zero points for the
unsigned types) and torch's own int4
path (torch._weight_int4pack_mm, bf16, group 128, where this torch has it): the output of one decode step
is compared with the fp16 layer's (relative error, Frobenius), then the decode step (one new token per
sequence, batch 1, 16 and 64) is timed as the replay of a CUDA graph (with --compile: of the
torch.compile(fullgraph=True)'d layer), median of 50 replays. Prints one line per case and a table.
"""

import argparse
import copy
import math
import sys

import torch
import torch.nn.functional as F

import tilevm
from cuda_timing import median_replay_us

HIDDEN, INTER, HEADS, KV_HEADS, HEAD_DIM = 8192, 28672, 64, 8, 128


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + self.eps)).to(x.dtype) * self.weight


def rotary(x, pos, theta=500000.0):
    # x: [B, H, T, D]; the rotation of position `pos` (decode: one position)
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    ang = pos * inv
    cos, sin = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class DecoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.input_norm = RMSNorm(HIDDEN)
        self.q_proj = torch.nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = torch.nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = torch.nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = torch.nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)
        self.post_norm = RMSNorm(HIDDEN)
        self.gate_proj = torch.nn.Linear(HIDDEN, INTER, bias=False)
        self.up_proj = torch.nn.Linear(HIDDEN, INTER, bias=False)
        self.down_proj = torch.nn.Linear(INTER, HIDDEN, bias=False)

    def forward(self, x, k_cache, v_cache):
        # x: [B, 1, HIDDEN]; caches [B, KV_HEADS, ctx + 1, HEAD_DIM]: the new token's key and value are written
        # into the last position, and it attends to all of them
        b = x.shape[0]
        h = self.input_norm(x)
        pos = k_cache.shape[2] - 1
        q = rotary(self.q_proj(h).view(b, 1, HEADS, HEAD_DIM).transpose(1, 2), pos)
        k = rotary(self.k_proj(h).view(b, 1, KV_HEADS, HEAD_DIM).transpose(1, 2), pos)
        v = self.v_proj(h).view(b, 1, KV_HEADS, HEAD_DIM).transpose(1, 2)
        k_cache[:, :, pos:] = k
        v_cache[:, :, pos:] = v
        att = F.scaled_dot_product_attention(q, k_cache, v_cache, enable_gqa=True)
        x = x + self.o_proj(att.transpose(1, 2).reshape(b, 1, HEADS * HEAD_DIM))
        h = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class TorchInt4Linear(torch.nn.Module):
    """torch's own int4 path (tinygemm): bf16 activations, group 128, symmetric codes around 8."""

    def __init__(self, linear, group=128, inner_k_tiles=8):
        super().__init__()
        w = linear.weight.detach().float()  # [N, K]
        n, k = w.shape
        g = w.view(n, k // group, group)
        scale = (g.abs().amax(-1) / 7).clamp(min=1e-8)  # [N, K/G]
        q = (torch.round(g / scale[..., None]) + 8).clamp(0, 15).to(torch.int32).view(n, k)
        packed = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
        self.weight = torch._convert_weight_to_int4pack(packed, inner_k_tiles)
        zeros = torch.zeros_like(scale)
        self.scales_and_zeros = torch.stack([scale.t(), zeros.t()], dim=-1).to(torch.bfloat16).contiguous()
        self.group, self.n = group, n

    def forward(self, x):
        shape = x.shape
        y = torch._weight_int4pack_mm(x.reshape(-1, shape[-1]).to(torch.bfloat16), self.weight, self.group,
                                      self.scales_and_zeros)
        return y.to(x.dtype).reshape(*shape[:-1], self.n)


def swap_int4(module):
    for name, child in list(module.named_children()):
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, TorchInt4Linear(child))
        else:
            swap_int4(child)
    return module


def time_graph(fn, reps=50):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    return median_replay_us(graph, 1, reps)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--types", default="u4,u3,u2,f4e2m1,u8")
    parser.add_argument("--batches", default="1,16,64")
    parser.add_argument("--ctx", type=int, default=1024)
    parser.add_argument("--compile", action="store_true", help="torch.compile(fullgraph=True) each layer first")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    torch.manual_seed(0)
    dev = "cuda"
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, tilevm {tilevm.__version__}, "
          f"ctx {args.ctx}, compile {args.compile}", flush=True)
    base = DecoderLayer()
    with torch.no_grad():
        for p in base.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.02)
    base = base.half().to(dev).eval()
    inputs = {}
    for b in batches:
        inputs[b] = (torch.randn(b, 1, HIDDEN, device=dev, dtype=torch.float16),
                     torch.randn(b, KV_HEADS, args.ctx + 1, HEAD_DIM, device=dev, dtype=torch.float16),
                     torch.randn(b, KV_HEADS, args.ctx + 1, HEAD_DIM, device=dev, dtype=torch.float16))
    variants = [("fp16", lambda: base)]
    for t in args.types.split(","):
        # unsigned types with zero points (asymmetric): without them an unsigned code cannot hold a negative
        # weight (ops/quantize.h)
        zp = t.startswith("u")
        variants.append((t + ("+zp" if zp else ""),
                         lambda t=t, zp=zp: tilevm.nn.quantize_(copy.deepcopy(base), t, group=128, zero_point=zp)))
    if hasattr(torch, "_weight_int4pack_mm"):
        variants.append(("torch-int4", lambda: swap_int4(copy.deepcopy(base))))
    results = {}
    with torch.no_grad():
        ref = {b: base(*inputs[b]).double() for b in batches}
        for name, make in variants:
            try:
                layer = make()
            except Exception as e:  # torch's int4 path differs across versions and GPUs
                print(f"{name}: cannot build ({type(e).__name__}: {e})", flush=True)
                continue
            run = torch.compile(layer, fullgraph=True) if args.compile else layer
            for b in batches:
                x, kc, vc = inputs[b]
                try:
                    out = run(x, kc, vc)
                    rel = ((out.double() - ref[b]).norm() / ref[b].norm()).item()
                    us = time_graph(lambda: run(x, kc, vc))
                except Exception as e:
                    print(f"{name} B={b}: failed ({type(e).__name__}: {e})", flush=True)
                    continue
                results[(name, b)] = (us, rel)
                print(f"{name:<11} B={b:<3} {us:9.1f} us  rel.err vs fp16 {rel:.2e}", flush=True)
            del layer, run
            torch.cuda.empty_cache()
    print("\n| variant | " + " | ".join(f"B={b} us" for b in batches) + " | rel. error (B=1) |")
    print("| --- | " + " | ".join("---" for _ in batches) + " | --- |")
    for name, _ in variants:
        cells = [f"{results[(name, b)][0]:.1f}" if (name, b) in results else "-" for b in batches]
        rel = results.get((name, batches[0]), (0, math.nan))[1]
        print(f"| {name} | " + " | ".join(cells) + f" | {rel:.2e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
