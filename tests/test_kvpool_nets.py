"""The scaled pool's kept nets are assigned unconditionally.

A kept net (``hw.common.net(..., keep=True)``: every prefix adder's and
comparator's nodes) built inside an ``If`` or an FSM state is assigned under
that test: its value is ``test ? value : 0``, so every node of the network
depends on the test, and a late test (the port's checks) then runs through
the whole network instead of meeting its result in one multiplexer
(decision 0023). The pool is elaborated at a small configuration and its
fragments' ``comb`` statements walked: no kept signal may be assigned inside
a ``Switch`` (what Amaranth makes of ``If`` and ``FSM``).
"""

from amaranth.hdl import Fragment
from amaranth.hdl._ast import Assign, Switch

from hw.kvpool import ScaledPool

#: small, but with every unit built (two trees, eight segments and sequences)
PARAMS = {
    "PAGES": 16,
    "HBM_PAGES": 16,
    "SEQS": 8,
    "SEGS": 8,
    "TREES": 2,
    "N_NODES": 4,
    "MAX_DEPTH": 2,
    "POS_BITS": 4,
    "TOKEN_BITS": 1,
    "TLB_SETS": 2,
    "TLB_WAYS": 1,
    "TAG_SETS": 2,
    "TAG_WAYS": 1,
}


def conditional_kept(frag: Fragment, path: str = "kvpool") -> list[str]:
    """``module.signal`` of every kept signal assigned inside a ``Switch``."""
    found: list[str] = []

    def stmts(items, cond: bool) -> None:
        for st in items:
            if isinstance(st, Assign) and cond:
                found.extend(
                    f"{path}.{s.name}" for s in st.lhs._lhs_signals() if s.attrs.get("keep")
                )
            elif isinstance(st, Switch):
                for _patterns, body, _loc in st.cases:
                    stmts(body, True)

    stmts(frag.statements.get("comb", []), False)
    for sub, name, _loc in frag.subfragments:
        found.extend(conditional_kept(sub, f"{path}.{name}"))
    return found


def test_kept_nets_unconditional() -> None:
    frag = Fragment.get(ScaledPool(**PARAMS), None)
    bad = conditional_kept(frag)
    assert not bad, f"{len(bad)} kept nets assigned under a condition: {sorted(set(bad))[:12]}"


def test_scan_finds_a_conditional_net() -> None:
    """The scan itself: a kept net built inside an ``If`` is reported."""
    from amaranth.hdl import Module, Signal

    from hw.common import prefix_inc

    m = Module()
    a, en, r = Signal(4), Signal(), Signal(4)
    with m.If(en):
        m.d.sync += r.eq(prefix_inc(m, a, "inside"))
    bad = conditional_kept(Fragment.get(m, None), "t")
    assert "t.inside_sum" in bad
