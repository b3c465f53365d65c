"""Growth fits of a parameter sweep: power laws for size, ``log2`` for depth."""

import math

__all__ = ["fit_log2", "fit_power", "sweep_fits"]


def _fit_line(xs: list[float], u: list[float], v: list[float]) -> tuple[float, float]:
    """Least-squares ``v = a + b * u``: ``(a, b)``, where ``u`` was computed from ``xs``.

    Raises
    ------
    ValueError
        With fewer than two points (``xs`` named in the message).
    """
    if len(xs) < 2:
        raise ValueError(f"xs = {xs!r}: need at least two points to fit")
    mu, mv = sum(u) / len(u), sum(v) / len(v)
    suu = sum((x - mu) ** 2 for x in u)
    b = sum((x - mu) * (y - mv) for x, y in zip(u, v, strict=True)) / suu
    return mv - b * mu, b


def fit_power(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``y = a * x**b`` on log-log axes: ``(a, b)`` (``ValueError`` with
    fewer than two points)."""
    a, b = _fit_line(xs, [math.log(x) for x in xs], [math.log(y) for y in ys])
    return math.exp(a), b


def fit_log2(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b * log2(x)``: ``(a, b)`` (``ValueError`` with fewer than
    two points)."""
    return _fit_line(xs, [math.log2(x) for x in xs], ys)


def sweep_fits(points: list[dict]) -> dict:
    """Fits of one block's sweep points (``status == "ok"`` only; ``{}`` below two).

    Returns
    -------
    dict
        ``cells``, ``ffs``, ``transistors``: ``{"a", "b"}`` of :func:`fit_power`;
        ``depth``: ``{"a", "b"}`` of :func:`fit_log2`; ``cells_local_b``: the
        exponent between the last two points (growth where it matters).
    """
    ok = [p for p in points if p["status"] == "ok"]
    if len(ok) < 2:
        return {}
    x = [p["x"] for p in ok]
    out = {}
    for metric in ("cells", "ffs", "transistors"):
        a, b = fit_power(x, [max(p[metric], 1) for p in ok])
        out[metric] = {"a": a, "b": b}
    a, b = fit_log2(x, [p["depth"] for p in ok])
    out["depth"] = {"a": a, "b": b}
    p0, p1 = ok[-2], ok[-1]
    out["cells_local_b"] = math.log(p1["cells"] / p0["cells"]) / math.log(p1["x"] / p0["x"])
    return out
