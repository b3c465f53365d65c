"""Named nets and width adjustment."""

from amaranth import Cat, Const, Module, Signal, Value

__all__ = ["net", "zext"]


def net(m: Module, value: Value, name: str, *, keep: bool = False) -> Signal:
    """``value`` as a named combinational signal of its width.

    An Amaranth expression used twice is written out twice in the Verilog; a
    named signal is emitted once, so shared subexpressions go through here.
    ``keep`` marks the signal ``(* keep *)``: synthesis preserves it as a
    boundary and cannot merge the logic on either side of it.
    """
    sig = Signal(len(value), name=name, attrs={"keep": 1} if keep else {})
    m.d.comb += sig.eq(value)
    return sig


def zext(v: Value, width: int) -> Value:
    """``v`` zero-extended (or truncated) to exactly ``width`` bits."""
    return Cat(v, Const(0, width - len(v))) if len(v) < width else v[:width]
