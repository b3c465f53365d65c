"""Tree slots: the speculative entries of the trees in flight (SPEC §4.5; decision 0016 §5).

A slot holds its sequence, the window start ``lo`` and per valid node
``j`` (its ``owner``) the node's ``pos``, ``page`` and ``token``; the level
index ``levels`` (``pos -> node numbers, ascending``) is the level-mask
memory: a speculative lookup reads one level and takes its lowest node whose
``view`` bit is set.
"""

from __future__ import annotations

from bisect import insort

__all__ = ["Tree", "Trees"]


class Tree:
    """One active tree slot."""

    __slots__ = ("slot", "seq", "lo", "nodes", "levels")

    def __init__(self, slot: int, seq: int, lo: int) -> None:
        self.slot = slot
        self.seq = seq
        self.lo = lo
        self.nodes: dict[int, tuple[int, int, int]] = {}  # node -> (pos, page, token)
        self.levels: dict[int, list[int]] = {}  # pos -> nodes there, ascending

    def add(self, node: int, pos: int, page: int, token: int) -> None:
        """Node ``node`` (not valid yet) becomes valid at ``pos`` with ``page``."""
        self.nodes[node] = (pos, page, token)
        level = self.levels.get(pos)
        if level is None:
            self.levels[pos] = [node]
        else:
            insort(level, node)

    def find(self, pos: int, view: int) -> int | None:
        """The page of the lowest valid node at ``pos`` whose ``view`` bit is set."""
        level = self.levels.get(pos)
        if level is not None:
            for j in level:
                if view >> j & 1:
                    return self.nodes[j][1]
        return None


class Trees:
    """The ``TREES`` tree slots and which sequence holds which.

    Parameters
    ----------
    trees, seqs : int
        ``TREES`` and ``SEQS``.
    """

    def __init__(self, trees: int, seqs: int) -> None:
        self.n = trees
        self.slots: list[Tree | None] = [None] * trees
        self.of_seq: list[Tree | None] = [None] * seqs

    def has_free(self) -> bool:
        """A slot is free."""
        return None in self.slots

    def open(self, seq: int, lo: int) -> Tree:
        """The lowest free slot becomes ``seq``'s active tree with window start ``lo``."""
        r = self.slots.index(None)
        tree = self.slots[r] = self.of_seq[seq] = Tree(r, seq, lo)
        return tree

    def close(self, tree: Tree) -> None:
        """The slot becomes free (its pages are freed by the caller)."""
        self.slots[tree.slot] = None
        self.of_seq[tree.seq] = None

    def snapshot(self) -> tuple:
        """Per slot ``None`` or ``(seq, lo, ((node, pos, page, token), ...))``."""
        return tuple(
            None if t is None else (t.seq, t.lo, tuple((j, *t.nodes[j]) for j in sorted(t.nodes)))
            for t in self.slots
        )
