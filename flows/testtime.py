"""``python -m flows.testtime -- COMMAND...``: run a command (``make test``) and
report what it cost, for the ``make test`` budget (at most 30 CPU-minutes and 15
minutes wall on 2 cores from a fresh clone; ``docs/decisions/0012``).

Measures the wall time and the CPU time (user + system) of the command's whole
process tree (every descendant that was waited for: pytest-xdist workers,
Verilator, the C++ compiler), reads pytest's summary line from its output
(passed, skipped, failed, pytest's own seconds) and writes
``build/reports/make_test.json`` with the 1-minute load average before and
after (a wall time measured on a loaded machine is not the budget's). The
command's output is passed through; its exit status is returned.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser, out_file_arg
from flows.report.stamp import environment

__all__ = ["measure", "pytest_summary", "build_parser", "parse_args", "main"]

REPO = Path(__file__).resolve().parent.parent
REPORT = REPO / "build" / "reports" / "make_test.json"

_COUNT = re.compile(r"(\d+) (passed|skipped|failed|errors?|xfailed|xpassed|deselected)")
_SECONDS = re.compile(r" in ([\d.]+)s")


def pytest_summary(lines: list[str]) -> dict[str, object]:
    """Counts and seconds of the last pytest summary line in ``lines``
    (``"== 864 passed, 17 skipped in 491.68s (0:08:11) =="``); ``{}`` if none."""
    for line in reversed(lines):
        if line.startswith("=") and _SECONDS.search(line) and _COUNT.search(line):
            out: dict[str, object] = {k: int(n) for n, k in _COUNT.findall(line)}
            out["pytest_s"] = float(_SECONDS.search(line).group(1))
            return out
    return {}


def measure(cmd: list[str]) -> dict[str, object]:
    """Run ``cmd`` from the repository root, its output passed through; the
    report's fields (``cmd``, ``returncode``, ``wall_s``, ``cpu_user_s``,
    ``cpu_sys_s``, ``cpu_min``, ``load_before`` / ``load_after`` and the
    pytest summary)."""
    if not cmd:
        raise ValueError("cmd = []: give the command to measure after --")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    t0 = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as p:
        assert p.stdout is not None
        for line in p.stdout:
            sys.stdout.write(line)
            lines.append(line.rstrip("\n"))
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, sys_ = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return {
        "cmd": " ".join(cmd),
        "returncode": p.returncode,
        "wall_s": round(wall, 1),
        "cpu_user_s": round(user, 1),
        "cpu_sys_s": round(sys_, 1),
        "cpu_min": round((user + sys_) / 60, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        **pytest_summary(lines),
    }


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m flows.testtime``."""
    ap = cli_parser("python -m flows.testtime", __doc__)
    ap.add_argument("--out", type=out_file_arg, default=REPORT, help="JSON report")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND ... (e.g. -- make test)")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done. ``cmd`` is the command
    without the leading ``--``, never empty; ``--out`` a file (not a directory, not
    under a file).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    args.cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not args.cmd:
        ap.error("cmd = []: give the command to measure after --")
    if not _runnable(args.cmd[0]):
        ap.error(f"cmd: {args.cmd[0]!r} is not a command (not on PATH, not an executable file)")
    return args


def _runnable(program: str) -> bool:
    """Whether :func:`measure` can start ``program`` (run from the repository root)."""
    if os.sep in program or (os.altsep and os.altsep in program):
        path = REPO / program
        return path.is_file() and os.access(path, os.X_OK)
    return bool(program) and shutil.which(program) is not None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command, write the report; the command's exit status (2 on a bad
    argument, :func:`parse_args`)."""
    args = parse_args(argv)
    cmd = args.cmd
    env = environment(REPO)
    fresh = not (REPO / "build" / "sim").exists()
    rec = measure(cmd)
    rec["fresh_build"] = fresh  # no build/sim before: every Verilator model built
    rec.update(commit=env.commit, date=env.date, machine=env.machine)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(
        f"{rec['cmd']}: exit {rec['returncode']}, wall {rec['wall_s']:.0f} s, "
        f"CPU {rec['cpu_min']} min (load {rec['load_before']} -> {rec['load_after']}); "
        f"wrote {args.out}"
    )
    return int(rec["returncode"])


if __name__ == "__main__":
    raise SystemExit(main())
