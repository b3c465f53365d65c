"""The pool's conservation of pages and HBM slots (``formal/kvpool_conserve.py``) in
``make test``: E1 without the pages an operation holds uncounted is refuted (so the
BMC reaches a sequential insert's allocated page under the assumptions), and H1
alone is not inductive (the ownership and counter invariants are needed). The
closing inductions (the pages, then the HBM slots) run in ``make formal``.

The refuted BMC (minutes) runs in ``make sim-full``; the cheaper checks keep the
harness exercised in ``make test`` (docs/decisions/0041).
"""

import pytest

from formal import kvpool_conserve


@pytest.mark.full  # a BMC of minutes: make sim-full (docs/decisions/0041)
def test_a_count_without_the_uncounted_page_is_refuted(tmp_path) -> None:
    o = kvpool_conserve.run("bmc", variant="negated", out=tmp_path)
    assert o.status == "FAIL", o.log


def test_h1_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_conserve.run("prove", variant="weak", depth=1, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_conserve.ConserveFormal(variant="unprotected")
    with pytest.raises(ValueError, match="reach"):
        kvpool_conserve.ConserveFormal(reach="spill")
    with pytest.raises(ValueError, match="task"):
        kvpool_conserve.run("cover")
    with pytest.raises(SystemExit):
        kvpool_conserve.parse_args(["unprotected"])
