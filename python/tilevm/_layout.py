"""tilevm.layout(EXPR): a register layout, as `tilevm layout EXPR [--map] [--svg FILE]` shows it."""

from . import _tilevm as _C


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
