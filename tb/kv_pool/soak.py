"""``make soak``: the KV pool's long random run against golden (not part of ``make test``).

1,000,000 random operations (``KV_OPS`` to change) at the default parameters
through the scoreboard of ``tb/kv_pool/tests.py`` (``random_ops``, no stalls;
both lookup ports busy every cycle), printing progress, operations/s, leaks
(cycles with ``free_pages + valid_entries != PAGES``: must be 0) and lost
committed entries (committed golden entries missing or changed in the RTL's
table at a full-table comparison: must be 0). Figures go to
``build/reports/kv_soak.json``. ``SIM_SEED`` repeats a run.
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

from tb.common import REPO, RUNS, run_block
from tb.kv_pool.scoreboard import PUBLIC

REPORT = REPO / "build" / "reports" / "kv_soak.json"
TESTCASE = "random_ops/idle=none/backpressure=none"


def _follow(log: Path, stop: threading.Event) -> None:
    """Echo the run's progress lines while it runs (cocotb logs to a file)."""
    pos = 0
    while not stop.wait(5):
        if not log.exists():
            continue
        with log.open(errors="replace") as f:
            f.seek(pos)
            for line in f:
                if "operations" in line or "seed" in line:
                    print("  " + line.split("cocotb.kv_pool", 1)[-1].strip(), flush=True)
            pos = f.tell()


def main() -> int:
    ops = int(os.environ.get("KV_OPS", 1_000_000))
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.unlink(missing_ok=True)
    print(f"KV pool soak: {ops:,} random operations at the default parameters", flush=True)
    log = RUNS / "kv_pool" / TESTCASE / "sim.log"
    log.unlink(missing_ok=True)
    stop = threading.Event()
    th = threading.Thread(target=_follow, args=(log, stop), daemon=True)
    th.start()
    t0 = time.time()
    failed = None
    try:
        run_block(
            "kv_pool",
            {},
            "tb.kv_pool.tests",
            testcase=TESTCASE,
            extra_env={"KV_OPS": str(ops), "KV_REPORT": str(REPORT)},
            public=PUBLIC,
        )
    except AssertionError as exc:
        failed = exc
    finally:
        stop.set()
        th.join()
    if not REPORT.exists():
        print(f"no report written; {failed}")
        return 1
    rec = json.loads(REPORT.read_text())
    print(
        f"{rec['operations']:,} operations, {rec['lookups']:,} lookups in {rec['seconds']} s "
        f"({rec['ops_per_s']:,} ops/s; {time.time() - t0:.0f} s with the build)\n"
        f"leaks: {rec['leaks']}   lost committed entries: {rec['lost_committed']}   "
        f"mismatches: {rec['mismatches']}   seed: {rec['seed']}\n"
        f"result codes: {rec['codes']}\nreport: {REPORT.relative_to(REPO)}"
    )
    bad = failed or rec["leaks"] or rec["lost_committed"] or rec["mismatches"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
