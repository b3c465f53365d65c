"""Plots of the timing model: step timelines, the accepted-tokens histogram and the
GPU calibration.

Each writes PNGs with matplotlib's Agg backend (no display needed) and return
the path written. Default directory: ``build/reports``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from sim.timing.schedule import LANES, schedule  # noqa: E402
from sim.timing.step import StepTiming  # noqa: E402

__all__ = ["DEFAULT_DIR", "accept_histogram_png", "calibration_png", "timeline_png"]

DEFAULT_DIR = Path("build/reports")

_LANE_NAMES = {
    "draft": "Draft\naccelerator",
    "verifier": "Verifier\nengine",
    "hbm": "HBM: prefetch,\nweight streaming",
    "tree": "Tree mgr\n+ KV commit",
}
_GPU_LANE_NAMES = {
    **_LANE_NAMES,
    "draft": "Draft\n(on GPU)",
    "verifier": "Verify\n(on GPU)",
    "hbm": "HBM",
    "tree": "CPU accept\n+ KV mgmt",
}
_COLOURS = {
    ("draft", "work"): "#4c72b0",
    ("draft", "wasted"): "#c44e52",
    ("verifier", "work"): "#55a868",
    ("hbm", "work"): "#8172b2",
    ("hbm", "prefetch"): "#ccb974",
    ("tree", "work"): "#dd8452",
}


def _resolve(path: str | Path | None, default: str) -> Path:
    out = Path(path) if path is not None else DEFAULT_DIR / default
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def timeline_png(
    steps: Sequence[StepTiming] | Mapping[str, Sequence[StepTiming]],
    path: str | Path | None = None,
    *,
    title: str | None = None,
    dpi: int = 110,
    expected: Mapping[str, float] | None = None,
) -> Path:
    """Draw consecutive steps on the lanes of the article's three-way overlap figure.

    Parameters
    ----------
    steps : sequence of StepTiming, or mapping of panel title to such a sequence
        One panel per sequence (e.g. one per overlap mode), laid out by
        :func:`sim.timing.schedule`. Speculative drafts thrown away are red.
    path : str or Path, optional
        Output file; default ``build/reports/timeline.png``.
    title : str, optional
        Figure title.
    dpi : int, optional
        Resolution.
    expected : mapping of panel title to tokens/s, optional
        The expected throughput of each panel's configuration (the table's
        figure), shown next to what the drawn sample achieves.

    Returns
    -------
    Path
        The PNG written.

    Raises
    ------
    ValueError
        If there are no steps to draw.
    """
    panels = dict(steps) if isinstance(steps, Mapping) else {"": list(steps)}
    if not panels or any(len(v) == 0 for v in panels.values()):
        raise ValueError("steps: need at least one step in every panel")
    out = _resolve(path, "timeline.png")
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 2.2 * len(panels) + 0.6), squeeze=False)
    lanes = list(reversed(LANES))
    for ax, (name, seq) in zip(axes[:, 0], panels.items(), strict=True):
        segs, span = schedule(seq)
        gpu = any(s.profile.startswith("h100") for s in seq)
        names = _GPU_LANE_NAMES if gpu else _LANE_NAMES
        for sg in segs:
            y = lanes.index(sg.lane)
            width = max(sg.end_us - sg.start_us, span * 1e-3)  # keep 1 us phases visible
            ax.barh(
                y,
                width,
                left=sg.start_us,
                height=0.6,
                color=_COLOURS.get((sg.lane, sg.kind), "#999999"),
                hatch="//" if sg.kind == "wasted" else None,
                edgecolor="black",
                linewidth=0.3,
            )
            if sg.end_us - sg.start_us > 0.08 * span and sg.lane != "hbm":
                ax.text(
                    sg.start_us + (sg.end_us - sg.start_us) / 2,
                    y,
                    sg.label,
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                )
        ax.set_yticks(range(len(lanes)), [names[ln] for ln in lanes], fontsize=8)
        ax.set_xlim(0, span * 1.01)
        tokens = sum(s.tokens_per_step for s in seq)
        exp = (expected or {}).get(name)
        rate = f"{tokens / span * 1e6:,.0f} tokens/s"
        if exp is not None:
            rate = f"this sample {rate}; expected {exp:,.0f} tokens/s, as in the table"
        ax.set_title(
            f"{name}: {len(seq)} steps, {tokens:g} tokens in {span:,.0f} us ({rate})",
            fontsize=9,
            loc="left",
        )
        ax.set_xlabel("time (us)", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
    handles = [
        Patch(color=_COLOURS[("draft", "work")], label="draft"),
        Patch(
            facecolor=_COLOURS[("draft", "wasted")],
            hatch="//",
            label="speculative draft thrown away",
        ),
        Patch(color=_COLOURS[("verifier", "work")], label="verify"),
        Patch(color=_COLOURS[("hbm", "prefetch")], label="HBM prefetch"),
        Patch(color=_COLOURS[("hbm", "work")], label="HBM weight streaming"),
        Patch(color=_COLOURS[("tree", "work")], label="tree build / accept + commit"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=6, fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97 if title else 1))
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def accept_histogram_png(
    accepted: Sequence[int] | np.ndarray,
    path: str | Path | None = None,
    *,
    expected: Sequence[float] | np.ndarray | None = None,
    title: str | None = None,
    dpi: int = 110,
) -> Path:
    """Histogram of accepted draft tokens per step.

    Parameters
    ----------
    accepted : sequence of int
        Accepted draft tokens of each step (SPEC §3.1, without the extra token), ``>= 0``.
    path : str or Path, optional
        Output file; default ``build/reports/accepted_hist.png``.
    expected : sequence of float, optional
        A model's ``P(accepted = k)``, drawn as markers over the bars.
    title : str, optional
    dpi : int, optional

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        If ``accepted`` is empty or holds a negative or non-integer value.
    """
    a = np.asarray(accepted)
    if a.size == 0:
        raise ValueError("accepted: no steps")
    if not np.issubdtype(a.dtype, np.integer) or (a < 0).any():
        raise ValueError("accepted: must be non-negative integers")
    out = _resolve(path, "accepted_hist.png")
    counts = np.bincount(a)
    k = np.arange(counts.size)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(k, counts / a.size, color="#4c72b0", label=f"{a.size} steps")
    if expected is not None:
        e = np.asarray(expected, dtype=float)
        ax.plot(np.arange(e.size), e, "o", color="#c44e52", label="model")
    mean = float(a.mean())
    ax.axvline(mean, color="black", linestyle="--", linewidth=1, label=f"mean {mean:.2f}")
    ax.set_xlabel("accepted draft tokens per step (+1 extra token emitted)")
    ax.set_ylabel("fraction of steps")
    ax.set_xticks(k)
    ax.legend(fontsize=8)
    ax.set_title(title or "accepted tokens per step", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def calibration_png(
    rows: Sequence[Mapping[str, object]],
    path: str | Path | None = None,
    *,
    title: str = "GPU baselines: published measurements and the model",
    dpi: int = 110,
) -> Path:
    """Each measurement of :func:`sim.timing.calibration.summary` (``rows``: its
    ``measurements``) as three bars: published, the model under the roofline's
    assumptions, the calibrated model (tokens/s); excluded rows are marked."""
    out = _resolve(path, "calibration.png")
    n = len(rows)
    fig, ax = plt.subplots(figsize=(9, 0.55 * n + 1.4))
    y = np.arange(n)[::-1]
    series = (
        ("published_tokens_per_s", "published (measured)", "#333333"),
        ("roofline_tokens_per_s", "model, roofline assumptions", "#8172b2"),
        ("calibrated_tokens_per_s", "model, calibrated", "#55a868"),
    )
    h = 0.26
    for k, (key, label, colour) in enumerate(series):
        vals = [float(r[key]) for r in rows]  # type: ignore[arg-type]
        ax.barh(y + (1 - k) * h, vals, height=h, color=colour, label=label)
    labels = [f"{r['id']}{' (excluded)' if r['excluded'] else ''}" for r in rows]
    ax.set_yticks(y, labels, fontsize=8)
    for yi, r in zip(y, rows, strict=True):
        ax.text(
            float(r["calibrated_tokens_per_s"]),  # type: ignore[arg-type]
            yi - h,
            f" {float(r['error']):+.0%}",  # type: ignore[arg-type]
            va="center",
            fontsize=7,
        )
    ax.set_xlabel("tokens/s, batch 1")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out
