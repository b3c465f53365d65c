"""The dedup tag table (SPEC §4.6 *Tags*): ``tag -> (sequence, block)``.

``sets x ways`` entries of ``valid``, ``tag`` (64 bits), ``seq`` and
``block``; set ``tag mod sets``, a round-robin pointer per set. An entry is
written when a sequence's ``len`` reaches the end of a block, unless a valid
entry of the set already has that tag: into the lowest-numbered invalid way,
else the set's round-robin way (the pointer then advances, modulo ``ways``;
writing an invalid way leaves it). Entries are never invalidated: a stale one
(its sequence released, reused or shorter) fails the token check of
``share`` and is harmless. State is kept per set on first use.
"""

from __future__ import annotations

__all__ = ["TagTable"]


class TagTable:
    """The dedup tag table (``sets``, ``ways`` powers of two)."""

    def __init__(self, sets: int, ways: int) -> None:
        self.sets = sets
        self.ways = ways
        self._mask = sets - 1
        self._entries: dict[int, list[tuple[int, int, int] | None]] = {}
        self._rr: dict[int, int] = {}

    def find(self, tag: int) -> tuple[int, int] | None:
        """``(seq, block)`` of the valid entry with ``tag``, or ``None``."""
        ways = self._entries.get(tag & self._mask)
        if ways is not None:
            for e in ways:
                if e is not None and e[0] == tag:
                    return e[1], e[2]
        return None

    def enter(self, tag: int, seq: int, block: int) -> None:
        """Enter ``(tag, seq, block)`` unless the set holds ``tag`` already."""
        si = tag & self._mask
        ways = self._entries.get(si)
        if ways is None:
            ways = self._entries[si] = [None] * self.ways
        for e in ways:
            if e is not None and e[0] == tag:
                return
        try:
            w = ways.index(None)
        except ValueError:
            w = self._rr.get(si, 0)
            self._rr[si] = (w + 1) % self.ways
        ways[w] = (tag, seq, block)

    def entries(self) -> list[tuple[int, int, int, int, int]]:
        """Every valid entry as ``(set, way, tag, seq, block)``, in set order."""
        return [
            (si, w, *e)
            for si in sorted(self._entries)
            for w, e in enumerate(self._entries[si])
            if e is not None
        ]

    def snapshot(self) -> tuple:
        """The valid entries and the non-zero round-robin pointers."""
        rr = tuple(sorted((si, p) for si, p in self._rr.items() if p))
        return (tuple(self.entries()), rr)
