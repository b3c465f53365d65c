"""The design-space grid's three figures, drawn from its table (:mod:`sim.dse.table`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["accepted_png", "context_png", "pareto_png", "write_pngs"]

_COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b2", "#937860", "#da8bc3"]


def _axes():
    """A new figure's pyplot module, figure and axes (the Agg back end)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    return plt, fig, ax


def _save(plt, fig, ax, path: Path, dpi: int, **labels: str) -> Path:
    """Label ``ax`` (``xlabel``, ``ylabel``, ``title``), grid, legend; write ``path``."""
    ax.set(**labels)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def pareto_png(table: Sequence[dict[str, Any]], path: Path, *, dpi: int = 110) -> Path:
    """Tokens/s against area, one colour per context, the Pareto front of each drawn
    as a line and its points ringed."""
    plt, fig, ax = _axes()
    if all(r["area_mm2"] is None for r in table):
        ax.text(0.5, 0.5, "no measured area (make synth-tree)", ha="center", transform=ax.transAxes)
    else:
        ax.set_xscale("log")
    for i, ctx in enumerate(sorted({r["context"] for r in table})):
        pts = [r for r in table if r["context"] == ctx and r["area_mm2"] is not None]
        col = _COLOURS[i % len(_COLOURS)]
        ax.scatter([r["area_mm2"] for r in pts], [r["tokens_per_s"] for r in pts], s=14,
                   color=col, alpha=0.55, label=f"{ctx:,} tokens of context")  # fmt: skip
        front = sorted((r for r in pts if r["pareto"]), key=lambda r: r["area_mm2"])
        ax.plot([r["area_mm2"] for r in front], [r["tokens_per_s"] for r in front], "-o",
                color=col, mfc="none", ms=8, lw=1.2)  # fmt: skip
    return _save(plt, fig, ax, path, dpi, xlabel="area (mm², tree manager + KV pool + TLB, N5)",
                 ylabel="tokens/s (one sequence)",
                 title="Design space: throughput against area (rings: Pareto front)")  # fmt: skip


def context_png(table: Sequence[dict[str, Any]], path: Path, *, dpi: int = 110) -> Path:
    """Tokens/s against context, one line per pool size: the best design of the grid
    at each context (solid) and the same design with a pool that never fills (dotted)."""
    plt, fig, ax = _axes()
    for i, gib in enumerate(sorted({r["pool_gib"] for r in table})):
        col = _COLOURS[i % len(_COLOURS)]
        ctxs = sorted({r["context"] for r in table if r["pool_gib"] == gib})
        best = [
            max(
                (r for r in table if r["pool_gib"] == gib and r["context"] == c),
                key=lambda r: r["tokens_per_s"],
            )  # fmt: skip
            for c in ctxs
        ]
        ax.plot(ctxs, [r["tokens_per_s"] for r in best], "-o", color=col, ms=4,
                label=f"{gib} GiB pool, best design")  # fmt: skip
        ax.plot(ctxs, [r["unbounded_tokens_per_s"] for r in best], ":", color=col)
    ax.set_xscale("log", base=2)
    title = "Throughput against context per pool size (dotted: a pool that never fills)"
    return _save(plt, fig, ax, path, dpi, xlabel="context (tokens)",
                 ylabel="tokens/s (one sequence)", title=title)  # fmt: skip


def accepted_png(table: Sequence[dict[str, Any]], path: Path, *, dpi: int = 110) -> Path:
    """Accepted draft tokens per step against the tree budget, one line per tree policy
    (the mean over the grid's other axes; a chain at its own size)."""
    plt, fig, ax = _axes()
    for i, tree in enumerate(sorted({r["tree"] for r in table})):
        sizes = sorted({r["nodes"] for r in table if r["tree"] == tree})
        mean = []
        for n in sizes:
            vals = [r["accepted_per_step"] for r in table if r["tree"] == tree and r["nodes"] == n]
            mean.append(sum(vals) / len(vals))
        ax.plot(sizes, mean, "-o", color=_COLOURS[i % len(_COLOURS)], ms=4, label=tree)
    ax.set_xscale("log", base=2)
    return _save(plt, fig, ax, path, dpi, xlabel="tree nodes (root included)",
                 ylabel="accepted draft tokens per step",
                 title="Acceptance per tree policy")  # fmt: skip


def write_pngs(table: Sequence[dict[str, Any]], out: Path, *, dpi: int = 110) -> list[Path]:
    """The three figures as ``dse_pareto.png``, ``dse_context.png``,
    ``dse_accepted.png`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    return [
        pareto_png(table, out / "dse_pareto.png", dpi=dpi),
        context_png(table, out / "dse_context.png", dpi=dpi),
        accepted_png(table, out / "dse_accepted.png", dpi=dpi),
    ]
