"""The design-space grid: one declarative TOML file, its axes and the runs they make.

A grid file has three tables::

    [axes]             # each a list: the grid is their product
    profile = ["specdecode1-7b"]
    tree = ["chain", "sequoia", "eagle2"]
    nodes = [16, 32, 64]
    select_lanes = [0, 64]
    pool_gib = [1, 4]
    tlb_entries = [4096]

    [contexts]         # the contexts every run is measured at (one growing history)
    tokens = [4096, 32768, 131072]
    mode = "dense"

    [fixed]            # chip-model fields set for every point
    tokens = 160

An axis or a fixed value is a :class:`sim.chip.ChipConfig` field (``profile``,
``tree``, ``nodes``, ``depth``, ``lanes``, ``select_lanes``, ``workload``,
``overlap``, ...) or one of the pool's :data:`POOL_FIELDS` (``pool_gib``: the
on-chip pool in GiB; ``tlb_entries``: the verifier port's TLB, ``ways`` x
sets). A **run** is one point of the axes: one chip-model run (its trees and
acceptance) replayed by the long-context study (:mod:`sim.context.study`) in a
pool of that size and TLB at every context. A ``chain`` tree has no node
budget: its runs ignore ``nodes`` (one run per other axes; ``nodes`` is then
the chain's ``depth + 1``). Every field is checked when the grid is loaded:
``ValueError`` naming the field and the value.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checks import choice, integer
from sim.chip.config import FIELDS, ChipConfig
from sim.context.config import MAX_CONTEXT, MODES

__all__ = ["DEFAULT", "LARGE", "POOL_FIELDS", "TLB_WAYS", "Grid", "Run", "load"]

#: the grids shipped with the project: the default (minutes on 2 cores) and a cluster's
DEFAULT = Path(__file__).with_name("default.toml")
LARGE = Path(__file__).with_name("large.toml")
#: the pool's fields of a run: on-chip pool size (GiB), TLB entries of the verifier's port
POOL_FIELDS = {"pool_gib": (1, 64), "tlb_entries": (4, 2**16 * 8)}
#: the TLB's associativity (its entries are ``TLB_WAYS`` x a power of two sets)
TLB_WAYS = 4
#: chip-model fields a grid may not set: the backend (always the python one), the run's
#: own context (the grid's ``[contexts]`` set it)
_NOT_AXES = ("backend", "context_offset")


@dataclass(frozen=True)
class Run:
    """One point of the axes: the chip model's keywords and the pool's fields."""

    chip: tuple[tuple[str, Any], ...]
    pool_gib: int
    tlb_entries: int

    @property
    def chip_kwargs(self) -> dict[str, Any]:
        """The :class:`sim.chip.ChipConfig` keywords."""
        return dict(self.chip)

    def label(self) -> str:
        """A short name for progress lines: the axes' values."""
        c = self.chip_kwargs
        keys = ("profile", "tree", "nodes", "select_lanes", "workload")
        parts = [f"{k}={c[k]}" for k in keys if k in c]
        return " ".join([*parts, f"pool={self.pool_gib}GiB", f"tlb={self.tlb_entries}"])


@dataclass(frozen=True)
class Grid:
    """A loaded grid: its axes, contexts, read mode and fixed fields (module docstring)."""

    axes: dict[str, list[Any]]
    contexts: tuple[int, ...]
    mode: str
    fixed: dict[str, Any]
    source: str = ""

    def runs(self) -> list[Run]:
        """Every run of the grid, each checked (a chip run ``chain`` once per depth)."""
        names = list(self.axes)
        out: dict[Run, None] = {}
        for values in itertools.product(*(self.axes[n] for n in names)):
            point = {**self.fixed, **dict(zip(names, values, strict=True))}
            pool = {k: point.pop(k, dflt) for k, dflt in (("pool_gib", 1), ("tlb_entries", 4096))}
            if point.get("tree") == "chain":
                point.pop("nodes", None)
            elif isinstance(point.get("nodes"), int) and point["nodes"] > 64:
                point.setdefault("n_nodes", point["nodes"])  # the tree manager sized to it
            ChipConfig(**point)  # every field checked
            out[Run(tuple(sorted(point.items())), **pool)] = None
        return list(out)


def _values(name: str, raw: object) -> list[Any]:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"axes.{name} = {raw!r}: must be a non-empty list")
    if len(set(map(repr, raw))) != len(raw):
        raise ValueError(f"axes.{name} = {raw!r}: repeated values")
    return raw


def _check_field(where: str, name: str, value: object) -> object:
    if name in POOL_FIELDS:
        lo, hi = POOL_FIELDS[name]
        v = integer(f"{where}.{name}", value, lo, hi)
        if name == "tlb_entries" and (v % TLB_WAYS or (v // TLB_WAYS) & (v // TLB_WAYS - 1)):
            raise ValueError(f"{where}.{name} = {value!r}: {TLB_WAYS} x a power of two")
        return v
    if name not in FIELDS or name in _NOT_AXES:
        raise ValueError(
            f"{where}.{name}: not a grid field (chip-model fields except "
            f"{', '.join(_NOT_AXES)}, and {', '.join(POOL_FIELDS)})"
        )
    return value


def parse(data: dict[str, Any], source: str = "") -> Grid:
    """A :class:`Grid` from a TOML document's tables (module docstring)."""
    unknown = set(data) - {"axes", "contexts", "fixed"}
    if unknown:
        raise ValueError(f"{source}: unknown table(s) {sorted(unknown)}: axes, contexts, fixed")
    axes = {
        n: [_check_field("axes", n, v) for v in _values(n, raw)]
        for n, raw in data.get("axes", {}).items()
    }
    if not axes:
        raise ValueError(f"{source}: [axes] is empty: a grid needs at least one axis")
    fixed = {n: _check_field("fixed", n, v) for n, v in data.get("fixed", {}).items()}
    both = set(axes) & set(fixed)
    if both:
        raise ValueError(f"fixed.{sorted(both)[0]}: also an axis")
    ctx = data.get("contexts", {})
    tokens = ctx.get("tokens", [4096])
    if not isinstance(tokens, list) or not tokens:
        raise ValueError(f"contexts.tokens = {tokens!r}: must be a non-empty list")
    tokens = [integer("contexts.tokens", t, 16, MAX_CONTEXT) for t in tokens]
    if tokens != sorted(set(tokens)):
        raise ValueError(f"contexts.tokens = {tokens!r}: must be strictly increasing")
    mode = choice("contexts.mode", ctx.get("mode", "dense"), MODES)
    grid = Grid(axes, tuple(tokens), mode, fixed, source)
    grid.runs()  # every point checked now, not on a worker
    return grid


def load(path: str | Path) -> Grid:
    """The grid of the TOML file ``path`` (``ValueError`` naming a bad field)."""
    p = Path(path)
    with p.open("rb") as fh:
        return parse(tomllib.load(fh), str(p))
