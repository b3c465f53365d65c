"""``python -m sim.dse [--grid FILE] [--jobs N] [--scheduler ADDRESS] [--force] [--out DIR]
[--dpi N] [--speedup N,M]`` (``make dse``): the design-space grid on the executor.

Every run of the grid (:mod:`sim.dse.grid`) is a task of the project's
executor (:mod:`cluster.executor`: a local cluster, or a running Dask
scheduler), cached under ``build/dse/`` by a hash of the run, the grid's
contexts and the model's sources (``golden/``, ``sim/``), so a second run, or
a larger grid that contains this one, computes only what is new. Writes
``dse.csv`` with ``dse.schema.json``, ``dse.json`` (the grid, its runs'
results, the table, the wall time), ``dse.md`` (:func:`sim.dse.report.render`)
and ``dse_pareto.png``, ``dse_context.png``, ``dse_accepted.png`` under
``--out`` (``build/reports``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser, int_arg, out_dir_arg
from cluster import cli as cluster_cli
from cluster.executor import Executor, Task
from flows.synth.cache import sha
from flows.synth.fmt import now
from sim.dse import grid as grid_mod
from sim.dse import plots, table
from sim.dse.point import run_point
from sim.dse.report import render

__all__ = ["build_parser", "main", "parse_args", "run_grid"]

_REPO = Path(__file__).resolve().parents[2]
#: where runs are cached
CACHE = _REPO / "build" / "dse"
#: bump when a run's figures change meaning (part of every cache key)
VERSION = 1


def _sources() -> str:
    """Hash of the model's sources: every ``*.py`` and ``*.toml`` under ``golden/`` and
    ``sim/`` (what a run's figures depend on)."""
    files = sorted(f for d in ("golden", "sim") for f in (_REPO / d).rglob("*") if
                   f.suffix in (".py", ".toml") and "__pycache__" not in f.parts)  # fmt: skip
    return sha(*(str(f.relative_to(_REPO)) + f.read_text() for f in files))


def tasks(grid: grid_mod.Grid, *, force: bool = False) -> list[Task]:
    """One :class:`cluster.executor.Task` per run of ``grid``, cached by content."""
    src = _sources()
    out = []
    for run in grid.runs():
        args = (run.chip_kwargs, run.pool_gib, run.tlb_entries, grid.contexts, grid.mode)
        key = sha(str(VERSION), src, json.dumps(args, sort_keys=True, default=list))
        out.append(Task(
            run_point, args, label=run.label(),
            params={**run.chip_kwargs, "pool_gib": run.pool_gib, "tlb_entries": run.tlb_entries},
            cache=CACHE / f"{key[:20]}.json", reusable=(lambda _: False) if force else None,
        ))  # fmt: skip
    return out


def _summary(r: dict) -> str:
    c = r["chip"]
    last = r["contexts"][-1]
    return (f"{c['accepted_per_step']:.2f} accepted/step, {last['tokens_per_s']:,.0f} tokens/s "
            f"at {last['context']:,}")  # fmt: skip


def run_grid(grid: grid_mod.Grid, ex: Executor, *, force: bool = False) -> dict:
    """Every run of ``grid`` on ``ex``: ``{"results", "table", "failed", "wall_s"}``."""
    t0 = time.monotonic()
    res = ex.run(tasks(grid, force=force), summary=_summary, heartbeat=30.0)
    tab = table.rows(res, table.areas())
    failed = [r for r in res if r.get("status") != "ok"]
    return {"results": res, "table": tab, "failed": failed,
            "wall_s": round(time.monotonic() - t0, 1)}  # fmt: skip


def _counts(text: str) -> list[int]:
    """``--speedup``: comma-separated worker counts, each 1 .. 256, increasing."""
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        vals = []
    if not vals or vals != sorted(set(vals)) or not all(1 <= v <= 256 for v in vals):
        raise argparse.ArgumentTypeError(f"{text!r}: increasing worker counts in 1 .. 256")
    return vals


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sim.dse``."""
    ap = cli_parser("python -m sim.dse", __doc__.split("\n\n")[1].replace("\n", " "))
    ap.add_argument("--grid", default=str(grid_mod.DEFAULT), help="grid TOML file")
    cluster_cli.add_args(ap)
    ap.add_argument("--force", action="store_true", help="ignore the cache")
    ap.add_argument("--out", type=out_dir_arg, default="build/reports", help="report folder")
    ap.add_argument("--dpi", type=int_arg(30, 600), default=110, help="figure resolution")
    ap.add_argument(
        "--speedup", type=_counts, default=None, metavar="N,M",
        help="first compute the grid on local clusters of these worker counts (nothing "
        "cached) and report the speed-up",
    )  # fmt: skip
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parsed arguments, the grid loaded and checked (``args.grid``: a
    :class:`sim.dse.grid.Grid`); a bad grid is a usage error naming the field."""
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        args.grid = grid_mod.load(args.grid)
    except (OSError, ValueError) as e:
        ap.error(f"argument --grid: {e}")
    return args


def _speedup(g: grid_mod.Grid, workers: Sequence[int]) -> list[dict]:
    """The grid computed again (nothing from the cache) on a local cluster of each
    worker count: its wall time and the speed-up over the first count."""
    out = []
    for n in workers:
        with Executor(workers=n) as ex:
            out.append({"workers": n, "wall_s": run_grid(g, ex, force=True)["wall_s"]})
    for r in out:
        r["speedup"] = out[0]["wall_s"] / r["wall_s"]
    return out


def _report(g: grid_mod.Grid, out: dict, where: str, speedup: list[dict]) -> dict:
    src = Path(g.source).resolve()
    source = str(src.relative_to(_REPO)) if src.is_relative_to(_REPO) else src.name
    return {"date": now(), "grid": {"source": source, "axes": g.axes,
                                    "contexts": list(g.contexts), "mode": g.mode, "fixed": g.fixed},
            "executor": where, "runs": len(out["results"]), "failed": len(out["failed"]),
            "cached": sum(bool(r.get("cached")) for r in out["results"]),
            "wall_s": out["wall_s"], "speedup": speedup, "table": out["table"],
            "results": out["results"]}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grid (and with ``--speedup``, again at each worker count), write the
    table, its schema, the report and the figures."""
    args = parse_args(argv)
    g = args.grid
    print(f"design-space grid {g.source}: {len(g.runs())} runs x {len(g.contexts)} contexts")
    speedup = _speedup(g, args.speedup) if args.speedup else []
    with cluster_cli.executor(args) as ex:
        out = run_grid(g, ex, force=args.force)
        where = ex.address or f"local cluster of {ex.workers} workers"
    rep_dir = Path(args.out)
    schema = table.write(out["table"], rep_dir / "dse.csv")
    rep = _report(g, out, where, speedup)
    (rep_dir / "dse.json").write_text(json.dumps(rep, indent=1, default=str) + "\n")
    (rep_dir / "dse.md").write_text("\n".join(render(rep)))
    pngs = plots.write_pngs(out["table"], rep_dir, dpi=args.dpi) if out["table"] else []
    front = [r for r in out["table"] if r["pareto"]]
    print(f"\n{len(out['table'])} rows -> {rep_dir / 'dse.csv'} ({schema.name}); "
          f"{len(front)} on a Pareto front; {out['wall_s']} s; figures: "
          f"{', '.join(p.name for p in pngs)}")  # fmt: skip
    return 1 if out["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
