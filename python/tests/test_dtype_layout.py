import numpy as np
import pytest

import tilevm


def test_dtype_matches_the_cli_summary():
    t = tilevm.dtype("f8e4m3")
    assert (t.name, t.bits, t.kind) == ("f8e4m3", 8, "float")
    assert (t.exponent_bits, t.mantissa_bits, t.bias) == (4, 3, 7)
    assert (t.min, t.max) == (-448.0, 448.0)
    assert t.smallest_subnormal == 2.0**-9
    assert str(t).splitlines()[0] == "dtype f8e4m3 bits=8 kind=float"


def test_dtype_table_lists_every_code():
    table = tilevm.dtype("i4").table()
    assert len(table) == 16
    assert table[15] == (15, -1.0) and table[7] == (7, 7.0)
    assert [v for _, v in tilevm.dtype("f4e2m1").table()][:8] == [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def test_integer_dtype():
    t = tilevm.dtype("u3")
    assert (t.min, t.max, t.storage) == (0, 7, "8 elements in 3 bytes")


def test_unknown_dtype_is_a_value_error_with_the_reason():
    with pytest.raises(ValueError, match="invalid data type 'u9'.*1 to 8, 16, 32 or 64 bits"):
        tilevm.dtype("u9")


def test_weight_types_are_the_cli_names():
    names = tilevm.weight_types()
    for n in ["u1", "u4", "u8", "i1", "i8", "f4e2m1", "f6e3m2", "f8e4m3", "f8e5m2", "f16", "bf16"]:
        assert n in names
    assert len(names) == len(set(names))


def test_layout_picture_map_and_svg():
    lay = tilevm.layout("local(2, 1).spatial(8, 4).local(1, 2)")
    assert lay.text == "local(2, 1).spatial(8, 4).local(1, 2)"
    assert (lay.shape, lay.threads, lay.locals) == ((16, 8), 32, 4)
    assert str(lay).startswith("layout local(2, 1).spatial(8, 4).local(1, 2) shape=[16, 8] threads=32 locals=4")
    assert lay.map().splitlines()[0] == "0 0 : 0 0"
    svg = lay._repr_svg_()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")


def test_layout_canonical_form_is_shared():
    assert tilevm.layout("local(2).local(3)") == tilevm.layout("local(6)")


def test_layout_errors_name_the_column():
    with pytest.raises(ValueError, match="invalid layout: column"):
        tilevm.layout("local(2, 1).spatial(8, 4")


def test_layout_too_large_to_draw():
    lay = tilevm.layout("local(65536, 32768)")  # parses; drawing it is refused
    with pytest.raises(ValueError, match="too large to draw"):
        lay.svg()


def test_import_without_torch(tmp_path):
    # compile/layout/dtype need only NumPy: torch made unimportable in a fresh interpreter.
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import numpy as np, tilevm\n"
        "print(tilevm.layout('spatial(4)').threads, tilevm.dtype('u4').bits)\n"
        "qw = tilevm.quantize(np.ones((64, 8), np.float32), 'u4', group=64)\n"
        "print(tilevm.qmatmul(np.ones((1, 64), np.float16), qw)[0, 0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["4", "4", "64.0"]


def test_pack_tiled_stores_tile_after_tile_in_the_layouts_order():
    # local(2, 2) over [3, 4]: a grid of 2 x 2 row-major tiles of 4 elements; row 3 is padding (0).
    codes = np.arange(12).reshape(3, 4) + 1
    got = tilevm.layout("local(2, 2)").pack_tiled(codes, "u8")
    assert got.tolist() == [1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 0, 0, 11, 12, 0, 0]
    # u4: two codes a byte, the first in the low nibble.
    got4 = tilevm.layout("local(2, 2)").pack_tiled(codes, tilevm.dtype("u4"))
    assert got4.tolist() == [1 | 2 << 4, 5 | 6 << 4, 3 | 4 << 4, 7 | 8 << 4, 9 | 10 << 4, 0, 11 | 12 << 4, 0]
    # thread_major of a two-thread layout: thread 0's elements (column 0), then thread 1's.
    tm = tilevm.layout("thread_major(spatial(1, 2).local(2, 1))")
    assert tm.pack_tiled(np.array([[1, 2], [3, 4]]), "u8").tolist() == [1, 3, 2, 4]


def test_pack_tiled_errors():
    with pytest.raises(ValueError, match="must have one thread and no replication"):
        tilevm.layout("spatial(2, 2)").pack_tiled(np.zeros((2, 2), np.int64), "u4")
    with pytest.raises(ValueError, match="rank 2, the codes' shape \\[4\\] rank 1"):
        tilevm.layout("local(2, 2)").pack_tiled(np.zeros(4, np.int64), "u4")
    with pytest.raises(ValueError, match="code 16 of element \\[0, 1\\] does not fit in 4 bits"):
        tilevm.layout("local(2, 2)").pack_tiled(np.array([[0, 16], [0, 0]]), "u4")
    with pytest.raises(ValueError, match="negative"):
        tilevm.layout("local(2, 2)").pack_tiled(np.array([[0, -1], [0, 0]]), "u4")
    with pytest.raises(TypeError, match="integer codes"):
        tilevm.layout("local(2, 2)").pack_tiled(np.zeros((2, 2), np.float32), "u4")
