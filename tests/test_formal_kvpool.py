"""The scaled KV pool's formal harness (``formal/kvpool.py``) in ``make test``: it
elaborates with every probe, a shallow BMC from reset passes, a false property is
refuted (a check that cannot fail checks nothing) and the first state worth checking
is reached. ``make formal`` runs the full depth, the induction and every witness."""

import pytest
from amaranth.back import rtlil

from formal import kvpool

#: a BMC this deep takes seconds; make formal goes to kvpool.BMC_DEPTH
QUICK_DEPTH = 3


@pytest.mark.full  # make sim-full (decision 0054): every solver run below elaborates it
def test_harness_elaborates_with_its_probes() -> None:
    h = kvpool.KVPoolScaledFormal()
    text = rtlil.convert(h, name="top", ports=h.ports())
    assert text.count("cell $check") > 100  # the assertions and the reset assumption
    u = h.dut.u
    assert len(u.tlbs) == 2 and all(t.st is not None and len(t.words) == 2 for t in u.tlbs)


@pytest.mark.full  # make sim-full (decision 0054): the false property keeps a solver run here
def test_shallow_bmc_passes(tmp_path) -> None:
    o = kvpool.run(("bmc",), out=tmp_path, bmc_depth=QUICK_DEPTH)["bmc"]
    assert (o.status, o.steps) == ("PASS", QUICK_DEPTH), o.log


def test_false_property_is_caught(tmp_path) -> None:
    """``free + spec + committed == PAGES + 1`` when idle is refuted by the BMC and by
    the induction's base case."""
    res = kvpool.run(
        ("bmc", "prove"), negate=True, out=tmp_path, bmc_depth=QUICK_DEPTH, prove_depth=2
    )
    for task, o in res.items():
        assert o.status == "FAIL", f"{task} did not refute a false property:\n{o.log}"


def test_a_committed_insert_is_reached(tmp_path) -> None:
    """The BMC is not vacuous: its depth reaches an operation's end (a committed page)."""
    o = kvpool.run(("bmc",), out=tmp_path, bmc_depth=12, reach="insert")["bmc"]
    assert o.status == "FAIL" and o.steps <= 12, o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="props"):
        kvpool.KVPoolScaledFormal(props=(8,))
    with pytest.raises(ValueError, match="reach"):
        kvpool.KVPoolScaledFormal(reach="moon")
    with pytest.raises(ValueError, match="tasks"):
        kvpool.run(("cover",))


def test_report_page_has_the_scaled_pool_section(tmp_path) -> None:
    """``make report``'s formal page renders ``formal_kvpool.json`` as its own section."""
    from flows import report
    from tests.test_report import _fabricate, _readme, _write

    ctx = _fabricate(tmp_path)
    row = {"config": "reduced", "params": {"PAGES": 16}, "task": "bmc", "depth": 16}
    row |= {"status": "PASS", "ok": True, "seconds": 6.5, "what": "from reset"}
    _write(ctx.reports / "formal_kvpool.json", {"results": [row]})
    report.generate(ctx, _readme(tmp_path))
    text = (ctx.out / "formal.md").read_text()
    assert "## The scaled pool" in text and "PAGES=16" in text
    assert "| `bmc` | PASS | yes | 16 | 6.5 | from reset |" in text
