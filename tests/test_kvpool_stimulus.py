"""The scaled pool's testbench stimulus and scoreboard, without a simulator.

:func:`tb.kvpool.pool_stim.self_check` runs the generator against golden
alone (a second golden pool, fed the packed beats, stands in for the RTL):
every error class the ports can express is reached, allocations spill,
fills happen, the TLBs hit and miss; the scoreboard accepts the twin's
beats and refuses a changed one; golden keeps a useful rate.
"""

import pytest

from tb.kvpool.pool_model import PoolFormat, Scoreboard, reachable_codes
from tb.kvpool.pool_stim import coverage_missing, self_check
from tb.kvpool.test_pool import PARAM_SETS_PLAIN

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
    assert (15 in reachable_codes(small)) == (n_max > small["PAGES"])


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
