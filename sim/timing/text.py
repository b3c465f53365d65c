"""Text renderings of the timing model: the views, the disagreements, the projections.

:func:`table` lays rows out in aligned columns (first column left-aligned, the
others right-aligned); the chip report (:mod:`sim.report`) uses it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.timing.disagreements import disagreements
from sim.timing.profiles import Profile
from sim.timing.views import article_view, projections, roofline_view

__all__ = [
    "RATE_COLUMNS",
    "disagreements_table",
    "projections_table",
    "rate_cells",
    "table",
    "views_table",
]

#: Titles of the columns :func:`rate_cells` fills: "vs GPU" against the calibrated GPU
#: baseline (:mod:`sim.timing.calibration`), "vs roofline GPU" against the roofline one
RATE_COLUMNS = (
    "us/token",
    "tokens/s",
    "vs own AR",
    "vs GPU AR",
    "vs GPU spec",
    "vs roofline GPU AR",
    "vs roofline GPU spec 1 ms",
)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """``header``, a rule and ``rows`` in columns as wide as their widest cell."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(wd) if i == 0 else c.rjust(wd)
            for i, (c, wd) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([fmt(header), fmt(["-" * wd for wd in widths]), *[fmt(r) for r in rows]])


def rate_cells(row: Any) -> list[str]:
    """The cells of a projection ``row`` (any object with ``us_per_token``,
    ``tokens_per_s``, ``vs_own_ar`` (``None``: "-"), ``vs_gpu_ar``, ``vs_gpu_spec``,
    ``vs_gpu_ar_roofline``, ``vs_gpu_spec_roofline``), under :data:`RATE_COLUMNS`."""
    return [
        f"{row.us_per_token:,.1f}",
        f"{row.tokens_per_s:,.0f}",
        "-" if row.vs_own_ar is None else f"{row.vs_own_ar:.2f}x",
        f"{row.vs_gpu_ar:.2f}x",
        f"{row.vs_gpu_spec:.2f}x",
        f"{row.vs_gpu_ar_roofline:.2f}x",
        f"{row.vs_gpu_spec_roofline:.2f}x",
    ]


def views_table(profile: Profile) -> str:
    """The article's arithmetic and the roofline modes side by side (text)."""
    av, rv = article_view(profile), roofline_view(profile)
    modes = list(rv.steps)
    header = ["", "article", *[f"roofline {m}" for m in modes]]

    def col(f: Any, g: Any) -> list[str]:
        return [f(av), *[g(rv.steps[m]) for m in modes]]

    rows = [
        ["draft (us)", *col(lambda a: f"{a.draft_us:,.0f}", lambda s: f"{s.draft_us:,.0f}")],
        ["tree mask (us)", *col(lambda a: "-", lambda s: f"{s.tree_us:.3f}")],
        [
            "HBM prefetch (us)",
            *col(
                lambda a: f"{a.draft_us:,.0f}" if a.overlap == "prefetch" else "-",
                lambda s: f"{s.prefetch_us:,.0f}",
            ),
        ],
        ["verify (us)", *col(lambda a: f"{a.verify_us:,.0f}", lambda s: f"{s.verify_us:,.0f}")],
        ["  bound", *col(lambda a: "-", lambda s: s.verify.bound if s.verify else "-")],
        ["accept/commit (us)", *col(lambda a: f"{a.accept_us:g}", lambda s: f"{s.accept_us:.2f}")],
        [
            "p(predicted tip)",
            *col(lambda a: "-", lambda s: "-" if s.p_right is None else f"{s.p_right:.2f}"),
        ],
        ["wasted draft (us)", *col(lambda a: "-", lambda s: f"{s.wasted_us:,.0f}")],
        ["step (us)", *col(lambda a: f"{a.step_us:,.0f}", lambda s: f"{s.total_us:,.0f}")],
        [
            "tokens/step",
            *col(lambda a: f"{a.tokens_per_step:g}", lambda s: f"{s.tokens_per_step:g}"),
        ],
        ["us/token", *col(lambda a: f"{a.us_per_token:,.1f}", lambda s: f"{s.us_per_token:,.1f}")],
        ["tokens/s", *col(lambda a: f"{a.tokens_per_s:,.0f}", lambda s: f"{s.tokens_per_s:,.0f}")],
        [
            "vs claim",
            *col(
                lambda a: f"{a.error:+.1%}",
                lambda s: f"{s.tokens_per_s / av.claimed_tokens_per_s - 1:+.1%}",
            ),
        ],
        [
            "vs own autoregressive",
            *col(
                lambda a: f"{a.tokens_per_s / rv.ar.tokens_per_s:.2f}x",
                lambda s: f"{s.tokens_per_s / rv.ar.tokens_per_s:.2f}x",
            ),
        ],
    ]
    w = profile.workload
    t, d = profile.target, profile.draft
    head = (
        f"== {profile.name}: {profile.description}\n"
        f"   {t.name} at {t.bytes_per_param:g} B/param, draft {d.params / 1e6:.0f}M "
        f"at {d.bytes_per_param:g} B/param\n"
        f"   stated example: {w.tree_nodes}-node tree, depth {w.tree_depth}, "
        f"{w.draft_evals} draft evaluations, {w.accepted} accepted (+1), context "
        f"{w.context_len}; article claim {av.claimed_tokens_per_s:,.0f} tokens/s; "
        f"autoregressive on this profile {rv.ar.tokens_per_s:,.0f} tokens/s"
    )
    return head + "\n" + table(header, rows)


def disagreements_table(profile: Profile) -> str:
    """:func:`disagreements` as text."""
    lines = [f"-- disagreements, {profile.name}"]
    for dz in disagreements(profile):
        lines.append(
            f"* {dz.topic} (x{dz.ratio:.2f})\n    article:          {dz.article}\n"
            f"    first principles: {dz.first_principles}\n    why: {dz.explanation}"
        )
    return "\n".join(lines)


def projections_table(names: Sequence[str]) -> str:
    """:func:`projections` as text."""
    rows = [
        [r.profile, r.config, f"{r.tokens_per_step:g}", *rate_cells(r)] for r in projections(names)
    ]
    return table(["profile", "configuration", "tok/step", *RATE_COLUMNS], rows)
