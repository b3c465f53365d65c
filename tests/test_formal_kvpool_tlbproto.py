"""The pool's side of the TLB's protocol (``formal/kvpool_tlbproto.py``) in ``make
test``: a walk's fill claimed with a wrong address is refuted (so the BMC reaches a
committed lookup's miss filled into the TLB under the assumptions: the witness
``walk``), and the properties alone are not inductive (the invariants are needed).
The closing induction and the witnesses (the walk's, the cut job's kill, a spill's
WRITE) run in ``make formal``.

The refuted BMC (minutes) runs in ``make sim-full``; the cheaper checks keep the
harness exercised in ``make test`` (docs/decisions/0041).
"""

import pytest

from formal import kvpool_tlbproto


@pytest.mark.full  # a BMC of minutes: make sim-full (docs/decisions/0041)
def test_a_false_fill_is_refuted(tmp_path) -> None:
    o = kvpool_tlbproto.run("bmc", variant="negated", out=tmp_path)
    assert o.status == "FAIL", o.log


def test_the_properties_alone_are_not_inductive(tmp_path) -> None:
    o = kvpool_tlbproto.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_tlbproto.TLBProtocolFormal(variant="unprotected")
    with pytest.raises(ValueError, match="reach"):
        kvpool_tlbproto.TLBProtocolFormal(reach="split")
    with pytest.raises(ValueError, match="task"):
        kvpool_tlbproto.run("cover")
    with pytest.raises(SystemExit):
        kvpool_tlbproto.parse_args(["unprotected"])
