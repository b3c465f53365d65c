"""The translation look-aside buffer of one lookup port (SPEC §4.6 *TLB*).

``sets x ways`` entries keyed by ``(segment, pos)``, each holding the PTE's
``loc`` and ``addr`` and the generation of its segment when it was written;
set ``(pos XOR (segment << 4)) mod sets``. Per entry a ``valid`` flag; per
segment id a generation ``gen`` (``gen_bits`` bits, 0 at reset). An entry is
*live* when it is valid and its generation equals its segment's current one.
A lookup hits the lowest live way holding the key and updates the set's
tree-PLRU; a miss writes the walked PTE (with the segment's generation) into
the lowest way whose ``valid`` flag is 0, else the tree-PLRU victim (an entry
of an older generation is valid: it occupies its way), and updates the PLRU
as for a hit on that way. Invalidating a set (a spill or fill) clears the
``valid`` flag of every way of the set; invalidating a segment (its death or
split) increments its generation modulo ``2**gen_bits``, and when that wraps
to 0 clears every ``valid`` flag of the TLB (a flush), so an entry of an old
generation never becomes live again. The PLRU bits are left as they are by
every invalidation.

Tree-PLRU (the convention of this model; SPEC §4.6 names the policy only):
``ways - 1`` bits per set in heap order (node ``n``'s children are ``2n + 1``
and ``2n + 2``; the leaves, left to right, are ways ``0 .. ways - 1``). A bit
0 sends the victim search to the left child, 1 to the right; an access to a
way sets every bit on its path to point away from it. Reset: all bits 0, so
the first victim of a full set is way 0. ``ways`` is a power of two (1: no
bits, the victim is way 0).

State is kept per set and per segment on first use (dictionaries), so
construction costs nothing whatever the size, and no operation scans the
TLB (a flush empties the dictionary of entries).
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


#: one valid entry: ``(segment, pos, loc, addr, gen)``
_Entry = tuple[int, int, int, int, int]


class PortTLB:
    """One port's TLB: ``(segment, pos) -> (loc, addr)``, tree-PLRU per set,
    segment generations.

    Parameters
    ----------
    sets, ways : int
        Powers of two (checked by the pool's parameters).
    gen_bits : int
        Bits of a segment's generation, ``>= 1`` (default 8): a segment's
        ``2**gen_bits``-th invalidation flushes the TLB.

    Attributes
    ----------
    hits, misses : int
        The lookups of committed positions that hit / missed, since reset.
    flushes : int
        The flushes (a generation wrapping to 0), since reset.
    """

    def __init__(self, sets: int, ways: int, gen_bits: int = 8) -> None:
        if type(gen_bits) is not int or gen_bits < 1:
            raise ValueError(f"gen_bits = {gen_bits!r}: must be an integer >= 1")
        self.sets = sets
        self.ways = ways
        self.gen_bits = gen_bits
        self._mask = sets - 1
        self._gmask = (1 << gen_bits) - 1
        self._entries: dict[int, list[_Entry | None]] = {}  # None: valid flag 0
        self._plru: dict[int, int] = {}
        self._gen: dict[int, int] = {}  # non-zero generations only
        self._victim = [plru_victim(b, ways) for b in range(1 << (ways - 1))]
        self._touch = [
            (plru_touch(0, w, ways), ~plru_touch((1 << (ways - 1)) - 1, w, ways))
            for w in range(ways)
        ]
        self.hits = 0
        self.misses = 0
        self.flushes = 0

    def index(self, seg: int, pos: int) -> int:
        """The set of ``(seg, pos)``: ``(pos XOR (seg << 4)) mod sets``."""
        return (pos ^ (seg << 4)) & self._mask

    def gen(self, seg: int) -> int:
        """Segment ``seg``'s current generation (0 after reset)."""
        return self._gen.get(seg, 0)

    def _set_bits(self, si: int, way: int) -> None:
        on, off = self._touch[way]
        self._plru[si] = (self._plru.get(si, 0) | on) & ~off

    def lookup(self, seg: int, pos: int) -> tuple[int, int] | None:
        """``(loc, addr)`` if a live way holds ``(seg, pos)`` (a hit: PLRU updated,
        counted), else ``None`` (a miss, counted; the caller then calls :meth:`fill`)."""
        si = (pos ^ (seg << 4)) & self._mask
        ways = self._entries.get(si)
        if ways is not None:
            g = self._gen.get(seg, 0)
            for w, e in enumerate(ways):
                if e is not None and e[0] == seg and e[1] == pos and e[4] == g:
                    self.hits += 1
                    self._set_bits(si, w)
                    return e[2], e[3]
        self.misses += 1
        return None

    def fill(self, seg: int, pos: int, loc: int, addr: int) -> int:
        """Write the walked PTE of ``(seg, pos)`` with ``seg``'s generation after a
        miss; returns the way written (the lowest whose ``valid`` flag is 0, else the
        PLRU victim)."""
        si = (pos ^ (seg << 4)) & self._mask
        ways = self._entries.get(si)
        if ways is None:
            ways = self._entries[si] = [None] * self.ways
        try:
            w = ways.index(None)
        except ValueError:
            w = self._victim[self._plru.get(si, 0)]
        ways[w] = (seg, pos, loc, addr, self._gen.get(seg, 0))
        self._set_bits(si, w)
        return w

    def invalidate_set(self, seg: int, pos: int) -> None:
        """A spill or fill of ``(seg, pos)``: clear the ``valid`` flag of every way
        of its set, whatever segment it holds."""
        self._entries.pop((pos ^ (seg << 4)) & self._mask, None)

    def invalidate_segment(self, seg: int) -> None:
        """A segment's death or split: its generation incremented modulo
        ``2**gen_bits``; on a wrap to 0, every ``valid`` flag cleared (a flush)."""
        g = (self._gen.get(seg, 0) + 1) & self._gmask
        if g:
            self._gen[seg] = g
            return
        self._gen.pop(seg, None)
        self._entries.clear()
        self.flushes += 1

    def valid_bits(self, si: int) -> int:
        """Set ``si``'s ``valid`` flags, bit ``w`` for way ``w`` (live or not)."""
        ways = self._entries.get(si)
        return sum(1 << w for w, e in enumerate(ways) if e is not None) if ways else 0

    def entries(self) -> list[tuple[int, int, int, int, int, int]]:
        """Every live entry as ``(set, way, segment, pos, loc, addr)``, in set order."""
        gen = self._gen
        return [
            (si, w, *e[:4])
            for si in sorted(self._entries)
            for w, e in enumerate(self._entries[si])
            if e is not None and e[4] == gen.get(e[0], 0)
        ]

    def plru_bits(self, si: int) -> int:
        """The tree-PLRU bits of set ``si`` (0 after reset)."""
        return self._plru.get(si, 0)

    def snapshot(self) -> tuple:
        """The valid entries (live or not, with their generations), the non-zero
        generations, the non-zero PLRU bits and the counters."""
        valid = tuple(
            (si, w, *e)
            for si in sorted(self._entries)
            for w, e in enumerate(self._entries[si])
            if e is not None
        )
        gens = tuple(sorted(self._gen.items()))
        plru = tuple(sorted((si, b) for si, b in self._plru.items() if b))
        return (valid, gens, plru, self.hits, self.misses)
