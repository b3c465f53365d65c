"""The ``python`` block backend of the chip model: the golden functions as the chip's blocks.

:class:`PythonTreeManager` implements :class:`sim.backend.TreeManagerBackend`
with the golden fixed-point functions (:func:`golden.tree.mask_rows`,
:class:`golden.rng.LaneRNG`, :func:`golden.accept.decide_detail`,
:func:`golden.sampler.sample_weights`), counting cycles with the SPEC §6 cycle
model (:func:`sim.cycles.accept_cycles`). :class:`PythonKV` is
:class:`golden.kvcache.BlockTable` itself plus the batched ``lookups`` and a
cycle counter. :func:`open_python` yields the pair, like
:func:`sim.rtl.open_rtl` does for the RTL.

Cycle counting of the KV pool (the ``python`` model of what the RTL counts):
every operation (insert, commit, fork, release, a single lookup) costs one
cycle; a batch of lookups costs ``ceil(len / lookup_ports)`` cycles, the
queries spread over the pool's lookup ports (SPEC §4.2: two). Operations that
raise cost nothing (they change nothing either).

Beyond the protocol, :meth:`PythonTreeManager.mask` is the tree mask
generator's pre-verify pass (SPEC §6 ``mask`` phase): the rows the verifier
uses as tree-attention masks and as KV lookup views. The chip calls it when a
backend has it and falls back to :func:`golden.tree.mask_rows` otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from golden import accept as _acc
from golden import tree as _tree
from golden.kvcache import BlockTable
from golden.rng import LaneRNG
from golden.sampler import sample_weights
from sim.backend import Query, TreeStep
from sim.cycles import accept_cycles, check_select_lanes, mask_cycles

__all__ = ["PythonKV", "PythonTreeManager", "open_python"]


def _bits(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 1 <= value <= 32:
        raise ValueError(f"{name} = {value!r}: must be an integer in 1 .. 32")
    return int(value)


class PythonTreeManager:
    """The token tree manager (mask generator, RNG lanes, acceptance and token samplers).

    Parameters
    ----------
    n_nodes : int
        ``N_NODES``: lanes, largest tree, width of a mask row (1 .. 1024).
    prob_bits, rand_bits, weight_bits : int
        Fixed-point widths (SPEC §3.3, §3.5), 1 .. 32.
    lanes : int
        Token-sampler weights per cycle (``LANES``, SPEC §5), for the cycle count.
    select_lanes : int
        ``SELECT_LANES``: 0, the two-pass token sampler (SPEC §3.5, ``lanes``
        weights per cycle); a power of two ``1 .. 128``, the one-pass token select
        (spec §3.12, its cycles). The token is the same (spec §3.12).
    latency : {"rtl", "spec"}
        Fixed latencies of the cycle model (:mod:`sim.cycles`).

    Attributes
    ----------
    cycles : dict[str, int]
        Cycles per phase summed over every step so far (the keys of
        :attr:`sim.backend.TreeStep.cycles`).
    """

    def __init__(
        self,
        n_nodes: int = 64,
        *,
        prob_bits: int = 16,
        rand_bits: int = 16,
        weight_bits: int = 16,
        lanes: int = 4,
        select_lanes: int = 0,
        latency: str = "rtl",
    ) -> None:
        if (
            isinstance(n_nodes, bool)
            or not isinstance(n_nodes, int | np.integer)
            or not (1 <= n_nodes <= 1024)
        ):
            raise ValueError(f"n_nodes = {n_nodes!r}: must be an integer in 1 .. 1024")
        self.n_nodes = int(n_nodes)
        self.prob_bits = _bits("prob_bits", prob_bits)
        self.rand_bits = _bits("rand_bits", rand_bits)
        self.weight_bits = _bits("weight_bits", weight_bits)
        self.lanes = int(lanes)
        self.select_lanes = check_select_lanes(select_lanes)
        self.latency = latency
        mask_cycles(1, latency)  # validates latency
        self._rng: LaneRNG | None = None
        self.cycles: dict[str, int] = {}

    def seed(self, seed: int) -> None:
        """Seed the lanes: afterwards they run as ``golden.rng.LaneRNG(seed, n_nodes)``."""
        self._rng = LaneRNG(seed, self.n_nodes)

    def mask(self, parents: Sequence[int]) -> list[int]:
        """The tree mask generator's pre-verify pass: one row per node (SPEC §2).

        Raises
        ------
        ValueError
            An invalid parent list or a tree larger than ``n_nodes``.
        """
        _tree.validate(parents, max_nodes=self.n_nodes)
        return _tree.mask_rows(parents)

    def step(
        self,
        parents: Sequence[int],
        tokens: Sequence[int],
        pt: Sequence[int],
        qt: Sequence[int],
        residual: Callable[[int], Sequence[int]],
    ) -> TreeStep:
        """One verification step (:meth:`sim.backend.TreeManagerBackend.step`)."""
        if self._rng is None:
            raise ValueError("seed: the lanes were never seeded (call seed(seed) first)")
        par = _tree.validate(parents, max_nodes=self.n_nodes)
        n = len(par)
        if len(tokens) != n:
            raise ValueError(f"tokens has {len(tokens)} entries: expected {n}, one per node")
        out = self._rng.next()
        u = (out[:n] >> np.uint32(32 - self.rand_bits)).astype(np.int64)
        d = _acc.decide_detail(
            par,
            np.asarray(pt, dtype=np.int64),
            np.asarray(qt, dtype=np.int64),
            u,
            rand_bits=self.rand_bits,
            prob_bits=self.prob_bits,
        )
        weights = residual(d.last)
        w = np.asarray(weights)
        extra = sample_weights(w, int(out[0]), weight_bits=self.weight_bits)
        acc_tokens = [int(tokens[j]) for j in d.path[1:]]
        sl = self.select_lanes
        c = accept_cycles(
            n,
            int(w.size),
            sl or self.lanes,
            len(acc_tokens),
            latency=self.latency,
            sampler="one_pass" if sl else "two_pass",
        )
        cyc = {
            "mask": c.mask,
            "load": c.load,
            "decide": c.decide,
            "sampler": c.sampler,
            "tokens": c.tokens,
        }
        for k, v in cyc.items():
            self.cycles[k] = self.cycles.get(k, 0) + v
        rows = list(_tree.structure(par).rows)
        return TreeStep(rows, d.last, d.path_mask, acc_tokens, extra, cyc)


class PythonKV(BlockTable):
    """:class:`golden.kvcache.BlockTable` with a cycle counter and batched lookups.

    Parameters
    ----------
    entries, pages, seqs, n_nodes, layer_bits, pos_bits
        As for :class:`golden.kvcache.BlockTable`.
    lookup_ports : int
        Lookup ports a batch of lookups is spread over (SPEC §4.2: 2).

    Attributes
    ----------
    cycles : int
        Pool cycles spent so far (module docstring).
    """

    def __init__(
        self,
        entries: int = 256,
        pages: int = 256,
        seqs: int = 8,
        n_nodes: int = 64,
        layer_bits: int = 5,
        pos_bits: int = 17,
        *,
        lookup_ports: int = 2,
    ) -> None:
        super().__init__(entries, pages, seqs, n_nodes, layer_bits, pos_bits)
        if isinstance(lookup_ports, bool) or not isinstance(lookup_ports, int) or lookup_ports < 1:
            raise ValueError(f"lookup_ports = {lookup_ports!r}: must be an integer >= 1")
        self.lookup_ports = lookup_ports
        self.cycles = 0

    def lookup(self, seq: int, layer: int, pos: int, view: int = 0) -> int | None:
        page = super().lookup(seq, layer, pos, view)
        self.cycles += 1
        return page

    def lookups(self, queries: Sequence[Query]) -> list[int | None]:
        """Many lookups, in order, spread over the lookup ports."""
        look = BlockTable.lookup
        out = [look(self, s, la, p, v) for s, la, p, v in queries]
        self.cycles += math.ceil(len(out) / self.lookup_ports)
        return out

    def insert(
        self, seq: int, layer: int, pos: int, owner: int = 0, committed: bool = False
    ) -> int:
        page = super().insert(seq, layer, pos, owner, committed)
        self.cycles += 1
        return page

    def commit(self, seq: int, accept: int) -> list[int]:
        freed = super().commit(seq, accept)
        self.cycles += 1
        return freed

    def fork(self, src: int, dst: int) -> None:
        super().fork(src, dst)
        self.cycles += 1

    def release(self, seq: int) -> list[int]:
        freed = super().release(seq)
        self.cycles += 1
        return freed


@contextmanager
def open_python(
    *,
    n_nodes: int = 64,
    entries: int = 256,
    pages: int = 256,
    seqs: int = 8,
    layer_bits: int = 5,
    pos_bits: int = 17,
    prob_bits: int = 16,
    rand_bits: int = 16,
    weight_bits: int = 16,
    lanes: int = 4,
    select_lanes: int = 0,
    latency: str = "rtl",
    lookup_ports: int = 2,
) -> Iterator[tuple[PythonTreeManager, PythonKV]]:
    """The ``python`` backend as a context manager yielding ``(tree_manager, kv)``.

    Mirrors :func:`sim.rtl.open_rtl`; nothing to clean up.
    """
    tm = PythonTreeManager(
        n_nodes,
        prob_bits=prob_bits,
        rand_bits=rand_bits,
        weight_bits=weight_bits,
        lanes=lanes,
        select_lanes=select_lanes,
        latency=latency,
    )
    kv = PythonKV(entries, pages, seqs, n_nodes, layer_bits, pos_bits, lookup_ports=lookup_ports)
    yield tm, kv
