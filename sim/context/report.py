"""The long-context study's report: the whole grid run, the article's claims
checked from bytes per token, the JSON report, a text table and the plot.

:func:`run_study` runs every series of a :class:`ContextConfig` and returns
the report (a JSON-ready dict); :func:`check_claims` is the claims part alone
(no simulation: bytes per token and pool sizes); :func:`table` and
:func:`plot_png` present a report.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sim.context.config import CLAIMS, GIB, ContextConfig, geometry
from sim.context.study import chip_trace, run_series
from sim.timing import load_profile

__all__ = ["HOLDS_WITHIN", "check_claims", "plot_png", "run_study", "series_key", "table"]

#: a "~N" claim holds when the pool holds N tokens to within this fraction
HOLDS_WITHIN = 0.25


def series_key(profile: str, pool_gib: int, mode: str) -> str:
    """The key of a series in the report: ``"<profile>:<GiB>:<mode>"``."""
    return f"{profile}:{pool_gib}:{mode}"


def check_claims() -> dict[str, dict[str, Any]]:
    """The article's claims (:data:`sim.context.config.CLAIMS`) from bytes per token.

    Each entry: the claim, its profile and pool, ``kv_bytes_per_token``,
    ``page_bytes``, ``tokens_fit`` (``PAGES``: the context the pool holds, a
    speculative tree's pages apart), ``ratio`` (``tokens_fit`` over the claimed
    tokens), ``needed_bytes_per_token`` (what the claim implies), ``holds``
    (``|ratio - 1| <= HOLDS_WITHIN``) and ``why`` in words.
    """
    out: dict[str, dict[str, Any]] = {}
    for c in CLAIMS:
        prof = load_profile(c.profile, **{"kv_pool.bytes": c.pool_gib * GIB})
        geo = geometry(prof, c.pool_gib * GIB)
        t = prof.target
        ratio = geo.pages / c.tokens
        needed = c.pool_gib * GIB / c.tokens
        holds = abs(ratio - 1.0) <= HOLDS_WITHIN
        shape = (
            f"{t.layers} layers x 2 x {t.n_kv_heads} KV heads x {t.head_dim} x "
            f"{t.kv_bytes:g} B = {geo.kv_bytes_per_token // 1024} KiB per token"
        )
        why = (
            f"{shape}: {c.pool_gib} GiB holds {geo.pages:,} tokens, {ratio:.2f}x the "
            f"claimed {c.tokens:,}; the claim needs {needed / 1024:.0f} KiB per token"
        )
        out[c.key] = {
            "text": c.text,
            "profile": c.profile,
            "pool_gib": c.pool_gib,
            "claimed_tokens": c.tokens,
            "kv_bytes_per_token": geo.kv_bytes_per_token,
            "page_bytes": geo.page_bytes,
            "tokens_fit": geo.pages,
            "ratio": ratio,
            "needed_bytes_per_token": needed,
            "holds": holds,
            "why": why,
        }
    return out


def _knee(points: list[dict[str, Any]]) -> int | None:
    """The first context whose steps read KV from HBM (``None``: none does)."""
    return next((p["context"] for p in points if p["hbm_reads"] or p["spills"]), None)


def run_study(cfg: ContextConfig, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every series of ``cfg`` and return the JSON-ready report.

    Keys: ``config``; ``traces`` (per profile: the chip-model steps replayed,
    their mean accepted tokens and tree sizes); ``geometry`` (per
    ``"<profile>:<GiB>"``: :class:`sim.context.config.PoolGeometry`);
    ``series`` (per :func:`series_key`: the geometry's pages and page bytes,
    ``knee`` (first context with HBM traffic) and ``points``, each
    :meth:`sim.context.study.Point.as_dict`); ``claims`` (:func:`check_claims`,
    each with ``measured``: the dense series of its profile and pool at the
    largest grid context not above the claim, if run); ``runtime_s``.
    """
    t0 = time.perf_counter()
    rep: dict[str, Any] = {"config": dataclasses.asdict(cfg), "traces": {}, "geometry": {}}
    series: dict[str, Any] = {}
    for name in cfg.profiles:
        trace = chip_trace(name)
        rep["traces"][name] = {
            "steps": len(trace),
            "mean_accepted": sum(s.accepted for s in trace) / len(trace),
            "tree_nodes": sorted({s.n_nodes for s in trace}),
        }
        for gib in cfg.pools_gib:
            geo = geometry(cfg.profile(name, gib), gib * GIB)
            rep["geometry"][f"{name}:{gib}"] = dataclasses.asdict(geo)
            for mode in cfg.modes:
                s = run_series(cfg, name, gib, mode, trace, progress)
                pts = [p.as_dict() for p in s.points]
                series[series_key(name, gib, mode)] = {
                    "profile": name,
                    "pool_gib": gib,
                    "mode": mode,
                    "pages": geo.pages,
                    "page_bytes": geo.page_bytes,
                    "knee": _knee(pts),
                    "points": pts,
                }
    rep["series"] = series
    claims = check_claims()
    for c in claims.values():
        s = series.get(series_key(c["profile"], c["pool_gib"], "dense"))
        below = [p for p in (s["points"] if s else []) if p["context"] <= c["claimed_tokens"]]
        c["measured"] = None
        if below:
            p, first = below[-1], s["points"][0]  # type: ignore[index]
            c["measured"] = {
                "context": p["context"],
                "hbm_resident": p["hbm_resident"],
                "tokens_per_s": p["tokens_per_s"],
                "vs_first_context": p["tokens_per_s"] / first["tokens_per_s"],
            }
    rep["claims"] = claims
    rep["runtime_s"] = time.perf_counter() - t0
    return rep


def table(rep: Mapping[str, Any]) -> str:
    """Tokens/s against context, one row per series, then the claims (text)."""
    ctx = rep["config"]["contexts"]
    head = f"{'series':<28}" + "".join(f"{c // 1024:>8}K" for c in ctx) + "   knee"
    lines = [head, "-" * len(head)]
    for key, s in rep["series"].items():
        row = "".join(f"{p['tokens_per_s']:>9,.0f}" for p in s["points"])
        knee = "-" if s["knee"] is None else f"{s['knee'] // 1024}K"
        lines.append(f"{key:<28}{row}{knee:>7}")
    for name in rep["traces"]:
        free = next((s for s in rep["series"].values() if s["profile"] == name), None)
        if free is not None:
            row = "".join(f"{p['unbounded_tokens_per_s']:>9,.0f}" for p in free["points"])
            lines.append(f"{name + ':unbounded':<28}{row}{'-':>7}")
    lines.append("")
    for c in rep["claims"].values():
        verdict = "holds" if c["holds"] else "does not hold"
        lines.append(f"claim '{c['text']}': {verdict}: {c['why']}")
    return "\n".join(lines) + "\n"


def plot_png(rep: Mapping[str, Any], path: Path, *, dpi: int = 110) -> Path:
    """Tokens/s against context length, one panel per profile, one colour per pool
    size (solid: dense reads, dashed: sparse), grey: a pool that never fills."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rep["traces"])
    fig, axes = plt.subplots(1, len(names), figsize=(6.0 * len(names), 4.2), squeeze=False)
    colours = ["#c44e52", "#dd8452", "#55a868", "#4c72b0", "#8172b2", "#937860"]
    gibs = sorted({s["pool_gib"] for s in rep["series"].values()})
    for ax, name in zip(axes[0], names, strict=True):
        drawn_free = False
        for s in rep["series"].values():
            if s["profile"] != name:
                continue
            x = [p["context"] for p in s["points"]]
            col = colours[gibs.index(s["pool_gib"]) % len(colours)]
            style = "-" if s["mode"] == "dense" else "--"
            y = [p["tokens_per_s"] for p in s["points"]]
            label = f"{s['pool_gib']} GiB ({s['pages']:,} tokens), {s['mode']}"
            ax.plot(x, y, style, color=col, marker="o", ms=3, label=label)
            if not drawn_free:
                yf = [p["unbounded_tokens_per_s"] for p in s["points"]]
                ax.plot(x, yf, ":", color="grey", label="pool never full")
                drawn_free = True
        for c in rep["claims"].values():
            if c["profile"] == name:
                ax.axvline(c["claimed_tokens"], color="black", lw=0.6, alpha=0.4)
                ax.annotate(
                    f"claim: {c['claimed_tokens'] // 1024}K @ {c['pool_gib']} GB",
                    (c["claimed_tokens"], ax.get_ylim()[0]),
                    rotation=90,
                    fontsize=7,
                    va="bottom",
                    ha="right",
                )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("tokens/s (single stream)")
        ax.set_title(f"{name}: tokens/s against context")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
