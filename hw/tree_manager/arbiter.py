"""The tree manager's verify-path input: a locked arbiter between the held tree and ``i``.

:class:`Arbiter` gives the verify path one tree at a time, from the hold
buffer's join (``a``) or the external port (``b``), and remembers, per tree
on the path, whether its result owes a step packet (``tag``).
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.tree_manager.verify import draft_layout

__all__ = ["Arbiter"]


class Arbiter(wiring.Component):
    """Two draft-beat sources, one tree at a time, into the verify path.

    **Lock.** Between trees, ``a`` wins if it is valid, else ``b``; the source
    whose first beat is taken holds ``o`` until its ``end`` beat is taken.
    Combinational: a beat is taken from its source in the cycle ``o`` takes it.

    **Tags.** Each tree's first beat taken pushes a tag (``a_tag`` for a tree
    of ``a``, 0 for one of ``b``) into a ``TAGS``-deep FIFO; ``pop`` (the
    verify path's ``result`` beat taken) removes the oldest, which ``head``
    shows. A tree's first beat waits while the FIFO is full (at most ``TAGS``
    trees on the path). The verify path emits one result per valid tree, in
    order, so ``head`` is the tag of the tree whose result is presented.

    Parameters
    ----------
    n_nodes, token_bits, prob_bits : int
        Of :func:`hw.tree_manager.verify.draft_layout`.

    Members
    -------
    a, b : In(stream.Signature(draft_layout(...)))
    o : Out(stream.Signature(draft_layout(...)))
    a_tag, pop : In(1)
    head : Out(1)
    """

    #: trees on the verify path at most (their tags)
    TAGS = 8

    def __init__(self, n_nodes: int, token_bits: int, prob_bits: int) -> None:
        dl = draft_layout(n_nodes, token_bits, prob_bits)
        super().__init__(
            {
                "a": In(stream.Signature(dl)),
                "b": In(stream.Signature(dl)),
                "o": Out(stream.Signature(dl)),
                "a_tag": In(1),
                "pop": In(1),
                "head": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.tags = tags = fifo.SyncFIFO(width=1, depth=self.TAGS)
        locked = Signal()  # a tree is on o: its source holds it
        lock_a = Signal()  # ... and it is a's
        sel_a = Signal()
        m.d.comb += sel_a.eq(Mux(locked, lock_a, self.a.valid))
        room = locked | tags.w_rdy  # a tree's first beat needs a tag slot
        m.d.comb += [
            self.o.valid.eq(Mux(sel_a, self.a.valid, self.b.valid) & room),
            self.o.payload.eq(Mux(sel_a, self.a.payload.as_value(), self.b.payload.as_value())),
            self.a.ready.eq(sel_a & self.o.ready & room),
            self.b.ready.eq(~sel_a & self.o.ready & room),
        ]
        fire = self.o.valid & self.o.ready
        with m.If(fire):
            m.d.sync += [locked.eq(~self.o.payload.end), lock_a.eq(sel_a)]
        m.d.comb += [
            tags.w_en.eq(fire & ~locked),
            tags.w_data.eq(sel_a & self.a_tag),
            tags.r_en.eq(self.pop),
            self.head.eq(tags.r_rdy & tags.r_data),
        ]
        return m
