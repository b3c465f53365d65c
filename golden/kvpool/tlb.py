"""The translation look-aside buffer of one lookup port (SPEC §4.6 *TLB*).

``sets x ways`` entries keyed by ``(segment, pos)``, each holding the PTE's
``loc`` and ``addr``; set ``(pos XOR (segment << 4)) mod sets``. A hit updates
the set's tree-PLRU; a miss writes the walked PTE into the lowest-numbered
invalid way, else the tree-PLRU victim, and updates the PLRU as for a hit on
that way. Invalidation (spill, fill, a segment's death or split) clears
``valid`` only: the PLRU bits are left as they are.

Tree-PLRU (the convention of this model; SPEC §4.6 names the policy only):
``ways - 1`` bits per set in heap order (node ``n``'s children are ``2n + 1``
and ``2n + 2``; the leaves, left to right, are ways ``0 .. ways - 1``). A bit
0 sends the victim search to the left child, 1 to the right; an access to a
way sets every bit on its path to point away from it. Reset: all bits 0, so
the first victim of a full set is way 0. ``ways`` is a power of two (1: no
bits, the victim is way 0).

State is kept per set on first use (dictionaries), so construction costs
nothing whatever the size, and the entries of a segment are found through a
per-segment index of the sets it was written to: no operation scans the TLB.
"""

from __future__ import annotations

__all__ = ["PortTLB", "plru_victim", "plru_touch"]


def plru_victim(bits: int, ways: int) -> int:
    """The way the tree-PLRU ``bits`` point to (``ways`` a power of two)."""
    n = 0
    while n < ways - 1:
        n = 2 * n + 1 + ((bits >> n) & 1)
    return n - (ways - 1)


def plru_touch(bits: int, way: int, ways: int) -> int:
    """``bits`` after an access to ``way``: every bit on its path points away from it."""
    n = way + ways - 1
    while n > 0:
        parent = (n - 1) // 2
        if n == 2 * parent + 1:  # came from the left: point right
            bits |= 1 << parent
        else:
            bits &= ~(1 << parent)
        n = parent
    return bits


class PortTLB:
    """One port's TLB: ``(segment, pos) -> (loc, addr)``, tree-PLRU per set.

    Parameters
    ----------
    sets, ways : int
        Powers of two (checked by the pool's parameters).

    Attributes
    ----------
    hits, misses : int
        The lookups of committed positions that hit / missed, since reset.
    """

    def __init__(self, sets: int, ways: int) -> None:
        self.sets = sets
        self.ways = ways
        self._mask = sets - 1
        self._entries: dict[int, list[tuple[int, int, int, int] | None]] = {}
        self._plru: dict[int, int] = {}
        self._by_seg: dict[int, set[int]] = {}
        self._victim = [plru_victim(b, ways) for b in range(1 << (ways - 1))]
        self._touch = [
            (plru_touch(0, w, ways), ~plru_touch((1 << (ways - 1)) - 1, w, ways))
            for w in range(ways)
        ]
        self.hits = 0
        self.misses = 0

    def index(self, seg: int, pos: int) -> int:
        """The set of ``(seg, pos)``: ``(pos XOR (seg << 4)) mod sets``."""
        return (pos ^ (seg << 4)) & self._mask

    def _set_bits(self, si: int, way: int) -> None:
        on, off = self._touch[way]
        self._plru[si] = (self._plru.get(si, 0) | on) & ~off

    def lookup(self, seg: int, pos: int) -> tuple[int, int] | None:
        """``(loc, addr)`` if a valid way holds ``(seg, pos)`` (a hit: PLRU updated,
        counted), else ``None`` (a miss, counted; the caller then calls :meth:`fill`)."""
        si = (pos ^ (seg << 4)) & self._mask
        ways = self._entries.get(si)
        if ways is not None:
            for w, e in enumerate(ways):
                if e is not None and e[0] == seg and e[1] == pos:
                    self.hits += 1
                    self._set_bits(si, w)
                    return e[2], e[3]
        self.misses += 1
        return None

    def fill(self, seg: int, pos: int, loc: int, addr: int) -> int:
        """Write the walked PTE of ``(seg, pos)`` after a miss; returns the way written
        (the lowest invalid one, else the PLRU victim)."""
        si = (pos ^ (seg << 4)) & self._mask
        ways = self._entries.get(si)
        if ways is None:
            ways = self._entries[si] = [None] * self.ways
        try:
            w = ways.index(None)
        except ValueError:
            w = self._victim[self._plru.get(si, 0)]
        ways[w] = (seg, pos, loc, addr)
        self._set_bits(si, w)
        segs = self._by_seg.get(seg)
        if segs is None:
            self._by_seg[seg] = {si}
        else:
            segs.add(si)
        return w

    def invalidate_set(self, seg: int, pos: int) -> None:
        """A spill or fill of ``(seg, pos)``: every way of its set that holds ``seg``."""
        ways = self._entries.get((pos ^ (seg << 4)) & self._mask)
        if ways is not None:
            for w, e in enumerate(ways):
                if e is not None and e[0] == seg:
                    ways[w] = None

    def invalidate_segment(self, seg: int) -> None:
        """A segment's death or split: every entry of ``seg``."""
        for si in self._by_seg.pop(seg, ()):
            ways = self._entries[si]
            for w, e in enumerate(ways):
                if e is not None and e[0] == seg:
                    ways[w] = None

    def entries(self) -> list[tuple[int, int, int, int, int, int]]:
        """Every valid entry as ``(set, way, segment, pos, loc, addr)``, in set order."""
        return [
            (si, w, *e)
            for si in sorted(self._entries)
            for w, e in enumerate(self._entries[si])
            if e is not None
        ]

    def plru_bits(self, si: int) -> int:
        """The tree-PLRU bits of set ``si`` (0 after reset)."""
        return self._plru.get(si, 0)

    def snapshot(self) -> tuple:
        """The valid entries, the non-zero PLRU bits and the counters."""
        plru = tuple(sorted((si, b) for si, b in self._plru.items() if b))
        return (tuple(self.entries()), plru, self.hits, self.misses)
