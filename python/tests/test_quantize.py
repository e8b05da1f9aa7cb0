"""quantize / dequantize / qmatmul on every weight type, against float64 references computed here."""

import numpy as np
import pytest

import tilevm
from conftest import as_float64, assert_close_to_reference, code_values, reference_dequantize

LOW_BIT = [t for t in tilevm.weight_types() if t not in ("f16", "bf16")]
UNSIGNED = [t for t in LOW_BIT if t.startswith("u")]


def random_weight(rng, k, n):
    return rng.uniform(-1, 1, size=(k, n)).astype(np.float32)


@pytest.mark.parametrize("wtype", LOW_BIT)
def test_dequantize_matches_the_codes_and_the_weight(wtype):
    rng = np.random.default_rng(abs(hash(wtype)) % 2**32)
    k, n, group = 64, 24, 32
    zero_point = wtype in UNSIGNED
    w = random_weight(rng, k, n)
    qw = tilevm.quantize(w, wtype, group=group, zero_point=zero_point)
    assert qw.shape == (k, n) and qw.group == group and qw.wtype == wtype
    assert qw.codes.dtype == np.uint8 and qw.codes.size % 16 == 0
    assert qw.scales.shape == (k // group, n) and qw.scales.dtype == np.float16
    dq = tilevm.dequantize(qw)
    assert dq.dtype == np.float64 and dq.shape == (k, n)
    # 1. the C++ dequantize is (value(code) - zero) * scale, decoded here from the packed bits
    np.testing.assert_array_equal(dq, reference_dequantize(qw))
    # 2. each weight is within half the widest gap between the type's values of its group's scale (saturation
    #    beyond the largest value is a fraction of a scale ulp, ops/quantize.h); with zero points the grid is
    #    shifted by the rounded zero, so a weight at the range's edge can be a whole step away
    values = np.unique(code_values(wtype)[np.isfinite(code_values(wtype))])
    half_gap = np.max(np.diff(values)) / 2
    scales = np.repeat(as_float64(qw.scales), group, axis=0)
    err = np.abs(dq - w)
    step = 2 * half_gap if zero_point else half_gap
    if wtype == "i1":
        step = 1.0  # values -1 and 0: positive weights clamp to 0
    assert np.all(err <= scales * (step * 1.002) + 1e-7 * np.abs(w)), (wtype, float(np.max(err / scales)))
    # 3. the scale is the group's largest magnitude over the largest value (not just any scale)
    assert np.all(scales > 0)
    if not zero_point:
        q = values.max() if wtype != "i1" else 1.0  # the largest value: 7 for i4, 6 for f4e2m1
        mx = np.abs(w).reshape(k // group, group, n).max(axis=1)
        # rounded to f16; below f16's smallest subnormal (2^-24) it becomes that subnormal
        np.testing.assert_allclose(as_float64(qw.scales), np.maximum(mx / q, 2.0**-24), rtol=2.0**-10,
                                   atol=2.0**-24)


@pytest.mark.parametrize("wtype", UNSIGNED)
def test_unsigned_without_zero_points_clamps_negatives(wtype):
    w = np.linspace(-1, 1, 64 * 8, dtype=np.float32).reshape(64, 8)
    dq = tilevm.dequantize(tilevm.quantize(w, wtype, group=64))
    assert np.all(dq[w <= 0] == 0) and np.all(dq >= 0)


@pytest.mark.parametrize("wtype", LOW_BIT)
def test_qmatmul_on_the_interpreter_matches_float64(wtype):
    rng = np.random.default_rng(7 + len(wtype))
    m, k, n = 3, 64, 40  # N not a multiple of the block: the edge tiles are exercised
    qw = tilevm.quantize(random_weight(rng, k, n), wtype, group=64, zero_point=wtype in UNSIGNED)
    x = rng.uniform(-1, 1, size=(m, k)).astype(np.float16)
    y = tilevm.qmatmul(x, qw)
    assert y.shape == (m, n) and y.dtype == np.float16
    assert_close_to_reference(y, x, qw)


def test_the_reference_check_can_fail():
    rng = np.random.default_rng(3)
    qw = tilevm.quantize(random_weight(rng, 64, 16), "u4", group=32, zero_point=True)
    x = rng.uniform(-1, 1, size=(2, 64)).astype(np.float16)
    y = tilevm.qmatmul(x, qw)
    wrong = qw.scales.copy()
    wrong[1] *= 1.01  # one group's scales off by 1%
    from dataclasses import replace

    with pytest.raises(AssertionError, match="outputs off"):
        assert_close_to_reference(y, x, replace(qw, scales=wrong))


def test_per_channel_and_leading_dimensions():
    rng = np.random.default_rng(4)
    qw = tilevm.quantize(random_weight(rng, 96, 16), "i4", group="k")
    assert qw.group == 96 and qw.scales.shape == (1, 16)
    x = rng.uniform(-1, 1, size=(2, 1, 96)).astype(np.float16)
    y = tilevm.qmatmul(x, qw)
    assert y.shape == (2, 1, 16)
    assert_close_to_reference(y, x, qw)


def test_f16_weights_are_not_quantized():
    rng = np.random.default_rng(5)
    w = random_weight(rng, 64, 16)
    qw = tilevm.quantize(w, "f16", group=64)
    np.testing.assert_array_equal(tilevm.dequantize(qw), w.astype(np.float16).astype(np.float64))
    x = rng.uniform(-1, 1, size=(1, 64)).astype(np.float16)
    assert_close_to_reference(tilevm.qmatmul(x, qw), x, qw)


def test_quantize_errors():
    w = np.zeros((64, 8), np.float32)
    with pytest.raises(ValueError, match="unknown weight type 'u9': the quantized matmul takes u1, u2"):
        tilevm.quantize(w, "u9")
    with pytest.raises(ValueError, match="unknown weight type 'int4'.*f4e2m1"):
        tilevm.quantize(w, "int4")
    with pytest.raises(ValueError, match="zero point"):
        tilevm.quantize(w, "i4", group=64, zero_point=True)
    with pytest.raises(ValueError, match="multiple"):
        tilevm.quantize(np.zeros((96, 8), np.float32), "u4", group=64)
    with pytest.raises(ValueError, match="group"):
        tilevm.quantize(w, "u4", group=48)
    with pytest.raises(ValueError, match="finite"):
        tilevm.quantize(np.full((64, 8), np.nan, np.float32), "u4", group=64)
    with pytest.raises(ValueError, match=r"\[K, N\] weight"):
        tilevm.quantize(np.zeros(64, np.float32), "u4")
    with pytest.raises(TypeError, match="floating-point"):
        tilevm.quantize(np.zeros((64, 8), np.int32), "u4", group=64)
    with pytest.raises(TypeError, match="group must be"):
        tilevm.quantize(w, "u4", group=64.0)


def test_qmatmul_numpy_errors():
    qw = tilevm.quantize(np.ones((64, 8), np.float32), "u4", group=64)
    with pytest.raises(TypeError, match="float16 activations"):
        tilevm.qmatmul(np.ones((1, 64), np.float32), qw)
    with pytest.raises(ValueError, match=r"x must be \[\.\.\., 64\]"):
        tilevm.qmatmul(np.ones((1, 32), np.float16), qw)
    with pytest.raises(ValueError, match="not C-contiguous"):
        tilevm.qmatmul(np.ones((64, 2), np.float16).T, qw)
    with pytest.raises(TypeError, match="QuantizedWeight"):
        tilevm.qmatmul(np.ones((1, 64), np.float16), np.ones((64, 8)))


def test_weights_rounded_is_the_librarys_rule():
    """The GPU tests' tolerance asks the library which configurations round the scaled weights."""
    from tilevm import _tilevm as _C

    assert _C.qmatmul_weights_rounded("dequant_gemm", 1024, "u4", 128)
    assert _C.qmatmul_weights_rounded("bm64_bn128_bk64_sk64_w1x8_s4_k1_wg", 1024, "u4", 128)
    # Per-channel scales (group == k) are applied after the product even in the wgmma form.
    assert not _C.qmatmul_weights_rounded("bm64_bn128_bk64_sk64_w1x8_s4_k1_wg", 1024, "u4", 1024)
    assert not _C.qmatmul_weights_rounded("bm16_bn128_bk128_sk64_w1x4_s3_k4", 1024, "u4", 128)
