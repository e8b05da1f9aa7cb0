"""On a CUDA GPU (skipped elsewhere; bench/gpu.sh runs them): the quantized matmul against the float64
reference, streams, CUDA graphs, torch.compile, compiled programs on CUDA tensors, and the GPU-only checks."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tilevm  # noqa: E402
from conftest import EXAMPLES, assert_close_to_reference, weights_rounded  # noqa: E402

pytestmark = pytest.mark.gpu


def rand(*shape, dtype=torch.float16, seed=0, device="cuda"):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g) * 2 - 1).to(dtype).to(device)


CASES = [("u4", 1, False), ("u4", 16, True), ("u4", 64, False), ("u3", 16, False), ("u2", 1, True),
         ("u1", 16, False), ("u8", 64, False), ("i4", 1, False), ("f4e2m1", 16, False), ("f6e3m2", 1, False),
         ("f8e4m3", 64, False), ("f8e5m2", 16, False), ("f16", 16, False)]


@pytest.mark.parametrize("wtype,m,zero_point", CASES)
def test_qmatmul_matches_float64(wtype, m, zero_point):
    k, n = 1024, 320  # N not a multiple of every block_n: edge tiles
    qw = tilevm.quantize(rand(k, n, dtype=torch.float32, seed=1), wtype, group=128, zero_point=zero_point)
    assert qw.codes.is_cuda
    x = rand(m, k, seed=2)
    config = tilevm.precompile_qmatmul(qw, m)  # the configuration qmatmul then launches
    y = tilevm.qmatmul(x, qw)
    torch.cuda.synchronize()
    assert y.shape == (m, n) and y.is_cuda
    assert_close_to_reference(y, x, qw, rounded=weights_rounded(config, qw))


def test_bf16_on_the_gpu():
    qw = tilevm.quantize(rand(512, 256, dtype=torch.float32, seed=3), "u4", group=64, zero_point=True,
                         scale_dtype=torch.bfloat16)
    x = rand(8, 512, dtype=torch.bfloat16, seed=4)
    config = tilevm.precompile_qmatmul(qw, 8)
    assert_close_to_reference(tilevm.qmatmul(x, qw), x, qw, atype="bf16", rounded=weights_rounded(config, qw))


def test_gpu_equals_the_interpreter_bits_free_check():
    qw = tilevm.quantize(rand(256, 64, dtype=torch.float32, seed=5), "i3", group=64)
    x = rand(2, 256, seed=6)
    gpu = tilevm.qmatmul(x, qw).cpu()
    cpu = tilevm.qmatmul(x.cpu(), qw.to("cpu"))
    assert torch.allclose(gpu.float(), cpu.float(), rtol=2e-3, atol=2e-3)


def test_runs_on_the_current_stream():
    qw = tilevm.quantize(rand(1024, 256, dtype=torch.float32, seed=7), "u4", group=128)
    x = rand(16, 1024, seed=8)
    expected = tilevm.qmatmul(x, qw)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = tilevm.qmatmul(x, qw)
        y2 = y * 1  # ordered after the launch on the same stream
    side.synchronize()
    assert torch.equal(y2, expected)


def test_split_k_counters_serve_every_call():
    # Split-K's and stream-K's ticket counters are zeroed once per stream and left at 0 by every run: calls
    # after the first, on the same stream, on another stream, and inside a CUDA graph all compute the same.
    qw = tilevm.quantize(rand(1024, 320, dtype=torch.float32, seed=21), "u4", group=128)
    x = rand(40, 1024, seed=22)
    configs = ["bm16_bn64_bk128_sk128_w1x4_s3_k4"]
    if torch.cuda.get_device_capability() >= (9, 0):
        configs.append("bm48_bn64_bk128_sk128_w1x4_s3_k1_wsr_p7")  # stream-K (sm_90a)
    for config in configs:
        assert tilevm.precompile_qmatmul(qw, 40, config=config) == config
        first = tilevm.qmatmul(x, qw)
        assert_close_to_reference(first, x, qw, rounded=weights_rounded(config, qw))
        for _ in range(3):
            assert torch.equal(tilevm.qmatmul(x, qw), first)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            ys = [tilevm.qmatmul(x, qw) for _ in range(3)]
        side.synchronize()
        assert all(torch.equal(y, first) for y in ys)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = tilevm.qmatmul(x, qw)
        for _ in range(2):
            static_y.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(static_y, first)
        assert torch.equal(tilevm.qmatmul(x, qw), first)


def test_cuda_graph_capture_and_replay():
    layer = tilevm.nn.QuantizedLinear.from_linear(torch.nn.Linear(1024, 512).half().cuda(), "f4e2m1", group=128)
    static_x = rand(4, 1024, seed=9)
    layer(static_x)  # warm-up: compiles the kernel and reorders the weight
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = layer(static_x)
    for seed in (10, 11):
        static_x.copy_(rand(4, 1024, seed=seed))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(static_y, layer(static_x))


def test_graphs_of_several_batch_sizes_keep_their_weights():
    # M = 1 and M = 64 read the weight in different tile orders (two reordered copies); the graph captured at
    # M = 1 must still read its copy after an eager call at M = 64, and see an in-place update of the codes
    # once an eager call has rewritten the copies.
    # 4096 x 1024 u4: a 2 MiB copy, from the caching allocator's pool of large blocks, which the poisoning
    # below takes back if the copy was freed (blocks up to 1 MiB come from another pool).
    qw = tilevm.quantize(rand(4096, 1024, dtype=torch.float32, seed=20), "u4", group=128)
    small, large = rand(1, 4096, seed=21), rand(64, 4096, seed=22)
    # Kernels of two known layouts (the swapped mma.sync form, and register A), whatever the heuristic picks.
    for m, config in ((1, "bm8_bn128_bk128_sk128_w1x4_s3_k4"), (64, "bm64_bn128_bk128_sk128_w1x8_s3_k2_wsr")):
        assert tilevm.precompile_qmatmul(qw, m, config=config) == config
    tilevm.qmatmul(small, qw)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = tilevm.qmatmul(small, qw)
    expected = tilevm.qmatmul(small, qw).clone()
    tilevm.qmatmul(large, qw)
    assert len(qw.codes.__dict__["_tilevm_transformed"]) == 2  # the two layouts
    copy_bytes = max(entry[0].numel() for entry in qw.codes.__dict__["_tilevm_transformed"].values())
    poison = [torch.full((copy_bytes,), 0xFF, dtype=torch.uint8, device="cuda") for _ in range(16)]
    y.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, expected)
    del poison
    other = tilevm.quantize(rand(4096, 1024, dtype=torch.float32, seed=23), "u4", group=128)
    qw.codes.copy_(other.codes)
    qw.scales.copy_(other.scales)
    tilevm.qmatmul(large, qw)  # an eager call notices the new version and rewrites every copy
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, tilevm.qmatmul(small, other))


def test_capture_without_warm_up_is_a_clear_error():
    qw = tilevm.quantize(rand(512, 128, dtype=torch.float32, seed=12), "u4", group=128)
    x = rand(3, 512, seed=13)  # no kernel for M = 3 yet
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="CUDA graph is being captured"):
        with torch.cuda.graph(graph):
            tilevm.qmatmul(x, qw)
    config = tilevm.precompile_qmatmul(qw, 3)
    graph = torch.cuda.CUDAGraph()  # a failed capture leaves its graph unusable
    with torch.cuda.graph(graph):
        y = tilevm.qmatmul(x, qw)
    graph.replay()
    assert_close_to_reference(y, x, qw, rounded=weights_rounded(config, qw))


def test_torch_compile_with_cuda_graphs():
    layer = tilevm.nn.QuantizedLinear.from_linear(torch.nn.Linear(512, 256).half().cuda(), "u3", group=128)
    x = rand(2, 512, seed=14)
    eager = layer(x)
    compiled = torch.compile(layer, fullgraph=True, mode="reduce-overhead")
    for _ in range(3):
        out = compiled(x)
    assert torch.equal(out, eager)


def test_gpu_input_checks():
    qw = tilevm.quantize(rand(256, 64, dtype=torch.float32, seed=15), "u4", group=128)
    base = rand(1, 256 + 8, seed=16)
    misaligned = base[0, 1:257].reshape(1, 256)  # contiguous, 2 bytes past a 16-byte boundary
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        tilevm.qmatmul(misaligned, qw)
    with pytest.raises(ValueError, match="x is on cuda:0 but the weight's codes on cpu"):
        tilevm.qmatmul(rand(1, 256, seed=17), qw.to("cpu"))


def test_compiled_program_on_cuda_tensors():
    transform = tilevm.compile(EXAMPLES / "matmul_f16_i6_transform.tile", K=128, N=64)
    matmul = tilevm.compile(EXAMPLES / "matmul_f16_i6.tile", M=64, N=64, K=128)
    rng = np.random.default_rng(18)
    w = rng.integers(-32, 32, size=(128, 64))
    codes = w.reshape(-1) & 63
    b = np.packbits(((codes[:, None] >> np.arange(6)) & 1).astype(np.uint8).reshape(-1), bitorder="little")
    bt = np.zeros_like(b)
    transform(b, bt)  # interpreter
    a = rand(64, 128, seed=19)
    c = torch.full((64, 64), float("nan"), dtype=torch.float16, device="cuda")
    matmul.precompile("cuda")
    matmul(a, torch.from_numpy(bt).cuda(), c)  # GPU, current stream, through torch.ops.tilevm.launch
    c_host = np.zeros((64, 64), np.float16)
    matmul(a.cpu().numpy(), bt, c_host, backend="interp")
    torch.cuda.synchronize()
    assert np.allclose(c.cpu().numpy().astype(np.float64), c_host.astype(np.float64), rtol=2e-3, atol=2e-2)
    c_gpu_host = np.zeros((64, 64), np.float16)
    matmul(a.cpu().numpy(), bt, c_gpu_host, backend="gpu")  # host arrays copied to the GPU and back
    assert np.array_equal(c_gpu_host, c.cpu().numpy())
    with pytest.raises(ValueError, match="backend='interp' runs on host memory"):
        matmul(a, torch.from_numpy(bt).cuda(), c, backend="interp")


def test_tile_programs_lower_for_the_gpu_they_run_on():
    """tilevm.compile lowers the tile layer for the first GPU: on a Hopper the GEMM runs wgmma with TMA and a
    producer warpgroup, and the dequantize-GEMM's layout=auto weights are packed in the order that lowering
    chose (param_layouts); both match float64 on fresh inputs, and arch="sm_80" (mma.sync) computes the same."""
    major, minor = torch.cuda.get_device_capability()
    m, n, k = 200, 264, 192
    a = rand(m, k, seed=30)
    b = rand(n, k, seed=31)
    ref = a.double().cpu() @ b.double().cpu().T
    for arch, ws in ((None, True), ("sm_80", False)):
        gemm = tilevm.compile(EXAMPLES / "tile" / "gemm_f16.tile", arch=arch, WS=ws)
        # The device's own architecture (the arch-specific one on a Hopper), or the one asked for.
        assert gemm.arch == (arch or ("sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"))
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        gemm(a, b, c, m, n, k)
        torch.cuda.synchronize()
        err = (c.double().cpu() - ref).abs()
        assert torch.all(err <= 2e-3 * ref.abs() + 1e-5 * k), (arch, float(err.max()))

    group = 128
    rng = np.random.default_rng(32)
    codes = rng.integers(0, 16, size=(n, k + 64))
    kk = k + 64  # a multiple of 128: the scales' groups
    scales_t = rng.uniform(0.5, 2.0, size=(kk // group, n)).astype(np.float16)
    x = rand(m, kk, seed=33)
    w16 = (codes * scales_t.astype(np.float32).T.repeat(group, axis=1)).astype(np.float16)
    ref = x.double().cpu() @ torch.from_numpy(w16.astype(np.float64)).T
    constants = dict(TMA=True, WS=True) if major == 9 else {}
    kern = tilevm.compile(EXAMPLES / "tile" / "dequant_gemm_rs_packed.tile", **constants)
    packed = torch.from_numpy(kern.param_layouts["w_ptr"].pack_tiled(codes, "u4")).cuda()
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")  # stored through C^T's view
    kern(x, packed, torch.from_numpy(scales_t).cuda(), c, m, n, kk)
    torch.cuda.synchronize()
    err = (c.double().cpu() - ref).abs()
    assert torch.all(err <= 2e-3 * ref.abs() + 1e-4 * kk), float(err.max())
