"""``make sim`` summary: one line per testbench run, gathered from build/reports/sim/."""

import json
import time

import pytest

from tb.common import REPORTS

_START = time.time()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``long`` first (a stable sort): pytest-xdist hands them out before
    the short ones, so that a run of minutes does not start last and end alone."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not REPORTS.exists():
        return
    recs = []
    for f in sorted(REPORTS.glob("*.json")):
        if f.stat().st_mtime < _START - 1:
            continue  # from an earlier session
        try:
            recs.append(json.loads(f.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    if not recs:
        return
    tr = terminalreporter
    tr.section("testbench summary")
    hdr = f"{'block':<16} {'params':<34} {'test':<22} {'checked':>8} {'mismatch':>8}  latency"
    tr.write_line(hdr)
    tr.write_line("-" * len(hdr))
    for r in recs:
        p = ",".join(f"{k}={v}" for k, v in sorted(r.get("params", {}).items()))
        lat = r.get("latency", "")
        tr.write_line(
            f"{r['block']:<16} {p[:34]:<34} {r['test'][:22]:<22} {r.get('checked', ''):>8} "
            f"{r.get('mismatches', ''):>8}  {lat}"
        )
