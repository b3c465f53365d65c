"""The tree manager's step packets: a step's accepted path, as the topology optimiser counts it.

:class:`StepPacket` owns the *owed* packet: the one tree built on a shape of
the topology optimiser (static mode, ``opt = 1``) whose packet has not been
sent yet, and sends it when that tree's ``result`` beat is taken.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import idx_bits, or_tree, prefix_or_below, priority_tree
from hw.topology_optimiser import step_layout

__all__ = ["StepPacket"]


class StepPacket(wiring.Component):
    """The step packet of the owed tree, from its decision and its ranks and child counts.

    **Owed.** ``take_opt`` (a static ``opt = 1`` tree's configuration beat is
    taken) makes a packet owed; the tree manager takes no other such beat while
    ``owed`` is high (the tree's ranks and child counts must survive until its
    result). ``owed`` falls when the packet's last beat is taken, when the
    tree is refused by the builder (``dropped``), or at the tree's result if
    the packet is *stale*: ``reconf`` (a valid optimiser configuration was
    taken) after the tree took its first shape beat (``shape_beat``), i.e. a
    tree built on an earlier configuration's shape. A stale packet is not sent.

    **Packet.** ``result_fire`` with ``send`` (the result is the owed tree's)
    starts it: for each node ``j`` of ``path_mask``, ascending (the root
    first), one beat ``{rank[j], kids[j], last}`` on ``step``, ``last`` on the
    highest. The root's beat (``rank`` 0) is valid the cycle after the result
    is taken; the others follow one per cycle (a priority encoder over the
    path nodes not yet sent, carrying each node's counts, into an output
    register). ``busy`` while a packet is being sent; ``sent`` pulses in the
    cycle its last beat is taken.

    Parameters
    ----------
    n_nodes : int
        ``N_NODES``.

    Members
    -------
    take_opt, shape_beat, dropped, reconf : In(1)
    result_fire, send : In(1)
    path_mask : In(N_NODES)
    rank, kids : In(data.ArrayLayout(idx_bits(N_NODES), N_NODES))
    step : Out(stream.Signature(topology_optimiser.step_layout(N_NODES)))
    owed, busy, sent : Out(1)
    """

    def __init__(self, n_nodes: int) -> None:
        self.N = n_nodes
        B = idx_bits(n_nodes)
        super().__init__(
            {
                "take_opt": In(1),
                "shape_beat": In(1),
                "dropped": In(1),
                "reconf": In(1),
                "result_fire": In(1),
                "send": In(1),
                "path_mask": In(n_nodes),
                "rank": In(data.ArrayLayout(B, n_nodes)),
                "kids": In(data.ArrayLayout(B, n_nodes)),
                "step": Out(stream.Signature(step_layout(n_nodes))),
                "owed": Out(1),
                "busy": Out(1),
                "sent": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        N = self.N
        owed = self.owed
        has_shape = Signal()  # the owed tree took a shape beat
        stale = Signal()  # the owed tree's shape is an earlier configuration's

        pm = Signal(N)  # path nodes still to send
        sv = Signal()  # output register valid
        spl = Signal(step_layout(N))  # output register
        m.d.comb += [self.step.valid.eq(sv), self.step.payload.eq(spl)]

        # the lowest node still to send, carrying its counts; the rest after it
        any_, counts = priority_tree(
            m,
            pm,
            [Cat(self.rank[k], self.kids[k]) for k in range(N)],
            highest=False,
            name="pkt",
        )
        B = idx_bits(N)
        rest = Signal(N)
        m.d.comb += rest.eq(pm & prefix_or_below(m, pm, "pkt_below"))
        taken = sv & self.step.ready
        m.d.comb += [
            self.busy.eq(sv | any_),
            self.sent.eq(taken & spl.last),
        ]
        with m.If(any_ & (~sv | self.step.ready)):
            m.d.sync += [
                sv.eq(1),
                spl.rank.eq(counts[:B]),
                spl.kids.eq(counts[B:]),
                spl.last.eq(~or_tree(rest)),
                pm.eq(rest),
            ]
        with m.Elif(taken):
            m.d.sync += sv.eq(0)

        # ---- the owed packet
        start = self.result_fire & self.send & owed
        with m.If(self.take_opt):
            m.d.sync += [owed.eq(1), has_shape.eq(0), stale.eq(0)]
        with m.If(owed & self.shape_beat):
            m.d.sync += has_shape.eq(1)
        with m.If(start & ~stale):  # the root's beat now; the path's other nodes follow
            m.d.sync += [
                sv.eq(1),
                spl.rank.eq(0),
                spl.kids.eq(self.kids[0]),
                spl.last.eq(self.path_mask[1:] == 0),
                pm.eq(Cat(Const(0, 1), self.path_mask[1:])),
            ]
        with m.If((start & stale) | self.dropped | self.sent):
            m.d.sync += owed.eq(0)
        # a valid configuration, the tree's shape an earlier one's: the packet is stale.
        # The optimiser takes a configuration only between packets, so none of its beats
        # is taken yet: one started (the result taken) is cancelled.
        with m.If(owed & self.reconf & (has_shape | self.shape_beat)):
            m.d.sync += [stale.eq(1), sv.eq(0), pm.eq(0)]
            with m.If(start | self.busy):
                m.d.sync += owed.eq(0)
        return m
