"""tilevm.dtype(NAME): a data type's properties, as `tilevm dtype NAME [--table]` prints them."""

from . import _tilevm as _C


class DType:
    """A tilevm data type: ``i1..i8``, ``u1..u8``, ``f<b>e<E>m<M>`` (e.g. ``f4e2m1``), ``f16``, ``bf16``, ...

    Attributes: ``name`` (canonical), ``bits``, ``kind`` (``"float"``, ``"int"``, ...), ``min``, ``max``,
    ``storage``; floats also ``exponent_bits``, ``mantissa_bits``, ``bias``, ``smallest_normal``,
    ``smallest_subnormal``, ``has_inf``, ``has_nan``. ``str(t)`` is the CLI's summary; ``t.table()`` lists
    every code and its value.
    """

    def __init__(self, name):
        # A DType stands for its own name (so every function that takes a type name also takes a DType).
        name = name.name if isinstance(name, DType) else str(name)
        self._info = _C.dtype_info(name)  # ValueError for an unknown name, with the reason
        for key, value in self._info.items():
            setattr(self, key, value)

    def table(self):
        """``[(code, value), ...]`` for every code (types of 8 bits or fewer), as ``tilevm dtype --table``."""
        return _C.dtype_table(self.name)

    def __eq__(self, other):
        return isinstance(other, DType) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"tilevm.dtype({self.name!r})"

    def __str__(self):
        i = self._info
        lines = [f"dtype {i['name']} bits={i['bits']} kind={i['kind']}"]
        if i["kind"] == "float":
            lines.append(f"exponent_bits={i['exponent_bits']} mantissa_bits={i['mantissa_bits']} bias={i['bias']}")
            lines.append(f"min={i['min']:g} max={i['max']:g}")
            lines.append(f"smallest_normal={i['smallest_normal']:g} smallest_subnormal={i['smallest_subnormal']:g}")
            lines.append(f"inf={'yes' if i['has_inf'] else 'none'} nan={'yes' if i['has_nan'] else 'none'}")
        else:
            lines.append(f"min={i['min']} max={i['max']}")
        lines.append(f"storage={i['storage']}")
        return "\n".join(lines)


def dtype(name: str) -> DType:
    """The data type called ``name`` (``tilevm dtype NAME``); ValueError if there is none."""
    return DType(name)


_WEIGHT_TYPES = None


def weight_types():
    """The weight types of the quantized matmul, by the names the CLI's ``--wtype`` takes:
    u1..u8, i1..i8, the floats of 3 to 8 bits (``f4e2m1``, ``f6e3m2``, ``f8e4m3``, ...), f16 and bf16."""
    global _WEIGHT_TYPES
    if _WEIGHT_TYPES is None:
        _WEIGHT_TYPES = tuple(_C.weight_types())
    return list(_WEIGHT_TYPES)


def check_weight_type(name) -> str:
    """The canonical name of weight type ``name``; ValueError listing the valid names otherwise."""
    valid = weight_types()
    try:
        canonical = _C.canonical_dtype_name(str(name))
    except ValueError:
        canonical = None
    if canonical not in valid:
        raise ValueError(f"unknown weight type {name!r}: the quantized matmul takes {', '.join(valid)}")
    return canonical
