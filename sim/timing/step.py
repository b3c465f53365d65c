"""One decode step end to end: the phases laid out in an overlap mode.

:func:`step_time` times a step of a tree on a profile (:class:`StepTiming`);
:func:`ar_token_time` times plain autoregressive decoding on the same profile
(:class:`ARTiming`).

Overlap modes (``step_time(..., overlap=...)``), with ``D`` the draft, ``M``
the tree mask, ``V`` the verification, ``A`` the accept/commit time:

``none``
    Sequential: ``D + M + V + A``; HBM idle while drafting.
``prefetch``
    The HBM prefetch engine loads the first weights into verifier SRAM during
    ``D + M`` (at most the SRAM left after activations), so ``V`` streams fewer
    bytes (the article's 70B figure).
``speculative``
    The draft accelerator drafts the next tree from the *predicted* tip while
    the verifier runs (at most one step ahead, starting when verification
    starts). Predicted tip: the draft's top path to depth ``tree_depth`` plus its
    top guess for the extra token. Hit (probability ``p_right``): the next
    verification starts at ``max(end of accept, end of draft + M)`` and streams
    every weight (no idle HBM window unless it waits for the draft). Miss: the
    speculative draft is thrown away (``min(D, V + A)`` of draft-accelerator
    time, counted in ``wasted_us``), one cycle rolls back its KV entries, and
    the step is the ``prefetch`` step. Either way the speculative draft's HBM
    traffic (draft weights beyond the draft SRAM) is added to the verification's
    weight stream, so a miss can cost more than ``prefetch``. ``p_right`` defaults to
    ``alpha ** (tree_depth + 1)`` with ``alpha`` the chain-equivalent per-token
    acceptance (:func:`sim.timing.chain_alpha`); a chip model replaying real steps passes
    ``p_right=1.0`` or ``0.0``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.cycles import AcceptCycles, sampler_cycles
from sim.cycles import accept_cycles as cycle_model
from sim.timing.acceptance import predicted_tip_probability
from sim.timing.phases import (
    DraftTime,
    KVTraffic,
    VerifyTime,
    draft_time,
    prefetch_capacity,
    verify_time,
)
from sim.timing.profiles import Profile, check_step

__all__ = ["ARTiming", "StepTiming", "ar_token_time", "step_time"]


@dataclass(frozen=True)
class StepTiming:
    """Timing of one decode step (all times in microseconds).

    Attributes
    ----------
    profile, overlap : str
    tree_nodes, tree_depth, draft_evals, accepted, context_len : int
        The step's quantities.
    draft_us : float
        Draft phase (full length, whether exposed or hidden).
    tree_us : float
        Between drafting and verification: the tree mask (and with the hardware
        builder its tail and any top-K stream beyond the draft time).
    prefetch_us : float
        HBM time spent prefetching during the draft window (miss/none/prefetch path).
    verify_us : float
        Verification on the ``none``/``prefetch``/speculative-miss path.
    verify_hit_us : float
        Verification after a speculative hit (``verify_us`` otherwise).
    hbm_verify_us : float
        HBM streaming time inside verification.
    accept_us : float
        Accept/commit after verification (tree manager cycles, or the GPU's CPU round trip).
    wait_us : float
        Speculative hit: time the verifier waits for the next draft after accept.
    step_miss_us, step_hit_us : float
        Step time on the miss (= ``prefetch``) and hit paths (speculative only;
        both equal ``total_us`` in other modes).
    total_us : float
        Expected step time: ``p_right * hit + (1 - p_right) * miss``.
    p_right : float or None
        Probability that the speculative draft is kept (speculative only).
    wasted_us, wasted_draft_evals : float
        Expected draft-accelerator time and evaluations thrown away per step.
    spec_hbm_bytes : float
        HBM bytes the speculative draft moves during this step's verification
        (added to its weight stream, hit or miss).
    draft, verify : DraftTime, VerifyTime or None
        Roofline details (``None`` for the article's own figures).
    cycles : AcceptCycles or None
        Tree-manager cycle breakdown (SpecDecode-1).
    source : str
        ``"roofline"`` or ``"article"``.
    batch : int
        Sequences decoded together (:func:`step_time`).
    """

    profile: str
    overlap: str
    tree_nodes: int
    tree_depth: int
    draft_evals: int
    accepted: int
    context_len: int
    draft_us: float
    tree_us: float
    prefetch_us: float
    verify_us: float
    verify_hit_us: float
    hbm_verify_us: float
    accept_us: float
    wait_us: float
    step_miss_us: float
    step_hit_us: float
    total_us: float
    p_right: float | None = None
    wasted_us: float = 0.0
    wasted_draft_evals: float = 0.0
    spec_hbm_bytes: float = 0.0
    tokens_per_step: float = 0.0
    batch: int = 1
    draft: DraftTime | None = field(default=None, repr=False)
    verify: VerifyTime | None = field(default=None, repr=False)
    cycles: AcceptCycles | None = field(default=None, repr=False)
    source: str = "roofline"

    @property
    def us_per_token(self) -> float:
        """Microseconds per emitted token."""
        return self.total_us / self.tokens_per_step

    @property
    def tokens_per_s(self) -> float:
        """Emitted tokens per second of one sequence (a user's interactivity)."""
        return 1e6 / self.us_per_token

    @property
    def throughput_tokens_per_s(self) -> float:
        """Emitted tokens per second of the whole batch."""
        return self.batch * self.tokens_per_s

    def phases(self) -> dict[str, float]:
        """Per-phase breakdown (us) for reports."""
        return {
            "draft": self.draft_us,
            "tree": self.tree_us,
            "prefetch": self.prefetch_us,
            "verify": self.verify_us,
            "accept": self.accept_us,
            "total": self.total_us,
            "wasted": self.wasted_us,
        }


def _tree_manager_phases(
    profile: Profile,
    tree_nodes: int,
    accepted: int,
    context_len: int,
    accept_cycles: AcceptCycles | int | None,
) -> tuple[AcceptCycles | None, float, float, int]:
    """``(cycles, M, A, table)``: the tree manager's cycles, the tree mask and
    accept/commit times (us) and the KV-table cycles during verification
    (:func:`step_time`'s ``accept_cycles``); a GPU: no cycles, no mask, the CPU
    round trip."""
    hw, t = profile.hardware, profile.target
    if profile.tree_manager is not None:
        tm = profile.tree_manager
        ports = profile.kv_pool.lookup_ports if profile.kv_pool else 1
        cyc = cycle_model(
            tree_nodes,
            t.vocab,
            tm.lanes,
            accepted,
            inserts=tree_nodes * t.layers,
            lookups=context_len * t.layers,
            lookup_ports=ports,
            latency=tm.latency,
        )
        if isinstance(accept_cycles, AcceptCycles):
            cyc = accept_cycles
        elif accept_cycles is not None:
            if (
                isinstance(accept_cycles, bool)
                or not isinstance(accept_cycles, int | np.integer)
                or accept_cycles < 0
            ):
                raise ValueError(
                    f"accept_cycles = {accept_cycles!r}: must be an AcceptCycles, "
                    f"an int >= 0 or None"
                )
        us = 1e6 / hw.clock_hz
        M = cyc.pre_verify * us
        post = (
            cyc.post_verify
            if accept_cycles is None or isinstance(accept_cycles, AcceptCycles)
            else int(accept_cycles)
        )
        A = post * us
        return cyc, M, A, cyc.during_verify
    return None, 0.0, hw.cpu_round_trip_us, 0


def step_time(
    profile: Profile,
    *,
    tree_nodes: int,
    tree_depth: int,
    accepted: int,
    context_len: int,
    accept_cycles: AcceptCycles | int | None = None,
    overlap: str = "none",
    draft_evals: int | None = None,
    p_right: float | None = None,
    kv_traffic: KVTraffic | None = None,
    batch: int = 1,
) -> StepTiming:
    """Per-phase timing of one decode step on ``profile`` (module docstring).

    Parameters
    ----------
    profile : Profile
    tree_nodes : int
        Nodes verified, root included (``1..tree_manager.max_nodes``).
    tree_depth : int
        Depth of the deepest node (``0..tree_nodes - 1``; ``>= 1`` if ``tree_nodes > 1``).
    accepted : int
        Draft tokens accepted (SPEC §3.1, without the extra token), ``0..tree_depth``;
        the step emits ``accepted + 1`` tokens.
    context_len : int
        Tokens already in the KV cache.
    accept_cycles : AcceptCycles, int or None
        Tree-manager cycles: an :class:`AcceptCycles`, an int of post-verify
        cycles (e.g. measured by the chip model), or ``None`` for
        :func:`sim.cycles.accept_cycles` with the profile's vocabulary and lanes.
        Ignored on GPU profiles (acceptance is the CPU round trip).
    overlap : {"none", "prefetch", "speculative"}
        Must be one of ``profile.overlap_modes``.
    draft_evals : int or None
        Draft-model evaluations (expanded nodes, :func:`draft_evals_of`);
        ``None``: ``tree_nodes - 1`` (every draft node but the last expanded, a chain).
    p_right : float or None
        Speculative mode: probability the predicted tip is right; ``None``:
        :func:`predicted_tip_probability` of ``accepted`` as the mean.
    kv_traffic : KVTraffic or None
        SpecDecode-1: the KV pool's HBM traffic of this step measured by a functional
        pool (spills, fills, reads of HBM-resident context), charged to the
        verification's HBM stream beside the weights in every verification of the
        step (:func:`sim.timing.phases.verify_time`); ``None``: the analytic estimate.
    batch : int
        Sequences decoded together (``1 .. 4096``), each with this step's tree and
        acceptance: one draft pass and one verification per step read the weights
        once for all of them, their FLOPs and KV are ``batch`` times one
        sequence's; SpecDecode-1's tree manager takes the trees one after another
        (mask, KV-table cycles and accept/commit ``batch`` times); a GPU's
        software loop is one round trip per step.

    Returns
    -------
    StepTiming

    Raises
    ------
    ValueError
        Naming the argument that is out of range or inconsistent.
    """
    evals = tree_nodes - 1 if draft_evals is None else draft_evals
    check_step(profile, tree_nodes, tree_depth, accepted, context_len, evals, overlap, batch=batch)
    if p_right is not None and not (isinstance(p_right, int | float) and 0 <= p_right <= 1):
        raise ValueError(f"p_right = {p_right!r}: must be in [0, 1]")
    hw = profile.hardware
    draft = draft_time(
        profile, draft_evals=evals, passes=tree_depth, context_len=context_len, batch=batch
    )
    D = draft.total_us

    cyc, M, A, table = _tree_manager_phases(
        profile, tree_nodes, accepted, context_len, accept_cycles
    )
    if cyc is not None and cyc.stream:  # the top-K stream beyond the draft's own time
        M += max(0.0, cyc.stream * 1e6 / hw.clock_hz - D)
    if cyc is not None:  # the tree manager takes a batch's trees one after another
        M, A, table = M * batch, A * batch, table * batch

    def verify(window_us: float, extra: float = 0.0) -> VerifyTime:
        pref = 0.0
        if window_us > 0:
            avail = window_us * 1e-6 * hw.hbm_bw - (draft.hbm_bytes if window_us >= D else 0.0)
            pref = max(0.0, min(prefetch_capacity(profile, tree_nodes * batch), avail))
        return verify_time(
            profile,
            tree_nodes=tree_nodes,
            tree_depth=tree_depth,
            context_len=context_len,
            prefetched_bytes=pref,
            table_cycles=table,
            extra_hbm_bytes=extra,
            kv_traffic=kv_traffic,
            batch=batch,
        )

    v0 = verify(0.0)
    spec_bytes = 0.0
    if overlap == "speculative" and D > 0:
        # the next step's speculative draft runs under this verification (hit or miss):
        # its HBM traffic (draft weights beyond the draft SRAM) shares the weight stream
        spec_bytes = draft.hbm_bytes * min(1.0, (v0.total_us + A) / D)
        v0 = verify(0.0, spec_bytes)
    vp = verify(D + M, spec_bytes) if overlap in ("prefetch", "speculative") else v0
    miss = D + M + vp.total_us + A
    hit, wait, vh, p, wasted, wasted_evals = miss, 0.0, vp, None, 0.0, 0.0
    if overlap == "speculative":
        p = predicted_tip_probability(accepted, tree_depth) if p_right is None else float(p_right)
        miss += 1e6 / hw.clock_hz  # one KV commit cycle rolls back the speculative draft
        wait = max(0.0, D + M - (v0.total_us + A))
        vh = verify(wait, spec_bytes)
        hit = wait + vh.total_us + A
        waste = min(D, v0.total_us + A)
        wasted = (1.0 - p) * waste
        wasted_evals = (1.0 - p) * evals * (waste / D if D > 0 else 0.0)
        total = p * hit + (1.0 - p) * miss
    else:
        total = miss
        hit = miss
    return StepTiming(
        profile=profile.name,
        overlap=overlap,
        tree_nodes=tree_nodes,
        tree_depth=tree_depth,
        draft_evals=evals,
        accepted=accepted,
        context_len=context_len,
        draft_us=D,
        tree_us=M,
        prefetch_us=vp.prefetched_bytes / hw.hbm_bw * 1e6,
        verify_us=vp.total_us,
        verify_hit_us=vh.total_us,
        hbm_verify_us=vp.hbm_us,
        accept_us=A,
        wait_us=wait,
        step_miss_us=miss,
        step_hit_us=hit,
        total_us=total,
        p_right=p,
        wasted_us=wasted,
        wasted_draft_evals=wasted_evals,
        spec_hbm_bytes=spec_bytes,
        tokens_per_step=accepted + 1.0,
        batch=batch,
        draft=draft,
        verify=vp,
        cycles=cyc,
    )


@dataclass(frozen=True)
class ARTiming:
    """Plain autoregressive decoding, one token per target pass.

    Attributes
    ----------
    verify : VerifyTime
        The one-token target pass.
    sample_us : float
        Token sampler (SpecDecode-1: ``2 * ceil(V / LANES) + latency`` cycles); 0 on a GPU
        (sampled on the GPU inside the pass, assumption).
    total_us : float
        Per token (of every sequence of the batch).
    batch : int
        Sequences decoded together.
    """

    verify: VerifyTime
    sample_us: float
    total_us: float
    batch: int = 1

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second of one sequence."""
        return 1e6 / self.total_us

    @property
    def throughput_tokens_per_s(self) -> float:
        """Tokens per second of the whole batch."""
        return self.batch * self.tokens_per_s


def ar_token_time(
    profile: Profile, *, context_len: int, overlap: str = "prefetch", batch: int = 1
) -> ARTiming:
    """Per-token time of plain autoregressive decoding on ``profile``, ``batch``
    sequences a pass (SpecDecode-1 samples their tokens one after another).

    With ``overlap != "none"`` (SpecDecode-1), the next token's first weights are
    prefetched while the token sampler runs.
    """
    check_step(profile, 1, 0, 0, context_len, 0, profile.overlap_modes[0], batch=batch)
    hw, t = profile.hardware, profile.target
    if profile.tree_manager is not None:
        tm = profile.tree_manager
        sample = batch * sampler_cycles(t.vocab, tm.lanes, tm.latency) / hw.clock_hz * 1e6
        pref = 0.0
        if overlap != "none":
            pref = min(prefetch_capacity(profile, batch), sample * 1e-6 * hw.hbm_bw)
        v = verify_time(
            profile,
            tree_nodes=1,
            tree_depth=0,
            context_len=context_len,
            prefetched_bytes=pref,
            table_cycles=batch * context_len * t.layers,
            batch=batch,
        )
    else:
        sample = 0.0
        v = verify_time(profile, tree_nodes=1, tree_depth=0, context_len=context_len, batch=batch)
    return ARTiming(v, sample, v.total_us + sample, batch)
