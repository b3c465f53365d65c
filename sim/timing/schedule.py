"""Consecutive steps on the four lanes of the article's overlap figure.

:func:`schedule` lays steps out on the lanes (:data:`LANES`) as
:class:`Segment` bars; :func:`sample_steps` draws realised steps from the
acceptance model to lay out (both feed :func:`sim.timing.plots.timeline_png`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.timing.acceptance import accepted_distribution, chain_alpha
from sim.timing.profiles import Profile
from sim.timing.step import StepTiming, step_time

__all__ = ["LANES", "Segment", "sample_steps", "schedule"]


@dataclass(frozen=True)
class Segment:
    """One bar of a timeline: ``lane`` busy from ``start_us`` to ``end_us``."""

    lane: str
    start_us: float
    end_us: float
    label: str
    kind: str  # "work", "prefetch", "wasted", "wait"


LANES = ("draft", "verifier", "hbm", "tree")


def schedule(steps: Sequence[StepTiming]) -> tuple[list[Segment], float]:
    """Lay consecutive steps out on the four lanes of the article's overlap figure.

    Lanes: ``draft`` (draft accelerator), ``verifier``, ``hbm`` (prefetch and
    weight streaming), ``tree`` (tree manager + commit, or the CPU on a GPU).
    Speculative steps use ``p_right`` as the realised outcome (``>= 0.5``: the
    speculative draft was kept); the first step has no previous verification to
    hide behind and is laid out as a miss without waste.

    Returns
    -------
    segments : list[Segment]
    makespan_us : float
        End of the last step's accept/commit.
    """
    segs: list[Segment] = []
    accept_end = 0.0
    prev_verify_start = None
    for k, s in enumerate(steps):
        hit = s.overlap == "speculative" and k > 0 and (s.p_right or 0.0) >= 0.5
        label = f"{k + 1}"
        if hit and prev_verify_start is not None:
            d0 = prev_verify_start
            d1 = d0 + s.draft_us
            segs.append(Segment("draft", d0, d1, f"draft {label} (speculative)", "work"))
            v0 = max(accept_end, d1 + s.tree_us)
            segs.append(Segment("tree", max(d1, v0 - s.tree_us), v0, "mask", "work"))
            v_us = s.verify_hit_us
        else:
            if s.overlap == "speculative" and k > 0 and prev_verify_start is not None:
                w1 = min(prev_verify_start + s.draft_us, accept_end)
                segs.append(
                    Segment("draft", prev_verify_start, w1, f"draft {label} (wasted)", "wasted")
                )
            d0 = accept_end
            d1 = d0 + s.draft_us
            if s.draft_us > 0:
                segs.append(Segment("draft", d0, d1, f"draft {label}", "work"))
            if s.prefetch_us > 0:
                segs.append(Segment("hbm", d0, d0 + s.prefetch_us, "prefetch", "prefetch"))
            segs.append(Segment("tree", d0, d1 + s.tree_us, "build tree", "work"))
            v0 = d1 + s.tree_us
            v_us = s.verify_us
        segs.append(Segment("verifier", v0, v0 + v_us, f"verify {label}", "work"))
        segs.append(Segment("hbm", v0, v0 + min(v_us, s.hbm_verify_us), "stream weights", "work"))
        a0 = v0 + v_us
        accept_end = a0 + s.accept_us
        segs.append(Segment("tree", a0, accept_end, "accept + commit", "work"))
        prev_verify_start = v0
    return segs, accept_end


def sample_steps(
    profile: Profile,
    n: int,
    *,
    overlap: str,
    seed: int = 0,
    mean_accepted: float | None = None,
    **step_kw: Any,
) -> list[StepTiming]:
    """``n`` realised steps: accepted drawn from the chain-equivalent model, hits realised.

    A step's speculative draft is kept iff the whole predicted path was accepted
    (``accepted == tree_depth``) and the draft's guess of the extra token was
    right (probability ``alpha``), matching :func:`predicted_tip_probability`.
    """
    w = profile.workload
    depth = step_kw.pop("tree_depth", w.tree_depth)
    mean = w.accepted if mean_accepted is None else mean_accepted
    alpha = chain_alpha(mean, depth)
    rng = np.random.default_rng(seed)
    acc = rng.choice(depth + 1, size=n, p=accepted_distribution(alpha, depth))
    extra = rng.random(n) < alpha
    kw = {
        "tree_nodes": w.tree_nodes,
        "context_len": w.context_len,
        "draft_evals": w.draft_evals,
        **step_kw,
    }
    out = []
    for k in range(n):
        # step k's draft was speculated during step k-1: kept iff step k-1 went all the way
        hit = k > 0 and acc[k - 1] == depth and bool(extra[k - 1])
        pr = (1.0 if hit else 0.0) if overlap == "speculative" else None
        out.append(
            step_time(
                profile, tree_depth=depth, accepted=int(acc[k]), overlap=overlap, p_right=pr, **kw
            )
        )
    return out
