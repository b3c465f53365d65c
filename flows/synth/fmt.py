"""Formatting shared by the synthesis flows' progress lines and reports."""

import datetime

__all__ = ["fmt_s", "label", "mm2", "now"]


def fmt_s(s: float) -> str:
    """A duration: whole seconds below two minutes, minutes with one decimal above."""
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def label(params: dict[str, object]) -> str:
    """Parameters as ``NAME=VALUE ...``, or ``"defaults"`` when there are none."""
    return " ".join(f"{k}={v}" for k, v in params.items()) or "defaults"


def mm2(x: float) -> str:
    """An area in mm²: three decimals, four below 0.01."""
    return f"{x:.3f}" if x >= 0.01 else f"{x:.4f}"


def now() -> str:
    """The current time as the reports date their parts (UTC, to the minute)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
