"""The pool's side of the page states' contract (``formal/kvpool_pslink.py``) in ``make
test``: a COMMIT's position claimed one off its PTE's is refuted (so the BMC reaches a
committed page under the leaf's contract in place of V1 and V2), and V1 and V2 alone are
not inductive (the mapping between the page shadow and the page table is needed). The
closing inductions (the commands, then the mapping) run in ``make formal``.

The refuted BMC (minutes) runs in ``make sim-full``; the cheaper checks keep the
harness exercised in ``make test`` (docs/decisions/0041).
"""

import pytest
from amaranth.hdl import Fragment

from formal import kvpool_pslink
from formal.leaf import check_goals


@pytest.mark.full  # a BMC of minutes: make sim-full (docs/decisions/0041)
def test_a_commit_named_off_its_pte_is_refuted(tmp_path) -> None:
    o = kvpool_pslink.run("bmc", variant="negated", depth=8, out=tmp_path)
    assert o.status == "FAIL", o.log


def test_v1_v2_alone_are_not_inductive(tmp_path) -> None:
    o = kvpool_pslink.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


@pytest.mark.parametrize("variant", sorted(kvpool_pslink.GOALS))
def test_the_goals_cover_every_assertion_once(variant) -> None:
    goals = kvpool_pslink.GOALS[variant]
    h = kvpool_pslink.PsLinkFormal(variant=variant, goal=next(iter(goals)))
    Fragment.get(h, None)  # states every assertion (the whole design, as the solver's)
    check_goals(h.asserted, goals)


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_pslink.PsLinkFormal(variant="unprotected")
    with pytest.raises(ValueError, match="reach"):
        kvpool_pslink.PsLinkFormal(reach="spill")
    with pytest.raises(ValueError, match="task"):
        kvpool_pslink.run("cover")
    with pytest.raises(ValueError, match="goal"):
        kvpool_pslink.PsLinkFormal(variant="written", goal="v1")
    with pytest.raises(ValueError, match="goal"):
        kvpool_pslink.PsLinkFormal(variant="negated", goal="v1")
    with pytest.raises(SystemExit):
        kvpool_pslink.parse_args(["unprotected"])
