"""The scaled pool's testbench stimulus and scoreboard, without a simulator.

:func:`tb.kvpool.pool_stim.self_check` runs the generator against golden
alone (a second golden pool, fed the packed beats, stands in for the RTL):
every error class the ports can express is reached, allocations spill,
fills happen, the TLBs hit and miss, shares reach their classes (the
directed share scenario too); the scoreboard accepts the twin's
beats and refuses a changed one; golden keeps a useful rate.
"""

import pytest

from hw.kvpool.layouts import PoolOp
from tb.kvpool.pool_model import PoolFormat, Scoreboard, reachable_codes
from tb.kvpool.pool_run import PARAM_SETS_PLAIN
from tb.kvpool.pool_shares import SCRIPT_GOALS, share_script
from tb.kvpool.pool_stim import coverage_missing, self_check

N = 20_000


@pytest.mark.parametrize("name", ["small", "odd", "medium"])
def test_generator_reaches_everything(name: str) -> None:
    p = PARAM_SETS_PLAIN[name]
    sb, rate = self_check(p, N, seed=7)
    assert not coverage_missing(p, sb.stats.cover), sb.stats.cover
    assert rate > 5_000, f"{rate:.0f} golden calls per second"


def test_reachable_codes_follow_the_fields() -> None:
    small, odd = PARAM_SETS_PLAIN["small"], PARAM_SETS_PLAIN["odd"]
    assert 1 not in reachable_codes(small) and 3 not in reachable_codes(small)
    assert {1, 2, 3, 15} <= reachable_codes(odd)
    assert 10 not in reachable_codes(odd)
    n_max = (1 << PoolFormat(small).widths["op"]["n"]) - 1
    assert 15 in reachable_codes(small) and n_max > 1 << small["POS_BITS"]  # share's n


def test_scoreboard_refuses_a_wrong_beat() -> None:
    p = PARAM_SETS_PLAIN["small"]
    sb, fmt = Scoreboard(p), PoolFormat(p)
    ins = {"op": 0, "seq": 1, "pos": 0, "committed": 1, "token": 3}
    e = sb.accept_op(fmt.unpack_op(fmt.pack_op(ins)), cycle=5)
    assert e.beat["value"] == 0 and e.beat["committed_pages"] == 1
    assert sb.deliver("res", 6, fmt.pack_result(e.beat | {"value": 1}))  # a wrong page
    e = sb.accept_query(0, {"seq": 1, "pos": 0, "view": 0}, cycle=7)
    assert e.kind == "lookup/tlb_miss" and e.beat == {"error": 0, "hit": 1, "loc": 0, "addr": 0}
    assert not sb.deliver("r0", 8, fmt.pack_reply(e.beat))
    assert sb.deliver("r1", 9, 0), "a beat nothing is owed for"
    bad = sb.accept_op({"op": 3, "seq": 2})  # release of an idle sequence
    assert bad.beat["code"] == 14 and bad.beat["committed_pages"] == 1


@pytest.mark.parametrize("name", ["small", "odd", "medium"])
def test_share_reaches_its_classes(name: str) -> None:
    """Random shares (a few % of the operations) and the directed scenario, on golden alone."""
    p = PARAM_SETS_PLAIN[name]
    sb, _ = self_check(p, 12_000, seed=3)
    cover = sb.stats.cover
    shares = sum(v for k, v in cover.items() if k.startswith("share/cls/"))
    ops = sum(v for k, v in cover.items() if "/" not in k or k.endswith("/error"))
    assert cover["share/miss"] and 0.01 < shares / ops < 0.15, (shares, ops)
    assert cover["share/code/DST_BUSY"] and cover["share/code/FIELD"]
    if name == "odd":
        assert cover["share/code/DST_RANGE"]
    ops_d, planned = share_script(p, seed=5)
    assert all(planned.get(k) for k in SCRIPT_GOALS), planned
    assert planned.get("share/code/TABLE_FULL") or p["SEGS"] > 2 * p["SEQS"], planned
    assert all(len(o["tokens"]) == o["n"] for o in ops_d if o["op"] == int(PoolOp.SHARE.value))


def test_scoreboard_share_needs_its_tokens() -> None:
    p = PARAM_SETS_PLAIN["small"]
    sb = Scoreboard(p)
    with pytest.raises(ValueError):
        sb.accept_op({"op": 7, "dst": 1, "n": 3, "tokens": [1, 2]})
    e = sb.accept_op({"op": 7, "dst": 1, "n": 2, "tokens": [1, 2]})
    assert e.beat["value"] == 0 and not e.beat["error"] and sb.stats.cover["share/miss"] == 1
