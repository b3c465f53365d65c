"""A refused operation changes nothing (``formal/kvpool_refuse.py``) in ``make test``:
a BMC reaches a refused operation's quiet result (the property is not vacuous), the
claim of every result, a carried-out one's too, is refuted, and Z1 alone is not
inductive. The closing induction runs in ``make formal``.

The refuted BMC (minutes) and the check that Z1 alone is not inductive run in
``make sim-full``; the reached refusal keeps the harness exercised in ``make test``
(docs/decisions/0041).
"""

import pytest

from formal import kvpool_refuse


def test_a_refused_operation_is_reached(tmp_path) -> None:
    o = kvpool_refuse.run("bmc", reach="refused", out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.full  # a BMC of minutes: make sim-full (docs/decisions/0041)
def test_a_carried_out_operation_changes_the_state(tmp_path) -> None:
    o = kvpool_refuse.run("bmc", variant="negated", out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.full  # make sim-full: another BMC of this harness runs in make test (decision 0041)
def test_z1_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_refuse.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_refuse.RefuseFormal(variant="slots")
    with pytest.raises(ValueError, match="reach"):
        kvpool_refuse.RefuseFormal(reach="spill")
    with pytest.raises(ValueError, match="task"):
        kvpool_refuse.run("cover")
    with pytest.raises(SystemExit):
        kvpool_refuse.parse_args(["slots"])
