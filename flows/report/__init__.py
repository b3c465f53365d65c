"""Results pages generated from the flows' reports: ``python -m flows.report`` (``make report``).

Gathers ``build/reports/*.json`` (generic and ECP5 synthesis, the sweep, the
benches, the KV soak, the testbench records), SymbiYosys' status files and the
chip model's PNGs into one page per source under ``docs/results/``, each
stamped with the commit, date and machine of its figures
(:mod:`flows.report.stamp`). A report that is absent is said to be
("Not measured: run `make synth`"), never filled in. ECP5 figures of runs too
long to repeat are a committed source of their own,
``docs/results/ecp5_measured.json``.

``docs/results/status.json`` holds one current figure per block
(:mod:`flows.report.status`), and the README's status table, between
``<!-- status:begin -->`` and ``<!-- status:end -->``, is rendered from it and
from nothing else; ``--check`` compares the two without generating.
"""

from flows.report.generate import REPO, Result, generate, main
from flows.report.page import Page
from flows.report.sources import SOURCES, Context
from flows.report.stamp import Stamp, environment
from flows.report.status import BEGIN, END, build, readme_matches, render_table

__all__ = [
    "BEGIN",
    "END",
    "REPO",
    "SOURCES",
    "Context",
    "Page",
    "Result",
    "Stamp",
    "build",
    "environment",
    "generate",
    "main",
    "readme_matches",
    "render_table",
]
