"""``make soak`` (second part): the scaled pool's long random run against golden, in
shards.

``python -m tb.kvpool.soak [--set NAME] [--ops N] [--shards N] [--seed S] [--jobs N]
[--scheduler ADDRESS]`` runs ``--ops`` transactions (default 1,000,000, or
``KVPOOL_SOAK_OPS``) on the parameter set ``--set`` of ``tb/kvpool/test_pool.py``
(default ``KVPOOL_SOAK_SET``, else ``scale``: 2^20 pages, 2^21 HBM slots, 1,024 x 4
TLBs and tag table), split into ``--shards`` simulator runs (default: ``--jobs``,
else the machine's cores, at least 2), shard ``i`` with seed ``--seed + i``
(``--seed``: ``SIM_SEED``, else drawn at random and printed first), on the
project's executor (:mod:`tb.soak_shards`: the Verilator build made once before
the shards and cached under ``build/sim``, a run directory per shard, results
cached under ``build/soak/`` so that the same ``--seed`` resumes an interrupted
soak). Each shard starts from reset and runs its share through that testbench's
scoreboard (``random_traffic_run``: every reply and result compared, counts and
TLB counters at every quiescent point; no reset), then **sweeps**: a lookup of
every committed position of every sequence on port 1, each compared with golden.
Figures per shard (the cocotb test :func:`soak`):

* ``leaks``: quiescent points at which the pool's own counts break
  ``free_pages + spec_pages + committed_pages == PAGES`` or ``hbm_used <=
  HBM_PAGES`` (must be 0; :meth:`tb.kvpool.pool_tb.PoolTB.check_counters`,
  which also compares the counts with golden's);
* ``lost_committed``: committed positions of the sweep that miss or
  differ from golden's PTE (must be 0);
* ``mismatches``: every scoreboard failure of the run (must be 0).

``build/reports/kvpool_soak.json`` holds ``set``, ``params``, the sums over the
shards (``operations``, ``cycles``, ``seconds``: the shards' simulation time,
``quiescent_points``, ``leaks``, ``sweep_lookups``, ``lost_committed``,
``mismatches``, ``coverage``), ``per_second`` (per simulator), ``seed`` (the base
seed), ``wall_s`` and ``shards``: every shard's seed, operations and figures. The
exit status is 1 if a shard failed or raised; each is named with its seed and the
command line that reruns it alone. The full set's Verilator build is long (see
``docs/blocks/kvpool.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser
from cluster import cli as cluster_cli
from cluster.executor import Executor
from tb import soak_shards as shards
from tb.common import REPO, RUNS, TB, params

__all__ = ["REPORT", "build_parser", "parse_args", "main", "run_shard", "run_soak"]

REPORT = REPO / "build" / "reports" / "kvpool_soak.json"
#: the operations of a soak, unless ``--ops`` or ``$KVPOOL_SOAK_OPS`` says otherwise
OPS = 1_000_000
OPS_ENV = "KVPOOL_SOAK_OPS"
#: the figures summed over the shards, and those added key by key
SUMS = ("operations", "cycles", "seconds", "quiescent_points", "leaks", "sweep_lookups",
        "lost_committed", "mismatches")  # fmt: skip
TALLIES = ("coverage",)
#: the simulator log lines echoed while the shards run
PROGRESS = re.compile(r"transactions|random seed")
#: the command line that reruns one shard alone
RERUN = "python -m tb.kvpool.soak --set {set} --shards 1 --ops {ops} --seed {seed}"


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
        out = Path(os.environ.get("KVPOOL_SOAK_REPORT", REPORT))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rec, indent=1) + "\n")
        tb.log.info("soak %s", rec)
        assert not (rec["leaks"] or rec["mismatches"]), f"seed {tb.seed}: {rec}"


def _set_arg(text: str) -> str:
    """An ``argparse`` type: a parameter set of ``tb/kvpool/pool_run.py``."""
    from tb.kvpool.pool_run import PARAM_SETS_PLAIN

    if text not in PARAM_SETS_PLAIN:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one of {', '.join(sorted(PARAM_SETS_PLAIN))}"
        )
    return text


def build(name: str) -> Path:
    """Write the Verilog of set ``name`` and build it (once, under
    :func:`flows.toolchain.build`'s lock); the build's folder."""
    from flows import toolchain
    from tb.kvpool.common import leaf_verilog
    from tb.kvpool.pool_run import PARAM_SETS_PLAIN

    src = leaf_verilog("kvpool", PARAM_SETS_PLAIN[name])
    return toolchain.build(src.stem, [src], "kvpool", public=(), progress=print)


def run_dir(name: str, index: int) -> Path:
    """Shard ``index``'s run directory."""
    from flows import verilog
    from tb.kvpool.pool_run import PARAM_SETS_PLAIN

    return RUNS / f"kvpool{verilog.suffix(PARAM_SETS_PLAIN[name])}" / "soak" / f"shard{index}"


def run_shard(name: str, bdir: str, ops: int, seed: int, index: int) -> dict:
    """One shard: ``ops`` transactions and the sweep with seed ``seed`` on the build
    ``bdir`` of set ``name`` (built here if missing: another machine).

    Returns
    -------
    dict
        ``index``, ``seed``, ``ops`` and the figures of :func:`soak` (``operations``,
        ``leaks``, ``lost_committed``, ``mismatches``, ..., ``test_seed``, ``failed``;
        :func:`tb.soak_shards.run_cocotb`).
    """
    from tb.kvpool.common import leaf_params
    from tb.kvpool.pool_run import PARAM_SETS_PLAIN

    built = Path(bdir) if shards.is_built(bdir) else build(name)
    env = {
        "TB_PARAMS": json.dumps(leaf_params("kvpool", PARAM_SETS_PLAIN[name])),
        "KVPOOL_SOAK_OPS": str(ops),
        "KVPOOL_SOAK_SET": name,
    }
    fig = shards.run_cocotb(
        built, "kvpool", "tb.kvpool.soak", testcase="soak", run_dir=run_dir(name, index),
        env=env, seed=seed, report_env="KVPOOL_SOAK_REPORT",
    )  # fmt: skip
    return {"index": index, "seed": seed, "ops": ops, **fig}


def _report(merged: dict, name: str, seed: int, wall: float) -> dict:
    """The report's record: the existing fields first, then the shards."""
    from tb.kvpool.common import leaf_params
    from tb.kvpool.pool_run import PARAM_SETS_PLAIN

    secs = merged["seconds"]
    return {
        "set": name,
        "params": leaf_params("kvpool", PARAM_SETS_PLAIN[name]),
        **{k: merged[k] for k in ("operations", "cycles", "seconds")},
        "per_second": round(merged["operations"] / secs) if secs else None,
        **{k: merged[k] for k in SUMS[3:]},
        "seed": seed,
        "coverage": merged["coverage"],
        "wall_s": round(wall, 1),
        **{k: merged[k] for k in ("passed", "failed_shards", "shards")},
    }


def run_soak(
    name: str,
    ops: int,
    n_shards: int,
    seed: int,
    ex: Executor,
    *,
    report: Path = REPORT,
    cache_dir: Path | None = None,
) -> int:
    """Run the sharded soak of set ``name`` on ``ex`` (entered), write ``report``;
    the exit status.

    Parameters
    ----------
    name : str
        A parameter set of ``tb/kvpool/pool_run.py`` (``"scale"``: ``make soak``).
    ops, n_shards, seed : int
        Transactions in all, shards, base seed (:func:`tb.soak_shards.plan`).
    ex : cluster.executor.Executor
    report, cache_dir : pathlib.Path
        The merged report; the shards' cache (default ``build/soak/``).

    Returns
    -------
    int
        0 if every shard passed, else 1 (each failing shard printed with its seed).
    """
    from tb.kvpool.pool_run import PARAM_SETS_PLAIN

    plan = shards.plan(ops, n_shards, seed)
    report.unlink(missing_ok=True)
    print(
        f"scaled KV pool soak: {ops:,} transactions on the {name} set "
        f"{PARAM_SETS_PLAIN[name]} in {n_shards} shards; base seed {seed} (shard i: seed "
        f"{seed} + i; --seed {seed} repeats or resumes it)",
        flush=True,
    )
    t0 = time.time()
    bdir = build(name)
    logs = {f"shard {s['index']}": run_dir(name, s["index"]) / "sim.log" for s in plan}
    t1 = time.time()
    res = shards.run(
        ex, run_shard, (name, str(bdir)), plan, soak="kvpool_soak", params={"set": name},
        logs=logs, progress=PROGRESS, cache_dir=cache_dir,
    )  # fmt: skip
    merged = shards.merge(res, plan, sums=SUMS, tallies=TALLIES)
    rec = _report(merged, name, seed, time.time() - t1)
    shards.write_report(report, rec)
    print(
        f"{rec['operations']:,} transactions in {n_shards} shards, {rec['wall_s']} s "
        f"({rec['per_second']}/s per simulator; {time.time() - t0:.0f} s with the build), "
        f"{rec['quiescent_points']:,} quiescent points\nleaks: {rec['leaks']}   lost "
        f"committed entries: {rec['lost_committed']} of {rec['sweep_lookups']:,} swept   "
        f"mismatches: {rec['mismatches']}   base seed: {seed}\nreport: {report}"
    )
    bad = shards.failures(rec, RERUN.replace("{set}", name))
    for line in bad:
        print("FAILED " + line)
    return 1 if bad else 0


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m tb.kvpool.soak``."""
    ap = cli_parser(
        "python -m tb.kvpool.soak",
        "The scaled KV pool's random soak against golden, in shards (make soak).",
    )
    ap.add_argument(
        "--set", type=_set_arg, default=os.environ.get("KVPOOL_SOAK_SET") or "scale",
        help="parameter set of tb/kvpool/pool_run.py ($KVPOOL_SOAK_SET)",
    )  # fmt: skip
    shards.add_args(ap, ops_env=OPS_ENV, ops_default=OPS)
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done (:func:`tb.soak_shards.check_args`).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error naming the option, for a bad argument.
    """
    ap = build_parser()
    return shards.check_args(ap, ap.parse_args(argv), ops_env=OPS_ENV, ops_default=OPS)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak; 0 if every shard passed."""
    args = parse_args(argv)
    with cluster_cli.executor(args) as ex:
        return run_soak(args.set, args.ops, args.shards, shards.base_seed(args.seed), ex)


if __name__ == "__main__":
    sys.exit(main())
