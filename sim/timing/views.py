"""The two views of the profile's stated example step, and the projections.

* :func:`article_view` reproduces the architecture article's own arithmetic
  (draft x tokens + verify + accept, the article's component times), which gives
  its ~7,100 tokens/s (7B) and ~1,600 tokens/s (70B);
* :func:`roofline_view` computes the step from first principles on the same
  stated hardware (:func:`sim.timing.step_time`) in every overlap mode the
  profile supports, beside plain autoregressive decoding.

:func:`projections` compares both with plain autoregressive decoding on the
same profile and with the GPU profiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.timing.profiles import ArticleSpec, Profile, load_profile
from sim.timing.step import ARTiming, StepTiming, ar_token_time, step_time

__all__ = [
    "ArticleView",
    "ProjectionRow",
    "RooflineView",
    "article_of",
    "article_steps",
    "article_view",
    "projections",
    "roofline_view",
]


@dataclass(frozen=True)
class ArticleView:
    """The article's own per-step arithmetic.

    Attributes
    ----------
    draft_us, verify_us, accept_us, step_us : float
        ``draft_us = draft_us_per_token * draft_tokens``; ``step_us`` the sum
        (the 70B's prefetch already shortened the figure's verify bar).
    tokens_per_step, us_per_token, tokens_per_s : float
    claimed_tokens_per_s : float
        The article's headline number.
    """

    profile: str
    draft_us: float
    verify_us: float
    accept_us: float
    step_us: float
    tokens_per_step: float
    us_per_token: float
    tokens_per_s: float
    claimed_tokens_per_s: float
    claimed_step_us: float
    overlap: str

    @property
    def error(self) -> float:
        """Relative error of the reproduced tokens/s against the article's claim:
        ``tokens_per_s / claimed_tokens_per_s - 1``."""
        return self.tokens_per_s / self.claimed_tokens_per_s - 1.0


def article_of(profile: Profile) -> ArticleSpec:
    """``profile.article``; ``ValueError`` for a profile without one (a GPU baseline)."""
    if profile.article is None:
        raise ValueError(f"profile {profile.name!r} has no [article] section (a GPU baseline)")
    return profile.article


def article_view(profile: Profile) -> ArticleView:
    """Reproduce the article's arithmetic for ``profile`` (7B: ~7,100, 70B: ~1,600 tokens/s).

    7B: "50 us/token x 10 tree nodes = 500 us ... ~200 us ... ~1 us. Total per
    step: ~700 us producing ~5 accepted tokens". 70B: the figure's 500 us draft
    (with "Prefetch L1-L4"), verify to ~3,000 us, ~5 tokens.
    """
    a = article_of(profile)
    draft = a.draft_us_per_token * a.draft_tokens
    step = draft + a.verify_us + a.accept_us
    upt = step / a.tokens_per_step
    return ArticleView(
        profile.name,
        draft,
        a.verify_us,
        a.accept_us,
        step,
        a.tokens_per_step,
        upt,
        1e6 / upt,
        a.claimed_tokens_per_s,
        a.claimed_step_us,
        a.overlap,
    )


def article_steps(profile: Profile, n: int = 3) -> list[StepTiming]:
    """``n`` steps of the article's own timeline (for :func:`sim.timing.plots.timeline_png`)."""
    a, v = article_of(profile), article_view(profile)
    w = profile.workload
    pref = v.draft_us if a.overlap == "prefetch" else 0.0
    st = StepTiming(
        profile=profile.name,
        overlap=a.overlap,
        tree_nodes=w.tree_nodes,
        tree_depth=w.tree_depth,
        draft_evals=a.draft_tokens,
        accepted=w.accepted,
        context_len=w.context_len,
        draft_us=v.draft_us,
        tree_us=0.0,
        prefetch_us=pref,
        verify_us=v.verify_us,
        verify_hit_us=v.verify_us,
        hbm_verify_us=v.verify_us,
        accept_us=v.accept_us,
        wait_us=0.0,
        step_miss_us=v.step_us,
        step_hit_us=v.step_us,
        total_us=v.step_us,
        tokens_per_step=a.tokens_per_step,
        source="article",
    )
    return [st] * n


@dataclass(frozen=True)
class RooflineView:
    """First-principles timing of the profile's stated example.

    Attributes
    ----------
    profile : str
    overlap : str
        The mode compared with the article (the workload's).
    steps : dict[str, StepTiming]
        One per overlap mode the profile supports.
    ar : ARTiming
        Plain autoregressive decoding on the same profile.
    """

    profile: str
    overlap: str
    steps: dict[str, StepTiming]
    ar: ARTiming

    @property
    def step(self) -> StepTiming:
        """The step in the compared mode."""
        return self.steps[self.overlap]

    def speedup_vs_ar(self, mode: str | None = None) -> float:
        """Tokens/s over plain autoregressive decoding on the same profile."""
        return self.steps[mode or self.overlap].tokens_per_s / self.ar.tokens_per_s


def roofline_view(
    profile: Profile,
    *,
    tree_nodes: int | None = None,
    tree_depth: int | None = None,
    draft_evals: int | None = None,
    accepted: int | None = None,
    context_len: int | None = None,
    overlap: str | None = None,
) -> RooflineView:
    """First-principles view of one step in every overlap mode, and plain decoding.

    Unset arguments come from ``profile.workload``, except ``draft_evals``,
    which defaults to ``tree_nodes - 1`` (a chain) when ``tree_nodes`` is given.
    """
    w = profile.workload
    n = w.tree_nodes if tree_nodes is None else tree_nodes
    kw: dict[str, Any] = {
        "tree_nodes": n,
        "tree_depth": w.tree_depth if tree_depth is None else tree_depth,
        "accepted": w.accepted if accepted is None else accepted,
        "context_len": w.context_len if context_len is None else context_len,
        "draft_evals": (w.draft_evals if tree_nodes is None else None)
        if draft_evals is None
        else draft_evals,
    }
    mode = w.overlap if overlap is None else overlap
    steps = {m: step_time(profile, overlap=m, **kw) for m in profile.overlap_modes}
    if mode not in steps:
        raise ValueError(
            f"overlap = {mode!r}: profile {profile.name} supports "
            f"{', '.join(profile.overlap_modes)}"
        )
    ar = ar_token_time(
        profile, context_len=kw["context_len"], overlap="none" if mode == "none" else "prefetch"
    )
    return RooflineView(profile.name, mode, steps, ar)


@dataclass(frozen=True)
class ProjectionRow:
    """One configuration's throughput and speedups.

    Attributes
    ----------
    profile, config : str
    tokens_per_step, us_per_token, tokens_per_s : float
    vs_own_ar : float or None
        Over plain autoregressive decoding on the same profile (roofline).
    vs_gpu_ar, vs_gpu_spec : float
        Over the calibrated GPU baseline's autoregressive and speculative decoding
        (:meth:`Profile.calibrated`, :mod:`sim.timing.calibration`).
    vs_gpu_ar_roofline, vs_gpu_spec_roofline : float
        Over the GPU profile's autoregressive and speculative (1 ms CPU) roofline.
    """

    profile: str
    config: str
    tokens_per_step: float
    us_per_token: float
    tokens_per_s: float
    vs_own_ar: float | None
    vs_gpu_ar: float
    vs_gpu_spec: float
    vs_gpu_ar_roofline: float
    vs_gpu_spec_roofline: float


def projections(
    names: Sequence[str] = ("specdecode1-7b", "specdecode1-70b"),
    gpu_cpu_round_trips_us: Sequence[float] = (1000.0, 5000.0),
) -> list[ProjectionRow]:
    """Throughput and speedups of every view against the GPU profiles: the calibrated
    baseline (:meth:`Profile.calibrated`) and, beside it, the roofline one."""
    rows: list[ProjectionRow] = []
    for name in names:
        p = load_profile(name)
        if p.gpu_baseline is None:
            raise ValueError(f"profile {name!r} has no gpu_baseline")
        rv, av = roofline_view(p), article_view(p)
        g = load_profile(p.gpu_baseline)
        gv, cv = roofline_view(g), roofline_view(g.calibrated())
        ref = (
            cv.ar.tokens_per_s,
            cv.step.tokens_per_s,
            gv.ar.tokens_per_s,
            gv.step.tokens_per_s,
        )

        def row(
            profile: str,
            config: str,
            tps: float,
            tpstep: float,
            own: float | None,
            ref: tuple[float, ...] = ref,
        ) -> ProjectionRow:
            return ProjectionRow(
                profile, config, tpstep, 1e6 / tps, tps, own, *(tps / r for r in ref)
            )

        rows.append(row(name, "article arithmetic", av.tokens_per_s, av.tokens_per_step, None))
        for m, s in rv.steps.items():
            rows.append(
                row(
                    name,
                    f"roofline, {m}",
                    s.tokens_per_s,
                    s.tokens_per_step,
                    s.tokens_per_s / rv.ar.tokens_per_s,
                )
            )
        rows.append(row(name, "roofline, autoregressive", rv.ar.tokens_per_s, 1.0, 1.0))
        gar = ref[0]
        rows.append(row(g.name, "GPU autoregressive, calibrated", gar, 1.0, 1.0))
        cpu_ms = g.calibration.cpu_round_trip_us / 1e3 if g.calibration else 0.0
        rows.append(
            row(
                g.name,
                f"GPU spec decode, calibrated (CPU {cpu_ms:.2f} ms)",
                cv.step.tokens_per_s,
                cv.step.tokens_per_step,
                cv.step.tokens_per_s / gar,
            )
        )
        rows.append(row(g.name, "GPU autoregressive, roofline", gv.ar.tokens_per_s, 1.0, 1.0))
        for cpu in gpu_cpu_round_trips_us:
            gs = roofline_view(load_profile(g.name, cpu_round_trip_us=cpu)).step
            rows.append(
                row(
                    g.name,
                    f"GPU spec decode, CPU {cpu / 1e3:g} ms, roofline",
                    gs.tokens_per_s,
                    gs.tokens_per_step,
                    gs.tokens_per_s / gv.ar.tokens_per_s,
                )
            )
    return rows
