"""The tree manager's shape feed: the topology optimiser's shapes to the tree builder.

:class:`ShapeFeed` buffers the optimiser's shapes (a FIFO of ``N_NODES``
beats, so that the optimiser never waits on the builder for a whole shape),
hands them to the builder for static ``opt = 1`` trees, discards the shapes
a new configuration makes stale, and keeps a shape the builder refuses with
its configuration beat.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.topology_optimiser import shape_layout
from hw.tree_mask_gen import parent_layout

__all__ = ["ShapeFeed"]


class ShapeFeed(wiring.Component):
    """The optimiser's shapes, buffered, to the builder.

    **Buffer.** ``i`` (the optimiser's ``shape``) is taken whenever the
    ``N_NODES``-beat FIFO has room: one whole shape always fits. The FIFO's
    output is registered (a beat written to the empty FIFO is at its head two
    cycles later).

    **Routing.** While ``route`` (a static ``opt = 1`` tree is being built)
    the FIFO's head is the builder's ``shape`` (``o``); ``took`` pulses for
    every beat the builder takes. Otherwise the shape waits.

    **Refused configuration.** If the builder pulses ``build_error`` before the
    tree has taken any shape beat (``take`` starts a tree), the tree's
    configuration was refused: the builder would drop a shape up to its end
    beat. The FIFO's head is held back in that cycle, and the builder is given
    one made-up end beat instead: the optimiser's shape stays for the next
    ``opt = 1`` tree.

    **Stale shapes.** ``pend`` counts the shapes the optimiser owes or holds
    that have not left the FIFO: one more for each valid configuration
    (``reconf``, the cycle after it is taken) and each step packet
    (``request``, its last beat taken), one less for each end beat leaving the
    FIFO. At ``reconf`` every shape counted then and not partly taken by the
    builder is stale (a valid configuration is taken only after the optimiser
    has finished emitting, so they are all in its FIFO or this one); stale
    shapes are taken from the FIFO's head and dropped, one beat per cycle,
    before any other shape goes to the builder.

    Parameters
    ----------
    n_nodes : int
        ``N_NODES`` (the optimiser's ``N_MAX``).

    Members
    -------
    i : In(stream.Signature(topology_optimiser.shape_layout(N_NODES)))
    o : Out(stream.Signature(tree_mask_gen.parent_layout(N_NODES)))
    route, take, build_error, reconf, request : In(1)
    took : Out(1)
    """

    def __init__(self, n_nodes: int) -> None:
        self.N = n_nodes
        super().__init__(
            {
                "i": In(stream.Signature(shape_layout(n_nodes))),
                "o": Out(stream.Signature(parent_layout(n_nodes))),
                "route": In(1),
                "take": In(1),
                "build_error": In(1),
                "reconf": In(1),
                "request": In(1),
                "took": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        N = self.N
        sl = parent_layout(N)
        # buffered: the head is a register, not a read through the memory (it feeds
        # the builder's shape checks, a deep path of their own)
        m.submodules.q = q = fifo.SyncFIFOBuffered(width=sl.size, depth=N)
        m.d.comb += [
            q.w_data.eq(self.i.payload),
            q.w_en.eq(self.i.valid),
            self.i.ready.eq(q.w_rdy),
        ]
        head = data.View(sl, q.r_data)
        end_beat = sl.const({"parent": 0, "end": 1}).as_value()

        W = bits_for(N + 6)  # shapes in both FIFOs, one being emitted, one requested
        pend = Signal(W)  # shapes owed or held by the optimiser, not yet out of the FIFO
        drop_n = Signal(W)  # of those, the oldest stale ones
        partial = Signal()  # the head shape is partly taken by the builder
        started = Signal()  # the current tree took a shape beat
        fake = Signal()  # the builder is owed a made-up end beat

        discard = Signal()
        hold = Signal()  # keep the head: the builder refused the tree before its shape
        m.d.comb += [
            discard.eq((drop_n != 0) & ~partial),
            hold.eq(self.build_error & ~started),
        ]
        give = self.route & ~fake & ~discard & ~hold
        m.d.comb += [
            self.o.valid.eq(self.route & (fake | (give & q.r_rdy))),
            self.o.payload.eq(Mux(fake, end_beat, head.as_value())),
            self.took.eq(give & q.r_rdy & self.o.ready),
            q.r_en.eq(discard | (give & self.o.ready)),
        ]
        out_end = Signal()
        m.d.comb += out_end.eq(q.r_rdy & q.r_en & head.end)

        with m.If(self.take):
            m.d.sync += started.eq(0)
        with m.If(self.took):
            m.d.sync += [started.eq(1), partial.eq(~head.end)]
        partial_next = Mux(self.took, ~head.end, partial)
        with m.If(self.route & hold):
            m.d.sync += fake.eq(1)
        with m.If(fake & self.o.ready):
            m.d.sync += fake.eq(0)

        m.d.sync += pend.eq(pend + self.reconf + self.request - out_end)
        with m.If(self.reconf):
            m.d.sync += drop_n.eq(pend - out_end - partial_next)
        with m.Elif(discard & out_end):
            m.d.sync += drop_n.eq(drop_n - 1)
        return m
