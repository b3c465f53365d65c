"""A chip step on the timing model (:mod:`sim.timing`).

Each chip step is timed with :func:`sim.timing.step_time` on the profile from
its measured quantities (tree size and depth, draft evaluations, accepted
tokens, and the tree manager's cycles from the backend: mask, load, decide,
tokens, and with the hardware builder its tail, top-K stream and the
optimiser's re-solves, :mod:`sim.build_cycles`; the token sampler (the
profile's two-pass ``2 * ceil(V / LANES)``, or with ``select_lanes`` the
one-pass select's ``ceil(V / select_lanes)`` after the decision and its totals
under verification) and the KV-table traffic
are re-counted for the profile's model, its 32,000-token vocabulary and its
layers, since the functional workload is a byte-level n-gram). The context of
the timing is the profile's stated history (``workload.context_len``) plus the
sequence's own tokens. A batch is one verifier pass over every sequence's tree.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from sim.chip.result import SeqStep
from sim.cycles import RTL_LATENCY, SPEC_LATENCY, AcceptCycles, sampler_cycles, totals_cycles
from sim.cycles import accept_cycles as cycle_model
from sim.timing import Profile, StepTiming, step_time

__all__ = ["time_step"]


def time_step(
    profile: Profile,
    recs: Sequence[SeqStep],
    *,
    overlap: str,
    prev_predicted: bool = False,
    context_offset: int | None = None,
    gpu: bool = False,
    select_lanes: int = 0,
) -> StepTiming:
    """Time one chip step (every sequence's tree in one verifier pass) on ``profile``.

    The tree manager's measured cycles (mask, load, decide, tokens) are kept;
    the token sampler and the KV-table traffic are counted for the profile's
    model (module docstring). ``gpu``: the profile is a GPU baseline (its own
    accept time, no cycles). ``select_lanes``: the chip's one-pass token select
    (its lanes; 0: the profile's two-pass sampler).
    """
    off = profile.workload.context_len if context_offset is None else context_offset
    n = sum(r.n_nodes for r in recs)
    depth = max(r.depth for r in recs)
    acc = min(depth, max(r.accepted for r in recs))
    ctx = off + int(round(sum(r.context_len for r in recs) / len(recs)))
    evals = sum(r.draft_evals for r in recs)
    kw: dict[str, Any] = {}
    if not gpu and profile.tree_manager is not None:
        tm = profile.tree_manager
        t = profile.target
        ports = profile.kv_pool.lookup_ports if profile.kv_pool else 1
        lat = RTL_LATENCY if tm.latency == "rtl" else SPEC_LATENCY
        tot = dict.fromkeys(("mask", "load", "decide", "tokens"), 0)
        built = dict.fromkeys(("build", "optimise", "stream"), 0)
        for r in recs:
            cy = r.tm_cycles
            if not all(k in cy for k in tot):  # a backend that does not count them: the model
                m = cycle_model(r.n_nodes, t.vocab, tm.lanes, r.accepted, latency=tm.latency)
                cy = {**cy, "mask": m.mask, "load": m.load, "decide": m.decide, "tokens": m.tokens}
            for k in tot:
                tot[k] += int(cy[k])
            if "build" in cy:  # the hardware builder: its nodes stream into the mask generator
                tot["mask"] += lat.mask - int(cy["mask"])
                built["build"] += int(cy["build"])
                built["optimise"] += int(cy["optimise"])
                built["stream"] += int(cy["build_stream"])
        kind = "one_pass" if select_lanes else "two_pass"
        per = sampler_cycles(t.vocab, select_lanes or tm.lanes, tm.latency, sampler=kind)
        kw["accept_cycles"] = AcceptCycles(
            sampler=len(recs) * per,
            totals=sum(totals_cycles(r.n_nodes, t.vocab, select_lanes) for r in recs)
            if select_lanes
            else 0,
            commit=len(recs) * (1 + lat.commit_result),
            inserts=n * t.layers,
            lookups=math.ceil(ctx * t.layers * len(recs) / ports),
            **tot,
            **built,
        )
    if overlap == "speculative":
        kw["p_right"] = 1.0 if prev_predicted else 0.0
    st = step_time(
        profile,
        tree_nodes=n,
        tree_depth=depth,
        accepted=acc,
        context_len=ctx,
        overlap=overlap,
        draft_evals=evals,
        **kw,
    )
    return dataclasses.replace(st, tokens_per_step=float(sum(r.accepted + 1 for r in recs)))
