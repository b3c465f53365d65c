"""Reports of a chip run: per-phase time table, cycle table, projections, PNGs.

Everything here is computed from a :class:`sim.chip.ChipResult`: the steps'
measured quantities (tree sizes, draft evaluations, accepted tokens, the
backend's cycle counts) re-timed with :func:`sim.chip.time_step` on the
SpecDecode-1 profile in every overlap mode, on plain autoregressive decoding
of the same profile, and on the profile's GPU baseline (plain decoding, and
software speculative decoding of the *same* trees with a CPU round trip of 1
and 5 ms per step).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from sim import timing
from sim.chip import ChipResult, time_step
from sim.timing import plots
from sim.timing.extra_token import extra_token_rows
from sim.timing.extra_token import extra_token_table as extra_token_table_of
from sim.timing.text import RATE_COLUMNS, rate_cells, table
from sim.topology import TopologyOptimiser

__all__ = [
    "ProjectionRow",
    "cycles_table",
    "extra_token_steps",
    "extra_token_table",
    "phase_table",
    "projection_rows",
    "projections_table",
    "retime",
    "summary",
    "write_pngs",
    "write_summary",
]

#: The phases of :func:`phase_table`: label, :class:`sim.timing.StepTiming` field.
PHASES = (
    ("draft", "draft_us"),
    ("tree mask", "tree_us"),
    ("HBM prefetch (hidden)", "prefetch_us"),
    ("verify", "verify_us"),
    ("accept + commit", "accept_us"),
    ("speculative wait", "wait_us"),
    ("speculative draft wasted", "wasted_us"),
)


def retime(
    result: ChipResult, profile: timing.Profile, overlap: str, *, gpu: bool = False
) -> list[timing.StepTiming]:
    """Every step of ``result`` timed on ``profile`` in ``overlap`` mode."""
    out = []
    prev = False
    off = result.config.context_offset
    if off is None:
        off = result.config.timing_profile().workload.context_len
    for st in result.steps:
        out.append(
            time_step(
                profile,
                st.seqs,
                overlap=overlap,
                prev_predicted=prev,
                context_offset=off,
                gpu=gpu,
                select_lanes=result.config.select_lanes,
            )
        )
        prev = all(bool(r.predicted) for r in st.seqs)
    return out


def _timings(result: ChipResult) -> list[timing.StepTiming]:
    t = [s.timing for s in result.steps]
    if any(x is None for x in t):
        raise ValueError("result: run without timing (Chip.run(..., timing=False))")
    return t  # type: ignore[return-value]


def phase_table(result: ChipResult) -> str:
    """Per-phase projected time of the run on its profile (us), and each phase's share.

    ``draft`` and ``HBM prefetch`` may be hidden behind other phases (overlap
    modes), so the shares of the phases do not add up to the step time.
    """
    ts = _timings(result)
    emitted = result.emitted
    total = sum(t.total_us for t in ts)
    rows = []
    shares = 0.0
    for name, key in PHASES:
        v = sum(getattr(t, key) for t in ts)
        shares += v / total
        rows.append(
            [name, f"{v:,.1f}", f"{v / len(ts):,.2f}", f"{v / emitted:,.2f}", f"{v / total:.1%}"]
        )
    rows.append(
        [
            "step (critical path)",
            f"{total:,.1f}",
            f"{total / len(ts):,.2f}",
            f"{total / emitted:,.2f}",
            "100.0%",
        ]
    )
    text = table(["phase", "total us", "us/step", "us/token", "of step"], rows)
    if shares > 1.0005:
        text += (
            f"\n(the phases add up to {shares:.1%} of the step: with overlap "
            f"{result.config.overlap!r}, hidden work runs under other phases and is not on the "
            "critical path)"
        )
    return text


def cycles_table(result: ChipResult) -> str:
    """The backend's cycle counts per phase: total and per sequence step."""
    n = len(result.seq_steps)
    rows = [[f"tree manager: {k}", f"{v:,}", f"{v / n:,.1f}"] for k, v in result.tm_cycles.items()]
    rows.append(
        [
            "KV pool (inserts, lookups, commit, release)",
            f"{result.kv_cycles:,}",
            f"{result.kv_cycles / n:,.1f}",
        ]
    )
    rows.append(["KV pool prefill (not timed)", f"{result.prefill_kv_cycles:,}", "-"])
    ss = result.seq_steps
    rows.append(
        [
            "KV inserts / lookups / misses",
            f"{sum(s.inserts for s in ss):,} / "
            f"{sum(s.lookups for s in ss):,} / {sum(s.misses for s in ss):,}",
            "",
        ]
    )
    return table(["cycles (backend: " + result.config.backend + ")", "total", "per step"], rows)


def extra_token_steps(result: ChipResult) -> list[tuple[int, int]]:
    """``(tree nodes, accepted tokens)`` of every sequence step of the run."""
    return [(s.n_nodes, s.accepted) for s in result.seq_steps]


def extra_token_table(result: ChipResult) -> str:
    """Accept + extra token + commit after verification per token sampler, over this
    run's steps (:mod:`sim.timing.extra_token`), beside the article's ~1 us."""
    prof = result.config.timing_profile()
    n = len(result.seq_steps)
    return extra_token_table_of(prof, extra_token_steps(result), f"mean of this run's {n} steps")


@dataclass(frozen=True)
class ProjectionRow:
    """One configuration of :func:`projection_rows`; ``key`` names it in :func:`summary`
    (an overlap mode, ``plain``, ``article``, ``gpu_ar``, ``gpu_spec`` (the calibrated GPU
    baseline), ``gpu_ar_roofline``, ``gpu_spec_1ms``, ``gpu_spec_5ms`` (its roofline)).
    ``vs_gpu_*`` are over the calibrated baseline, ``vs_gpu_*_roofline`` over the
    roofline one (speculative: CPU 1 ms)."""

    config: str
    key: str
    tokens_per_step: float
    us_per_token: float
    tokens_per_s: float
    vs_own_ar: float
    vs_gpu_ar: float
    vs_gpu_spec: float
    vs_gpu_ar_roofline: float
    vs_gpu_spec_roofline: float


def projection_rows(result: ChipResult) -> list[ProjectionRow]:
    """This run's throughput on the profile and its GPU baseline (module docstring)."""
    c = result.config
    prof = c.timing_profile()
    if prof.gpu_baseline is None:
        raise ValueError(f"profile {prof.name!r} has no gpu_baseline")
    emitted = result.emitted
    n_steps = len(result.steps)
    off = prof.workload.context_len if c.context_offset is None else c.context_offset
    ctx = off + int(np.mean([s.context_len for s in result.seq_steps]))
    own_ar = timing.ar_token_time(
        prof, context_len=ctx, overlap="none" if c.overlap == "none" else "prefetch"
    )
    gpu = timing.load_profile(prof.gpu_baseline)
    cal = gpu.calibrated()
    per_seq = len(result.sequences)  # plain decoding serves a batch one token per pass each

    def spec_rate(g: timing.Profile) -> float:
        ts = retime(result, g, "none", gpu=True)
        return emitted / sum(t.total_us for t in ts) * 1e6

    gspec = {
        cpu: spec_rate(timing.load_profile(prof.gpu_baseline, cpu_round_trip_us=cpu))
        for cpu in (1000.0, 5000.0)
    }
    ar_rate = per_seq * own_ar.tokens_per_s
    ref = (  # calibrated AR and spec decode; roofline AR and spec decode (CPU 1 ms)
        per_seq * timing.ar_token_time(cal, context_len=ctx).tokens_per_s,
        spec_rate(cal),
        per_seq * timing.ar_token_time(gpu, context_len=ctx).tokens_per_s,
        gspec[1000.0],
    )

    def row(name: str, key: str, tps: float, tpstep: float) -> ProjectionRow:
        return ProjectionRow(
            name, key, tpstep, 1e6 / tps, tps, tps / ar_rate, *(tps / r for r in ref)
        )

    rows = []
    for mode in prof.overlap_modes:
        ts = retime(result, prof, mode)
        tps = emitted / sum(t.total_us for t in ts) * 1e6
        mark = " (this run)" if mode == c.overlap else ""
        rows.append(row(f"{prof.name}, {mode}{mark}", mode, tps, emitted / n_steps))
    rows.append(row(f"{prof.name}, plain autoregressive", "plain", ar_rate, per_seq))
    av = timing.article_view(prof)
    rows.append(
        row(
            f"{prof.name}, article's own arithmetic (its example)",
            "article",
            av.tokens_per_s,
            av.tokens_per_step,
        )
    )
    cpu_ms = cal.hardware.cpu_round_trip_us / 1e3
    rows.append(row(f"{gpu.name}, autoregressive, calibrated", "gpu_ar", ref[0], per_seq))
    rows.append(
        row(
            f"{gpu.name}, spec decode of these trees, calibrated (CPU {cpu_ms:.2f} ms)",
            "gpu_spec",
            ref[1],
            emitted / n_steps,
        )
    )
    rows.append(row(f"{gpu.name}, autoregressive, roofline", "gpu_ar_roofline", ref[2], per_seq))
    for cpu, tps in gspec.items():
        rows.append(
            row(
                f"{gpu.name}, spec decode of these trees, CPU {cpu / 1e3:g} ms, roofline",
                f"gpu_spec_{cpu / 1e3:g}ms",
                tps,
                emitted / n_steps,
            )
        )
    return rows


def projections_table(result: ChipResult) -> str:
    """:func:`projection_rows` as text."""
    rows = [[r.config, f"{r.tokens_per_step:.2f}", *rate_cells(r)] for r in projection_rows(result)]
    return table(["configuration", "tok/step", *RATE_COLUMNS], rows)


def summary(result: ChipResult) -> dict[str, Any]:
    """The run's figures as data (``<prefix>.json`` beside the PNGs; times in us).

    ``us_per_step`` holds each phase of :func:`phase_table` per step and the
    critical path (``step``); ``projections`` the rows of :func:`projection_rows`
    by key; ``optimiser`` sequence 0's re-solves when its policy is the
    topology optimiser (``None`` otherwise).
    """
    c = result.config
    ts = _timings(result)
    per_step = {key: sum(getattr(t, key) for t in ts) / len(ts) for _, key in PHASES}
    per_step["step"] = sum(t.total_us for t in ts) / len(ts)
    pol = result.policies[0]
    opt = None
    if isinstance(pol, TopologyOptimiser):
        plain = [d.step for d in pol.history if d.mode == "plain"]
        opt = {
            "solves": len(pol.history),
            "tree_sizes": sorted({d.n_nodes for d in pol.history}),
            "plain_decisions": len(plain),
            "first_plain_step": plain[0] if plain else None,
            "update_every": pol.update_every,
        }
    return {
        "config": asdict(c),
        "steps": result.n_steps,
        "emitted": result.emitted,
        "mean_accepted": result.mean_accepted,
        "emitted_per_step": result.emitted / result.n_steps,
        "us_per_step": per_step,
        "tree_nodes": sorted({s.n_nodes for s in result.seq_steps}),
        "projections": {r.key: asdict(r) for r in projection_rows(result)},
        "extra_token": [
            asdict(r) for r in extra_token_rows(c.timing_profile(), extra_token_steps(result))
        ],
        "optimiser": opt,
    }


def write_summary(result: ChipResult, path: str | Path) -> Path:
    """Write :func:`summary` as JSON to ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary(result), indent=1) + "\n")
    return out


def topology_png(result: ChipResult, path: str | Path, *, dpi: int = 110) -> Path | None:
    """Tree size and accepted tokens per step of sequence 0, with the optimiser's decisions.

    Returns ``None`` when sequence 0's policy is not the topology optimiser.
    """
    pol = result.policies[0]
    if not isinstance(pol, TopologyOptimiser):
        return None
    mine = [s for s in result.seq_steps if s.seq == 0]
    k = np.arange(len(mine))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(10, 3.2))
    ax.step(k, [s.n_nodes for s in mine], where="post", color="#4c72b0", label="tree nodes")
    ax.bar(
        k,
        [s.accepted for s in mine],
        color="#55a868",
        alpha=0.6,
        width=1.0,
        label="accepted draft tokens",
    )
    probes = [i for i, s in enumerate(mine) if s.probe]
    if probes:  # only what is drawn is in the legend
        ys = [mine[i].n_nodes for i in probes]
        ax.plot(probes, ys, "v", color="#c44e52", markersize=4, label="probe (while plain)")
    plain = [d for d in pol.history[1:] if d.mode == "plain"]
    for j, d in enumerate(plain):
        label = "fallback to plain decoding" if j == 0 else None
        ax.axvspan(
            d.step, d.step + pol.update_every, color="#c44e52", alpha=0.08, lw=0, label=label
        )
    ax.set_xlabel("step")
    ax.set_ylabel("nodes / tokens")
    ax.set_title(f"topology optimiser: re-solve every {pol.update_every} steps", fontsize=9)
    # beside the axes, never over the data
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def write_pngs(
    result: ChipResult,
    out_dir: str | Path = "build/reports",
    *,
    steps: int = 4,
    dpi: int = 110,
    prefix: str = "chip",
) -> list[Path]:
    """Timeline (first ``steps`` steps in every overlap mode), accepted histogram, topology
    (only for the topology optimiser; a topology PNG of an earlier run is removed)."""
    prof = result.config.timing_profile()
    out = Path(out_dir)
    panels = {}
    for mode in prof.overlap_modes:
        ts = retime(result, prof, mode)[:steps]
        mark = " (this run)" if mode == result.config.overlap else ""
        panels[f"{mode}{mark}"] = ts
    paths = [
        plots.timeline_png(
            panels,
            out / f"{prefix}_timeline.png",
            dpi=dpi,
            title=f"chip model, {prof.name}: first {min(steps, len(result.steps))} steps of the "
            f"decode ({result.config.tree} tree, {result.config.backend} backend)",
        )
    ]
    acc = [s.accepted for s in result.seq_steps]
    paths.append(
        plots.accept_histogram_png(
            np.asarray(acc, dtype=np.int64),
            out / f"{prefix}_accepted.png",
            dpi=dpi,
            title=f"chip model: accepted draft tokens per step ({result.config.tree} tree, "
            f"{result.config.workload} workload)",
        )
    )
    topo = topology_png(result, out / f"{prefix}_topology.png", dpi=dpi)
    if topo is not None:
        paths.append(topo)
    else:  # not the optimiser this run: an earlier run's plot must not pass for this one's
        (out / f"{prefix}_topology.png").unlink(missing_ok=True)
    return paths
