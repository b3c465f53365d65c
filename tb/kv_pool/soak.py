"""``make soak``: the KV pool's long random run against golden, in shards (not part of
``make test``).

``python -m tb.kv_pool.soak [--ops N] [--shards N] [--seed S] [--jobs N]
[--scheduler ADDRESS]`` runs ``--ops`` random operations (default 1,000,000, or
``KV_OPS``) at the default parameters through the scoreboard of
``tb/kv_pool/tests.py`` (``random_ops``, no stalls; both lookup ports every other
cycle), split into ``--shards`` simulator runs (default: ``--jobs``, else the
machine's cores, at least 2), shard ``i`` with seed ``--seed + i`` (``--seed``:
``SIM_SEED``, else drawn at random and printed first), on the project's executor
(:mod:`tb.soak_shards`: the build made once before the shards, a run directory per
shard under ``build/sim_runs/kv_pool/soak/``, results cached under ``build/soak/``
so that the same ``--seed`` resumes an interrupted soak).

Figures per shard: leaks (cycles with ``free_pages + valid_entries != PAGES``),
lost committed entries (committed golden entries missing or changed in the RTL's
table at a full-table comparison) and mismatches (scoreboard failures): all must
be 0. ``build/reports/kv_soak.json`` holds their sums (``operations``,
``lookups``, ``seconds``: the shards' simulation time, ``ops_per_s``: per
simulator, ``leaks``, ``lost_committed``, ``mismatches``, ``codes``), ``seed``
(the base seed), ``wall_s`` and ``shards``: every shard's seed, operations and
figures. The exit status is 1 if a shard failed or raised; each is named with its
seed and the command line that reruns it alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser
from cluster import cli as cluster_cli
from cluster.executor import Executor
from tb import soak_shards as shards
from tb.common import REPO, RUNS
from tb.kv_pool.scoreboard import PUBLIC

__all__ = ["REPORT", "build_parser", "parse_args", "main", "run_shard", "run_soak"]

REPORT = REPO / "build" / "reports" / "kv_soak.json"
BLOCK = "kv_pool"
TESTCASE = "random_ops/idle=none/backpressure=none"
#: the operations of a soak, unless ``--ops`` or ``$KV_OPS`` says otherwise
OPS = 1_000_000
OPS_ENV = "KV_OPS"
#: the figures summed over the shards, and those added key by key
SUMS = ("operations", "lookups", "seconds", "leaks", "lost_committed", "mismatches")
TALLIES = ("codes",)
#: the simulator log lines echoed while the shards run
PROGRESS = re.compile(r"operations|random seed")
#: the command line that reruns one shard alone (at the default parameters)
RERUN = "python -m tb.kv_pool.soak --shards 1 --ops {ops} --seed {seed}"


def build(hdl: dict) -> Path:
    """Write the Verilog of the KV pool at ``hdl`` (overrides) and build it (once,
    under :func:`flows.toolchain.build`'s lock); the build's folder."""
    from flows import toolchain, verilog

    src = verilog.write(BLOCK, hdl, out=REPO / "build" / "verilog" / "tb")
    return toolchain.build(
        f"{BLOCK}{verilog.suffix(hdl)}", [src], BLOCK, public=PUBLIC, progress=print
    )


def run_dir(hdl: dict, index: int) -> Path:
    """Shard ``index``'s run directory."""
    from flows import verilog

    return RUNS / f"{BLOCK}{verilog.suffix(hdl)}" / "soak" / f"shard{index}"


def run_shard(hdl: dict, bdir: str, ops: int, seed: int, index: int) -> dict:
    """One shard: ``ops`` random operations with seed ``seed`` on the build ``bdir``
    (built here if missing: another machine).

    Returns
    -------
    dict
        ``index``, ``seed``, ``ops`` and the test's figures (``operations``,
        ``lookups``, ``seconds``, ``leaks``, ``lost_committed``, ``mismatches``,
        ``codes``, ``test_seed``, ``failed``; :func:`tb.soak_shards.run_cocotb`).
    """
    from flows import verilog

    built = Path(bdir) if shards.is_built(bdir) else build(hdl)
    env = {"TB_PARAMS": json.dumps({**verilog.block_params(BLOCK), **hdl}), "KV_OPS": str(ops)}
    fig = shards.run_cocotb(
        built, BLOCK, "tb.kv_pool.tests", testcase=TESTCASE, run_dir=run_dir(hdl, index),
        env=env, seed=seed, report_env="KV_REPORT",
    )  # fmt: skip
    return {"index": index, "seed": seed, "ops": ops, **fig}


def _report(merged: dict, hdl: dict, seed: int, wall: float) -> dict:
    """The report's record: the existing fields first, then the shards."""
    from flows import verilog

    secs = merged["seconds"]
    return {
        "params": {**verilog.block_params(BLOCK), **hdl},
        **{k: merged[k] for k in ("operations", "lookups", "seconds")},
        "ops_per_s": round(merged["operations"] / secs) if secs else None,
        **{k: merged[k] for k in ("leaks", "lost_committed", "mismatches", "codes")},
        "seed": seed,
        "wall_s": round(wall, 1),
        **{k: merged[k] for k in ("passed", "failed_shards", "shards")},
    }


def run_soak(
    hdl: dict,
    ops: int,
    n_shards: int,
    seed: int,
    ex: Executor,
    *,
    report: Path = REPORT,
    cache_dir: Path | None = None,
) -> int:
    """Run the sharded soak on ``ex`` (entered) and write ``report``; the exit status.

    Parameters
    ----------
    hdl : dict
        Parameter overrides (``{}``: the defaults, as ``make soak``).
    ops, n_shards, seed : int
        Operations in all, shards, base seed (:func:`tb.soak_shards.plan`).
    ex : cluster.executor.Executor
    report, cache_dir : pathlib.Path
        The merged report; the shards' cache (default ``build/soak/``).

    Returns
    -------
    int
        0 if every shard passed, else 1 (each failing shard printed with its seed).
    """
    plan = shards.plan(ops, n_shards, seed)
    report.unlink(missing_ok=True)
    print(
        f"KV pool soak: {ops:,} random operations at {hdl or 'the default parameters'} in "
        f"{n_shards} shards; base seed {seed} (shard i: seed {seed} + i; --seed {seed} "
        "repeats or resumes it)",
        flush=True,
    )
    t0 = time.time()
    bdir = build(hdl)
    logs = {f"shard {s['index']}": run_dir(hdl, s["index"]) / "sim.log" for s in plan}
    t1 = time.time()
    res = shards.run(
        ex, run_shard, (hdl, str(bdir)), plan, soak="kv_soak", params={"hdl": hdl},
        logs=logs, progress=PROGRESS, cache_dir=cache_dir,
    )  # fmt: skip
    rec = _report(shards.merge(res, plan, sums=SUMS, tallies=TALLIES), hdl, seed, time.time() - t1)
    shards.write_report(report, rec)
    print(
        f"{rec['operations']:,} operations, {rec['lookups']:,} lookups in {n_shards} shards, "
        f"{rec['wall_s']} s ({rec['ops_per_s']} ops/s per simulator; {time.time() - t0:.0f} s "
        f"with the build)\nleaks: {rec['leaks']}   lost committed entries: "
        f"{rec['lost_committed']}   mismatches: {rec['mismatches']}   base seed: {seed}\n"
        f"result codes: {rec['codes']}\nreport: {report}"
    )
    bad = shards.failures(rec, RERUN)
    for line in bad:
        print("FAILED " + line)
    return 1 if bad else 0


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m tb.kv_pool.soak``."""
    ap = cli_parser(
        "python -m tb.kv_pool.soak",
        "The KV pool's random soak against golden, in shards (make soak).",
    )
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
    """Run the soak at the default parameters; 0 if every shard passed."""
    args = parse_args(argv)
    with cluster_cli.executor(args) as ex:
        return run_soak({}, args.ops, args.shards, shards.base_seed(args.seed), ex)


if __name__ == "__main__":
    sys.exit(main())
