"""Readers of the scaled pool's state: counts, chains, PTEs, pages, TLBs, tags, snapshot.

:class:`PoolView` is the read-only half of :class:`golden.kvpool.KVPool`
(its base class): nothing here changes the state, and nothing here is needed
by the operations. :meth:`PoolView.snapshot` returns everything, for tests
that check that a failed operation changed nothing; it costs ``O(PAGES)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from golden.kvpool.errors import PoolErr, as_int
from golden.kvpool.pages import COMMITTED

if TYPE_CHECKING:
    from golden.kvpool.pages import Pages
    from golden.kvpool.params import PoolParams
    from golden.kvpool.segments import Segments
    from golden.kvpool.tags import TagTable
    from golden.kvpool.tlb import PortTLB
    from golden.kvpool.trees import Trees

__all__ = ["PoolView"]


def _loc_addr(a: int) -> tuple[int, int]:
    """A stored PTE address as ``(loc, addr)``: a page on chip or ``-1 - slot`` in HBM."""
    return (0, a) if a >= 0 else (1, -1 - a)


class PoolView:
    """Read-only access to a pool's state (the base of :class:`golden.kvpool.KVPool`)."""

    params: PoolParams
    _pg: Pages
    _sg: Segments
    _tr: Trees
    _tlb: tuple[PortTLB, PortTLB]
    _tags: TagTable
    _len: list[int]
    _tag: list[int]

    # ------------------------------------------------------------------ counts
    @property
    def free_pages(self) -> int:
        """FIFO entries + ``PAGES - mark`` (pending frees: none in this model)."""
        return self._pg.free_pages

    @property
    def spec_pages(self) -> int:
        """Speculative pages (the valid nodes of the active trees)."""
        return self._pg.spec_pages

    @property
    def committed_pages(self) -> int:
        """Committed pages on chip."""
        return self._pg.committed_pages

    @property
    def hbm_used(self) -> int:
        """HBM slots holding a spilled position."""
        return self._pg.hbm_used

    @property
    def hbm_free(self) -> int:
        """Free HBM slots (HBM FIFO entries + ``HBM_PAGES - hbm_mark``)."""
        return self._pg.hbm_free

    @property
    def live_segments(self) -> int:
        """Segments with ``seqs != 0``."""
        return self._sg.live

    # ------------------------------------------------------------------ sequences
    def _s(self, seq: object) -> int:
        return as_int("seq", seq, 0, self.params.seqs - 1, PoolErr.SEQ_RANGE)

    def seq_len(self, seq: int) -> int:
        """``len(seq)``: its committed positions are ``0 .. len - 1``."""
        return self._len[self._s(seq)]

    def seq_tag(self, seq: int) -> int:
        """``tag(seq)``: the running dedup tag (``T_k`` of its last whole block, or 0)."""
        return self._tag[self._s(seq)]

    def chain(self, seq: int) -> list[tuple[int, int, int]]:
        """``seq``'s chain: ``(segment, start, end)`` by increasing ``start``."""
        sg = self._sg
        return [(g, sg.start[g], sg.end[g]) for g in sg.chain[self._s(seq)]]

    def segment(self, g: int) -> tuple[int, int, int, int] | None:
        """Segment ``g`` as ``(seqs, start, end, table)``, ``None`` if free."""
        sg = self._sg
        g = as_int("g", g, 0, sg.n - 1)
        t = sg.table[g]
        return None if t is None else (sg.seqs[g], sg.start[g], sg.end[g], t.id)

    def pte(self, seq: int, pos: int) -> tuple[int, int, int]:
        """``(loc, addr, token)`` of committed ``(seq, pos)``, read from its block
        table (no TLB access)."""
        s = self._s(seq)
        p = as_int("pos", pos, 0, self._len[s] - 1, PoolErr.NOT_COMMITTED)
        t = self._sg.table[self._sg.find(s, p)]
        return (*_loc_addr(t.addr[p - t.base]), t.tok[p - t.base])

    def tree(self, seq: int) -> tuple[int, int, dict[int, tuple[int, int, int]]] | None:
        """``seq``'s active tree as ``(slot, lo, {node: (pos, page, token)})``, or ``None``."""
        t = self._tr.of_seq[self._s(seq)]
        return None if t is None else (t.slot, t.lo, dict(t.nodes))

    # ------------------------------------------------------------------ pages
    def page_state(self, page: int) -> tuple[int, int, int]:
        """``(state, c, queued)`` of ``page`` (state 0 free, 1 speculative, 2 committed)."""
        pg = self._pg
        p = as_int("page", page, 0, pg.n - 1)
        return pg.state[p], pg.c[p], pg.queued[p]

    def page_where(self, page: int) -> tuple[int, int] | None:
        """``(table, pos)`` of a committed page's PTE, else ``None``."""
        pg = self._pg
        p = as_int("page", page, 0, pg.n - 1)
        return (pg.wtab[p], pg.wpos[p]) if pg.state[p] == COMMITTED else None

    def tables(self) -> dict[int, tuple[int, list[tuple[int, int, int]], list[int]]]:
        """Every live block table: ``id -> (base, [(loc, addr, token), ...], segments)``."""
        return {
            tid: (
                t.base,
                [(*_loc_addr(a), k) for a, k in zip(t.addr, t.tok, strict=True)],
                list(t.segs),
            )
            for tid, t in sorted(self._sg.tables.items())
        }

    def free_fifo(self) -> tuple[tuple[int, ...], int]:
        """``(FIFO contents head first, mark)``."""
        return tuple(self._pg.fifo), self._pg.mark

    def hbm_fifo(self) -> tuple[tuple[int, ...], int]:
        """``(HBM FIFO contents head first, hbm_mark)``."""
        return tuple(self._pg.hbm_fifo), self._pg.hbm_mark

    def spill_queue(self) -> tuple[int, ...]:
        """The spill queue, head first (stale entries included)."""
        return tuple(self._pg.queue)

    def queue_pops(self) -> int:
        """Spill-queue pops since construction (each a GCLOCK pass over one page)."""
        return self._pg.pops

    # ------------------------------------------------------------------ TLBs and tags
    def tlb_counts(self, port: int) -> tuple[int, int]:
        """``(hits, misses)`` of port ``port``'s TLB since reset."""
        t = self._tlb[as_int("port", port, 0, 1)]
        return t.hits, t.misses

    def tlb_entries(self, port: int) -> list[tuple[int, int, int, int, int, int]]:
        """Port ``port``'s valid TLB entries: ``(set, way, segment, pos, loc, addr)``."""
        return self._tlb[as_int("port", port, 0, 1)].entries()

    def tlb_plru(self, port: int, tlb_set: int) -> int:
        """The tree-PLRU bits of one set of port ``port``'s TLB."""
        t = self._tlb[as_int("port", port, 0, 1)]
        return t.plru_bits(as_int("tlb_set", tlb_set, 0, t.sets - 1))

    def tag_entries(self) -> list[tuple[int, int, int, int, int]]:
        """The tag table's valid entries: ``(set, way, tag, seq, block)``."""
        return self._tags.entries()

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> tuple:
        """Everything: sequences, segments, tables, trees, pages, FIFOs, spill
        queue, TLBs (entries, PLRU bits, counters) and the tag table."""
        sg = self._sg
        seqs = tuple(
            (self._len[s], self._tag[s], tuple(sg.chain[s]), tuple(sg.cstart[s]))
            for s in range(self.params.seqs)
        )
        segs = tuple(
            (sg.seqs[g], sg.start[g], sg.end[g], -1 if sg.table[g] is None else sg.table[g].id)
            for g in range(sg.n)
        )
        tables = tuple(
            (tid, t.base, tuple(t.addr), tuple(t.tok), tuple(t.segs), tuple(t.starts))
            for tid, t in sorted(sg.tables.items())
        )
        pg = self._pg
        where = tuple((p, pg.wtab[p], pg.wpos[p]) for p in range(pg.n) if pg.state[p] == COMMITTED)
        return (
            seqs,
            segs,
            sg.free,
            sg.free_tables,
            tables,
            self._tr.snapshot(),
            self._pg.snapshot(),
            where,
            self._tlb[0].snapshot(),
            self._tlb[1].snapshot(),
            self._tags.snapshot(),
        )
