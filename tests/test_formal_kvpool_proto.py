"""The pool's side of the block table's protocol (``formal/kvpool_proto.py``) in ``make
test``: B1 claimed wrong is refuted, B1 alone is not inductive (the invariants are
needed), the invariants fail without the other sides' contracts (the proof rests on
them), and the states worth checking are reached under the assumptions, so that the
proof is not vacuous. The closing induction (under two minutes) runs in
``make formal``; the witnesses deeper than a few seconds' BMC too.

The check that B1 alone is not inductive runs in ``make sim-full`` (decision 0041).
"""

import pytest

from formal import kvpool_proto

#: the witness a BMC reaches in seconds (``make formal`` runs every one: the drain's
#: append, a CUT and a spill's WRITE take 20 - 100 s)
QUICK = ("append",)


def test_a_false_b1_is_refuted(tmp_path) -> None:
    o = kvpool_proto.run("bmc", variant="negated", depth=4, out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.full  # make sim-full: another BMC of this harness runs in make test (decision 0041)
def test_b1_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_proto.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


@pytest.mark.parametrize("witness", QUICK)
def test_witnesses_are_reached(tmp_path, witness) -> None:
    o = kvpool_proto.run("bmc", reach=witness, out=tmp_path)
    assert o.status == "FAIL" and o.steps <= kvpool_proto.BMC_DEPTH, o.log


def test_every_fsm_state_is_tied_to_its_operations() -> None:
    """The invariants name an operation for every state of the FSM beyond the frame
    (a state added to the RTL without one is an elaboration error, not a gap)."""
    h = kvpool_proto.PoolProtocolFormal()
    kvpool_proto.convert(h, h.ports())
    states = set(h.dut.state.states.encoding)
    named = {n for group in h.OPS_OF for n in group}
    assert states - named == {"IDLE", "CHECK", "ACT", "RESULT"}


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_proto.PoolProtocolFormal(variant="moon")
    with pytest.raises(ValueError, match="reach"):
        kvpool_proto.PoolProtocolFormal(reach="moon")
    with pytest.raises(ValueError, match="task"):
        kvpool_proto.run("cover")
    with pytest.raises(SystemExit):
        kvpool_proto.parse_args(["prove", "prove"])
