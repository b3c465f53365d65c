"""One run of the design-space grid: a chip-model run replayed at every context.

:func:`run_point` is what a worker computes for one :class:`sim.dse.grid.Run`:

1. the chip model (:class:`sim.chip.Chip`, python backend) decodes the run's
   workload with its tree policy and budget: its trees, its acceptance, its
   tokens per step, and its own throughput figures (:func:`sim.report.summary`:
   this run's overlap, plain decoding, the calibrated GPU baseline), and the
   calibrated GPU's speculative decoding of the same trees at every context of
   the grid (:func:`gpu_spec_tokens_per_s`);
2. the long-context study (:func:`sim.context.study.run_series`) replays those
   steps in a scaled pool of the run's size and TLB, growing one history
   through every context of the grid, with the run's token sampler (two-pass,
   or the one-pass select at ``select_lanes``): tokens per second with the
   pool's spill and HBM traffic, and without (a pool that never fills).

The result is a JSON-able dict: ``status``, the run's fields, the chip run's
figures and one row per context (:data:`sim.dse.table.SCHEMA` lists them).
"""

from __future__ import annotations

from typing import Any

from sim.chip import Chip, ChipConfig
from sim.chip.step_timing import time_step
from sim.context.config import OVERLAPS, ContextConfig
from sim.context.study import SeriesHardware, TraceStep, run_series
from sim.report import summary
from sim.timing import load_profile

__all__ = ["run_point"]


def gpu_spec_tokens_per_s(res: Any, gpu: Any, context: int) -> float:
    """The calibrated GPU's tokens/s decoding ``res``'s trees (spec decode, its
    sequential phases and CPU round trip) with ``context`` tokens before the run."""
    steps = [time_step(gpu, st.seqs, overlap="none", context_offset=context, gpu=True)
             for st in res.steps]  # fmt: skip
    return res.emitted / sum(t.total_us for t in steps) * 1e6


def _chip(cfg: ChipConfig, contexts: tuple[int, ...]) -> tuple[list[TraceStep], dict[str, Any]]:
    """The chip run's steps and its figures (the calibrated GPU's at each context)."""
    res = Chip(cfg).run()
    trace = [TraceStep(s.n_nodes, s.depth, s.draft_evals, s.accepted) for s in res.seq_steps]
    s = summary(res)
    proj = s["projections"]
    prof = cfg.timing_profile()
    gpu = load_profile(prof.gpu_baseline) if prof.gpu_baseline else None
    cal = gpu.calibrated() if gpu is not None and gpu.calibration else None
    figures = {
        "steps": s["steps"],
        "accepted_per_step": s["mean_accepted"],
        "tokens_per_step": s["emitted_per_step"],
        "max_tree_nodes": max(t.n_nodes for t in trace),
        "chip_us_per_step": s["us_per_step"]["step"],
        "chip_tokens_per_s": proj[cfg.overlap]["tokens_per_s"],
        "plain_tokens_per_s": proj["plain"]["tokens_per_s"],
        "gpu_spec_tokens_per_s": proj["gpu_spec"]["tokens_per_s"],
        "vs_gpu_spec": proj[cfg.overlap]["vs_gpu_spec"],
        "chip_watts": prof.power.watts if prof.power else None,
        "gpu_watts": gpu.power.watts if gpu is not None and gpu.power else None,
        "gpu_spec_by_context": {
            str(c): gpu_spec_tokens_per_s(res, cal, c) for c in contexts if cal is not None
        },
    }
    return trace, figures


def run_point(
    chip: dict[str, Any],
    pool_gib: int,
    tlb_entries: int,
    contexts: tuple[int, ...],
    mode: str,
    steps: int | None = None,
    tlb_ways: int = 4,
) -> dict[str, Any]:
    """The figures of one grid run (module docstring).

    Parameters
    ----------
    chip : dict
        :class:`sim.chip.ChipConfig` keywords.
    pool_gib, tlb_entries, tlb_ways : int
        The scaled pool's size and its verifier port's TLB.
    contexts : tuple of int
        Contexts, increasing (the study's ``contexts``).
    mode : str
        The verifier's read mode (``dense`` or ``sparse``).
    steps : int or None
        Steps measured per context (default: every step of the chip run).

    Returns
    -------
    dict
        ``status`` ``"ok"``, ``run`` (the chip keywords and the pool's fields),
        ``chip`` (the chip run's figures) and ``contexts`` (one dict per context).
    """
    cfg = ChipConfig(**chip)
    trace, figures = _chip(cfg, contexts)
    study = ContextConfig(
        profiles=(cfg.profile,),
        pools_gib=(pool_gib,),
        contexts=contexts,
        modes=(mode,),
        steps=steps,
        overlap=cfg.overlap if cfg.overlap in OVERLAPS else "prefetch",
    )
    hw = SeriesHardware(
        select_lanes=cfg.select_lanes,
        tlb_entries=tlb_entries,
        tlb_ways=tlb_ways,
        n_nodes=max(64, figures["max_tree_nodes"]),
    )
    series = run_series(study, cfg.profile, pool_gib, mode, trace, hw=hw)
    rows = []
    for p in series.points:
        looked = p.tlb_hits + p.tlb_misses
        rows.append({
            "context": p.context,
            "tokens_per_s": p.tokens_per_s,
            "unbounded_tokens_per_s": p.unbounded_tokens_per_s,
            "us_per_step": p.total_us / p.steps,
            "spills_per_step": p.spills / p.steps,
            "hbm_reads_per_step": p.hbm_reads / p.steps,
            "tlb_hit_rate": p.tlb_hits / looked if looked else None,
        })  # fmt: skip
    return {
        "status": "ok",
        "run": {**chip, "pool_gib": pool_gib, "tlb_entries": tlb_entries},
        "chip": figures,
        "pages": series.geometry.pages,
        "contexts": rows,
    }
