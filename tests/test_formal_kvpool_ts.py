"""The tree slots' leaf proof (``formal/kvpool_ts.py``) in ``make test``: the induction
closes (seconds), a beat's page claimed as the shadow's XOR 1 is refuted (so the BMC
reaches a streamed beat under the assumptions), the ancestor chain is needed (without
it a COMMIT owes ACC beats it never streams), and T1-T3 alone are not inductive (the
invariants are needed).
The larger size's induction and the witnesses run in ``make formal``."""

import pytest

from formal import kvpool_ts


def test_the_stream_contracts_are_proved(tmp_path) -> None:
    o = kvpool_ts.run("prove", out=tmp_path)
    assert o.status == "PASS", o.log


def test_a_false_page_is_refuted(tmp_path) -> None:
    o = kvpool_ts.run("bmc", variant="negated", out=tmp_path)
    assert o.status == "FAIL", o.log


def test_without_the_chain_a_commit_fails(tmp_path) -> None:
    o = kvpool_ts.run("bmc", variant="unprotected", out=tmp_path)
    assert o.status == "FAIL", o.log


def test_the_contract_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_ts.run("prove", variant="weak", depth=2, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_ts.TreeSlotsFormal(variant="only1")
    with pytest.raises(ValueError, match="reach"):
        kvpool_ts.TreeSlotsFormal(reach="split")
    with pytest.raises(ValueError, match="MAX_DEPTH"):
        kvpool_ts.TreeSlotsFormal(MAX_DEPTH=1)
    with pytest.raises(ValueError, match="task"):
        kvpool_ts.run("cover")
    with pytest.raises(SystemExit):
        kvpool_ts.parse_args(["only1"])
