"""The phases of a decode step on the roofline: drafting and verification.

:func:`draft_time` times the draft phase (SpecDecode-1's draft accelerator, or
the draft model on a GPU) and :func:`verify_time` the target's forward pass over
the tree; each takes the larger of its compute and memory terms
(:class:`DraftTime`, :class:`VerifyTime`). :func:`prefetch_capacity` is the
verifier SRAM the HBM prefetch engine may fill while the tree is drafted.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.timing.profiles import Profile

__all__ = [
    "DraftTime",
    "KVTraffic",
    "VerifyTime",
    "draft_time",
    "prefetch_capacity",
    "verify_time",
]


@dataclass(frozen=True)
class DraftTime:
    """Draft phase of one step.

    Attributes
    ----------
    compute_us, memory_us, overhead_us, total_us : float
        MAC/FLOP time, weight/KV traffic time, dispatch overhead and the phase.
    hbm_bytes : float
        HBM traffic of the phase (draft weights beyond draft SRAM on SpecDecode-1;
        all draft weights and KV on a GPU).
    bound : str
        ``"compute"`` or ``"memory"``.
    """

    compute_us: float
    memory_us: float
    overhead_us: float
    total_us: float
    hbm_bytes: float
    bound: str


@dataclass(frozen=True)
class KVTraffic:
    """The KV bytes one verification moves between the KV pool and HBM, as a
    functional pool measured them (:mod:`sim.context`).

    Attributes
    ----------
    read_bytes : float
        Context KV the verifier reads from HBM-resident pages (``loc = 1``) in place.
    spill_bytes : float
        Pages spilled to HBM during the step (pool read, HBM write).
    fill_bytes : float
        Pages filled back from HBM during the step (HBM read, pool write).
    """

    read_bytes: float
    spill_bytes: float
    fill_bytes: float

    def __post_init__(self) -> None:
        for name in ("read_bytes", "spill_bytes", "fill_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1e30:
                raise ValueError(f"{name} = {v!r}: must be a number in 0 .. 1e30")

    @property
    def hbm_bytes(self) -> float:
        """HBM traffic: reads in place, spills and fills."""
        return self.read_bytes + self.spill_bytes + self.fill_bytes


@dataclass(frozen=True)
class VerifyTime:
    """Verification (target forward pass over the tree) of one step.

    Attributes
    ----------
    hbm_us, compute_us, kv_us, table_us : float
        Roofline terms: HBM bytes / bandwidth, FLOPs / tensor throughput, KV-pool
        bytes / pool bandwidth, KV-table inserts and lookups at the clock.
    overhead_us, total_us : float
        Dispatch overhead and ``max(terms) + overhead``.
    hbm_bytes, flops, prefetched_bytes : float
        Traffic and work; weight bytes already in verifier SRAM.
    bound : str
        The largest term: ``"hbm"``, ``"compute"``, ``"kv"`` or ``"table"``.
    """

    hbm_us: float
    compute_us: float
    kv_us: float
    table_us: float
    overhead_us: float
    total_us: float
    hbm_bytes: float
    flops: float
    prefetched_bytes: float
    bound: str


def draft_time(
    profile: Profile, *, draft_evals: int, passes: int, context_len: int, batch: int = 1
) -> DraftTime:
    """Draft time: ``draft_evals`` token evaluations in ``passes`` batched passes, for
    each of ``batch`` sequences drafted together.

    SpecDecode-1: ``max(MACs / (macs_per_cycle * clock), passes * max(SRAM read,
    spill from HBM, KV read))``. GPU: ``max(FLOPs / tensor, passes * (weights +
    KV) / HBM) + passes * pass_overhead``. One pass per tree level (EAGLE-2). A
    batch reads the weights once per pass; its FLOPs and KV are ``batch`` times
    one sequence's.
    """
    d, hw = profile.draft, profile.hardware
    if draft_evals == 0:
        return DraftTime(0.0, 0.0, 0.0, 0.0, 0.0, "compute")
    span = context_len + passes  # keys per query: context + the draft's own ancestors
    flops = batch * (d.matmul_flops(draft_evals) + d.attention_flops(draft_evals, span))
    kv = batch * context_len * d.kv_bytes_per_token
    w = d.streamed_bytes(batch * draft_evals / passes)  # a pass's weight reads
    if profile.draft_accel is not None and profile.kv_pool is not None:
        da = profile.draft_accel
        compute = flops / 2.0 / (da.macs_per_cycle * hw.clock_hz)
        spill = max(0.0, w - da.sram_bytes)
        per_pass = max(
            min(w, da.sram_bytes) / da.sram_bw,
            spill / hw.hbm_bw,
            kv / profile.kv_pool.bw,
        )
        hbm = passes * spill
    else:
        compute = flops / hw.tensor_flops(d.bytes_per_param)
        per_pass = (w + kv) / hw.hbm_bw
        hbm = passes * (w + kv)
    memory = passes * per_pass
    overhead = passes * hw.pass_overhead_us * 1e-6
    total = max(compute, memory) + overhead
    return DraftTime(
        compute * 1e6,
        memory * 1e6,
        overhead * 1e6,
        total * 1e6,
        hbm,
        "compute" if compute >= memory else "memory",
    )


def prefetch_capacity(profile: Profile, tree_nodes: int) -> float:
    """Verifier SRAM left for prefetched weights: all but the activations."""
    act = 2 * tree_nodes * profile.target.d_model * 2  # in/out buffers, 16-bit
    return max(0.0, min(profile.hardware.verifier_sram_bytes - act, profile.target.weight_bytes))


def verify_time(
    profile: Profile,
    *,
    tree_nodes: int,
    tree_depth: int,
    context_len: int,
    prefetched_bytes: float = 0.0,
    table_cycles: int = 0,
    extra_hbm_bytes: float = 0.0,
    kv_traffic: KVTraffic | None = None,
    batch: int = 1,
) -> VerifyTime:
    """Roofline verification time of a ``tree_nodes``-node tree over ``context_len``,
    for each of ``batch`` sequences verified in one pass (the weights read once,
    the FLOPs and KV ``batch`` times one sequence's).

    Terms (max taken, perfect overlap of streaming and compute):

    * HBM: ``(weights - prefetched + KV beyond the pool) / hbm_bw`` on
      SpecDecode-1; ``(weights + context KV + new KV) / hbm_bw`` on a GPU;
    * compute: ``2 * params * n + 4 * layers * heads * head_dim * n * (context
      + depth + 1)`` FLOPs at the weight precision's tensor rate (tree attention
      computes only ancestors and the context; the prefix KV is read once for
      all nodes);
    * KV pool: resident context KV + new KV over the pool bandwidth;
    * table: ``table_cycles`` (KV inserts/lookups) at the clock.

    ``extra_hbm_bytes`` is other HBM traffic in the same window (a speculative
    draft's weights beyond the draft SRAM).

    ``kv_traffic`` (SpecDecode-1 only): the pool's HBM traffic measured by a
    functional pool (:class:`KVTraffic`); it replaces the analytic "KV beyond
    the pool" (every position past ``kv_pool.bytes`` read from HBM) in the HBM
    term, and the pool term reads the context less ``read_bytes``, plus the
    spilled and filled pages. ``None`` (default): the analytic estimate.

    Raises
    ------
    ValueError
        ``kv_traffic`` given for a profile without a KV pool, or not a :class:`KVTraffic`,
        or with ``batch > 1`` (it is one sequence's measured traffic).
    """
    t, hw = profile.target, profile.hardware
    n = tree_nodes
    flops = batch * (t.matmul_flops(n) + t.attention_flops(n, context_len + tree_depth + 1))
    kv_ctx = batch * context_len * t.kv_bytes_per_token
    kv_new = batch * n * t.kv_bytes_per_token
    w = t.streamed_bytes(batch * n)  # every weight, or the experts the tokens route to
    if kv_traffic is not None and (
        profile.kv_pool is None or not isinstance(kv_traffic, KVTraffic) or batch != 1
    ):
        raise ValueError(
            f"kv_traffic = {kv_traffic!r}: must be a KVTraffic, on a profile with a kv_pool, "
            f"with batch = 1 (batch = {batch!r})"
        )
    if profile.kv_pool is not None:
        if kv_traffic is None:
            spill = max(0.0, kv_ctx - profile.kv_pool.bytes)
            on_pool = kv_ctx - spill + kv_new
        else:
            kt = kv_traffic
            spill = kt.hbm_bytes
            on_pool = max(0.0, kv_ctx - kt.read_bytes) + kv_new + kt.spill_bytes + kt.fill_bytes
        hbm = w - prefetched_bytes + spill + extra_hbm_bytes
        kv_us = on_pool / profile.kv_pool.bw * 1e6
    else:
        hbm = w - prefetched_bytes + kv_ctx + kv_new + extra_hbm_bytes
        kv_us = 0.0
    terms = {
        "hbm": hbm / hw.hbm_bw * 1e6,
        "compute": flops / hw.tensor_flops(t.bytes_per_param) * 1e6,
        "kv": kv_us,
        "table": table_cycles / hw.clock_hz * 1e6,
    }
    bound = max(terms, key=lambda k: terms[k])
    return VerifyTime(
        terms["hbm"],
        terms["compute"],
        terms["kv"],
        terms["table"],
        hw.pass_overhead_us,
        terms[bound] + hw.pass_overhead_us,
        hbm,
        flops,
        prefetched_bytes,
        bound,
    )
