"""Timing and performance model of SpecDecode-1 and its GPU baselines.

Two views of the same step, side by side:

* :func:`article_view` reproduces the architecture article's own arithmetic
  (draft x tokens + verify + accept, the article's component times), which gives
  its ~7,100 tokens/s (7B) and ~1,600 tokens/s (70B);
* :func:`roofline_view` computes the step from first principles on the same
  stated hardware (:func:`step_time`): weight bytes over HBM bandwidth against
  FLOPs over tensor throughput, tree attention over the context, the draft
  accelerator's MAC array, and the tree manager's cycle counts
  (:mod:`sim.cycles`) at the clock.

:func:`disagreements` explains every gap between the two in numbers and
:func:`projections` compares both with plain autoregressive decoding on the
same profile and with the GPU profiles. ``python -m sim.timing`` (``make
perf``) prints all of it and draws the timelines.

Modules, in the order they build on each other:

``profiles``
    The TOML profiles in ``sim/profiles`` (:func:`load_profile`); every number
    there cites its source.
``acceptance``
    The chain-equivalent acceptance model (:func:`chain_alpha`).
``phases``
    Draft and verification on the roofline (:func:`draft_time`, :func:`verify_time`).
``step``
    A whole step in an overlap mode (:func:`step_time`, its docstring defines the
    modes ``none``, ``prefetch`` and ``speculative``) and plain decoding
    (:func:`ar_token_time`).
``views``
    The article's and the roofline's view of the stated example, projections.
``disagreements``
    The gaps between the views: templates (data) rendered with the numbers.
``schedule``
    Consecutive steps on the lanes of the overlap figure (:func:`schedule`).
``plots``, ``text``, ``__main__``
    PNGs (matplotlib, imported only by those who draw), text tables, the CLI.
"""

from sim.timing.acceptance import (
    accepted_distribution,
    chain_alpha,
    draft_evals_of,
    predicted_tip_probability,
)
from sim.timing.disagreements import Disagreement, disagreements
from sim.timing.phases import DraftTime, KVTraffic, VerifyTime, draft_time, verify_time
from sim.timing.profiles import (
    OVERLAP_MODES,
    PRECISIONS,
    PROFILE_DIR,
    ArticleSpec,
    DraftAccel,
    Hardware,
    KVPoolTiming,
    ModelSpec,
    Profile,
    TreeManagerTiming,
    Workload,
    known_profiles,
    load_profile,
)
from sim.timing.schedule import LANES, Segment, sample_steps, schedule
from sim.timing.step import ARTiming, StepTiming, ar_token_time, step_time
from sim.timing.text import disagreements_table, projections_table, views_table
from sim.timing.views import (
    ArticleView,
    ProjectionRow,
    RooflineView,
    article_steps,
    article_view,
    projections,
    roofline_view,
)

__all__ = [
    "LANES",
    "OVERLAP_MODES",
    "PRECISIONS",
    "PROFILE_DIR",
    "ARTiming",
    "ArticleSpec",
    "ArticleView",
    "Disagreement",
    "DraftAccel",
    "DraftTime",
    "Hardware",
    "KVPoolTiming",
    "KVTraffic",
    "ModelSpec",
    "Profile",
    "ProjectionRow",
    "RooflineView",
    "Segment",
    "StepTiming",
    "TreeManagerTiming",
    "VerifyTime",
    "Workload",
    "accepted_distribution",
    "ar_token_time",
    "article_steps",
    "article_view",
    "chain_alpha",
    "disagreements",
    "disagreements_table",
    "draft_evals_of",
    "draft_time",
    "known_profiles",
    "load_profile",
    "predicted_tip_probability",
    "projections",
    "projections_table",
    "roofline_view",
    "sample_steps",
    "schedule",
    "step_time",
    "verify_time",
    "views_table",
]
