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
same profile and with the GPU profiles. Profiles are TOML files in
``sim/profiles`` (:func:`load_profile`); every number there cites its source.

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
    acceptance (:func:`chain_alpha`); a chip model replaying real steps passes
    ``p_right=1.0`` or ``0.0``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from sim.cycles import AcceptCycles, sampler_cycles
from sim.cycles import accept_cycles as cycle_model

__all__ = [
    "OVERLAP_MODES",
    "PRECISIONS",
    "ARTiming",
    "ArticleView",
    "Disagreement",
    "DraftTime",
    "Profile",
    "ProjectionRow",
    "RooflineView",
    "StepTiming",
    "VerifyTime",
    "accepted_distribution",
    "ar_token_time",
    "article_steps",
    "article_view",
    "chain_alpha",
    "disagreements",
    "draft_evals_of",
    "draft_time",
    "known_profiles",
    "load_profile",
    "predicted_tip_probability",
    "projections",
    "roofline_view",
    "sample_steps",
    "schedule",
    "step_time",
    "verify_time",
]

PROFILE_DIR = Path(__file__).with_name("profiles")
OVERLAP_MODES = ("none", "prefetch", "speculative")
#: Named weight precisions (bytes per parameter) accepted by ``load_profile(precision=...)``.
PRECISIONS: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
                                "int4": 0.5}
_KINDS = ("specdecode", "gpu")

# --------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class Hardware:
    """Clock, HBM and tensor throughput of a device (``[hardware]``)."""

    clock_hz: float
    hbm_bw: float
    hbm_bytes: float
    tensor_flops_16: float
    tensor_flops_8: float
    verifier_sram_bytes: float
    pass_overhead_us: float
    cpu_round_trip_us: float

    def tensor_flops(self, bytes_per_param: float) -> float:
        """Dense FLOP/s for weights of ``bytes_per_param`` (8-bit math at <= 1 byte)."""
        return self.tensor_flops_8 if bytes_per_param <= 1.0 else self.tensor_flops_16


@dataclass(frozen=True)
class DraftAccel:
    """SpecDecode-1's draft accelerator (``[draft_accel]``)."""

    macs_per_cycle: int
    sram_bytes: float
    sram_bw: float


@dataclass(frozen=True)
class KVPool:
    """SpecDecode-1's shared KV-cache pool (``[kv_pool]``)."""

    bytes: float
    bw: float
    lookup_ports: int


@dataclass(frozen=True)
class TreeManager:
    """Token tree manager parameters (``[tree_manager]``)."""

    max_nodes: int
    lanes: int
    latency: str


@dataclass(frozen=True)
class ModelSpec:
    """A transformer (``[target]`` / ``[draft]``).

    ``weight_bytes = params * bytes_per_param``; a token costs ``params`` MACs in
    the matmuls (the 2N FLOPs/token rule, Kaplan et al. 2020) plus attention.
    """

    name: str
    params: float
    layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int
    bytes_per_param: float
    kv_bytes: float

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights."""
        return self.params * self.bytes_per_param

    @property
    def kv_bytes_per_token(self) -> float:
        """K and V bytes of one token over all layers."""
        return 2.0 * self.layers * self.n_kv_heads * self.head_dim * self.kv_bytes

    def matmul_flops(self, tokens: float) -> float:
        """Weight-matmul FLOPs of ``tokens`` tokens (2 per parameter)."""
        return 2.0 * self.params * tokens

    def attention_flops(self, tokens: float, span: float) -> float:
        """``QK^T`` and ``AV`` FLOPs of ``tokens`` queries over ``span`` keys each."""
        return 4.0 * self.layers * self.n_heads * self.head_dim * tokens * span


@dataclass(frozen=True)
class Workload:
    """The stated example step both views are computed on (``[workload]``)."""

    tree_nodes: int
    tree_depth: int
    draft_evals: int
    accepted: int
    context_len: int
    overlap: str


@dataclass(frozen=True)
class ArticleSpec:
    """The article's own per-step figures (``[article]``)."""

    draft_us_per_token: float
    draft_tokens: int
    verify_us: float
    accept_us: float
    tokens_per_step: float
    overlap: str
    claimed_step_us: float
    claimed_tokens_per_s: float
    gpu_claimed_tokens_per_s: tuple[float, float]


@dataclass(frozen=True)
class Profile:
    """A device running a target model: everything the timing model needs.

    Attributes
    ----------
    name, kind, description : str
        ``kind`` is ``"specdecode"`` or ``"gpu"``.
    overlap_modes : tuple[str, ...]
        Overlap modes the device supports (GPUs: ``("none",)``).
    gpu_baseline : str or None
        The GPU profile this one is compared with.
    hardware, target, draft, workload
        Sections of the TOML file.
    draft_accel, kv_pool, tree_manager, article
        SpecDecode-1 only (``None`` for GPUs).
    """

    name: str
    kind: str
    description: str
    overlap_modes: tuple[str, ...]
    hardware: Hardware
    target: ModelSpec
    draft: ModelSpec
    workload: Workload
    gpu_baseline: str | None = None
    draft_accel: DraftAccel | None = None
    kv_pool: KVPool | None = None
    tree_manager: TreeManager | None = None
    article: ArticleSpec | None = None

    @property
    def is_gpu(self) -> bool:
        """True for a GPU baseline (draft on the same device, CPU acceptance)."""
        return self.kind == "gpu"


_SECTIONS: dict[str, type] = {
    "hardware": Hardware,
    "draft_accel": DraftAccel,
    "kv_pool": KVPool,
    "tree_manager": TreeManager,
    "target": ModelSpec,
    "draft": ModelSpec,
    "workload": Workload,
    "article": ArticleSpec,
}
_REQUIRED = {
    "specdecode": ("hardware", "draft_accel", "kv_pool", "tree_manager", "target", "draft",
                   "workload", "article"),
    "gpu": ("hardware", "target", "draft", "workload"),
}
# Fields that may be zero (all other numbers must be > 0).
_MAY_BE_ZERO = {"pass_overhead_us", "cpu_round_trip_us", "accepted", "context_len",
                "tree_depth", "draft_evals", "accept_us"}
_ALIASES = {"weight_bytes": "target.bytes_per_param", "draft_weight_bytes": "draft.bytes_per_param"}


def known_profiles() -> list[str]:
    """Names of the profiles in ``sim/profiles``."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def _number(key: str, value: object, *, integer: bool, zero_ok: bool) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} = {value!r}: must be a number")
    if integer and not (isinstance(value, int) or float(value).is_integer()):
        raise ValueError(f"{key} = {value!r}: must be an integer")
    if not math.isfinite(value):
        raise ValueError(f"{key} = {value!r}: must be finite")
    if value < 0 or (value == 0 and not zero_ok):
        raise ValueError(f"{key} = {value!r}: must be {'>= 0' if zero_ok else '> 0'}")
    return int(value) if integer else float(value)


def _build(section: str, cls: type, raw: Mapping[str, Any]) -> Any:
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise ValueError(f"{section}.{unknown[0]}: unknown field (known: {', '.join(names)})")
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        key = f"{section}.{f.name}"
        if f.name not in raw:
            raise ValueError(f"{key}: missing")
        value = raw[f.name]
        if f.type == "str":
            if not isinstance(value, str):
                raise ValueError(f"{key} = {value!r}: must be a string")
            kwargs[f.name] = value
        elif f.type.startswith("tuple"):
            if not isinstance(value, list | tuple) or len(value) != 2:
                raise ValueError(f"{key} = {value!r}: must be a [low, high] pair")
            kwargs[f.name] = tuple(_number(key, v, integer=False, zero_ok=False) for v in value)
        else:
            kwargs[f.name] = _number(key, value, integer=f.type == "int",
                                     zero_ok=f.name in _MAY_BE_ZERO)
    return cls(**kwargs)


def _resolve_key(key: str, data: Mapping[str, Any]) -> tuple[str, str]:
    key = _ALIASES.get(key, key)
    if "." in key or "__" in key:
        section, _, name = key.replace("__", ".").partition(".")
        if section not in _SECTIONS or section not in data:
            raise ValueError(f"override {key!r}: unknown section {section!r} "
                             f"(known: {', '.join(s for s in _SECTIONS if s in data)})")
        return section, name
    hits = [s for s in _SECTIONS if s in data and key in {f.name for f in fields(_SECTIONS[s])}]
    if not hits:
        raise ValueError(f"override {key!r}: unknown field (use section.field, or weight_bytes, "
                         f"precision)")
    if len(hits) > 1:
        raise ValueError(f"override {key!r}: ambiguous, use one of "
                         f"{', '.join(f'{s}.{key}' for s in hits)}")
    return hits[0], key


def load_profile(name: str, **overrides: Any) -> Profile:
    """Load ``sim/profiles/<name>.toml`` with optional overrides.

    Parameters
    ----------
    name : str
        One of :func:`known_profiles`.
    **overrides
        ``section.field=value`` (pass as ``**{"hardware.hbm_bw": 4e12}``),
        ``section__field=value``, a field name unique across the profile's
        sections (``hbm_bw=4e12``, ``context_len=8192``), ``weight_bytes``
        (target bytes per parameter), ``draft_weight_bytes`` or ``precision``
        (one of :data:`PRECISIONS`, for the target).

    Returns
    -------
    Profile

    Raises
    ------
    ValueError
        Unknown profile (listing the known ones); unknown, ambiguous or invalid
        override or field (naming it); impossible parameters (weights larger
        than HBM, GQA heads that do not divide, a workload the tree manager
        cannot run).
    """
    known = known_profiles()
    if name not in known:
        raise ValueError(f"unknown profile {name!r}: known profiles are {', '.join(known)}")
    with (PROFILE_DIR / f"{name}.toml").open("rb") as fh:
        data: dict[str, Any] = tomllib.load(fh)
    for key, value in overrides.items():
        if key == "precision":
            if value not in PRECISIONS:
                raise ValueError(f"precision = {value!r}: must be one of {', '.join(PRECISIONS)}")
            key, value = "target.bytes_per_param", PRECISIONS[value]
        section, fname = _resolve_key(key, data)
        if fname not in {f.name for f in fields(_SECTIONS[section])}:
            raise ValueError(f"override {key!r}: {section} has no field {fname!r}")
        data[section] = {**data[section], fname: value}
    return _profile_from(name, data)


def _profile_from(name: str, data: Mapping[str, Any]) -> Profile:
    kind = data.get("kind")
    if kind not in _KINDS:
        raise ValueError(f"{name}: kind = {kind!r}: must be one of {', '.join(_KINDS)}")
    for section in _REQUIRED[kind]:
        if section not in data:
            raise ValueError(f"{name}: section [{section}] missing")
    built = {s: _build(s, _SECTIONS[s], data[s]) for s in _REQUIRED[kind]}
    modes = tuple(data.get("overlap_modes", ()))
    bad = [m for m in modes if m not in OVERLAP_MODES]
    if not modes or bad:
        raise ValueError(f"overlap_modes = {list(modes)!r}: must be a non-empty subset of "
                         f"{OVERLAP_MODES}")
    prof = Profile(name=name, kind=kind, description=str(data.get("description", "")),
                   overlap_modes=modes, gpu_baseline=data.get("gpu_baseline"), **built)
    _validate(prof)
    return prof


def _validate(p: Profile) -> None:
    for sec, m in (("target", p.target), ("draft", p.draft)):
        if m.bytes_per_param > 4:
            raise ValueError(f"{sec}.bytes_per_param = {m.bytes_per_param}: must be <= 4")
        if m.n_heads % m.n_kv_heads:
            raise ValueError(f"{sec}.n_kv_heads = {m.n_kv_heads}: must divide "
                             f"{sec}.n_heads = {m.n_heads}")
    resident = p.target.weight_bytes + (p.draft.weight_bytes if p.is_gpu else 0.0)
    if resident > p.hardware.hbm_bytes:
        raise ValueError(
            f"target.bytes_per_param = {p.target.bytes_per_param}: {resident / 1e9:.1f} GB of "
            f"weights exceed hardware.hbm_bytes = {p.hardware.hbm_bytes / 1e9:.1f} GB")
    if p.tree_manager is not None:
        tm = p.tree_manager
        if not 1 <= tm.lanes <= 16:
            raise ValueError(f"tree_manager.lanes = {tm.lanes}: must be in 1..16 (SPEC §5)")
        if not 1 <= tm.max_nodes <= 1024:
            raise ValueError(f"tree_manager.max_nodes = {tm.max_nodes}: must be in 1..1024")
        if tm.latency not in ("rtl", "spec"):
            raise ValueError(f"tree_manager.latency = {tm.latency!r}: must be 'rtl' or 'spec'")
    if p.article is not None and p.article.overlap not in ("none", "prefetch"):
        raise ValueError(f"article.overlap = {p.article.overlap!r}: must be 'none' or 'prefetch'")
    if p.target.vocab > 1 << 17:
        raise ValueError(f"target.vocab = {p.target.vocab}: must be <= 131072 (TOKEN_BITS 17)")
    w = p.workload
    _check_step(p, w.tree_nodes, w.tree_depth, w.accepted, w.context_len, w.draft_evals,
                w.overlap, prefix="workload.")


def _check_step(p: Profile, tree_nodes: object, tree_depth: object, accepted: object,
                context_len: object, draft_evals: object, overlap: object,
                prefix: str = "") -> None:
    def chk(name: str, v: object, lo: int, hi: int) -> int:
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ValueError(f"{prefix}{name} = {v!r}: must be an integer")
        if not lo <= v <= hi:
            raise ValueError(f"{prefix}{name} = {v!r}: must be in {lo}..{hi}")
        return int(v)

    max_nodes = p.tree_manager.max_nodes if p.tree_manager else 1024
    n = chk("tree_nodes", tree_nodes, 1, max_nodes)
    d = chk("tree_depth", tree_depth, 1 if n > 1 else 0, n - 1)
    chk("accepted", accepted, 0, d)
    ctx = chk("context_len", context_len, 0, 1 << 24)
    # Each level's nodes come from expanding nodes of the level above: >= 1 draft
    # evaluation per level, and at most one per non-leaf node.
    chk("draft_evals", draft_evals, d, n - 1)
    if overlap not in p.overlap_modes:
        raise ValueError(f"{prefix}overlap = {overlap!r}: profile {p.name} supports "
                         f"{', '.join(p.overlap_modes)}")
    kv = (ctx + n) * p.target.kv_bytes_per_token
    room = p.hardware.hbm_bytes - p.target.weight_bytes + (p.kv_pool.bytes if p.kv_pool else 0)
    if kv > room:
        raise ValueError(f"{prefix}context_len = {ctx}: {kv / 1e9:.1f} GB of KV cache exceed "
                         f"the {room / 1e9:.1f} GB left for it")


# --------------------------------------------------------------------------- acceptance model


def chain_alpha(mean_accepted: float, depth: int) -> float:
    """Per-token acceptance ``alpha`` of the chain equivalent to a tree.

    Solves SPEC §7's ``alpha (1 - alpha**depth) / (1 - alpha) = mean_accepted``
    by bisection (the left side increases with ``alpha``).

    Parameters
    ----------
    mean_accepted : float
        Mean accepted draft tokens per step, in ``[0, depth]``.
    depth : int
        Tree depth (the longest acceptable path), ``>= 0``.

    Returns
    -------
    float
        ``alpha`` in ``[0, 1]``.
    """
    if depth < 0:
        raise ValueError(f"depth = {depth!r}: must be >= 0")
    if not 0 <= mean_accepted <= depth:
        raise ValueError(f"mean_accepted = {mean_accepted!r}: must be in 0..{depth}")
    if depth == 0 or mean_accepted == 0:
        return 0.0
    if mean_accepted == depth:
        return 1.0

    def f(a: float) -> float:
        return sum(a**i for i in range(1, depth + 1))

    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < mean_accepted else (lo, mid)
    return 0.5 * (lo + hi)


def predicted_tip_probability(mean_accepted: float, depth: int) -> float:
    """Probability that the speculative draft's predicted tip is right.

    Assumption (stated in the module docstring): the tree behaves as its chain
    equivalent (:func:`chain_alpha`); the prediction is the draft's top path to
    ``depth`` plus its top guess for the extra token, right with probability
    ``alpha ** (depth + 1)``. Optimistic for bushy trees (siblings raise the
    mean accepted without raising the top path's probability); pessimistic in
    that no partially right speculative draft is salvaged.
    """
    a = chain_alpha(mean_accepted, depth)
    return a ** (depth + 1)


def accepted_distribution(alpha: float, depth: int) -> np.ndarray:
    """``P(accepted = k)``, ``k = 0..depth``, for a chain with acceptance ``alpha``."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha = {alpha!r}: must be in [0, 1]")
    k = np.arange(depth + 1)
    p = alpha**k * (1.0 - alpha)
    p[depth] = alpha**depth
    return p


def draft_evals_of(parents: Sequence[int]) -> int:
    """Draft-model evaluations a tree needs: its nodes with children (root included)."""
    return len({int(p) for p in list(parents)[1:]})


# --------------------------------------------------------------------------- phases


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


def draft_time(profile: Profile, *, draft_evals: int, passes: int, context_len: int) -> DraftTime:
    """Draft time: ``draft_evals`` token evaluations in ``passes`` batched passes.

    SpecDecode-1: ``max(MACs / (macs_per_cycle * clock), passes * max(SRAM read,
    spill from HBM, KV read))``. GPU: ``max(FLOPs / tensor, passes * (weights +
    KV) / HBM) + passes * pass_overhead``. One pass per tree level (EAGLE-2).
    """
    d, hw = profile.draft, profile.hardware
    if draft_evals == 0:
        return DraftTime(0.0, 0.0, 0.0, 0.0, 0.0, "compute")
    span = context_len + passes  # keys per query: context + the draft's own ancestors
    flops = d.matmul_flops(draft_evals) + d.attention_flops(draft_evals, span)
    kv = context_len * d.kv_bytes_per_token
    if profile.draft_accel is not None and profile.kv_pool is not None:
        da = profile.draft_accel
        compute = flops / 2.0 / (da.macs_per_cycle * hw.clock_hz)
        spill = max(0.0, d.weight_bytes - da.sram_bytes)
        per_pass = max(min(d.weight_bytes, da.sram_bytes) / da.sram_bw, spill / hw.hbm_bw,
                       kv / profile.kv_pool.bw)
        hbm = passes * spill
    else:
        compute = flops / hw.tensor_flops(d.bytes_per_param)
        per_pass = (d.weight_bytes + kv) / hw.hbm_bw
        hbm = passes * (d.weight_bytes + kv)
    memory = passes * per_pass
    overhead = passes * hw.pass_overhead_us * 1e-6
    total = max(compute, memory) + overhead
    return DraftTime(compute * 1e6, memory * 1e6, overhead * 1e6, total * 1e6, hbm,
                     "compute" if compute >= memory else "memory")


def _prefetch_capacity(profile: Profile, tree_nodes: int) -> float:
    """Verifier SRAM left for prefetched weights: all but the activations."""
    act = 2 * tree_nodes * profile.target.d_model * 2  # in/out buffers, 16-bit
    return max(0.0, min(profile.hardware.verifier_sram_bytes - act, profile.target.weight_bytes))


def verify_time(profile: Profile, *, tree_nodes: int, tree_depth: int, context_len: int,
                prefetched_bytes: float = 0.0, table_cycles: int = 0,
                extra_hbm_bytes: float = 0.0) -> VerifyTime:
    """Roofline verification time of a ``tree_nodes``-node tree over ``context_len``.

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
    """
    t, hw = profile.target, profile.hardware
    n = tree_nodes
    flops = t.matmul_flops(n) + t.attention_flops(n, context_len + tree_depth + 1)
    kv_ctx = context_len * t.kv_bytes_per_token
    kv_new = n * t.kv_bytes_per_token
    if profile.kv_pool is not None:
        spill = max(0.0, kv_ctx - profile.kv_pool.bytes)
        hbm = t.weight_bytes - prefetched_bytes + spill + extra_hbm_bytes
        kv_us = (kv_ctx - spill + kv_new) / profile.kv_pool.bw * 1e6
    else:
        hbm = t.weight_bytes - prefetched_bytes + kv_ctx + kv_new + extra_hbm_bytes
        kv_us = 0.0
    terms = {
        "hbm": hbm / hw.hbm_bw * 1e6,
        "compute": flops / hw.tensor_flops(t.bytes_per_param) * 1e6,
        "kv": kv_us,
        "table": table_cycles / hw.clock_hz * 1e6,
    }
    bound = max(terms, key=lambda k: terms[k])
    return VerifyTime(terms["hbm"], terms["compute"], terms["kv"], terms["table"],
                      hw.pass_overhead_us, terms[bound] + hw.pass_overhead_us, hbm, flops,
                      prefetched_bytes, bound)


# --------------------------------------------------------------------------- step


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
        Tree mask generation between drafting and verification.
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
        """Emitted tokens per second, single stream."""
        return 1e6 / self.us_per_token

    def phases(self) -> dict[str, float]:
        """Per-phase breakdown (us) for reports."""
        return {"draft": self.draft_us, "tree": self.tree_us, "prefetch": self.prefetch_us,
                "verify": self.verify_us, "accept": self.accept_us, "total": self.total_us,
                "wasted": self.wasted_us}


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

    Returns
    -------
    StepTiming

    Raises
    ------
    ValueError
        Naming the argument that is out of range or inconsistent.
    """
    evals = tree_nodes - 1 if draft_evals is None else draft_evals
    _check_step(profile, tree_nodes, tree_depth, accepted, context_len, evals, overlap)
    if p_right is not None and not (isinstance(p_right, int | float) and 0 <= p_right <= 1):
        raise ValueError(f"p_right = {p_right!r}: must be in [0, 1]")
    hw, t = profile.hardware, profile.target
    draft = draft_time(profile, draft_evals=evals, passes=tree_depth, context_len=context_len)
    D = draft.total_us

    cyc: AcceptCycles | None = None
    if profile.tree_manager is not None:
        tm = profile.tree_manager
        ports = profile.kv_pool.lookup_ports if profile.kv_pool else 1
        cyc = cycle_model(tree_nodes, t.vocab, tm.lanes, accepted,
                               inserts=tree_nodes * t.layers, lookups=context_len * t.layers,
                               lookup_ports=ports, latency=tm.latency)
        if isinstance(accept_cycles, AcceptCycles):
            cyc = accept_cycles
        elif accept_cycles is not None:
            if isinstance(accept_cycles, bool) or not isinstance(accept_cycles, int | np.integer) \
                    or accept_cycles < 0:
                raise ValueError(f"accept_cycles = {accept_cycles!r}: must be an AcceptCycles, "
                                 f"an int >= 0 or None")
        us = 1e6 / hw.clock_hz
        M = cyc.pre_verify * us
        post = cyc.post_verify if accept_cycles is None or isinstance(accept_cycles, AcceptCycles) \
            else int(accept_cycles)
        A = post * us
        table = cyc.during_verify
    else:
        M, A, table = 0.0, hw.cpu_round_trip_us, 0

    def verify(window_us: float, extra: float = 0.0) -> VerifyTime:
        pref = 0.0
        if window_us > 0:
            avail = window_us * 1e-6 * hw.hbm_bw - (draft.hbm_bytes if window_us >= D else 0.0)
            pref = max(0.0, min(_prefetch_capacity(profile, tree_nodes), avail))
        return verify_time(profile, tree_nodes=tree_nodes, tree_depth=tree_depth,
                           context_len=context_len, prefetched_bytes=pref, table_cycles=table,
                           extra_hbm_bytes=extra)

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
        profile=profile.name, overlap=overlap, tree_nodes=tree_nodes, tree_depth=tree_depth,
        draft_evals=evals, accepted=accepted, context_len=context_len, draft_us=D, tree_us=M,
        prefetch_us=vp.prefetched_bytes / hw.hbm_bw * 1e6, verify_us=vp.total_us,
        verify_hit_us=vh.total_us, hbm_verify_us=vp.hbm_us, accept_us=A, wait_us=wait,
        step_miss_us=miss, step_hit_us=hit, total_us=total, p_right=p, wasted_us=wasted,
        wasted_draft_evals=wasted_evals, spec_hbm_bytes=spec_bytes,
        tokens_per_step=accepted + 1.0, draft=draft,
        verify=vp, cycles=cyc)



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
        Per token.
    """

    verify: VerifyTime
    sample_us: float
    total_us: float

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second."""
        return 1e6 / self.total_us


def ar_token_time(profile: Profile, *, context_len: int, overlap: str = "prefetch") -> ARTiming:
    """Per-token time of plain autoregressive decoding on ``profile``.

    With ``overlap != "none"`` (SpecDecode-1), the next token's first weights are
    prefetched while the token sampler runs.
    """
    _check_step(profile, 1, 0, 0, context_len, 0, profile.overlap_modes[0])
    hw, t = profile.hardware, profile.target
    if profile.tree_manager is not None:
        tm = profile.tree_manager
        sample = sampler_cycles(t.vocab, tm.lanes, tm.latency) / hw.clock_hz * 1e6
        pref = 0.0
        if overlap != "none":
            pref = min(_prefetch_capacity(profile, 1), sample * 1e-6 * hw.hbm_bw)
        v = verify_time(profile, tree_nodes=1, tree_depth=0, context_len=context_len,
                        prefetched_bytes=pref, table_cycles=context_len * t.layers)
    else:
        sample = 0.0
        v = verify_time(profile, tree_nodes=1, tree_depth=0, context_len=context_len)
    return ARTiming(v, sample, v.total_us + sample)


# --------------------------------------------------------------------------- views


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
    error : float
        ``tokens_per_s / claimed - 1``.
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
        """Relative error of the reproduced tokens/s against the article's claim."""
        return self.tokens_per_s / self.claimed_tokens_per_s - 1.0


def _article(profile: Profile) -> ArticleSpec:
    if profile.article is None:
        raise ValueError(f"profile {profile.name!r} has no [article] section (a GPU baseline)")
    return profile.article


def article_view(profile: Profile) -> ArticleView:
    """Reproduce the article's arithmetic for ``profile`` (7B: ~7,100, 70B: ~1,600 tokens/s).

    7B: "50 us/token x 10 tree nodes = 500 us ... ~200 us ... ~1 us. Total per
    step: ~700 us producing ~5 accepted tokens". 70B: the figure's 500 us draft
    (with "Prefetch L1-L4"), verify to ~3,000 us, ~5 tokens.
    """
    a = _article(profile)
    draft = a.draft_us_per_token * a.draft_tokens
    step = draft + a.verify_us + a.accept_us
    upt = step / a.tokens_per_step
    return ArticleView(profile.name, draft, a.verify_us, a.accept_us, step, a.tokens_per_step,
                       upt, 1e6 / upt, a.claimed_tokens_per_s, a.claimed_step_us, a.overlap)


def article_steps(profile: Profile, n: int = 3) -> list[StepTiming]:
    """``n`` steps of the article's own timeline (for :func:`sim.plots.timeline_png`)."""
    a, v = _article(profile), article_view(profile)
    w = profile.workload
    pref = v.draft_us if a.overlap == "prefetch" else 0.0
    st = StepTiming(
        profile=profile.name, overlap=a.overlap, tree_nodes=w.tree_nodes,
        tree_depth=w.tree_depth, draft_evals=a.draft_tokens, accepted=w.accepted,
        context_len=w.context_len, draft_us=v.draft_us, tree_us=0.0, prefetch_us=pref,
        verify_us=v.verify_us, verify_hit_us=v.verify_us, hbm_verify_us=v.verify_us,
        accept_us=v.accept_us, wait_us=0.0, step_miss_us=v.step_us, step_hit_us=v.step_us,
        total_us=v.step_us, tokens_per_step=a.tokens_per_step, source="article")
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


def roofline_view(profile: Profile, *, tree_nodes: int | None = None,
                  tree_depth: int | None = None, draft_evals: int | None = None,
                  accepted: int | None = None, context_len: int | None = None,
                  overlap: str | None = None) -> RooflineView:
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
        if draft_evals is None else draft_evals,
    }
    mode = w.overlap if overlap is None else overlap
    steps = {m: step_time(profile, overlap=m, **kw) for m in profile.overlap_modes}
    if mode not in steps:
        raise ValueError(f"overlap = {mode!r}: profile {profile.name} supports "
                         f"{', '.join(profile.overlap_modes)}")
    ar = ar_token_time(profile, context_len=kw["context_len"],
                       overlap="none" if mode == "none" else "prefetch")
    return RooflineView(profile.name, mode, steps, ar)


# --------------------------------------------------------------------------- disagreements


@dataclass(frozen=True)
class Disagreement:
    """One gap between the article's arithmetic and the first-principles model.

    Attributes
    ----------
    topic : str
    article : str
        What the article says or implies, with its number.
    first_principles : str
        The number from the stated hardware.
    ratio : float
        first principles / article (for times; see ``explanation`` for others).
    explanation : str
        Why, in numbers.
    """

    topic: str
    article: str
    first_principles: str
    ratio: float
    explanation: str


def _gb(x: float) -> str:
    return f"{x / 1e9:.2f} GB"


def disagreements(profile: Profile) -> list[Disagreement]:
    """Every gap between :func:`article_view` and :func:`roofline_view`, in numbers."""
    p, a = profile, _article(profile)
    av, rv = article_view(p), roofline_view(p)
    st = rv.step
    hw, t, d, w = p.hardware, p.target, p.draft, p.workload
    assert st.verify is not None and st.draft is not None and st.cycles is not None
    assert p.draft_accel is not None and p.kv_pool is not None and p.tree_manager is not None
    out: list[Disagreement] = []
    W = t.weight_bytes
    tf = hw.tensor_flops(t.bytes_per_param)
    v0 = verify_time(p, tree_nodes=w.tree_nodes, tree_depth=w.tree_depth,
                     context_len=w.context_len)

    out.append(Disagreement(
        "throughput", f"{av.tokens_per_s:,.0f} tokens/s ({av.step_us:,.0f} us/step, "
        f"claim {a.claimed_tokens_per_s:,.0f})",
        f"{st.tokens_per_s:,.0f} tokens/s ({st.total_us:,.0f} us/step, {st.overlap})",
        st.total_us / av.step_us,
        f"same {av.tokens_per_step:g} tokens/step; the step differs by draft "
        f"{st.draft_us - av.draft_us:+,.0f} us, verify {st.verify_us - av.verify_us:+,.0f} us, "
        f"tree+accept {st.tree_us + st.accept_us - av.accept_us:+,.1f} us (rows below)"))

    need_bw = W / (av.verify_us * 1e-6)
    need_fl = v0.flops / (av.verify_us * 1e-6)
    out.append(Disagreement(
        "verify time", f"{av.verify_us:,.0f} us for a {w.tree_nodes}-node tree",
        f"{st.verify_us:,.0f} us ({st.verify.bound}-bound): HBM {v0.hbm_us:,.0f} us, "
        f"compute {v0.compute_us:,.0f} us",
        st.verify_us / av.verify_us,
        f"{t.name} at {t.bytes_per_param:g} B/param is {_gb(W)} of weights: "
        f"{av.verify_us:,.0f} us needs {need_bw / 1e12:.1f} TB/s "
        f"({need_bw / hw.hbm_bw:.1f}x the {hw.hbm_bw / 1e12:g} TB/s HBM) and "
        f"{v0.flops / 1e12:.2f} TFLOP in {av.verify_us:,.0f} us needs "
        f"{need_fl / 1e15:.2f} PFLOP/s ({need_fl / tf:.1f}x the assumed "
        f"{tf / 1e12:.0f} TFLOP/s of 256 tensor cores at {hw.clock_hz / 1e9:g} GHz)"))

    ridge = tf / hw.hbm_bw  # FLOP per byte
    ridge_nodes = ridge * t.bytes_per_param / 2.0
    need_mem_bound = 2.0 * w.tree_nodes * t.params / (W / hw.hbm_bw)
    n_r = max(w.tree_depth + 1, min(w.tree_nodes, round(ridge_nodes)))
    st_r = step_time(p, tree_nodes=n_r, tree_depth=w.tree_depth, accepted=w.accepted,
                     context_len=w.context_len, overlap=st.overlap,
                     draft_evals=min(w.draft_evals, n_r - 1))
    even = st_r.total_us / st.total_us * st.tokens_per_step
    out.append(Disagreement(
        "verifier balance", "\"The compute is moderate (comparable to a 64-token prefill)\"; "
        "verification \"limited by HBM bandwidth\"",
        f"ridge {ridge:.0f} FLOP/B = {ridge_nodes:.0f} tree nodes at {t.bytes_per_param:g} "
        f"B/param", w.tree_nodes / ridge_nodes,
        f"a {w.tree_nodes}-node tree does {2 * w.tree_nodes / t.bytes_per_param:.0f} FLOP per "
        f"weight byte, {w.tree_nodes / ridge_nodes:.1f}x the ridge: compute-bound unless the "
        f"verifier had {need_mem_bound / 1e12:,.0f} TFLOP/s "
        f"({need_mem_bound / tf:.1f}x the assumption). A {n_r}-node tree verifies in "
        f"{st_r.verify_us:,.0f} us ({st_r.verify.bound if st_r.verify else '-'}-bound), a "
        f"{st_r.total_us:,.0f} us step: it beats the {w.tree_nodes}-node tree if it emits more "
        f"than {even:.2f} tokens per step (vs {st.tokens_per_step:g})"))

    if t.layers <= 40:  # the 7B class: the article implies on-chip weights
        out.append(Disagreement(
            "weights on chip", "\"For models larger than ~7B at FP8, the verifier streams "
            "weights from HBM\" (so a 7B would not)",
            f"{_gb(W)} of weights vs {hw.verifier_sram_bytes / 2**20:.0f} MiB verifier SRAM",
            W / hw.verifier_sram_bytes,
            f"the weights are {W / hw.verifier_sram_bytes:.1f}x the verifier SRAM and "
            f"{W / p.kv_pool.bytes:.1f}x the KV pool: a 7B streams from HBM too, "
            f"{W / hw.hbm_bw * 1e6:,.0f} us per pass at {hw.hbm_bw / 1e12:g} TB/s"))
    else:
        implied = a.claimed_step_us * 1e-6 * hw.hbm_bw
        out.append(Disagreement(
            "70B weight traffic", f"\"~3 ms\" per step, HBM-bound at ~8 TB/s: "
            f"{_gb(implied)} streamed = {8 * implied / t.params:.2f} bits/param",
            f"{_gb(W)} at {t.bytes_per_param:g} B/param = {W / hw.hbm_bw * 1e3:.2f} ms",
            W / implied,
            f"{t.params / 1e9:.0f}B parameters at FP8 take {W / hw.hbm_bw * 1e3:.2f} ms to "
            f"stream once at {hw.hbm_bw / 1e12:g} TB/s; 3 ms would need "
            f"{W / 3e-3 / 1e12:.1f} TB/s or {8 * implied / t.params:.1f}-bit weights"))
        out.append(Disagreement(
            "70B layer count", "figure: \"32 layers × FP8 matmul\"",
            f"{t.name}: {t.layers} layers of {_gb(W / t.layers)}", t.layers / 32,
            f"with 32 layers each would hold {_gb(W / 32)}; the per-layer figures "
            f"(prefetch of L1-L4) are off by {t.layers / 32:.1f}x"))

    cap = _prefetch_capacity(p, w.tree_nodes)
    pref_layers = 4 * W / t.layers
    sp = rv.steps["prefetch"]
    out.append(Disagreement(
        "weight prefetch", "\"By the time the draft tree is ready, the first 4 transformer "
        "layers are already in verifier SRAM\"" if t.layers > 40 else
        "prefetch \"hides HBM latency behind draft latency\"",
        f"{_gb(sp.prefetch_us * 1e-6 * hw.hbm_bw)} prefetched, saving "
        f"{v0.total_us - sp.verify_us:,.0f} us of verify",
        pref_layers / cap if t.layers > 40 else 1.0,
        f"the {st.draft_us:,.0f} us draft window could move "
        f"{_gb(st.draft_us * 1e-6 * hw.hbm_bw)}, but only {_gb(cap)} of verifier SRAM is free "
        f"({cap / (W / t.layers):.2f} layers of {_gb(W / t.layers)}; 4 layers = "
        f"{_gb(pref_layers)}); with a {v0.bound}-bound verify the saving is "
        f"{(v0.total_us - sp.verify_us) / v0.total_us:.1%}"))

    draft_us_tok = d.params / (p.draft_accel.macs_per_cycle * hw.clock_hz) * 1e6
    need = 250e6 / 30e-6
    out.append(Disagreement(
        "draft per token", f"{a.draft_us_per_token:g} us/token; \"~4 TFLOPS INT4 — enough for "
        f"a 250M-parameter draft model in ~30 microseconds per token\"",
        f"{draft_us_tok:.1f} us/token ({d.params / 1e6:.0f}M MACs at "
        f"{p.draft_accel.macs_per_cycle * hw.clock_hz / 1e12:.2f} TMAC/s), "
        f"{st.draft.compute_us / w.draft_evals:.1f} us with attention",
        draft_us_tok / a.draft_us_per_token,
        f"4 x 32x32 MACs at 1 GHz = {p.draft_accel.macs_per_cycle * hw.clock_hz / 1e12:.2f} "
        f"TMAC/s; a draft token is one MAC per parameter; 250M in 30 us needs "
        f"{need / 1e12:.1f} TMAC/s ({need / (p.draft_accel.macs_per_cycle * hw.clock_hz):.1f}x). "
        f"Reading the weights from SRAM takes only "
        f"{min(d.weight_bytes, p.draft_accel.sram_bytes) / p.draft_accel.sram_bw * 1e6:.1f} us: "
        f"the draft is compute-bound, so the 12x SRAM bandwidth does not make it 12x faster"))

    spill = d.weight_bytes - p.draft_accel.sram_bytes
    out.append(Disagreement(
        "draft fits SRAM", "\"~240M parameters = ~480 MB at FP16, but at INT4 = ~60 MB\" "
        "in 64 MB SRAM",
        f"{d.params / 1e6:.0f}M x {d.bytes_per_param:g} B = {d.weight_bytes / 1e6:.0f} MB vs "
        f"{p.draft_accel.sram_bytes / 2**20:.0f} MiB",
        d.weight_bytes / p.draft_accel.sram_bytes,
        f"INT4 is a quarter of FP16's 480 MB, i.e. 120 MB, not 60 MB; the "
        f"{max(spill, 0) / 1e6:.0f} MB excess streams from HBM every draft pass "
        f"({max(spill, 0) / hw.hbm_bw * 1e6:.1f} us/pass, hidden under the "
        f"{st.draft.compute_us / w.tree_depth:.0f} us of compute per pass). Fitting 64 MiB at "
        f"INT4 needs <= {p.draft_accel.sram_bytes / 0.5 / 1e6:.0f}M parameters"))

    out.append(Disagreement(
        "draft tokens vs tree nodes", f"draft {a.draft_tokens} tokens, verify a "
        f"{w.tree_nodes}-node tree",
        f"{w.tree_nodes - 1} draft nodes from {w.draft_evals} evaluations",
        (w.tree_nodes - 1) / a.draft_tokens,
        f"consistent only if {w.draft_evals} expanded nodes have "
        f"{(w.tree_nodes - 1) / w.draft_evals:.1f} top-k children each (EAGLE-2); drafting "
        f"every node would take {w.tree_nodes - 1} x {draft_us_tok:.1f} = "
        f"{(w.tree_nodes - 1) * draft_us_tok / 1e3:.2f} ms"))

    c = st.cycles
    tm = p.tree_manager
    per_pass = (round(hw.clock_hz * 1e-6) - c.load - c.decide - (c.sampler - 2 * math.ceil(
        t.vocab / tm.lanes))) // 2  # sampler beats per pass that fit in 1 us
    lanes_1us = math.ceil(t.vocab / per_pass) if per_pass > 0 else float("inf")
    c16 = cycle_model(w.tree_nodes, t.vocab, 16, w.accepted, latency=tm.latency)
    out.append(Disagreement(
        "accept/commit", f"\"~{a.accept_us:g} microsecond\", \"single-cycle decision\"",
        f"{c.post_verify:,} cycles = {st.accept_us:.2f} us at {hw.clock_hz / 1e9:g} GHz",
        st.accept_us / a.accept_us,
        f"the decision is {c.decide} cycles and the commit {c.commit}, but the extra token's "
        f"sampler streams V = {t.vocab:,} weights twice at LANES = {tm.lanes}: "
        f"{c.sampler:,} cycles, after {c.load} cycles of loading {w.tree_nodes} nodes; "
        f"LANES = 16 (SPEC max) gives {c16.post_verify:,} cycles; 1 us needs LANES >= "
        f"{lanes_1us}"))

    alpha = chain_alpha(w.accepted, w.tree_depth)
    out.append(Disagreement(
        "tokens per step", "\"~5 accepted tokens\" per step, divided into the step",
        f"accepted = {w.accepted} + 1 extra token = {w.accepted + 1} emitted (SPEC §3.1)",
        (w.accepted + 1) / a.tokens_per_step,
        f"read as 5 emitted tokens (used by both views). If 5 were accepted draft tokens the "
        f"step would emit 6 (+20% tokens/s in both views). 4 accepted at depth "
        f"{w.tree_depth} is a chain-equivalent alpha of {alpha:.3f} (SPEC §7 table: 93.4% at "
        f"draft length 10)"))

    kv_tok = t.kv_bytes_per_token
    ctx_fit = p.kv_pool.bytes / kv_tok
    claim_ctx = 128 * 1024 if t.layers <= 40 else 32 * 1024
    out.append(Disagreement(
        "KV pool context", f"4 GB holds \"~{claim_ctx // 1024}K context\" "
        f"({'7B' if t.layers <= 40 else '70B'}, FP8 KV)",
        f"{kv_tok / 1024:.0f} KiB/token -> {ctx_fit / 1024:.1f}K tokens",
        ctx_fit / claim_ctx,
        f"{t.layers} layers x 2 x {t.n_kv_heads} KV heads x {t.head_dim} x "
        f"{t.kv_bytes:g} B = {kv_tok / 1024:.0f} KiB per token; longer contexts spill to HBM "
        f"({kv_tok * 1024 / hw.hbm_bw * 1e6:.1f} us of HBM per 1K spilled tokens per step)"))

    if p.gpu_baseline:
        g = load_profile(p.gpu_baseline)
        gv = roofline_view(g)
        lo, hi = a.gpu_claimed_tokens_per_s
        out.append(Disagreement(
            "GPU baseline", f"H100 single stream: ~{lo:,.0f}-{hi:,.0f} tokens/s",
            f"{g.name}: autoregressive {gv.ar.tokens_per_s:,.0f}, spec decode "
            f"{gv.step.tokens_per_s:,.0f} tokens/s",
            gv.ar.tokens_per_s / lo,
            f"plain decoding streams {_gb(g.target.weight_bytes)} per token at "
            f"{g.hardware.hbm_bw / 1e12:g} TB/s = {gv.ar.total_us / 1e3:.2f} ms; the article's "
            f"range is reachable only with speculative decoding "
            f"({gv.step.total_us / 1e3:.2f} ms per {gv.step.tokens_per_step:g} tokens with a "
            f"{g.hardware.cpu_round_trip_us / 1e3:g} ms CPU round trip)"))
        out.append(Disagreement(
            "speedup over GPU", "5-10x over vanilla autoregressive GPU decoding",
            f"{st.tokens_per_s / gv.ar.tokens_per_s:.1f}x ({st.overlap}); "
            f"{rv.steps[p.overlap_modes[-1]].tokens_per_s / gv.ar.tokens_per_s:.1f}x "
            f"({p.overlap_modes[-1]})",
            (st.tokens_per_s / gv.ar.tokens_per_s) / (av.tokens_per_s / gv.ar.tokens_per_s),
            f"the article's own {av.tokens_per_s:,.0f} tokens/s is "
            f"{av.tokens_per_s / gv.ar.tokens_per_s:.1f}x the GPU roofline's autoregressive "
            f"{gv.ar.tokens_per_s:,.0f}; over GPU speculative decoding SpecDecode-1 gains "
            f"{st.tokens_per_s / gv.step.tokens_per_s:.2f}x (roofline)"))
    return out


# --------------------------------------------------------------------------- projections


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


def projections(names: Sequence[str] = ("specdecode1-7b", "specdecode1-70b"),
                gpu_cpu_round_trips_us: Sequence[float] = (1000.0, 5000.0)
                ) -> list[ProjectionRow]:
    """Throughput and speedups of every view against the GPU profiles."""
    rows: list[ProjectionRow] = []
    for name in names:
        p = load_profile(name)
        if p.gpu_baseline is None:
            raise ValueError(f"profile {name!r} has no gpu_baseline")
        rv, av = roofline_view(p), article_view(p)
        g = load_profile(p.gpu_baseline)
        gv = roofline_view(g)
        gar, gspec = gv.ar.tokens_per_s, gv.step.tokens_per_s

        def row(profile: str, config: str, tps: float, tpstep: float, own: float | None,
                gar: float = gar, gspec: float = gspec) -> ProjectionRow:
            return ProjectionRow(profile, config, tpstep, 1e6 / tps, tps, own, tps / gar,
                                 tps / gspec)

        rows.append(row(name, "article arithmetic", av.tokens_per_s, av.tokens_per_step, None))
        for m, s in rv.steps.items():
            rows.append(row(name, f"roofline, {m}", s.tokens_per_s, s.tokens_per_step,
                            s.tokens_per_s / rv.ar.tokens_per_s))
        rows.append(row(name, "roofline, autoregressive", rv.ar.tokens_per_s, 1.0, 1.0))
        rows.append(row(g.name, "GPU autoregressive", gar, 1.0, 1.0))
        for cpu in gpu_cpu_round_trips_us:
            gs = roofline_view(load_profile(g.name, cpu_round_trip_us=cpu)).step
            rows.append(row(g.name, f"GPU spec decode, CPU {cpu / 1e3:g} ms", gs.tokens_per_s,
                            gs.tokens_per_step, gs.tokens_per_s / gar))
    return rows


# --------------------------------------------------------------------------- timelines


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
                segs.append(Segment("draft", prev_verify_start, w1, f"draft {label} (wasted)",
                                    "wasted"))
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
        segs.append(Segment("hbm", v0, v0 + min(v_us, s.hbm_verify_us), "stream weights",
                            "work"))
        a0 = v0 + v_us
        accept_end = a0 + s.accept_us
        segs.append(Segment("tree", a0, accept_end, "accept + commit", "work"))
        prev_verify_start = v0
    return segs, accept_end


def sample_steps(profile: Profile, n: int, *, overlap: str, seed: int = 0,
                 mean_accepted: float | None = None, **step_kw: Any) -> list[StepTiming]:
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
    kw = {"tree_nodes": w.tree_nodes, "context_len": w.context_len,
          "draft_evals": w.draft_evals, **step_kw}
    out = []
    for k in range(n):
        # step k's draft was speculated during step k-1: kept iff step k-1 went all the way
        hit = k > 0 and acc[k - 1] == depth and bool(extra[k - 1])
        pr = (1.0 if hit else 0.0) if overlap == "speculative" else None
        out.append(step_time(profile, tree_depth=depth, accepted=int(acc[k]), overlap=overlap,
                             p_right=pr, **kw))
    return out


# --------------------------------------------------------------------------- CLI


def _fmt_row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(wd) if i == 0 else c.rjust(wd)
                     for i, (c, wd) in enumerate(zip(cells, widths, strict=True)))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [_fmt_row(header, widths), _fmt_row(["-" * wd for wd in widths], widths)]
    lines += [_fmt_row(r, widths) for r in rows]
    return "\n".join(lines)


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
        ["HBM prefetch (us)", *col(lambda a: f"{a.draft_us:,.0f}" if a.overlap == "prefetch"
                                   else "-", lambda s: f"{s.prefetch_us:,.0f}")],
        ["verify (us)", *col(lambda a: f"{a.verify_us:,.0f}", lambda s: f"{s.verify_us:,.0f}")],
        ["  bound", *col(lambda a: "-", lambda s: s.verify.bound if s.verify else "-")],
        ["accept/commit (us)", *col(lambda a: f"{a.accept_us:g}", lambda s: f"{s.accept_us:.2f}")],
        ["p(predicted tip)", *col(lambda a: "-", lambda s: "-" if s.p_right is None
                                  else f"{s.p_right:.2f}")],
        ["wasted draft (us)", *col(lambda a: "-", lambda s: f"{s.wasted_us:,.0f}")],
        ["step (us)", *col(lambda a: f"{a.step_us:,.0f}", lambda s: f"{s.total_us:,.0f}")],
        ["tokens/step", *col(lambda a: f"{a.tokens_per_step:g}",
                             lambda s: f"{s.tokens_per_step:g}")],
        ["us/token", *col(lambda a: f"{a.us_per_token:,.1f}", lambda s: f"{s.us_per_token:,.1f}")],
        ["tokens/s", *col(lambda a: f"{a.tokens_per_s:,.0f}", lambda s: f"{s.tokens_per_s:,.0f}")],
        ["vs claim", *col(lambda a: f"{a.error:+.1%}",
                          lambda s: f"{s.tokens_per_s / av.claimed_tokens_per_s - 1:+.1%}")],
        ["vs own autoregressive", *col(lambda a: f"{a.tokens_per_s / rv.ar.tokens_per_s:.2f}x",
                                       lambda s: f"{s.tokens_per_s / rv.ar.tokens_per_s:.2f}x")],
    ]
    w = profile.workload
    t, d = profile.target, profile.draft
    head = (f"== {profile.name}: {profile.description}\n"
            f"   {t.name} at {t.bytes_per_param:g} B/param, draft {d.params / 1e6:.0f}M "
            f"at {d.bytes_per_param:g} B/param\n"
            f"   stated example: {w.tree_nodes}-node tree, depth {w.tree_depth}, "
            f"{w.draft_evals} draft evaluations, {w.accepted} accepted (+1), context "
            f"{w.context_len}; article claim {av.claimed_tokens_per_s:,.0f} tokens/s; "
            f"autoregressive on this profile {rv.ar.tokens_per_s:,.0f} tokens/s")
    return head + "\n" + _table(header, rows)


def disagreements_table(profile: Profile) -> str:
    """:func:`disagreements` as text."""
    lines = [f"-- disagreements, {profile.name}"]
    for dz in disagreements(profile):
        lines.append(f"* {dz.topic} (x{dz.ratio:.2f})\n    article:          {dz.article}\n"
                     f"    first principles: {dz.first_principles}\n    why: {dz.explanation}")
    return "\n".join(lines)


def projections_table(names: Sequence[str]) -> str:
    """:func:`projections` as text."""
    rows = [[r.profile, r.config, f"{r.tokens_per_step:g}", f"{r.us_per_token:,.1f}",
             f"{r.tokens_per_s:,.0f}", "-" if r.vs_own_ar is None else f"{r.vs_own_ar:.2f}x",
             f"{r.vs_gpu_ar:.2f}x", f"{r.vs_gpu_spec:.2f}x"] for r in projections(names)]
    return _table(["profile", "configuration", "tok/step", "us/token", "tokens/s", "vs own AR",
                   "vs GPU AR", "vs GPU spec"], rows)


def _parse_value(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sim.perf``: both views, disagreements, projections, PNGs."""
    ap = argparse.ArgumentParser(prog="python -m sim.perf", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", action="append",
                    help="SpecDecode-1 profile (repeatable; default: specdecode1-7b and -70b)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override, e.g. --set target.bytes_per_param=0.5 --set context_len=8192")
    ap.add_argument("--out", default="build/reports", help="directory for the PNGs")
    ap.add_argument("--steps", type=int, default=4, help="steps per timeline panel")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sampled steps")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    args = ap.parse_args(argv)
    names = args.profile or ["specdecode1-7b", "specdecode1-70b"]
    overrides: dict[str, Any] = {}
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq:
            ap.error(f"--set {item!r}: expected FIELD=VALUE")
        overrides[key] = _parse_value(value)
    try:
        profiles = [load_profile(n, **overrides) for n in names]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in profiles:
        print(views_table(p), end="\n\n")
        print(disagreements_table(p), end="\n\n")
    if not overrides:
        print("== projections (roofline unless stated; GPU spec decode = same tree on an H100)")
        print(projections_table(names), end="\n\n")
    if not args.no_plots:
        from sim import plots

        out = Path(args.out)
        for p in profiles:
            panels: dict[str, list[StepTiming]] = {"article": article_steps(p, args.steps)}
            for m in p.overlap_modes:
                panels[f"roofline, {m}"] = sample_steps(p, args.steps, overlap=m,
                                                        seed=args.seed)
            tl = plots.timeline_png(panels, out / f"timeline_{p.name}.png",
                                    title=f"{p.name}: {args.steps} steps per mode")
            acc = [s.accepted for s in sample_steps(p, 2000, overlap="none", seed=args.seed)]
            alpha = chain_alpha(p.workload.accepted, p.workload.tree_depth)
            hist = plots.accept_histogram_png(
                acc, out / f"accepted_{p.name}.png",
                expected=accepted_distribution(alpha, p.workload.tree_depth),
                title=f"{p.name}: accepted per step (chain-equivalent alpha {alpha:.3f})")
            print(f"wrote {tl} and {hist}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
