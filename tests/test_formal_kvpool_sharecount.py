"""A share's compare counts (``formal/kvpool_sharecount.py``) in ``make test``: the
count claimed of every exclusive position of the source at every cycle is refuted (so
the BMC reaches a committed PTE of an exclusive segment and the count sees it), and
A14c alone is not inductive (the compare's invariants are needed). The closing
induction and the ``zero`` check run in ``make formal``.

The refuted BMC (minutes) runs in ``make sim-full``; the cheaper checks keep the
harness exercised in ``make test`` (docs/decisions/0041).
"""

import pytest

from formal import kvpool_sharecount


@pytest.mark.full  # a BMC of minutes: make sim-full (docs/decisions/0041)
def test_a_count_of_every_exclusive_position_is_refuted(tmp_path) -> None:
    o = kvpool_sharecount.run("bmc", variant="negated", out=tmp_path)
    assert o.status == "FAIL", o.log


def test_a14c_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_sharecount.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_sharecount.ShareCountFormal(variant="slots")
    with pytest.raises(ValueError, match="reach"):
        kvpool_sharecount.ShareCountFormal(reach="share")
    with pytest.raises(ValueError, match="task"):
        kvpool_sharecount.run("cover")
    with pytest.raises(SystemExit):
        kvpool_sharecount.parse_args(["slots"])
