"""The long-context study's configuration, the pool geometry of a profile and the
article's context claims.

:class:`ContextConfig` is the grid and the attention model (every field
checked, ``ValueError`` naming it); :func:`geometry` turns a profile's KV
shape and a pool size into the scaled pool's page size and page counts
(docs/spec.md §4.4, decision 0016: a page holds one token's KV for every
layer); :data:`CLAIMS` are the article's three context claims.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from checks.values import choice, integer, seed
from sim.timing import Profile, load_profile

__all__ = [
    "CLAIMS",
    "GIB",
    "GRANULE",
    "MODES",
    "OVERLAPS",
    "PROFILES",
    "Claim",
    "ContextConfig",
    "PoolGeometry",
    "geometry",
]

#: bytes of a GiB: the profiles' ``kv_pool.bytes`` (4 GiB) and the pool sizes are binary
GIB = 2**30
#: the SRAM granule a page is rounded up to (decision 0016: the article's "4 KB page")
GRANULE = 4096
#: the profiles of the study
PROFILES = ("specdecode1-7b", "specdecode1-70b")
#: how the verifier reads the context (module :mod:`sim.context.study`)
MODES = ("dense", "sparse")
#: overlap modes the study times (``speculative`` needs a predicted tip per step)
OVERLAPS = ("none", "prefetch")
#: the largest context (``POS_BITS = 18`` of the study's pool: 2**18 positions)
MAX_CONTEXT = 2**17
#: the default grid: 2K .. 128K tokens, doubling
DEFAULT_CONTEXTS = tuple(2**k for k in range(11, 18))


@dataclass(frozen=True)
class Claim:
    """One of the article's context claims: ``tokens`` of context at ``profile``
    with a ``pool_gib`` GiB pool, quoted as ``text``."""

    key: str
    profile: str
    pool_gib: int
    tokens: int
    text: str


#: the article's claims (Component 3: "At 4 GB, the pool supports ~32K context at 70B
#: scale (FP8 KV) or ~128K context at 7B scale"; risks: "The cost-reduced 1 GB variant
#: ... limits context length to ~16K at 70B scale")
CLAIMS = (
    Claim("70b_4gib_32k", "specdecode1-70b", 4, 32 * 1024, "~32K context at 70B (4 GB)"),
    Claim("7b_4gib_128k", "specdecode1-7b", 4, 128 * 1024, "~128K context at 7B (4 GB)"),
    Claim("70b_1gib_16k", "specdecode1-70b", 1, 16 * 1024, "1 GB limits context to ~16K at 70B"),
)


@dataclass(frozen=True)
class PoolGeometry:
    """The scaled pool of one profile and pool size.

    Attributes
    ----------
    profile : str
    pool_bytes : int
        On-chip pool (``PAGES x PAGE_BYTES`` of it used).
    kv_bytes_per_token : int
        ``LAYERS x 2 x KV_HEADS x HEAD_DIM x BYTES``: one token's KV, every layer.
    page_bytes : int
        ``PAGE_BYTES``: ``kv_bytes_per_token`` rounded up to :data:`GRANULE`.
    pages : int
        ``PAGES = pool_bytes // page_bytes``: the tokens of context the pool holds.
    hbm_pages : int
        ``HBM_PAGES``: spill slots, the HBM left beside the target's weights
        (``hbm_bytes - weight_bytes``) in pages, at most ``2**23`` (SPEC §4.9).
    """

    profile: str
    pool_bytes: int
    kv_bytes_per_token: int
    page_bytes: int
    pages: int
    hbm_pages: int


def geometry(profile: Profile, pool_bytes: int) -> PoolGeometry:
    """The scaled pool of ``profile`` with a ``pool_bytes`` on-chip pool.

    Raises
    ------
    ValueError
        ``pool_bytes`` not an integer of at least 16 pages (the pool's smallest
        ``PAGES``), or a profile without a KV pool.
    """
    if profile.kv_pool is None:
        raise ValueError(f"profile = {profile.name!r}: a GPU profile has no KV pool")
    kv = profile.target.kv_bytes_per_token
    if kv != int(kv):
        raise ValueError(f"profile = {profile.name!r}: {kv} KV bytes per token is not whole")
    kv = int(kv)
    page = math.ceil(kv / GRANULE) * GRANULE
    pool_bytes = integer("pool_bytes", pool_bytes, 16 * page, 2**22 * page)
    room = profile.hardware.hbm_bytes - profile.target.weight_bytes
    return PoolGeometry(
        profile=profile.name,
        pool_bytes=pool_bytes,
        kv_bytes_per_token=kv,
        page_bytes=page,
        pages=pool_bytes // page,
        hbm_pages=min(2**23, int(room // page)),
    )


def _tuple(name: str, values: object, lo: int, hi: int) -> tuple[int, ...]:
    """``values`` as a non-empty, strictly increasing tuple of integers in ``lo .. hi``."""
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} = {values!r}: must be a sequence of integers")
    out = tuple(integer(name, v, lo, hi) for v in values)  # type: ignore[union-attr]
    if not out or any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise ValueError(f"{name} = {values!r}: must be non-empty and strictly increasing")
    return out


@dataclass(frozen=True)
class ContextConfig:
    """The long-context study: grid, attention model and timing (every field checked).

    Attributes
    ----------
    profiles : tuple of str
        SpecDecode-1 profiles, a non-empty subset of :data:`PROFILES`, no repeats.
    pools_gib : tuple of int
        On-chip pool sizes in GiB, ``1 .. 64``, strictly increasing.
    contexts : tuple of int
        Context lengths (committed tokens before the measured steps), ``16 ..
        2**17``, strictly increasing; one growing history per series reaches each.
    modes : tuple of str
        Verifier read modes, a non-empty subset of :data:`MODES`, no repeats.
    steps : int or None
        Decode steps measured at each context, ``1 .. 1024``; ``None``: every step
        of the chip-model run (:func:`sim.context.study.chip_trace`).
    overlap : str
        Timing overlap mode, one of :data:`OVERLAPS`.
    sinks : int
        Attention sinks: positions ``0 .. sinks - 1`` (``0 .. 64``).
    recent : int
        Recent window: the last ``recent`` positions (``1 .. 4096``).
    heavy_every : int
        One heavy hitter per ``heavy_every`` positions of history (``16 .. 2**17``).
    samples : int
        Random committed positions looked up per step to check they hit (``0 .. 4096``).
    seed : int
        Prompt cut and heavy-hitter positions (``0 .. 2**64 - 1``).
    """

    profiles: tuple[str, ...] = PROFILES
    pools_gib: tuple[int, ...] = (1, 2, 4)
    contexts: tuple[int, ...] = DEFAULT_CONTEXTS
    modes: tuple[str, ...] = MODES
    steps: int | None = None
    overlap: str = "prefetch"
    sinks: int = 4
    recent: int = 256
    heavy_every: int = 1024
    samples: int = 16
    seed: int = 1

    def __post_init__(self) -> None:
        for name, allowed in (("profiles", PROFILES), ("modes", MODES)):
            raw = getattr(self, name)
            if isinstance(raw, str) or not hasattr(raw, "__iter__"):
                raise ValueError(f"{name} = {raw!r}: must be a sequence of names")
            vals = tuple(choice(name, v, allowed) for v in raw)
            if not vals or len(set(vals)) != len(vals):
                raise ValueError(f"{name} = {raw!r}: must be non-empty, without repeats")
            object.__setattr__(self, name, vals)
        object.__setattr__(self, "pools_gib", _tuple("pools_gib", self.pools_gib, 1, 64))
        object.__setattr__(self, "contexts", _tuple("contexts", self.contexts, 16, MAX_CONTEXT))
        if self.steps is not None:
            object.__setattr__(self, "steps", integer("steps", self.steps, 1, 1024))
        for name, lo, hi in (
            ("sinks", 0, 64),
            ("recent", 1, 4096),
            ("heavy_every", 16, MAX_CONTEXT),
            ("samples", 0, 4096),
        ):
            object.__setattr__(self, name, integer(name, getattr(self, name), lo, hi))
        choice("overlap", self.overlap, OVERLAPS)
        object.__setattr__(self, "seed", seed("seed", self.seed))

    def profile(self, name: str, pool_gib: int) -> Profile:
        """``name``'s profile with a ``pool_gib`` GiB KV pool."""
        return load_profile(name, **{"kv_pool.bytes": pool_gib * GIB})
