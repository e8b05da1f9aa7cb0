"""tilevm.compile on the repository's example programs, on the interpreter, from NumPy arrays (no torch)."""

import numpy as np
import pytest

import tilevm
from conftest import EXAMPLES


def pack(values, bits):
    """Little-endian bit stream of `bits`-bit codes (two's complement for negatives): type/packing.h."""
    codes = np.asarray(values).reshape(-1) & ((1 << bits) - 1)
    raw = ((codes[:, None] >> np.arange(bits)) & 1).astype(np.uint8).reshape(-1)
    return np.packbits(raw, bitorder="little")


def test_kernel_signature():
    k = tilevm.compile(EXAMPLES / "matmul_f16_i6.tile", M=16, N=16, K=32)
    assert k.name == "matmul"
    assert [(p.name, p.kind, p.dtype, p.host_dtype) for p in k.params] == [
        ("a_ptr", "pointer", "f16", "<f2"),
        ("b_ptr", "pointer", "u8", "|u1"),
        ("c_ptr", "pointer", "f16", "<f2"),
    ]
    assert "def matmul" in k.text


def test_f16_i6_matmul_with_its_transform_matches_float64():
    rng = np.random.default_rng(1)
    m, n, k = 16, 16, 32
    transform = tilevm.compile(str(EXAMPLES / "matmul_f16_i6_transform.tile"), K=k, N=n)
    matmul = tilevm.compile(EXAMPLES / "matmul_f16_i6.tile", M=m, N=n, K=k)
    w = rng.integers(-32, 32, size=(k, n))
    b = pack(w, 6)
    bt = np.zeros_like(b)
    transform(b, bt, backend="interp")
    a = rng.uniform(-1, 1, size=(m, k)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)  # poisoned: an unwritten output shows
    matmul(a_ptr=a, b_ptr=bt, c_ptr=c)
    ref = a.astype(np.float64) @ w
    assert np.all(np.abs(c - ref) <= 2.0**-10 * np.abs(ref) + 2.0**-20 * 32 * np.abs(a).astype(np.float64) @ np.abs(w))


def test_pipelined_u6_matmul():
    rng = np.random.default_rng(2)
    m, n, k = 16, 32, 256
    consts = dict(M=m, N=n, K=k)
    transform = tilevm.compile(EXAMPLES / "matmul_f16_u6_pipelined_transform.tile", K=k, N=n)
    matmul = tilevm.compile(EXAMPLES / "matmul_f16_u6_pipelined.tile", **consts)
    w = rng.integers(0, 64, size=(k, n))
    words = np.zeros(k * n * 6 // 32, np.uint32)
    transform(pack(w, 6), words)
    a = rng.uniform(-1, 1, size=(m, k)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    matmul(a, words, c)
    ref = a.astype(np.float64) @ w
    assert np.all(np.abs(c - ref) <= 2.0**-10 * np.abs(ref) + 2.0**-20 * 64 * np.abs(a).astype(np.float64) @ w)


def test_warp_specialized_example_matches_numpy():
    """A TMA producer warpgroup and two consumers (warp-specialized regions): the interpreter runs the regions
    interleaved under several schedules, and every schedule must give these results."""
    rng = np.random.default_rng(4)
    m, n = 37, 192
    k = tilevm.compile(EXAMPLES / "tma_warp_specialized.tile")
    x = (rng.integers(-64, 65, size=(m, n)) / 8).astype(np.float16)
    y = np.full((m, n), np.nan, np.float16)
    s = np.full((m, n // 64), np.nan, np.float32)
    k(x, y, s, m, n, backend="interp")
    assert np.array_equal(y, 2 * x)
    assert np.array_equal(s, x.astype(np.float64).reshape(m, n // 64, 64).sum(axis=2).astype(np.float32))


def test_compile_errors_are_located_diagnostics():
    source = "def f<1>(f16* a_ptr):\n    x = Foo()\n"
    with pytest.raises(tilevm.CompileError) as e:
        tilevm.compile(source)
    assert str(e.value).startswith("<string>:2:9: error: unknown instruction 'Foo'")
    assert isinstance(e.value, ValueError)


def test_compile_error_names_the_file(tmp_path):
    bad = tmp_path / "bad.tile"
    bad.write_text("def f<1>(f16* a_ptr):\n    x = AllocateRegister(f32, layout=spatial(3x))\n")
    with pytest.raises(tilevm.CompileError, match=r"bad\.tile:2:\d+: error: "):
        tilevm.compile(bad)


def test_race_is_a_run_error():
    k = tilevm.compile(EXAMPLES / "matmul_f16_u6_pipelined_race.tile", M=16, N=32, K=256)
    a = np.zeros((16, 256), np.float16)
    words = np.zeros(256 * 32 * 6 // 32, np.uint32)
    c = np.zeros((16, 32), np.float16)
    with pytest.raises(tilevm.RunError, match="race"):
        k(a, words, c)


def test_argument_errors():
    k = tilevm.compile(EXAMPLES / "matmul_f16_i6.tile", M=16, N=16, K=32)
    a, b, c = np.zeros((16, 32), np.float16), np.zeros(384, np.uint8), np.zeros((16, 16), np.float16)
    with pytest.raises(TypeError, match="a_ptr is f16\\* and needs a float16 array, got float32"):
        k(a.astype(np.float32), b, c)
    with pytest.raises(ValueError, match="c_ptr is not C-contiguous"):
        k(a, b, np.zeros((16, 32), np.float16)[:, ::2])
    with pytest.raises(TypeError, match="missing argument\\(s\\) c_ptr"):
        k(a, b)
    with pytest.raises(TypeError, match="has no parameter 'd_ptr'"):
        k(a, b, c, d_ptr=c)
    with pytest.raises(TypeError, match="pass a NumPy array or a torch tensor"):
        k(a, b, [0.0])
    with pytest.raises(ValueError, match="backend must be 'gpu' or 'interp'"):
        k(a, b, c, backend="cuda")
    readonly = c.copy()
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        k(a, b, readonly)


@pytest.mark.parametrize("arch", [None, "sm_90a"])
def test_dequantize_gemm_of_weights_packed_for_their_fragment(arch):
    """examples/tile/dequant_gemm_rs_packed.tile views its u4 weights with layout=auto: the compiled kernel
    names the order it chose for w_ptr (mma.sync's fragment on sm_80, wgmma's on sm_90a), Layout.pack_tiled
    stores the codes so, and the interpreter's product matches float64 (N and M past the last whole tile).
    Stored row-major instead, the same codes give another product."""
    rng = np.random.default_rng(5)
    m, n, k, group = 16, 80, 256, 128
    kern = tilevm.compile(EXAMPLES / "tile" / "dequant_gemm_rs_packed.tile", arch=arch)
    assert arch is None or kern.arch == arch
    wl = kern.param_layouts["w_ptr"]
    assert list(kern.param_layouts) == ["w_ptr"]  # the others are row-major or strided
    assert wl.shape == (64, 128) and wl.threads == 1
    codes = rng.integers(0, 16, size=(n, k))
    scales_t = rng.uniform(0.5, 2.0, size=(k // group, n)).astype(np.float16)  # ST[K / GROUP, N]
    a = rng.uniform(-1, 1, size=(m, k)).astype(np.float16)
    w16 = (codes * scales_t.astype(np.float32).T.repeat(group, axis=1)).astype(np.float16)
    ref = a.astype(np.float64) @ w16.astype(np.float64).T
    bound = 2.0**-10 * np.abs(ref) + 2.0**-20 * k * np.abs(a).astype(np.float64) @ np.abs(w16).astype(np.float64).T
    packed = wl.pack_tiled(codes, "u4")
    assert packed.dtype == np.uint8 and packed.size == 2 * 2 * 64 * 128 // 2  # a grid of 2 x 2 whole tiles
    c = np.full((m, n), np.nan, np.float16)
    kern(a, packed, scales_t, c, m, n, k, backend="interp")
    assert np.all(np.abs(c - ref) <= bound)
    c_row_major = np.full((m, n), np.nan, np.float16)
    padded = np.zeros_like(packed)
    padded[: n * k // 2] = pack(codes, 4)
    kern(a, padded, scales_t, c_row_major, m, n, k, backend="interp")
    assert not np.all(np.abs(c_row_major - ref) <= bound)


def test_compile_checks_its_arch():
    with pytest.raises(TypeError, match="arch"):
        tilevm.compile(EXAMPLES / "tile" / "gemm_f16.tile", arch=90)
    with pytest.raises(ValueError, match="sm_12"):
        tilevm.compile(EXAMPLES / "tile" / "gemm_f16.tile", arch="sm_12")
