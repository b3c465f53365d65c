"""``Harness.assuming(past=True)`` and ``Harness.goal`` (``formal/leaf.py``): a fact
assumed of the cycles before constrains them, not the current one. A toy harness: a
free input ``x``, a register ``r`` that follows it, ``x == 0`` assumed of the cycles
before. ``r == 0`` (the input of the cycle before) is proved; ``x == 0`` in the current
cycle is not (the assumption would prove it if it held in the same cycle).

A goal asserts its labels only and assumes the others of the cycles before: with both
``r == 0`` and the false ``x == 0`` asserted, the goal ``r`` closes (its proof uses
``x == 0`` of the cycle before) and the goal ``x`` does not, so the split proof as a
whole fails, as the unsplit one does."""

import pytest
from amaranth import Elaboratable, Module, Signal

from formal.induct import induct
from formal.leaf import Harness, check_goals
from formal.sat import convert, solve


class _Free(Harness, Elaboratable):
    """A toy harness of one free input ``x`` and its ``claim``."""

    def __init__(self, claim: object) -> None:
        self.x, self.claim = Signal(name="x"), claim

    def ports(self) -> list[Signal]:
        return [self.x]


class _Toy(_Free):
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


class _Goals(_Free):
    @property
    def goal(self) -> tuple[str, ...] | None:
        return self.claim

    def elaborate(self, platform) -> Module:
        m = Module()
        r = Signal(name="r")
        m.d.sync += r.eq(self.x)
        self._chk(m, "r0", 1, [~r])
        self._chk(m, "x0", 1, [~self.x])
        self.latch_past(m)
        self.name_asserted(m)
        return m


@pytest.mark.parametrize(
    ("goal", "status"),
    [
        (("r0",), "PASS"),
        (("x.*",), "FAIL"),
        ((".*",), "FAIL"),  # unsplit: every label one goal
    ],
)
@pytest.mark.parametrize("engine", ["yosys", "cadical"])
def test_a_goal_assumes_the_others_before(tmp_path, goal, status, engine) -> None:
    h = _Goals(goal)
    il = convert(h, h.ports())
    o = solve(il, tmp_path, "prove", 2) if engine == "yosys" else induct(il, tmp_path, 2)
    assert o.status == status, o.log
    assert h.asserted == ["r0", "x0"]


class _Step(_Free):
    """Registers from a free input ``x``: ``r`` follows it and ``s`` its inverse, ``q``
    follows ``r`` and ``p`` the inverse of ``s``; ``a``, ``b``, ``c`` a ring from zeros.
    ``r != s`` closes at ``k = 1``, ``q == p`` at ``k = 2``; ``r == x`` fails from
    reset; the ring's ``a == 0`` holds but is not 2-inductive."""

    goal = (".*",)  # every label: what ``fv_asserted`` gathers

    def elaborate(self, platform) -> Module:
        m = Module()
        r, s, q, p = Signal(name="r"), Signal(init=1, name="s"), Signal(name="q"), Signal(name="p")
        a, b, c = (Signal(name=n) for n in "abc")
        m.d.sync += [r.eq(self.x), s.eq(~self.x), q.eq(r), p.eq(~s), a.eq(b), b.eq(c), c.eq(a)]
        cond = {"one": r != s, "two": q == p, "false": r == self.x, "ring": ~a}[self.claim]
        self._chk(m, self.claim, 1, [cond])
        self.latch_past(m)
        self.name_asserted(m)
        return m


@pytest.mark.parametrize(
    ("claim", "status", "steps"),
    [("one", "PASS", 1), ("two", "PASS", 2), ("false", "FAIL", 1), ("ring", "UNKNOWN", 2)],
)
def test_induct_agrees_with_yosys(tmp_path, claim, status, steps) -> None:
    h = _Step(claim)
    il = convert(h, h.ports())
    o = induct(il, tmp_path / "cadical", 2)
    ref = solve(il, tmp_path / "yosys", "prove", 2)
    assert (o.status, o.steps) == (ref.status, ref.steps) == (status, steps), (o.log, ref.log)


def test_goals_cover_every_label_once() -> None:
    check_goals(["r0", "x0"], {"r": ("r0",), "x": ("x.*",)})
    with pytest.raises(ValueError, match="label 'x0'"):
        check_goals(["r0", "x0"], {"r": ("r.*",), "x": ("x",)})  # matched whole
    with pytest.raises(ValueError, match="label 'r0'"):
        check_goals(["r0", "x0"], {"r": ("r0",), "all": ("r0", "x0")})
    with pytest.raises(ValueError, match="goal 'y'"):
        check_goals(["r0", "x0"], {"r": ("r0",), "x": ("x0",), "y": ("y",)})


def test_name_asserted_needs_a_goal() -> None:
    h, m = _Toy("before"), Module()
    h._MustUse__silence = m._MustUse__silence = True  # neither is elaborated
    with pytest.raises(ValueError, match="goal"):
        h.name_asserted(m)
