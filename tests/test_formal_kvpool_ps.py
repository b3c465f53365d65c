"""The page states' leaf proof (``formal/kvpool_ps.py``) in ``make test``: the induction
closes (about a second at 4 pages), a victim's position claimed as the shadow's XOR 1 is
refuted (so the BMC reaches a victim under the assumptions), Q1 and Q2 are needed
(without either a VICTIM answers ``none`` while a page is committed), and V-a - V-c
alone are not inductive (the invariants are needed).
The larger size's induction, the run without Q0 and the witnesses run in ``make formal``."""

import pytest

from formal import kvpool_ps


def test_the_victim_contracts_are_proved(tmp_path) -> None:
    o = kvpool_ps.run("prove", out=tmp_path)
    assert o.status == "PASS" and o.steps <= kvpool_ps.PROVE_DEPTH, o.log


def test_a_false_position_is_refuted(tmp_path) -> None:
    o = kvpool_ps.run("bmc", variant="negated", out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.parametrize("variant", ["unprotected", "unfresh"])
def test_without_the_fresh_rules_a_victim_is_missed(tmp_path, variant) -> None:
    """Without Q1 (a stale ``queued`` flag after a reset) or Q2 (a page queued twice,
    the queue overflowing) a BMC finds a failure."""
    o = kvpool_ps.run("bmc", variant=variant, out=tmp_path)
    assert o.status == "FAIL", o.log


def test_the_contract_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_ps.run("prove", variant="weak", depth=2, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_ps.PageStateFormal(variant="only1")
    with pytest.raises(ValueError, match="reach"):
        kvpool_ps.PageStateFormal(reach="split")
    with pytest.raises(ValueError, match="PAGES"):
        kvpool_ps.PageStateFormal(PAGES=3)
    with pytest.raises(ValueError, match="task"):
        kvpool_ps.run("cover")
    with pytest.raises(SystemExit):
        kvpool_ps.parse_args(["only1"])
