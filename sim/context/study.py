"""The long-context study's compute: one history grows in a functional scaled pool.

A *series* is one profile, one pool size and one verifier read mode: a
:class:`golden.kvpool.KVPool` of ``PAGES = pool bytes // PAGE_BYTES`` pages
and the profile's HBM share of spill slots (:func:`sim.context.config.geometry`),
one sequence whose history grows through every context of the grid:

1. **Prefill** to the context: committed inserts of the default n-gram pair's
   long code prompt (``golden.models.corpus.code_prompts``, bytes of held-out
   standard-library source); every :data:`CHUNK` positions the prefill's
   attention scores the sinks and heavy hitters seen so far. When the pages
   run out, each insert's allocation spills the GCLOCK victim to HBM
   (allocation-driven spill: no watermark).
2. **Decode steps**: at every context the same steps, the trees and acceptance
   of a chip-model run (:func:`chip_trace`: ``python -m sim``'s default workload, the n-gram
   pair with the topology optimiser's trees, on the same profile; all of its
   steps, or the first ``steps`` of them in turn), so that two contexts differ
   by their context only. A step
   (a) inserts the tree speculatively (node ``j`` at ``len + depth(j)``: a
   first-child chain to the step's depth, the other nodes spread over depths
   ``1 .. depth``), its allocations spilling as needed; (b) the verifier reads
   the context: it looks up the *attended set* on the verifier's port (the
   sinks, the heavy hitters, the recent window) and ``samples`` random
   committed positions, each of which must hit; (c) it reports scores for the
   attended positions on chip (``score``: :data:`HEAVY_SCORE` for sinks and
   heavy hitters, 1 for the recent window); (d) it commits the root and the
   first ``accepted`` chain nodes.

**Attention model** (stated; StreamingLLM's sinks plus H2O's heavy hitters and
recent window): the attention mass of a step is on positions ``0 .. sinks - 1``,
one heavy hitter per ``heavy_every`` positions (at a seeded offset in each
block) and the last ``recent`` positions.

**Read modes.** ``dense``: exact attention reads every context position each
step; the HBM-resident ones (``loc = 1``) are read from HBM in place, and their
number is the pool's ``hbm_used`` (one sequence owns every used slot; it is
not looked up position by position: 128K Python lookups per step would take
~0.5 s). Nothing is filled (a fill would not spare a read). ``sparse``: the
verifier reads only the attended set (a Quest / H2O-style sparse attention):
an attended position found in HBM is filled back on chip (its read is the
fill), spilling a victim if no page is free. Both modes time the attention
FLOPs and the pool's reads over the whole context (conservative for ``sparse``).

**Timing** (:func:`sim.timing.step_time` on the profile with the series' pool
size): the measured traffic is a :class:`sim.timing.KVTraffic` (reads in place
``x kv_bytes_per_token``; spills and fills ``x PAGE_BYTES``) charged to the
verification's HBM stream beside the weights; the KV table's cycles are one
lookup per context position and one insert per tree node (a page holds
every layer: the table never sees a layer, decision 0016), a lookup that
misses the TLB :data:`sim.cycles.TLB_MISS_CYCLES` more (the step's miss rate
is its own sampled lookups'). The same step
with no KV traffic is the *unbounded* reference (a pool that never fills).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from golden.kvpool import KVPool
from golden.models.corpus import code_prompts
from sim.context.config import ContextConfig, PoolGeometry, geometry
from sim.cycles import TLB_MISS_CYCLES, accept_cycles
from sim.timing import KVTraffic, Profile, step_time

__all__ = [
    "CHUNK",
    "HEAVY_SCORE",
    "Point",
    "Series",
    "SeriesHardware",
    "TraceStep",
    "chip_trace",
    "hbm_reads_of",
    "run_series",
    "tree_depths",
]

#: prefill positions between two reports of the prefill's attention scores
CHUNK = 512
#: the longest code prompt cut (the held-out text allows ~135K bytes); longer histories
#: repeat it from its start
PROMPT_MAX = 131072 + 4096
#: the score a sink or heavy hitter gets per step (``CMAX`` is 7; the recent window gets 1)
HEAVY_SCORE = 3


@dataclass(frozen=True)
class TraceStep:
    """A chip-model step's tree and outcome: nodes (root included), depth, draft
    evaluations, accepted draft tokens."""

    n_nodes: int
    depth: int
    draft_evals: int
    accepted: int


@dataclass(frozen=True)
class SeriesHardware:
    """The tree manager's and the pool's parameters a series runs with.

    Attributes
    ----------
    select_lanes : int
        The one-pass token select's lanes (spec §3.12); ``0``: the profile's
        two-pass sampler.
    tlb_entries, tlb_ways : int
        The verifier port's TLB (``tlb_entries / tlb_ways`` sets, a power of two).
    n_nodes : int
        The largest tree (the pool's ``N_NODES``), ``>= 2``.
    """

    select_lanes: int = 0
    tlb_entries: int = 4096
    tlb_ways: int = 4
    n_nodes: int = 64


def chip_trace(profile: str) -> list[TraceStep]:
    """The steps of ``python -m sim``'s default run (the n-gram pair on code, the
    topology optimiser's trees) timed on ``profile``: ~0.2 s."""
    from sim.chip import Chip, ChipConfig

    res = Chip(ChipConfig(profile=profile)).run()
    return [TraceStep(s.n_nodes, s.depth, s.draft_evals, s.accepted) for s in res.seq_steps]


def tree_depths(n_nodes: int, depth: int) -> list[int]:
    """Each node's depth: nodes ``0 .. depth`` a chain, the others spread over
    ``1 .. depth`` in turn (node 0 the root)."""
    n_nodes = int(n_nodes)
    if n_nodes < 1 or not (0 <= depth < n_nodes) or (n_nodes > 1 and depth < 1):
        raise ValueError(f"depth = {depth!r}: must be in 1 .. n_nodes - 1 = {n_nodes - 1}")
    return [j if j <= depth else 1 + (j - depth - 1) % depth for j in range(n_nodes)]


@dataclass
class Point:
    """One context of a series: the measured steps summed.

    Attributes
    ----------
    context : int
        The grid's context (committed tokens before the first measured step).
    steps, emitted : int
        Measured steps and the tokens they emit (accepted + 1 each).
    total_us, unbounded_us, hbm_kv_us : float
        Step time summed; the same steps with no KV traffic (a pool that never
        fills); the KV traffic alone over ``hbm_bw``.
    spills, fills, hbm_reads : int
        Pages spilled and filled during the steps; HBM-resident positions read.
    spill_bytes, fill_bytes, read_bytes : float
        Their bytes (``PAGE_BYTES`` per spill and fill, ``kv_bytes_per_token`` per read).
    prefill_spills : int
        Pages spilled while the prefill grew the history to ``context``.
    hbm_resident, on_chip : int
        Positions in HBM and committed pages on chip after the steps.
    context_end : int
        Committed tokens after the steps.
    tlb_hits, tlb_misses : int
        The verifier port's TLB during the steps (the attended set's and the
        sampled positions' lookups).
    """

    context: int
    steps: int = 0
    emitted: int = 0
    total_us: float = 0.0
    unbounded_us: float = 0.0
    hbm_kv_us: float = 0.0
    spills: int = 0
    fills: int = 0
    hbm_reads: int = 0
    spill_bytes: float = 0.0
    fill_bytes: float = 0.0
    read_bytes: float = 0.0
    prefill_spills: int = 0
    hbm_resident: int = 0
    on_chip: int = 0
    context_end: int = 0
    tlb_hits: int = 0
    tlb_misses: int = 0

    @property
    def tokens_per_s(self) -> float:
        """Emitted tokens per second over the measured steps."""
        return self.emitted / self.total_us * 1e6

    @property
    def unbounded_tokens_per_s(self) -> float:
        """Tokens per second of the same steps with no KV traffic."""
        return self.emitted / self.unbounded_us * 1e6

    def as_dict(self) -> dict[str, float | int]:
        """The fields, the rates and the per-step means, for the JSON report."""
        d: dict[str, float | int] = dataclasses.asdict(self)
        d["tokens_per_s"] = self.tokens_per_s
        d["unbounded_tokens_per_s"] = self.unbounded_tokens_per_s
        for k in ("spills", "fills", "hbm_reads", "total_us", "hbm_kv_us"):
            d[f"{k}_per_step"] = getattr(self, k) / self.steps
        return d


@dataclass
class Series:
    """One profile, pool size and read mode: its geometry and its points in context order."""

    profile: str
    pool_gib: int
    mode: str
    geometry: PoolGeometry
    points: list[Point]


class _History:
    """The growing history of one series in its pool (module docstring)."""

    def __init__(
        self,
        cfg: ContextConfig,
        prof: Profile,
        geo: PoolGeometry,
        mode: str,
        steps: int,
        hw: SeriesHardware | None = None,
    ) -> None:
        self.cfg, self.prof, self.geo, self.mode = cfg, prof, geo, mode
        hw = hw or SeriesHardware()
        self.pool = KVPool(
            pages=geo.pages,
            hbm_pages=geo.hbm_pages,
            seqs=1,
            segs=2,
            trees=1,
            n_nodes=hw.n_nodes,
            max_depth=hw.n_nodes,
            pos_bits=18,
            token_bits=8,
            tlb_sets=hw.tlb_entries // hw.tlb_ways,
            tlb_ways=hw.tlb_ways,
        )
        top = cfg.contexts[-1] + (steps + 1) * hw.n_nodes  # a step commits <= n_nodes
        self.tokens = code_prompts(1, min(top, PROMPT_MAX), cfg.seed)[0]
        self.tokens += self.tokens[: max(0, top - len(self.tokens))]  # wraps round
        rng = np.random.default_rng([cfg.seed, 0xC0])
        blocks = top // cfg.heavy_every + 1
        offs = rng.integers(0, cfg.heavy_every, blocks)
        self.heavy = [k * cfg.heavy_every + int(o) for k, o in enumerate(offs)]
        self.sample_rng = random.Random(cfg.seed)

    @property
    def length(self) -> int:
        return self.pool.seq_len(0)

    def _important(self, n: int) -> list[int]:
        """Sinks and heavy hitters below ``n``, ascending, outside the recent window."""
        lo = max(0, n - self.cfg.recent)
        out = list(range(min(self.cfg.sinks, lo)))
        out += [h for h in self.heavy if self.cfg.sinks <= h < lo]
        return out

    def prefill(self, to: int) -> int:
        """Committed inserts up to ``to`` positions; the pages spilled."""
        pool, spilled = self.pool, 0
        for pos in range(self.length, to):
            spilled += pool.insert(0, pos, committed=True, token=self.tokens[pos]).spilled
            if (pos + 1) % CHUNK == 0 or pos + 1 == to:
                self._score(self._important(pos + 1), HEAVY_SCORE)
        return spilled

    def _score(self, positions: Sequence[int], s: int) -> None:
        pool = self.pool
        for pos in positions:
            pool.score(0, pos, s)  # a no-op for a position in HBM

    def step(self, ts: TraceStep) -> tuple[int, int, int, int]:
        """One decode step (module docstring): ``(context, spills, fills, reads in
        place)``; an HBM-resident position read is a read in place (``dense``) or a
        fill (``sparse``)."""
        pool, cfg, n = self.pool, self.cfg, self.length
        spills = fills = 0
        for j, d in enumerate(tree_depths(ts.n_nodes, ts.depth)):
            r = pool.insert(0, n + d, owner=j, token=self.tokens[n + d])
            spills += r.spilled
        important = self._important(n)
        recent = range(max(0, n - cfg.recent), n)
        in_hbm = []
        for pos in [*important, *recent]:
            hit, loc, _ = pool.lookup(1, 0, pos).value
            if not hit:
                raise AssertionError(f"committed position {pos} (len {n}) missed")
            if loc:
                in_hbm.append(pos)
        for _ in range(cfg.samples):
            if not pool.lookup(1, 0, self.sample_rng.randrange(n)).value[0]:
                raise AssertionError(f"a committed position (len {n}) missed")
        reads = pool.hbm_used if self.mode == "dense" else 0
        if self.mode == "sparse":
            for pos in in_hbm:
                spills += pool.fill(0, pos).spilled
                fills += 1
        self._score(important, HEAVY_SCORE)
        self._score(recent, 1)
        pool.commit(0, (1 << (ts.accepted + 1)) - 1, ts.accepted + 1)
        return n, spills, fills, reads


def _time(
    prof: Profile,
    cfg: ContextConfig,
    ts: TraceStep,
    ctx: int,
    kt: KVTraffic,
    hw: SeriesHardware,
    miss_rate: float = 0.0,
) -> tuple[float, float]:
    """``(step us, unbounded step us)`` of one measured step: its ``ctx`` lookups with
    ``miss_rate`` of them TLB misses (:data:`sim.cycles.TLB_MISS_CYCLES` more each)."""  # fmt: skip
    tm = prof.tree_manager
    assert tm is not None and prof.kv_pool is not None
    cyc = accept_cycles(
        ts.n_nodes,
        prof.target.vocab,
        hw.select_lanes or tm.lanes,
        ts.accepted,
        inserts=ts.n_nodes,
        lookups=ctx + round(miss_rate * ctx * TLB_MISS_CYCLES),
        lookup_ports=prof.kv_pool.lookup_ports,
        latency=tm.latency,
        sampler="one_pass" if hw.select_lanes else "two_pass",
    )
    kw = dict(
        tree_nodes=ts.n_nodes,
        tree_depth=ts.depth,
        accepted=ts.accepted,
        context_len=ctx,
        overlap=cfg.overlap,
        draft_evals=ts.draft_evals,
        accept_cycles=cyc,
    )
    st = step_time(prof, kv_traffic=kt, **kw)  # type: ignore[arg-type]
    free = step_time(prof, kv_traffic=KVTraffic(0.0, 0.0, 0.0), **kw)  # type: ignore[arg-type]
    return st.total_us, free.total_us


def run_series(
    cfg: ContextConfig,
    profile: str,
    pool_gib: int,
    mode: str,
    trace: Sequence[TraceStep],
    progress: Callable[[str], None] | None = None,
    hw: SeriesHardware | None = None,
) -> Series:
    """Grow one history through ``cfg.contexts`` (module docstring).

    Parameters
    ----------
    cfg : ContextConfig
    profile, pool_gib, mode : str, int, str
        The series: a profile of ``cfg.profiles``, a pool size, a read mode.
    trace : sequence of TraceStep
        The chip-model steps replayed at each context from the first (:func:`chip_trace`),
        non-empty.
    progress : callable or None
        Called with a short text after each point.
    hw : SeriesHardware or None
        The tree manager's and the pool's parameters (default: the profile's
        sampler, a 4,096-entry TLB, 64-node trees).

    Returns
    -------
    Series

    Raises
    ------
    ValueError
        An empty ``trace``, a pool smaller than 16 pages; ``AssertionError`` if a
        committed position ever misses (a lost position: a model bug).
    """
    if not trace:
        raise ValueError("trace = []: must hold at least one step")
    prof = cfg.profile(profile, pool_gib)
    geo = geometry(prof, pool_gib * 2**30)
    steps = cfg.steps or len(trace)
    hw = hw or SeriesHardware()
    hist = _History(cfg, prof, geo, mode, steps, hw)
    bw = prof.hardware.hbm_bw
    points = []
    for ctx in cfg.contexts:
        pt = Point(ctx, prefill_spills=hist.prefill(max(ctx, hist.length)))
        tlb0 = hist.pool.tlb_counts(1)
        for k in range(steps):
            ts = trace[k % len(trace)]
            c0 = hist.pool.tlb_counts(1)
            n, spills, fills, reads = hist.step(ts)
            c1 = hist.pool.tlb_counts(1)
            hits, misses = c1[0] - c0[0], c1[1] - c0[1]
            kt = KVTraffic(
                float(reads * geo.kv_bytes_per_token),
                float(spills * geo.page_bytes),
                float(fills * geo.page_bytes),
            )
            us, free = _time(prof, cfg, ts, n, kt, hw, misses / max(1, hits + misses))
            pt.steps += 1
            pt.emitted += ts.accepted + 1
            pt.total_us += us
            pt.unbounded_us += free
            pt.hbm_kv_us += kt.hbm_bytes / bw * 1e6
            pt.spills += spills
            pt.fills += fills
            pt.hbm_reads += reads + fills
            pt.spill_bytes += kt.spill_bytes
            pt.fill_bytes += kt.fill_bytes
            pt.read_bytes += kt.read_bytes
        tlb1 = hist.pool.tlb_counts(1)
        pt.tlb_hits, pt.tlb_misses = tlb1[0] - tlb0[0], tlb1[1] - tlb0[1]
        pt.hbm_resident = hist.pool.hbm_used
        pt.on_chip = hist.pool.committed_pages
        pt.context_end = hist.length
        points.append(pt)
        if progress is not None:
            progress(f"{profile} {pool_gib} GiB {mode} {ctx:,}: {pt.tokens_per_s:,.0f} tokens/s")
    return Series(profile, pool_gib, mode, geo, points)


def hbm_reads_of(pool: KVPool) -> int:
    """HBM-resident positions of sequence 0, found by looking every one up on the
    verifier's port (what ``dense`` reasons from ``hbm_used``; for tests): ``O(len)``."""
    return sum(pool.lookup(1, 0, p).value[1] for p in range(pool.seq_len(0)))
