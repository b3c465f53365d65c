"""The scaled pool's random run and parameter sets, shared by its testbench
(``tb/kvpool/test_pool.py``) and its soak (``tb/kvpool/soak.py``)."""

import os
import time

from tb.common import TB, params, report
from tb.kvpool.pool_stim import coverage_missing
from tb.kvpool.pool_tb import PoolTB

__all__ = ["PARAM_SETS_PLAIN", "TX", "QUIESCE_EVERY", "COVER_MIN", "random_traffic_run"]

#: transactions per parameter set (both random tests together): 100,000 in make test
#: (issue 20: at least 100,000 per configuration per CI run; ~15 - 25 s each)
TX = int(os.environ.get("KVPOOL_TX", 100_000))
QUIESCE_EVERY = 600  # cycles between quiescent points
PROGRESS_EVERY = 50_000  # transactions between progress lines in the log
COVER_MIN = 5000  # transactions of a run below which its coverage is not asserted
#: KVPOOL_KEEP_GOING=1: run every transaction after a mismatch (and count mismatches by kind)
KEEP_GOING = os.environ.get("KVPOOL_KEEP_GOING", "") == "1"


async def random_traffic_run(
    dut, idle: str, n_tx: int, reset: bool, *, cover: bool = True
) -> PoolTB:
    """``n_tx`` random transactions with a quiescent check every ``QUIESCE_EVERY`` cycles
    (``reset``: one in the middle); mismatches fail it, and (``cover``, from
    ``COVER_MIN`` transactions) any class or event of the stimulus not reached."""
    p = params()
    tb = TB(dut)
    bench = PoolTB(tb, p, {"q": idle, "op": idle})
    await tb.start()
    bench.random = True
    t0 = time.perf_counter()
    reset_done = not reset
    shown = 0
    while bench.sb.transactions < n_tx and (KEEP_GOING or not bench.errors):
        await tb.cycles(QUIESCE_EVERY)
        if bench.sb.transactions - shown >= PROGRESS_EVERY:  # a long run shows progress
            shown = bench.sb.transactions
            dt = time.perf_counter() - t0
            tb.log.info("%d of %d transactions, %.0f s, %.0f per second", shown, n_tx, dt,
                        shown / dt)  # fmt: skip
        if not reset_done and bench.sb.transactions >= n_tx // 2:
            await bench.reset()  # the traffic in flight
            reset_done = True
            continue
        await bench.quiesce()
    await bench.quiesce()
    dt = time.perf_counter() - t0
    st = bench.sb.stats
    rate = bench.sb.transactions / dt
    tb.log.info(
        "%d transactions in %d cycles, %.1f s (%.0f per second), %d quiescent checks",
        bench.sb.transactions, tb.cycle, dt, rate, bench.quiet_checks,
    )  # fmt: skip
    tb.log.info("coverage %s", dict(sorted(st.cover.items())))
    tb.log.info("latency [min, max, sum, n] by kind %s", st.latency)
    report(
        "kvpool",
        f"random_traffic/{idle}",
        transactions=bench.sb.transactions,
        cycles=tb.cycle,
        seconds=round(dt, 2),
        per_second=round(rate),
        mismatches=len(bench.errors),
        **{k.replace("/", "_"): v for k, v in st.cover.items()},
    )
    if bench.errors:
        tb.log.error("mismatches by kind and field: %s", dict(bench.sb.mismatch.most_common()))
        hist = "\n".join(f"  cycle {c} {s}: {bench.sb.describe(t)}" for c, s, t in bench.sb.history)
        tb.log.error("the last transactions accepted:\n%s", hist)
    assert not bench.errors, f"seed {tb.seed}: {len(bench.errors)} mismatches: {bench.errors[0]}"
    missing = coverage_missing(p, st.cover) if cover and n_tx >= COVER_MIN else []
    assert not missing, f"seed {tb.seed}: not reached: {missing}"
    return bench


_SMALL = {
    "PAGES": 32, "HBM_PAGES": 16, "SEQS": 4, "SEGS": 6, "TREES": 2, "N_NODES": 8,
    "MAX_DEPTH": 4, "POS_BITS": 7, "TOKEN_BITS": 4, "TLB_SETS": 4, "TLB_WAYS": 2,
    "TAG_SETS": 2, "TAG_WAYS": 2,
}  # fmt: skip
#: parameter sets by name (plain dicts: tests/test_kvpool_stimulus.py runs the generator on them)
PARAM_SETS_PLAIN: dict[str, dict[str, int]] = {
    "small": _SMALL,
    "small16": _SMALL | {"PAGES": 16, "HBM_PAGES": 32, "TLB_SETS": 2, "TLB_WAYS": 4},
    "small64": _SMALL | {"PAGES": 64, "HBM_PAGES": 16, "TLB_SETS": 1, "TLB_WAYS": 1},
    # SEQS and N_NODES not powers of two: SEQ_RANGE, DST_RANGE, OWNER_RANGE, lookup errors
    "odd": {
        "PAGES": 20,
        "HBM_PAGES": 5,
        "SEQS": 5,
        "SEGS": 7,
        "TREES": 2,
        "N_NODES": 12,
        "MAX_DEPTH": 3,
        "POS_BITS": 6,
        "TOKEN_BITS": 3,
        "TLB_SETS": 2,
        "TLB_WAYS": 1,
        "TAG_SETS": 2,
        "TAG_WAYS": 2,
    },  # fmt: skip
    "medium": {
        "PAGES": 64,
        "HBM_PAGES": 16,
        "SEQS": 8,
        "SEGS": 24,
        "TREES": 4,
        "N_NODES": 64,
        "MAX_DEPTH": 16,
        "POS_BITS": 10,
        "TOKEN_BITS": 8,
        "TLB_SETS": 16,
        "TLB_WAYS": 2,
        "TAG_SETS": 4,
        "TAG_WAYS": 2,
    },  # fmt: skip
    # trees at full size (1,024 nodes: a commit or release of all of them; the tree
    # slots' masks and level rows at full width), the rest small
    "wide": {
        "PAGES": 2048,
        "HBM_PAGES": 64,
        "SEQS": 4,
        "SEGS": 6,
        "TREES": 2,
        "N_NODES": 1024,
        "MAX_DEPTH": 8,
        "POS_BITS": 10,
        "TOKEN_BITS": 4,
        "TLB_SETS": 4,
        "TLB_WAYS": 2,
        "TAG_SETS": 2,
        "TAG_WAYS": 2,
    },  # fmt: skip
    # the memories at full scale (2**20 pages, 2**21 HBM slots, 17-bit positions,
    # 1,024 x 4 TLBs and tag table), the flop tables smaller: the scale run
    "scale": {
        "PAGES": 2**20,
        "HBM_PAGES": 2**21,
        "SEQS": 16,
        "SEGS": 16,
        "TREES": 4,
        "N_NODES": 64,
        "MAX_DEPTH": 16,
        "POS_BITS": 17,
        "TOKEN_BITS": 17,
        "TLB_SETS": 1024,
        "TLB_WAYS": 4,
        "TAG_SETS": 1024,
        "TAG_WAYS": 4,
    },  # fmt: skip
}
