"""tilevm.layout(EXPR): a register layout, as `tilevm layout EXPR [--map] [--svg FILE]` shows it."""

import numpy as np

from . import _tilevm as _C
from ._arrays import is_tensor
from ._dtype import DType


class Layout:
    """A layout parsed from its text (``local(2, 1).spatial(8, 4).local(1, 2)``; LANGUAGE.md section 3).

    ``text`` is the canonical form, ``shape``, ``threads`` and ``locals`` its sizes. ``str(layout)`` is the
    CLI's picture (which thread and slot hold each element), ``map()`` the ``t i : index`` lines of ``--map``,
    ``svg()`` the SVG of ``--svg``; in a notebook the layout renders as that SVG.
    """

    def __init__(self, text: str):
        info = _C.layout_info(str(text))  # ValueError: "invalid layout: column 12: expected ')' ..."
        self.text = info["text"]
        self.shape = tuple(info["shape"])
        self.threads = info["threads"]
        self.locals = info["locals"]

    def picture(self) -> str:
        return _C.layout_picture(self.text)

    def map(self) -> str:
        return _C.layout_map(self.text)

    def svg(self) -> str:
        return _C.layout_svg(self.text)

    def pack_tiled(self, codes, dtype) -> np.ndarray:
        """The bytes (a 1-D uint8 array) of a tensor of ``codes`` stored in tiles of this layout, as a kernel
        reads it through ``ViewGlobal(ptr, dtype=dtype, shape=codes.shape, layout=this)``: a row-major grid of
        tiles of this layout's shape, each tile whole in this layout's order (a one-thread layout, such as
        ``thread_major(...)``), packed at ``dtype``'s width; the padding of edge tiles is 0.

        ``codes``: the tensor's codes as integers, one per element (a NumPy array or CPU tensor of any
        integer dtype; a float tensor's bit patterns through ``.view(np.uint16)``), of the layout's rank.
        ``dtype``: the element type (``"u4"``, ``tilevm.dtype("i3")``, ...). ValueError for a layout with
        more than one thread, another rank, a negative code or one wider than the type.

            wl = tilevm.compile("examples/tile/dequant_gemm_rs_packed.tile").param_layouts["w_ptr"]
            w_bytes = wl.pack_tiled(codes, "u4")    # codes: [N, K] integers in 0..15
        """
        if is_tensor(codes):
            codes = codes.detach().cpu().numpy()
        a = np.asarray(codes)
        if a.dtype.kind not in "iub":
            raise TypeError(f"pack_tiled takes integer codes, got an array of {a.dtype}")
        if a.ndim != len(self.shape):
            raise ValueError(f"the layout {self.text} has rank {len(self.shape)}, the codes' shape "
                             f"{list(a.shape)} rank {a.ndim}")
        if a.size and a.dtype.kind == "i" and a.min() < 0:
            raise ValueError(f"the codes hold a negative value ({a.min()}): codes are unsigned bit patterns")
        return _C.layout_pack_tiled(self.text, np.ascontiguousarray(a, dtype=np.uint64), DType(dtype).bits)

    def _repr_svg_(self):
        return self.svg()

    def __str__(self):
        return self.picture()

    def __repr__(self):
        return f"tilevm.layout({self.text!r})"

    def __eq__(self, other):
        return isinstance(other, Layout) and other.text == self.text

    def __hash__(self):
        return hash(self.text)


def layout(text: str) -> Layout:
    """The layout ``text`` denotes (``tilevm layout EXPR``); ValueError naming the column of a syntax error."""
    return Layout(text)
