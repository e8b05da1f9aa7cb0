"""The PyTorch side on CPU tensors (the interpreter): the registered ops (opcheck, torch.compile), nn layers,
state dicts and the input checks."""

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tilevm  # noqa: E402
from conftest import EXAMPLES, assert_close_to_reference  # noqa: E402


def weight(k, n, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(k, n, generator=g) * 2 - 1).to(dtype)


@pytest.mark.parametrize("wtype", ["u4", "i3", "f4e2m1", "f8e5m2", "bf16"])
def test_bf16_activations(wtype):
    qw = tilevm.quantize(weight(64, 24, 1), wtype, group=64, scale_dtype=torch.bfloat16)
    assert qw.scales.dtype == torch.bfloat16 and qw.scale_type == "bf16"
    x = weight(2, 64, 2, torch.bfloat16)
    y = tilevm.qmatmul(x, qw)
    assert y.dtype == torch.bfloat16 and y.shape == (2, 24)
    assert_close_to_reference(y, x, qw, atype="bf16")


def test_tensor_and_numpy_quantization_agree():
    w = weight(64, 16, 3)
    qt = tilevm.quantize(w, "u3", group=32, zero_point=True)
    qn = tilevm.quantize(w.numpy(), "u3", group=32, zero_point=True)
    assert torch.equal(qt.codes, torch.from_numpy(qn.codes))
    assert np.array_equal(qt.scales.numpy(), qn.scales) and np.array_equal(qt.zeros.numpy(), qn.zeros)
    assert torch.equal(tilevm.dequantize(qt), torch.from_numpy(tilevm.dequantize(qn)))


def test_opcheck_qmatmul():
    for wtype, zp in [("u4", True), ("f6e3m2", False)]:
        qw = tilevm.quantize(weight(64, 16, 4), wtype, group=32, zero_point=zp)
        x = weight(3, 64, 5, torch.float16)
        torch.library.opcheck(torch.ops.tilevm.qmatmul.default,
                              (x, qw.codes, qw.scales, qw.zeros, qw.wtype, qw.group, 16))


def test_opcheck_launch_of_a_compiled_program():
    k = tilevm.compile(EXAMPLES / "matmul_f16_i6.tile", M=16, N=8, K=16)
    a = weight(16, 16, 6, torch.float16)
    b = torch.randint(0, 256, (96,), dtype=torch.uint8)
    c = torch.zeros(16, 8, dtype=torch.float16)
    k(a, b, c)  # eager: the launch op's body, on the interpreter
    assert torch.isfinite(c).all() and c.abs().sum() > 0
    c2 = torch.zeros_like(c)
    k(a.numpy(), b.numpy(), c2.numpy())  # the same program from NumPy: the same bits
    assert torch.equal(c, c2)
    c_mixed = torch.zeros_like(c)
    k(a.numpy(), b, c_mixed)  # NumPy and CPU tensors mixed: the host path
    assert torch.equal(c_mixed, c)
    torch.library.opcheck(torch.ops.tilevm.launch.default, (k._id, [a, b, c], [], []))
    # under torch.compile the call is the registered op, traced whole
    c3 = torch.zeros_like(c)
    torch.compile(lambda a, b, c: k(a, b, c), fullgraph=True, backend="aot_eager")(a, b, c3)
    assert torch.equal(c3, c)


def test_torch_compile_fullgraph():
    layer = tilevm.nn.QuantizedLinear.from_linear(torch.nn.Linear(64, 32).half(), "u4", group=64)
    x = weight(2, 64, 7, torch.float16)
    eager = layer(x)
    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x), eager)


def test_quantized_linear_matches_the_dequantized_layer():
    torch.manual_seed(0)
    linear = torch.nn.Linear(128, 48).half()
    layer = tilevm.nn.QuantizedLinear.from_linear(linear, "f6e3m2", group=128)
    assert (layer.in_features, layer.out_features, layer.wtype, layer.group) == (128, 48, "f6e3m2", 128)
    x = weight(5, 128, 8, torch.float16).reshape(5, 1, 128)
    y = layer(x)
    assert y.shape == (5, 1, 48)
    qw = layer.weight
    product = tilevm.qmatmul(x, qw)
    assert torch.equal(y, product + linear.bias)  # the bias is added in f16 after the matmul
    assert_close_to_reference(product, x, qw)
    # the quantized weight approximates the layer's: the transposed [in, out] weight
    assert torch.allclose(tilevm.dequantize(qw).float(), linear.weight.float().t(), atol=0.05)


def test_state_dict_round_trips():
    linear = torch.nn.Linear(64, 16)
    layer = tilevm.nn.QuantizedLinear.from_linear(linear, "u2", group=32, zero_point=True)
    buffer = io.BytesIO()
    torch.save(layer.state_dict(), buffer)
    buffer.seek(0)
    fresh = tilevm.nn.QuantizedLinear(64, 16, "u2", group=32, zero_point=True)
    fresh.load_state_dict(torch.load(buffer))
    x = weight(2, 64, 9, torch.float16)
    assert torch.equal(fresh(x), layer(x))
    other = tilevm.nn.QuantizedLinear(64, 16, "u3", group=32, zero_point=True)
    with pytest.raises((ValueError, RuntimeError), match="u2"):
        other.load_state_dict(layer.state_dict())
    # a QuantizedWeight alone
    qw = tilevm.quantize(weight(64, 8, 10), "i5", group=64)
    again = tilevm.QuantizedWeight.from_state_dict(qw.state_dict())
    assert torch.equal(tilevm.dequantize(again), tilevm.dequantize(qw))
    assert again.to("cpu").shape == (64, 8)


def test_quantize_model_with_filter():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Sequential(torch.nn.Linear(64, 32)), torch.nn.Linear(32, 8)).half()
    seen = []
    tilevm.nn.quantize_(model, "f4e2m1", group=32, filter_fn=lambda m, name: seen.append(name) or name != "3")
    assert seen == ["0", "2.0", "3"]
    assert isinstance(model[0], tilevm.nn.QuantizedLinear) and isinstance(model[2][0], tilevm.nn.QuantizedLinear)
    assert isinstance(model[3], torch.nn.Linear)
    assert model(weight(1, 64, 11, torch.float16)).shape == (1, 8)
    with pytest.raises(ValueError, match="unknown weight type 'q4'"):
        tilevm.nn.quantize_(model, "q4")
    with pytest.raises(ValueError, match="K=32 is not a multiple of the group size 64"):
        tilevm.nn.quantize_(torch.nn.Sequential(torch.nn.Linear(32, 8)), "u4", group=64)


def test_input_checks():
    qw = tilevm.quantize(weight(64, 16, 12), "u4", group=64)
    x = weight(2, 64, 13, torch.float16)
    with pytest.raises(TypeError, match="x must be float16 or bfloat16, got torch.float32"):
        tilevm.qmatmul(x.float(), qw)
    with pytest.raises(TypeError, match="scales are torch.float16: quantize with scale_dtype=torch.bfloat16"):
        tilevm.qmatmul(x.bfloat16(), qw)
    with pytest.raises(ValueError, match=r"x must be \[\.\.\., 64\]"):
        tilevm.qmatmul(x[:, :32], qw)
    with pytest.raises(ValueError, match=r"x is not contiguous \(strides"):
        tilevm.qmatmul(torch.zeros(64, 2, dtype=torch.float16).t(), qw)
    with pytest.raises(ValueError, match="x is on meta but the weight's codes on cpu"):
        tilevm.qmatmul(x.to("meta"), qw)
    with pytest.raises(TypeError, match="holds NumPy arrays"):
        tilevm.qmatmul(x, tilevm.quantize(weight(64, 16).numpy(), "u4", group=64))
    # the registered op checks too, when called directly
    with pytest.raises(ValueError, match="group 64 and N 8"):
        torch.ops.tilevm.qmatmul(x, qw.codes, qw.scales, None, "u4", 64, 8)
    with pytest.raises(ValueError, match="the codes hold 256 bytes but a \\[64, 16\\] u4 weight needs 512"):
        torch.ops.tilevm.qmatmul(x, qw.codes[:256], qw.scales, None, "u4", 64, 16)
    assert tilevm.qmatmul(x[:0], qw).shape == (0, 16)


def test_checks_still_run_after_the_first_call():
    # qmatmul checks a weight once per x dtype and device; layout and shape are checked on every call
    qw = tilevm.quantize(weight(64, 16, 14), "u4", group=64)
    x = weight(2, 64, 15, torch.float16)
    tilevm.qmatmul(x, qw)
    with pytest.raises(ValueError, match="x is not contiguous"):
        tilevm.qmatmul(torch.zeros(64, 2, dtype=torch.float16).t(), qw)
    with pytest.raises(ValueError, match=r"x must be \[\.\.\., 64\]"):
        tilevm.qmatmul(x[:, :32], qw)
    with pytest.raises(TypeError, match="scales are torch.float16"):
        tilevm.qmatmul(x.bfloat16(), qw)
    layer = tilevm.nn.QuantizedLinear.from_linear(torch.nn.Linear(64, 16).half(), "u4", group=64)
    first = layer.weight
    assert layer.weight is first  # kept while the buffers are the same tensors
    layer.load_state_dict({k: v.clone() if torch.is_tensor(v) else v for k, v in layer.state_dict().items()},
                          assign=True)
    assert layer.weight is not first and layer.weight.codes is layer.codes
