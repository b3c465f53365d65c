"""The pool's side of the segment table's protocol (``formal/kvpool_segproto.py``) in
``make test``: an open claimed at the wrong length is refuted (so the BMC reaches an
open under the assumptions), A1-A17 alone are not inductive (the invariants are
needed), and the pool harness asserts the leaves' statements of A1-A17 but the
conditions it lists as remaining. The closing induction and the witnesses (a drain's
append, a sequential commit's awaited append, a release's gain) run in ``make
formal``.

The check that A1-A17 alone is not inductive runs in ``make sim-full`` (decision 0041).
"""

import pytest

from formal import kvpool_seg, kvpool_segproto
from formal.sat import convert


def test_a_false_open_is_refuted(tmp_path) -> None:
    o = kvpool_segproto.run("bmc", variant="negated", depth=4, out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.full  # make sim-full: another BMC of this harness runs in make test (decision 0041)
def test_the_protocol_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_segproto.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_every_assumption_is_asserted_but_the_remaining() -> None:
    """The pool harness asserts a condition of each of A1, A3-A17 (A2 is empty at this
    size) and none of :data:`formal.kvpool_segproto.REMAINING`, which the leaf still
    assumes."""
    h = kvpool_segproto.SegProtocolFormal()
    il = convert(h, h.ports())
    assert set(kvpool_segproto.REMAINING) <= set(h.keys)
    for k in [1, *range(3, 18)]:
        assert f"fva_a{k}_0" in il, k
    for key in kvpool_segproto.REMAINING:
        assert f"fva_{key.lower()}_" not in il


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_segproto.SegProtocolFormal(variant="unprotected")
    with pytest.raises(ValueError, match="reach"):
        kvpool_segproto.SegProtocolFormal(reach="split")
    with pytest.raises(ValueError, match="task"):
        kvpool_segproto.run("cover")
    with pytest.raises(SystemExit):
        kvpool_segproto.parse_args(["unprotected"])
    with pytest.raises(ValueError, match="drop"):
        kvpool_seg.SegFormal(drop=["A11"])
