"""The pool's side of the page allocator's protocol (``formal/kvpool_allocproto.py``)
in ``make test``: a push claimed of the wrong page is refuted (so the BMC reaches a
push of a page under the assumptions: the cut job's), and A1 alone is not inductive
(the ownership invariant is needed). The closing induction and the witnesses (a
rejected page's push, a cut page's, a page handed out again) run in ``make formal``.

The refuted BMC (minutes) runs in ``make sim-full``; the cheaper checks keep the
harness exercised in ``make test`` (docs/decisions/0041).
"""

import pytest

from formal import kvpool_allocproto


@pytest.mark.full  # a BMC of minutes: make sim-full (docs/decisions/0041)
def test_a_false_push_is_refuted(tmp_path) -> None:
    o = kvpool_allocproto.run("bmc", variant="negated", out=tmp_path)
    assert o.status == "FAIL", o.log


def test_a1_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_allocproto.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_allocproto.AllocProtocolFormal(variant="unprotected")
    with pytest.raises(ValueError, match="reach"):
        kvpool_allocproto.AllocProtocolFormal(reach="spill")
    with pytest.raises(ValueError, match="task"):
        kvpool_allocproto.run("cover")
    with pytest.raises(SystemExit):
        kvpool_allocproto.parse_args(["unprotected"])
