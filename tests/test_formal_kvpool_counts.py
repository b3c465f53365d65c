"""The pool's page counters against its page table (``formal/kvpool_counts.py``) in
``make test``: ``pending`` claimed never equal to the rejected nodes left while the
drain pushes them is refuted (so the BMC reaches that push under the assumptions),
and P1 alone is not inductive (the counting invariants are needed). The closing induction
and the witness run in ``make formal``.

The refuted BMC (minutes) runs in ``make sim-full``; the cheaper checks keep the
harness exercised in ``make test`` (docs/decisions/0041).
"""

import pytest

from formal import kvpool_counts


@pytest.mark.full  # a BMC of minutes: make sim-full (docs/decisions/0041)
def test_a_false_count_is_refuted(tmp_path) -> None:
    o = kvpool_counts.run("bmc", variant="negated", out=tmp_path)
    assert o.status == "FAIL", o.log


def test_p1_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_counts.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_counts.CountsFormal(variant="unprotected")
    with pytest.raises(ValueError, match="reach"):
        kvpool_counts.CountsFormal(reach="spill")
    with pytest.raises(ValueError, match="task"):
        kvpool_counts.run("cover")
    with pytest.raises(SystemExit):
        kvpool_counts.parse_args(["unprotected"])
