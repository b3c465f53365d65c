"""Provenance of a results page: commit, date and machine.

A report's own metadata wins where it has them; what it lacks is taken from
the environment at generation (the checkout's ``HEAD`` and this machine) or,
for the date, from the report file's modification time, and every field says
which of these it came from.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Stamp",
    "environment",
    "file_date",
    "for_report",
    "git_commit",
    "machine",
    "stamp_file",
]


def git_commit(repo: Path) -> str:
    """``HEAD`` of the checkout at ``repo`` (12 hex digits), ``+`` appended when
    tracked files differ from it; ``"unknown"`` outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "diff", "--quiet", "HEAD", "--"], cwd=repo, capture_output=True, check=False
        ).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def machine() -> dict[str, object]:
    """This machine: ``platform`` (``platform.platform()``), ``cpus``, ``python``."""
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def _utc(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def file_date(path: Path) -> str:
    """``path``'s modification time, UTC, to the minute."""
    return _utc(path.stat().st_mtime)


@dataclass(frozen=True)
class Stamp:
    """One page's provenance; each ``*_from`` names the origin of the field.

    Attributes
    ----------
    commit, date : str
        The commit the figures were measured at and when.
    machine : dict
        Platform, CPU count and whatever else the report records.
    commit_from, date_from, machine_from : str
        ``"report"``, ``"file time"`` or ``"generation"``.
    """

    commit: str
    date: str
    machine: dict[str, object] = field(default_factory=dict)
    commit_from: str = "generation"
    date_from: str = "generation"
    machine_from: str = "generation"

    def markdown(self) -> str:
        """The stamp line printed under a page's title."""
        mach = ", ".join(f"{k} {v}" for k, v in self.machine.items() if v not in (None, ""))

        def origin(how: str) -> str:
            return {"generation": "not in the report: at generation"}.get(how, how)

        return (
            f"*Commit* `{self.commit}` ({origin(self.commit_from)}); *date* {self.date} "
            f"({origin(self.date_from)}); *machine* {mach or 'unknown'} "
            f"({origin(self.machine_from)})."
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "commit": self.commit,
            "commit_from": self.commit_from,
            "date": self.date,
            "date_from": self.date_from,
            "machine": self.machine,
            "machine_from": self.machine_from,
        }


def environment(repo: Path) -> Stamp:
    """The stamp of the generation itself: ``HEAD``, now, this machine."""
    return Stamp(git_commit(repo), _utc(datetime.datetime.now(datetime.UTC).timestamp()), machine())


def for_report(meta: Mapping[str, object] | None, path: Path | None, env: Stamp) -> Stamp:
    """Stamp of a report whose metadata is ``meta`` (``commit``, ``date``,
    ``machine`` keys, each optional) read from ``path``; gaps filled from
    ``env`` (the date from ``path``'s modification time first)."""
    meta = meta or {}
    commit, commit_from = env.commit, "generation"
    if meta.get("commit"):
        commit, commit_from = str(meta["commit"]), "report"
    date, date_from = env.date, "generation"
    if meta.get("date"):
        date, date_from = str(meta["date"]), "report"
    elif path is not None and path.exists():
        date, date_from = file_date(path), "file time"
    mach, mach_from = dict(env.machine), "generation"
    rep_mach = meta.get("machine")
    if isinstance(rep_mach, Mapping) and rep_mach:
        mach = dict(rep_mach)
        missing = [k for k in ("platform", "cpus") if not mach.get(k)]
        for k in missing:
            mach[k] = env.machine.get(k)
        mach_from = "report" if not missing else f"report; {', '.join(missing)} at generation"
    return Stamp(commit, date, mach, commit_from, date_from, mach_from)


def stamp_file(path: Path, repo: Path) -> dict[str, object]:
    """Write this checkout's ``commit``, now as ``date`` and this machine into the
    JSON report at ``path`` (top-level keys; a ``machine`` the report has keeps its
    fields, the missing ones are added). ``make`` runs it right after a producer
    (``python -m flows.report --stamp FILE...``),
    so that the stamp is the measurement's. Returns the stamp written.

    Raises
    ------
    ValueError
        ``path`` does not hold a JSON object.
    """
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"path = {str(path)!r}: not a JSON object")
    env = environment(repo)
    mach = data.get("machine") if isinstance(data.get("machine"), dict) else {}
    stamp = {"commit": env.commit, "date": env.date, "machine": {**env.machine, **mach}}
    data.update(stamp)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)
    return stamp
