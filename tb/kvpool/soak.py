"""``make soak`` (second part): the scaled pool's long random run against golden.

``python -m tb.kvpool.soak`` runs ``KVPOOL_SOAK_OPS`` transactions (default
1,000,000) on the parameter set ``KVPOOL_SOAK_SET`` of
``tb/kvpool/test_pool.py`` (default ``scale``: 2^20 pages, 2^21 HBM slots,
1,024 x 4 TLBs and tag table) through that testbench's scoreboard
(``random_traffic_run``: every reply and result compared, counts and TLB
counters at every quiescent point; no reset), then **sweeps**: a lookup
of every committed position of every sequence on port 1, each compared
with golden. Figures, in ``build/reports/kvpool_soak.json``:

* ``leaks``: quiescent points at which the pool's own counts break
  ``free_pages + spec_pages + committed_pages == PAGES`` or ``hbm_used <=
  HBM_PAGES`` (must be 0; :meth:`tb.kvpool.pool_tb.PoolTB.check_counters`,
  which also compares the counts with golden's);
* ``lost_committed``: committed positions of the sweep that miss or
  differ from golden's PTE (must be 0);
* ``mismatches``: every scoreboard failure of the run (must be 0).

``SIM_SEED`` repeats a run. The full set's Verilator build is long (see
``docs/blocks/kvpool.md``); it is cached under ``build/sim``.
"""

import json
import os
import sys
import time

from tb.common import REPO, RUNS, TB, params

REPORT = REPO / "build" / "reports" / "kvpool_soak.json"


async def _sweep(bench) -> tuple[int, int]:
    """Look up every committed position of every sequence on port 1; returns
    ``(lookups, failures)``, the failures counted from the bench's errors."""
    g, p = bench.sb.golden, bench.p
    bench.random = False
    before = len(bench.errors)
    qs = [
        {"seq": s, "pos": pos, "view": 0} for s in range(p["SEQS"]) for pos in range(g.seq_len(s))
    ]
    chunk = 4096
    for i in range(0, len(qs), chunk):
        await bench.run_script({"q1": qs[i : i + chunk]}, timeout=bench.timeout + 4 * chunk)
    return len(qs), len(bench.errors) - before


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def soak(dut) -> None:
        """The random run, its quiescent counts watched, then the sweep; the report."""
        from tb.kvpool.pool_run import random_traffic_run

        n = int(os.environ.get("KVPOOL_SOAK_OPS", 1_000_000))
        t0 = time.perf_counter()
        bench = await random_traffic_run(dut, "none", n, reset=False, cover=False)
        seconds = time.perf_counter() - t0
        lookups, lost = await _sweep(bench)
        await bench.quiesce()
        tb: TB = bench.tb
        rec = {
            "set": os.environ.get("KVPOOL_SOAK_SET", "scale"),
            "params": params(),
            "operations": bench.sb.transactions,
            "cycles": tb.cycle,
            "seconds": round(seconds, 1),
            "per_second": round(bench.sb.transactions / seconds),
            "quiescent_points": bench.quiet_checks,
            "leaks": bench.leaks,
            "sweep_lookups": lookups,
            "lost_committed": lost,
            "mismatches": len(bench.errors),
            "seed": tb.seed,
            "coverage": dict(sorted(bench.sb.stats.cover.items())),
        }
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps(rec, indent=1) + "\n")
        tb.log.info("soak %s", rec)
        assert not (rec["leaks"] or rec["mismatches"]), f"seed {tb.seed}: {rec}"


def main() -> int:
    """Build the set's pool, run :func:`soak` on it, print the report."""
    from flows import toolchain
    from tb.kvpool.common import leaf_params, leaf_verilog
    from tb.kvpool.pool_run import PARAM_SETS_PLAIN

    name = os.environ.get("KVPOOL_SOAK_SET", "scale")
    if name not in PARAM_SETS_PLAIN:
        raise ValueError(f"KVPOOL_SOAK_SET: {name!r} is not one of {sorted(PARAM_SETS_PLAIN)}")
    ops = int(os.environ.get("KVPOOL_SOAK_OPS", 1_000_000))
    hdl = PARAM_SETS_PLAIN[name]
    print(f"scaled KV pool soak: {ops:,} transactions on the {name} set {hdl}", flush=True)
    REPORT.unlink(missing_ok=True)
    t0 = time.time()
    src = leaf_verilog("kvpool", hdl)
    bdir = toolchain.build(src.stem, [src], "kvpool", public=(), progress=print)
    seed = os.environ.get("SIM_SEED")
    failed = None
    try:
        toolchain.run(
            bdir,
            "kvpool",
            "tb.kvpool.soak",
            test_dir=RUNS / src.stem / "soak",
            testcase="soak",
            extra_env={
                "TB_PARAMS": json.dumps(leaf_params("kvpool", hdl)),
                "KVPOOL_SOAK_OPS": str(ops),
                "KVPOOL_SOAK_SET": name,
            },
            seed=int(seed) if seed else None,
        )
    except AssertionError as exc:
        failed = exc
    if not REPORT.exists():
        print(f"no report written; {failed}")
        return 1
    rec = json.loads(REPORT.read_text())
    print(
        f"{rec['operations']:,} transactions in {rec['seconds']} s ({rec['per_second']:,}/s; "
        f"{time.time() - t0:.0f} s with the build), {rec['quiescent_points']:,} quiescent "
        f"points\nleaks: {rec['leaks']}   lost committed entries: {rec['lost_committed']} "
        f"of {rec['sweep_lookups']:,} swept   mismatches: {rec['mismatches']}   "
        f"seed: {rec['seed']}\nreport: {REPORT.relative_to(REPO)}"
    )
    bad = failed or rec["leaks"] or rec["lost_committed"] or rec["mismatches"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
