"""Segments, sequence chains and block tables (SPEC §4.5; decision 0016 §3).

A **segment** ``g`` is a range ``start .. end - 1`` of committed positions
with a ``seqs`` mask and a block table; a sequence's **chain** is the list of
the segments it sees, by increasing ``start`` (kept per sequence with the
starts beside it, so that the segment of a position is one ``bisect``). A
**block table** holds one PTE per position of its segments: ``addr`` (a page
``p >= 0`` on chip, ``-1 - slot`` in HBM) and ``token``, in typed arrays
indexed by ``pos - base`` (a table's positions are contiguous from the start
of its first segment, because appends happen at the own segment's ``end``).

A table is named by one segment, or by several after ``share`` splits one;
then the lower segment's ``seqs`` always contains the upper's (a split gives
the lower part the extra sequence, and fork, release and share keep the
inclusion), so the positions of a dead segment of a live table are always
the table's tail, and are cut off. The radix levels of the block table
(decision 0016 §3) are not modelled: their node pools are sized so that they
cannot run out before the pages do, and SPEC §4.8's ``TABLE_FULL`` names only
segments, block tables and tree slots.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

__all__ = ["PteTable", "Segments"]


class PteTable:
    """One block table: PTEs of positions ``base ..`` (``addr``, ``tok`` lists) and
    the live segments naming it (``segs``, by increasing start, ``starts`` beside)."""

    __slots__ = ("id", "base", "addr", "tok", "segs", "starts")

    def __init__(self, tid: int, base: int) -> None:
        self.id = tid
        self.base = base
        self.addr = array("i")
        self.tok = array("i")
        self.segs: list[int] = []
        self.starts: list[int] = []


def _lowest(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


class Segments:
    """The segment table, the block tables and every sequence's chain.

    Parameters
    ----------
    segs : int
        ``SEGS``: segment-table entries and block tables.
    seqs : int
        ``SEQS``.
    """

    def __init__(self, segs: int, seqs: int) -> None:
        self.n = segs
        self.seqs = [0] * segs
        self.start = [0] * segs
        self.end = [0] * segs
        self.table: list[PteTable | None] = [None] * segs
        self.free = (1 << segs) - 1  # bit g: segment g is free
        self.free_tables = (1 << segs) - 1
        self.tables: dict[int, PteTable] = {}
        self.chain: list[list[int]] = [[] for _ in range(seqs)]
        self.cstart: list[list[int]] = [[] for _ in range(seqs)]

    # ------------------------------------------------------------------ queries
    @property
    def live(self) -> int:
        """Live segments."""
        return self.n - self.free.bit_count()

    def own(self, s: int) -> int | None:
        """``s``'s own segment (the last of its chain, if seen by ``s`` alone)."""
        ch = self.chain[s]
        if ch and self.seqs[ch[-1]] == 1 << s:
            return ch[-1]
        return None

    def find(self, s: int, pos: int) -> int:
        """The segment of ``s``'s chain holding ``pos`` (``pos < len(s)``)."""
        ch = self.chain[s]
        return ch[bisect_right(self.cstart[s], pos) - 1]

    def seg_of(self, table: PteTable, pos: int) -> int:
        """The live segment of ``table`` holding ``pos``."""
        return table.segs[bisect_right(table.starts, pos) - 1]

    def tokens(self, s: int, lo: int, hi: int) -> list[int]:
        """The tokens of ``s``'s positions ``lo .. hi - 1`` (all committed)."""
        out: list[int] = []
        ch, st = self.chain[s], self.cstart[s]
        i = bisect_right(st, lo) - 1
        while lo < hi:
            g = ch[i]
            t = self.table[g]
            top = min(hi, self.end[g])
            out += t.tok[lo - t.base : top - t.base]
            lo = top
            i += 1
        return out

    # ------------------------------------------------------------------ updates
    def open(self, s: int, length: int) -> int:
        """The lowest free segment becomes ``s``'s own, with a new block table (the
        lowest free), ``start = end = length``; both must be free."""
        g = _lowest(self.free)
        self.free &= ~(1 << g)
        tid = _lowest(self.free_tables)
        self.free_tables &= ~(1 << tid)
        t = self.tables[tid] = PteTable(tid, length)
        t.segs.append(g)
        t.starts.append(length)
        self.seqs[g] = 1 << s
        self.start[g] = self.end[g] = length
        self.table[g] = t
        self.chain[s].append(g)
        self.cstart[s].append(length)
        return g

    def append(self, g: int, addr: int, token: int) -> tuple[PteTable, int]:
        """Write the PTE of position ``end`` of ``g``'s table; ``end += 1``."""
        t = self.table[g]
        pos = self.end[g]
        i = pos - t.base
        if i != len(t.addr):
            raise AssertionError(f"segment {g}: append at {pos}, table holds {len(t.addr)}")
        t.addr.append(addr)
        t.tok.append(token)
        self.end[g] = pos + 1
        return t, pos

    def fork(self, src: int, dst: int) -> None:
        """Bit ``dst`` in every segment of ``src``'s chain; ``dst``'s chain = ``src``'s."""
        bit = 1 << dst
        for g in self.chain[src]:
            self.seqs[g] |= bit
        self.chain[dst] = list(self.chain[src])
        self.cstart[dst] = list(self.cstart[src])

    def release(self, s: int) -> list[int]:
        """Clear bit ``s`` everywhere; returns the segments left with no sequence
        (the dead ones, by increasing position), still holding their PTEs
        (:meth:`bury` them after reading them)."""
        keep = ~(1 << s)
        dead = []
        for g in self.chain[s]:
            m = self.seqs[g] & keep
            self.seqs[g] = m
            if not m:
                dead.append(g)
        self.chain[s] = []
        self.cstart[s] = []
        return dead

    def bury(self, dead: list[int]) -> None:
        """Free the dead segments ``dead`` (by increasing position): their PTEs are
        cut off, highest first; a table no live segment names is freed."""
        for g in reversed(dead):
            t = self.table[g]
            k = t.segs.index(g)
            del t.segs[k]
            del t.starts[k]
            if not t.segs:
                del self.tables[t.id]
                self.free_tables |= 1 << t.id
            else:
                if k != len(t.segs):
                    raise AssertionError(f"segment {g} died before a segment above it")
                cut = self.start[g] - t.base
                del t.addr[cut:]
                del t.tok[cut:]
            self.seqs[g] = self.start[g] = self.end[g] = 0
            self.table[g] = None
            self.free |= 1 << g

    def share(self, s: int, dst: int, m: int) -> int | None:
        """``dst`` sees ``s``'s positions ``0 .. m - 1`` (``0 < m <= len(s)``): bit
        ``dst`` in the chain's segments below ``m``, the one straddling ``m`` split
        (the lowest free segment takes its upper part). Returns the split segment."""
        bit = 1 << dst
        ch, st = self.chain[s], self.cstart[s]
        i = bisect_right(st, m - 1) - 1  # the segment holding m - 1
        g = ch[i]
        split = None
        if self.end[g] > m:
            split = g
            self._split(g, m)
        for h in ch[: i + 1]:
            self.seqs[h] |= bit
        self.chain[dst] = ch[: i + 1]
        self.cstart[dst] = st[: i + 1]
        return split

    def _split(self, g: int, m: int) -> None:
        """Segment ``g`` keeps ``start .. m - 1``; the lowest free segment takes
        ``m .. end - 1`` with ``g``'s ``seqs`` and table, in every chain after ``g``."""
        h = _lowest(self.free)
        self.free &= ~(1 << h)
        t = self.table[g]
        self.seqs[h] = self.seqs[g]
        self.start[h] = m
        self.end[h] = self.end[g]
        self.end[g] = m
        self.table[h] = t
        k = t.segs.index(g) + 1
        t.segs.insert(k, h)
        t.starts.insert(k, m)
        mask = self.seqs[g]
        for x in range(len(self.chain)):
            if mask >> x & 1:
                j = self.chain[x].index(g) + 1
                self.chain[x].insert(j, h)
                self.cstart[x].insert(j, m)
