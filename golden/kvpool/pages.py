"""Pages and HBM slots: page states, the free FIFOs and the spill queue (SPEC §4.5, §4.6).

* **Page state** per page (``bytearray``\\ s and typed ``array``\\ s,
  built in milliseconds at ``PAGES = 2**22``): ``state`` (:data:`FREE`,
  :data:`SPEC`, :data:`COMMITTED`: committed *on chip*), ``c`` (the spill
  counter, ``0 .. CMAX``), ``queued`` (in the spill queue), and for a
  committed page where its PTE is (``wtab``, ``wpos``: its block table's
  number and its position: the reverse map).
* **Free FIFO** (a ``deque``) and ``mark``, the next never-used page: an
  allocation takes the FIFO's head, else ``mark`` (``mark += 1``); a free
  pushes to the tail. **HBM FIFO** and ``hbm_mark`` alike for HBM slots.
* **Spill queue** (a ``deque``): committed on-chip pages in the order they
  became so, each at most once (``queued``); entries whose page stopped being
  committed on chip stay until popped, and are then dropped.

The pool decides every free before making it (so that an error changes
nothing); this module only carries them out. Every method is O(1), except
:meth:`Pages.victim`, one step per spill-queue pass (GCLOCK: each pass is paid
for by an earlier score or commit).
"""

from __future__ import annotations

from array import array
from collections import deque

from golden.kvpool.params import CMAX

__all__ = ["FREE", "SPEC", "COMMITTED", "Pages"]

#: page states
FREE, SPEC, COMMITTED = 0, 1, 2


class Pages:
    """Page states, free FIFOs, spill queue and their counts.

    Parameters
    ----------
    pages, hbm_pages : int
        ``PAGES`` and ``HBM_PAGES``.
    """

    def __init__(self, pages: int, hbm_pages: int) -> None:
        self.n = pages
        self.hbm_n = hbm_pages
        self.state = bytearray(pages)
        self.c = bytearray(pages)
        self.queued = bytearray(pages)
        self.wtab = array("H", bytes(2 * pages))
        self.wpos = array("I", bytes(4 * pages))
        self.fifo: deque[int] = deque()
        self.mark = 0
        self.hbm_fifo: deque[int] = deque()
        self.hbm_mark = 0
        self.queue: deque[int] = deque()
        self.pops = 0  # spill-queue pops since reset (the GCLOCK passes; timing only)
        self.spec_pages = 0
        self.committed_pages = 0
        self.hbm_used = 0

    # ------------------------------------------------------------------ counts
    @property
    def free_pages(self) -> int:
        """FIFO entries + never-used pages (frees are pushed at once here)."""
        return len(self.fifo) + self.n - self.mark

    @property
    def hbm_free(self) -> int:
        """Free HBM slots: HBM FIFO entries + never-used slots."""
        return len(self.hbm_fifo) + self.hbm_n - self.hbm_mark

    def has_free(self) -> bool:
        """A page can be allocated without a spill."""
        return bool(self.fifo) or self.mark < self.n

    def can_spill(self) -> bool:
        """A spill is possible: a committed on-chip page and a free HBM slot."""
        return self.committed_pages > 0 and self.hbm_used < self.hbm_n

    # ------------------------------------------------------------------ pages
    def take(self) -> int:
        """The next free page (FIFO head, else ``mark``); the caller sets its state."""
        if self.fifo:
            return self.fifo.popleft()
        p = self.mark
        self.mark = p + 1
        return p

    def free_spec(self, p: int) -> None:
        """Free speculative page ``p`` (pushed to the FIFO's tail)."""
        self.state[p] = FREE
        self.spec_pages -= 1
        self.fifo.append(p)

    def free_committed(self, p: int) -> None:
        """Free committed page ``p`` (its PTE is cleared or moved to HBM by the caller)."""
        self.state[p] = FREE
        self.committed_pages -= 1
        self.fifo.append(p)

    def make_spec(self, p: int) -> None:
        """Page ``p``, just taken, becomes speculative."""
        self.state[p] = SPEC
        self.spec_pages += 1

    def make_committed(self, p: int, table: int, pos: int, was_spec: bool) -> None:
        """Page ``p`` becomes committed on chip at ``(table, pos)`` (a block table's
        number): ``c = 1``, queued
        at the spill queue's tail unless it is queued already."""
        if was_spec:
            self.spec_pages -= 1
        self.state[p] = COMMITTED
        self.committed_pages += 1
        self.wtab[p] = table
        self.wpos[p] = pos
        self.c[p] = 1
        if not self.queued[p]:
            self.queued[p] = 1
            self.queue.append(p)

    def score(self, p: int, s: int) -> None:
        """``c = min(CMAX, c + s)`` of committed page ``p``."""
        self.c[p] = min(CMAX, self.c[p] + s)

    def victim(self) -> int:
        """The GCLOCK victim (:meth:`can_spill` must hold): pop the queue's head; a
        page not committed on chip is dropped, one with ``c > 0`` gets ``c -= 1``
        and goes back to the tail, one with ``c == 0`` is the victim (unqueued)."""
        q, state, c, queued = self.queue, self.state, self.c, self.queued
        while True:
            p = q.popleft()
            self.pops += 1
            if state[p] != COMMITTED:
                queued[p] = 0
            elif c[p]:
                c[p] -= 1
                q.append(p)
            else:
                queued[p] = 0
                return p

    # ------------------------------------------------------------------ HBM slots
    def hbm_take(self) -> int:
        """The next free HBM slot (HBM FIFO head, else ``hbm_mark``)."""
        self.hbm_used += 1
        if self.hbm_fifo:
            return self.hbm_fifo.popleft()
        s = self.hbm_mark
        self.hbm_mark = s + 1
        return s

    def hbm_give(self, slot: int) -> None:
        """Return HBM slot ``slot`` (pushed to the HBM FIFO's tail)."""
        self.hbm_used -= 1
        self.hbm_fifo.append(slot)

    # ------------------------------------------------------------------ readers
    def snapshot(self) -> tuple:
        """Every page's ``(state, c, queued)``, the FIFOs, marks, queue and counts
        (``O(PAGES)``: for tests)."""
        return (
            bytes(self.state),
            bytes(self.c),
            bytes(self.queued),
            tuple(self.fifo),
            self.mark,
            tuple(self.hbm_fifo),
            self.hbm_mark,
            tuple(self.queue),
            self.spec_pages,
            self.committed_pages,
            self.hbm_used,
        )
