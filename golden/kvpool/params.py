"""The scaled pool's parameters (SPEC §4.9): defaults, ranges and their checks."""

from __future__ import annotations

from dataclasses import dataclass

from checks.values import integer

__all__ = ["BLOCK", "CMAX", "PoolParams", "RANGES", "DEFAULTS", "make_params"]

#: positions per dedup tag (SPEC §4.6 *Tags*): fixed
BLOCK = 16
#: the spill counter's largest value (SPEC §4.6 *Committing a page*, *Spill*): fixed
CMAX = 7

#: the defaults: the full configuration of SPEC §4.9
DEFAULTS: dict[str, int] = {
    "pages": 2**20,
    "hbm_pages": 2**21,
    "seqs": 64,
    "segs": 256,
    "trees": 8,
    "n_nodes": 1024,
    "max_depth": 64,
    "pos_bits": 17,
    "token_bits": 17,
    "tlb_sets": 1024,
    "tlb_ways": 4,
    "tag_sets": 1024,
    "tag_ways": 4,
}

#: each parameter's range (inclusive); the set and way counts must also be powers of two
RANGES: dict[str, tuple[int, int]] = {
    "pages": (16, 2**22),
    "hbm_pages": (0, 2**23),
    "seqs": (1, 64),
    "segs": (2, 1024),
    "trees": (1, 16),
    "n_nodes": (4, 1024),
    "max_depth": (2, 1024),
    "pos_bits": (1, 20),
    "token_bits": (1, 17),
    "tlb_sets": (1, 2**16),
    "tlb_ways": (1, 8),
    "tag_sets": (1, 2**16),
    "tag_ways": (1, 8),
}

_POWERS_OF_TWO = ("tlb_sets", "tlb_ways", "tag_sets", "tag_ways")


@dataclass(frozen=True, slots=True)
class PoolParams:
    """The checked parameters of a :class:`golden.kvpool.KVPool` (SPEC §4.9)."""

    pages: int
    hbm_pages: int
    seqs: int
    segs: int
    trees: int
    n_nodes: int
    max_depth: int
    pos_bits: int
    token_bits: int
    tlb_sets: int
    tlb_ways: int
    tag_sets: int
    tag_ways: int


def make_params(**kwargs: object) -> PoolParams:
    """The :class:`PoolParams` of ``kwargs`` (missing ones: :data:`DEFAULTS`).

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be an integer in lo .. hi"`` for a value
        out of :data:`RANGES` or not an integer, ``"... must be a power of two
        in lo .. hi"`` for a set or way count, ``"unknown parameter ..."``.
    """
    unknown = sorted(set(kwargs) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r}: expected one of {', '.join(DEFAULTS)}")
    values = {}
    for name, default in DEFAULTS.items():
        lo, hi = RANGES[name]
        raw = kwargs.get(name, default)
        v = integer(name, raw, lo, hi)
        if name in _POWERS_OF_TWO and v & (v - 1):
            raise ValueError(f"{name} = {raw!r}: must be a power of two in {lo} .. {hi}")
        values[name] = v
    return PoolParams(**values)
