"""Amaranth ``data`` layouts <-> Python values, for everything that drives a block's
ports from Python: the cocotb testbenches and the chip model's co-simulation.

A struct is packed from bit 0 in field declaration order, exactly as the RTL
declares it; :func:`pack` takes a dict (or an object with the fields as
attributes), a list for an array, an int otherwise; :func:`unpack` is its
inverse. A value that does not fit its field raises ``ValueError``.
"""

from amaranth.hdl import ShapeCastable
from amaranth.lib import data

__all__ = ["pack", "unpack"]


def _width(shape) -> int:
    if isinstance(shape, data.Layout):
        return shape.size
    if isinstance(shape, ShapeCastable):
        return shape.as_shape().width
    if isinstance(shape, int):
        return shape
    return shape.width


_PLANS: dict[int, tuple] = {}


def _plan(shape) -> tuple:
    """A layout flattened once into ``(kind, ...)`` tuples (Amaranth layouts are
    slow to walk field by field; testbenches pack and unpack every cycle)."""
    key = id(shape)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is shape:
        return hit[1]
    if isinstance(shape, data.StructLayout):
        plan = (
            "s",
            tuple((name, f.offset, (1 << f.width) - 1, _plan(f.shape)) for name, f in shape),
        )
    elif isinstance(shape, data.ArrayLayout):
        w = _width(shape.elem_shape)
        plan = ("a", w, shape.length, _plan(shape.elem_shape))
    else:
        plan = ("l", _width(shape))
    _PLANS[key] = (shape, plan)  # the shape is kept alive, so its id stays unique
    return plan


def _pack(plan: tuple, value) -> int:
    kind = plan[0]
    if kind == "l":
        v = int(value)
        if not 0 <= v < (1 << plan[1]):
            raise ValueError(f"value {v} does not fit {plan[1]} bits")
        return v
    if kind == "s":
        out = 0
        get = value.get if isinstance(value, dict) else None
        for name, off, _m, sub in plan[1]:
            v = get(name, 0) if get else getattr(value, name)
            out |= _pack(sub, v) << off
        return out
    _k, w, _n, sub = plan
    out = 0
    for k, v in enumerate(value):
        out |= _pack(sub, v) << (k * w)
    return out


def _unpack(plan: tuple, raw: int):
    kind = plan[0]
    if kind == "l":
        return raw
    if kind == "s":
        return {name: _unpack(sub, (raw >> off) & m) for name, off, m, sub in plan[1]}
    _k, w, n, sub = plan
    m = (1 << w) - 1
    return [_unpack(sub, (raw >> (k * w)) & m) for k in range(n)]


def pack(shape, value) -> int:
    """Pack ``value`` (dict for a struct, list for an array, int) into an integer."""
    return _pack(_plan(shape), value)


def unpack(shape, raw: int):
    """Inverse of :func:`pack`: dict for a struct, list for an array, int otherwise."""
    return _unpack(_plan(shape), int(raw))
