"""Probes of the scaled KV pool's state for the formal checks, without changing ``hw/``.

Subclasses of the leaves that keep what the harnesses read: :class:`Pool`
builds :class:`hw.kvpool.ScaledPool` with :class:`TLB`, :class:`BlockTable`
and :class:`TreeSlots` in place of its own (``mock.patch`` of the names in
:mod:`hw.kvpool.pool`, for its ``_units`` only) and keeps its units (``u``:
the segment table, the allocators, the counters) for :mod:`formal.kvpool`; :mod:`formal.kvpool_tlb`
uses :class:`TLB` alone, :mod:`formal.kvpool_alloc` :class:`Allocator`
(:mod:`formal.kvpool_allocproto` the pool with its allocators probed, :class:`AllocPool`),
:mod:`formal.kvpool_bt` :class:`ProbedBlockTable` (the block table's
``state``, which ``hw/`` exposes, with its allocators probed). What
they rely on of ``hw/`` (private names): the pool's ``_units``, the TLB's
``_set_next(m, s, st, c)`` and its memory ``mem``, the block table's ``root``
/ ``mid`` / ``leaf`` memories and ``_root_addr`` / ``_mid_addr`` /
``_leaf_addr``, the tree slots' ``_commands(m, st, ...)``, the page
allocator's memory ``fifo`` (its read and write
ports' addresses are its ``head`` and ``tail``). Were the other leaves to
expose their state as the block table does (``state``, decision 0025), these
would go.
"""

from contextlib import ExitStack
from unittest import mock

from amaranth import Module, Value

import hw.kvpool.blocktable as bt_mod
import hw.kvpool.pool as pool_mod
from hw.kvpool.allocator import PageAllocator as _PageAllocator
from hw.kvpool.blocktable import BlockTable as _BlockTable
from hw.kvpool.pool import ScaledPool
from hw.kvpool.tlb import TLB as _TLB
from hw.kvpool.treeslots import TreeSlots as _TreeSlots

__all__ = [
    "Cached",
    "TLB",
    "BlockTable",
    "ProbedBlockTable",
    "Allocator",
    "TreeSlots",
    "Pool",
    "AllocPool",
]


class Cached:
    """An ``elaborate`` run once: the harness elaborates a leaf to reach its state,
    and the conversion later gets the same module."""

    _m: Module | None = None

    def elaborate(self, platform) -> Module:
        if self._m is None:
            self._m = super().elaborate(platform)  # type: ignore[misc]
            self._probe(self._m)
        return self._m

    def _probe(self, m: Module) -> None:
        pass


class TLB(Cached, _TLB):
    """The TLB with its flip-flops kept (``st``) and an asynchronous read of every
    set's memory word (``words``)."""

    st = None

    def _set_next(self, m: Module, s: int, st: object, c: object) -> None:
        self.st = st
        super()._set_next(m, s, st, c)

    def _probe(self, m: Module) -> None:
        mem = m.submodules.mem
        self.words = []
        for s in range(self.SETS):
            rp = mem.read_port(domain="comb")
            m.d.comb += rp.addr.eq(s)
            self.words.append(rp.data)


class BlockTable(Cached, _BlockTable):
    """The block table with :meth:`pte`: an asynchronous walk of a table's radix tree."""

    def pte(self, m: Module, t: Value, i: Value) -> Value:
        """The PTE word of table ``t`` at index ``i`` (three asynchronous reads)."""
        root, mid, leaf = (x.read_port(domain="comb") for x in (self.root, self.mid, self.leaf))
        m.d.comb += [
            root.addr.eq(self._root_addr(t, i)),
            mid.addr.eq(self._mid_addr(root.data, i)),
            leaf.addr.eq(self._leaf_addr(mid.data, i)),
        ]
        return leaf.data


class ProbedBlockTable(BlockTable):
    """The block table with its node allocators probed (:class:`Allocator`: ``la``,
    ``ma`` read their FIFOs' words and pointers) and :meth:`word`."""

    def elaborate(self, platform) -> Module:
        with mock.patch.object(bt_mod, "PageAllocator", Allocator):
            return super().elaborate(platform)

    def word(self, m: Module, mem: object, addr: Value) -> Value:
        """Word ``addr`` of the memory ``mem`` (an asynchronous read)."""
        rp = mem.read_port(domain="comb")
        m.d.comb += rp.addr.eq(addr)
        return rp.data


class Allocator(Cached, _PageAllocator):
    """The page allocator with its FIFO's pointers (``head``, ``tail``: the addresses of
    its memory's read and write ports) and an asynchronous read of every FIFO word
    (``words``)."""

    def _probe(self, m: Module) -> None:
        mem = m.submodules.fifo
        self.head = mem.read_ports[0].addr
        self.tail = mem.write_ports[0].addr
        self.words = []
        for j in range(self.PAGES):
            rp = mem.read_port(domain="comb")
            m.d.comb += rp.addr.eq(j)
            self.words.append(rp.data)


class TreeSlots(Cached, _TreeSlots):
    """The tree slots with their flip-flops kept (``st``: ``active``, ``seq``,
    ``valid`` per slot, the stream's ``phase`` and slot ``cs``) and this cycle's ADD
    (``add``: ``ok``, an ADD taken and written)."""

    st = None
    add = None

    def _commands(self, m: Module, st: object, nodes: object, levels: object) -> object:
        self.st = st
        self.add = super()._commands(m, st, nodes, levels)
        return self.add


class Pool(ScaledPool):
    """The pool with its units kept (``u``), built from the probed leaves."""

    u = None
    #: the probes that replace the pool's leaves (names in :mod:`hw.kvpool.pool`)
    PROBES = {"TLB": TLB, "BlockTable": BlockTable, "TreeSlots": TreeSlots}

    def _units(self, m: Module) -> object:
        with ExitStack() as stack:
            for name, probe in self.PROBES.items():
                stack.enter_context(mock.patch.object(pool_mod, name, probe))
            self.u = super()._units(m)
        return self.u


class AllocPool(Pool):
    """:class:`Pool` whose page and HBM-slot allocators are :class:`Allocator` probes
    (their FIFOs' words and pointers)."""

    PROBES = Pool.PROBES | {"PageAllocator": Allocator}
