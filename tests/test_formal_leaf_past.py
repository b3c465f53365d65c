"""``Harness.assuming(past=True)`` (``formal/leaf.py``): a fact assumed of the cycles
before constrains them, not the current one. A toy harness: a free input ``x``, a
register ``r`` that follows it, ``x == 0`` assumed of the cycles before. ``r == 0``
(the input of the cycle before) is proved; ``x == 0`` in the current cycle is not
(the assumption would prove it if it held in the same cycle)."""

import pytest
from amaranth import Elaboratable, Module, Signal

from formal.leaf import Harness
from formal.sat import convert, solve


class _Toy(Harness, Elaboratable):
    def __init__(self, claim: str) -> None:
        self.x, self.claim = Signal(name="x"), claim

    def ports(self) -> list[Signal]:
        return [self.x]

    def elaborate(self, platform) -> Module:
        m = Module()
        r = Signal(name="r")
        m.d.sync += r.eq(self.x)
        with self.assuming(past=True):
            self._chk(m, "x0", 1, [~self.x])
        watched = self.x if self.claim == "now" else r
        self._chk(m, self.claim, 1, [~watched])
        self.latch_past(m)
        return m


@pytest.mark.parametrize(
    ("claim", "task", "status"),
    [
        ("before", "prove", "PASS"),
        ("now", "bmc", "FAIL"),
        ("now", "prove", "FAIL"),
    ],
)
def test_a_past_fact_holds_before_not_now(tmp_path, claim, task, status) -> None:
    h = _Toy(claim)
    o = solve(convert(h, h.ports()), tmp_path, task, 3)
    assert o.status == status, o.log
