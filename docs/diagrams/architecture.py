"""Block diagram of SpecDecode-1's decoding step -> ``docs/architecture.png``.

Draws the four phases of one step (draft, verify, accept, commit; SPEC §1) as
columns, the RTL blocks of ``hw/`` in the phase they serve and the behavioural
subsystems of ``sim/`` beside them, with the data each hands on.

Usage::

    .venv/bin/python docs/diagrams/architecture.py [--out docs/architecture.png] [--dpi 110]

The picture depends only on this file (no project import), and the PNG is
written without a software-version tag, so the same script gives the same
bytes with the same matplotlib.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch, Rectangle  # noqa: E402

__all__ = ["Style", "STYLES", "draw", "main"]

OUT = Path(__file__).resolve().parent.parent / "architecture.png"

#: the four phases of SPEC §1, left to right: (title, x of the column's left edge)
PHASES = (("1  Draft", 0.0), ("2  Verify", 3.2), ("3  Accept", 6.4), ("4  Commit", 9.6))
WIDTH, HEIGHT = 12.8, 7.4


@dataclass(frozen=True)
class Style:
    """How one kind of box is drawn: fill, edge colour, edge line style."""

    face: str
    edge: str
    line: str = "-"


#: box kinds: the token tree manager's RTL blocks, the KV pool's, behavioural models
STYLES = {
    "tm": Style("#d6e4f5", "#2b5b8c"),
    "kv": Style("#d9eed4", "#3a7a35"),
    "beh": Style("#f1f1f1", "#777777", "--"),
}


def text(
    ax: Axes, x: float, y: float, s: str, size: float, color: str = "#333333", **kw: object
) -> None:
    """``s`` centred at ``(x, y)``; ``kw``: further ``Axes.text`` properties."""
    ax.text(x, y, s, ha="center", va="center", fontsize=size, color=color, **kw)


def box(ax: Axes, x: float, y: float, w: float, h: float, title: str, sub: str, kind: str) -> None:
    """A rounded box with a bold ``title`` and a smaller ``sub`` line under it."""
    s = STYLES[kind]
    ax.add_patch(
        FancyBboxPatch(
            (x, y),
            w,
            h,
            boxstyle="round,pad=0.02,rounding_size=0.12",
            facecolor=s.face,
            edgecolor=s.edge,
            linestyle=s.line,
            linewidth=1.4,
        )
    )
    font = "monospace" if kind != "beh" else "sans-serif"
    text(ax, x + w / 2, y + h * 0.62, title, 10.5, "black", fontweight="bold", family=font)
    text(ax, x + w / 2, y + h * 0.27, sub, 8)


def route(
    ax: Axes,
    points: list[tuple[float, float]],
    label: str = "",
    at: tuple[float, float] | None = None,
    *,
    both: bool = False,
) -> None:
    """A line through ``points`` ending in an arrow head; ``label`` centred at ``at``.

    ``both`` puts a head on each end of the last segment (meant for two points).
    """
    xs, ys = zip(*points, strict=True)
    ax.plot(xs[:-1], ys[:-1], color="#222222", linewidth=1.2, solid_capstyle="butt")
    ax.add_patch(
        FancyArrowPatch(
            points[-2],
            points[-1],
            arrowstyle="<|-|>" if both else "-|>",
            mutation_scale=13,
            linewidth=1.2,
            color="#222222",
            shrinkA=0,
            shrinkB=1,
        )
    )
    if label and at is not None:
        bbox = {"facecolor": "white", "edgecolor": "none", "pad": 0.8, "alpha": 0.9}
        text(ax, at[0], at[1], label, 7.8, "#111111", bbox=bbox)


def phases(ax: Axes) -> None:
    """The four phase columns with their titles."""
    for k, (title, x0) in enumerate(PHASES):
        ax.add_patch(
            Rectangle(
                (x0, 0.0),
                3.2,
                HEIGHT,
                facecolor="#f6f6f6" if k % 2 else "white",
                edgecolor="none",
                zorder=-2,
            )
        )
        text(ax, x0 + 1.6, HEIGHT - 0.35, title, 13, "#444444", fontweight="bold")


def blocks(ax: Axes) -> None:
    """Every box: RTL blocks (``hw/``) and behavioural subsystems (``sim/``)."""
    box(ax, 0.25, 5.75, 2.7, 0.95, "topology optimiser", "tree shape, fallback (sim/)", "beh")
    box(ax, 0.25, 4.3, 2.7, 0.95, "draft accelerator", "draws the tree's tokens (sim/)", "beh")
    box(ax, 0.25, 2.75, 2.7, 0.95, "tree_mask_gen", "parents -> mask rows (§2)", "tm")
    box(
        ax,
        3.45,
        4.3,
        2.7,
        1.3,
        "verifier engine",
        "target model, tree attention,\npt / qt, residual of last (sim/)",
        "beh",
    )
    box(ax, 3.45, 5.95, 2.7, 0.75, "HBM interface", "weights, prefetch (sim/)", "beh")
    box(ax, 6.6, 5.75, 2.3, 0.95, "rng_lanes", "xoshiro128++ lanes (§3.4)", "tm")
    box(ax, 6.6, 4.3, 2.3, 0.95, "accept_sampler", "parallel decision (§3.2)", "tm")
    box(ax, 6.6, 2.75, 2.3, 0.95, "token_sampler", "extra token (§3.5)", "tm")
    box(ax, 9.85, 2.75, 2.05, 0.95, "sequencer", "emits accepted + 1\ntokens (sim/)", "beh")
    box(ax, 0.25, 0.35, 12.3, 1.15, "kv_pool", "", "kv")
    subs = (
        (1.6, "insert: one speculative entry\nper node and layer"),
        (4.8, "lookup (draft, verify ports):\nthe node's mask row as view"),
        (8.0, "every operation one cycle,\nwhatever the entries it touches"),
        (11.2, "commit(seq, row[last]);\nfork, release"),
    )
    for x, sub in subs:
        text(ax, x, 0.62, sub, 7.8)
    root = "The last emitted token is the\nnext step's root (node 0)."
    text(ax, 10.9, 6.2, root, 8.5, style="italic")


def flows(ax: Axes) -> None:
    """The data each block hands on, in step order."""
    route(ax, [(1.6, 5.75), (1.6, 5.25)], "tree shape", (2.25, 5.5))
    route(ax, [(1.6, 4.3), (1.6, 3.7)], "parents, tokens", (2.3, 4.0))
    route(ax, [(2.95, 3.45), (3.2, 3.45), (3.2, 4.6), (3.45, 4.6)], "mask rows", (3.2, 4.0))
    route(ax, [(4.8, 5.95), (4.8, 5.6)], "weights", (5.35, 5.78))
    route(ax, [(6.15, 5.0), (6.6, 5.0)], "pt, qt", (6.38, 5.25))
    route(
        ax,
        [(2.6, 2.75), (2.6, 2.2), (6.35, 2.2), (6.35, 4.55), (6.6, 4.55)],
        "rows (load: after verify)",
        (4.3, 2.2),
    )
    route(ax, [(5.9, 4.3), (5.9, 3.2), (6.6, 3.2)], "residual\nweights", (5.9, 3.65))
    route(ax, [(7.75, 5.75), (7.75, 5.25)], "u_i", (8.05, 5.5))
    route(ax, [(8.9, 6.05), (9.2, 6.05), (9.2, 3.5), (8.9, 3.5)], "lane 0", (9.2, 5.55))
    route(ax, [(7.75, 4.3), (7.75, 3.7)], "last", (8.05, 4.0))
    route(ax, [(8.9, 4.45), (10.6, 3.7)], "accepted tokens", (9.95, 4.25))
    route(ax, [(8.9, 3.0), (9.85, 3.0)], "extra", (9.5, 2.75))
    route(ax, [(8.9, 5.0), (12.25, 5.0), (12.25, 1.5)], "path_mask = row[last]", (10.9, 5.0))
    route(
        ax,
        [(0.25, 4.55), (0.12, 4.55), (0.12, 2.2), (0.6, 2.2), (0.6, 1.5)],
        "insert",
        (0.12, 3.2),
    )
    route(ax, [(4.0, 4.3), (4.0, 1.5)], "lookup / page", (4.0, 3.1), both=True)


def legend(ax: Axes) -> None:
    """What the box styles mean."""
    handles = [
        Patch(
            facecolor=STYLES["tm"].face,
            edgecolor=STYLES["tm"].edge,
            label="token tree manager, RTL (hw/tree_manager.py)",
        ),
        Patch(
            facecolor=STYLES["kv"].face,
            edgecolor=STYLES["kv"].edge,
            label="shared KV-cache pool, RTL (hw/kv_pool/)",
        ),
        Patch(
            facecolor=STYLES["beh"].face,
            edgecolor=STYLES["beh"].edge,
            linestyle="--",
            label="behavioural model (sim/)",
        ),
    ]
    ax.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, -0.09),
        ncol=3,
        fontsize=8.5,
        frameon=False,
    )


def draw(out: Path = OUT, dpi: int = 110) -> Path:
    """Draw the diagram and write it to ``out`` (PNG); returns ``out``.

    Raises
    ------
    ValueError
        ``dpi`` is not a positive integer.
    """
    if isinstance(dpi, bool) or not isinstance(dpi, int) or dpi < 1:
        raise ValueError(f"dpi = {dpi!r}: must be a positive integer")
    fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT * 0.84))
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, HEIGHT)
    ax.axis("off")
    phases(ax)
    blocks(ax)
    flows(ax)
    legend(ax)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--out`` (default ``docs/architecture.png``), ``--dpi``."""
    ap = argparse.ArgumentParser(prog="docs/diagrams/architecture.py", description=__doc__)
    ap.add_argument("--out", type=Path, default=OUT, help="PNG to write")
    ap.add_argument("--dpi", type=int, default=110)
    args = ap.parse_args(argv)
    print(draw(args.out, args.dpi))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
