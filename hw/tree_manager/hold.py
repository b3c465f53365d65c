"""The tree manager's hold buffer: the built tree, held until the verifier's ``pq`` join.

:class:`HoldBuffer` keeps one built tree between the tree builder's output
and the verify path: each node's parent and token (a memory) and, for a tree
whose step packet will be sent, each node's sibling rank and child count
(registers, read by :class:`hw.tree_manager.packet.StepPacket` after the tree
has left). The join turns the verifier's ``pq`` beats into draft beats.
"""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import idx_bits, mux_tree
from hw.tree_manager.verify import draft_layout

__all__ = ["HoldBuffer", "pq_layout", "FREE", "BUILD", "JOIN"]

#: the hold buffer's states: no tree; a tree being built; a built tree held / joining
FREE, BUILD, JOIN = range(3)


def pq_layout(prob_bits: int) -> data.StructLayout:
    """A ``pq`` beat: the verifier's ``pt`` and ``qt`` of the held tree's next node."""
    return data.StructLayout({"pt": prob_bits, "qt": prob_bits})


class HoldBuffer(wiring.Component):
    """One built tree, from the builder's output to the verify path.

    **States.** ``FREE`` until ``take`` (the tree's configuration beat is taken
    this cycle; ``stats`` says whether ranks and child counts are kept): then
    ``BUILD``. Each node beat the builder emits (``w_fire`` with ``w_end = 0``)
    is node ``1, 2, ..`` of the tree: its parent and token are written at its
    index; with ``stats``, ``rank[j] = kids[parent]`` (its lower-indexed
    siblings) and ``kids[parent] += 1``, ``kids[j] = 0`` (``kids[0] = 0`` at
    ``take``). The end beat makes the tree held (``JOIN``, ``n`` nodes); the
    builder going idle without one (``~builder_busy``: the tree was refused)
    frees the buffer (``dropped`` pulses).

    **Join.** Held, ``pq`` beat ``j`` (``j = 1 .. n-1``, in order) is taken with
    the draft beat ``{parent[j], token[j], pt, qt, end = 0}`` on ``o`` in the
    same cycle (``pq.ready = o.ready``; no register between them); then the
    ``end`` beat, after which the buffer is free. ``pq.ready`` is low in every
    other state. Parents and tokens are read one cycle ahead from a memory
    (the next node's address presented as a beat is taken).

    Parameters
    ----------
    n_nodes, token_bits, prob_bits : int
        ``N_NODES``, ``TOKEN_BITS``, ``PROB_BITS`` (checked by the tree manager).

    Members
    -------
    take, stats : In(1)
        A tree starts (its ``bcfg`` beat is taken); keep its ranks and child counts.
    w_fire, w_end : In(1)
        The builder's output beat is taken this cycle; it is the end beat.
    w_parent : In(idx_bits(N_NODES))
    w_token : In(TOKEN_BITS)
    builder_busy : In(1)
    pq : In(stream.Signature(pq_layout(PROB_BITS)))
    o : Out(stream.Signature(verify.draft_layout(...)))
        The held tree's draft beats (the join).
    state : Out(2)
        ``FREE``, ``BUILD`` or ``JOIN``.
    held_stats : Out(1)
        ``stats`` of the current tree.
    dropped : Out(1)
        One-cycle pulse: the tree being built was refused (no end beat).
    rank, kids : Out(data.ArrayLayout(idx_bits(N_NODES), N_NODES))
        Per node of the last tree built with ``stats`` (``rank[0] = 0``).
    """

    def __init__(self, n_nodes: int, token_bits: int, prob_bits: int) -> None:
        self.N, self.TB, self.PB = n_nodes, token_bits, prob_bits
        B = idx_bits(n_nodes)
        super().__init__(
            {
                "take": In(1),
                "stats": In(1),
                "w_fire": In(1),
                "w_end": In(1),
                "w_parent": In(B),
                "w_token": In(token_bits),
                "builder_busy": In(1),
                "pq": In(stream.Signature(pq_layout(prob_bits))),
                "o": Out(stream.Signature(draft_layout(n_nodes, token_bits, prob_bits))),
                "state": Out(2),
                "held_stats": Out(1),
                "dropped": Out(1),
                "rank": Out(data.ArrayLayout(B, n_nodes)),
                "kids": Out(data.ArrayLayout(B, n_nodes)),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        N, B = self.N, idx_bits(self.N)
        node_l = data.StructLayout({"parent": B, "token": self.TB})
        m.submodules.mem = mem = memory.Memory(shape=node_l, depth=N, init=[])
        wr = mem.write_port()
        rd = mem.read_port(transparent_for=())

        state = self.state
        wcount = Signal(B + 1, init=1)  # BUILD: the node the next beat defines
        n = Signal(B + 1)  # JOIN: nodes of the held tree
        j = Signal(B + 1)  # JOIN: the node the next pq beat is for
        m.d.sync += self.dropped.eq(0)

        # ---- BUILD: nodes into the memory, ranks and child counts
        node = self.w_fire & ~self.w_end & (state == BUILD)
        m.d.comb += [
            wr.addr.eq(wcount[:B]),
            wr.data.parent.eq(self.w_parent),
            wr.data.token.eq(self.w_token),
            wr.en.eq(node),
        ]
        rank = [Const(0, B)] + [Signal(B, name=f"rank{k}") for k in range(1, N)]
        kids = [Signal(B, name=f"kids{k}") for k in range(N)]
        for k in range(N):
            m.d.comb += [self.rank[k].eq(rank[k]), self.kids[k].eq(kids[k])]
        kids_p = Signal(B)  # the parent's children so far: the new node's rank
        m.d.comb += kids_p.eq(mux_tree(kids, self.w_parent))
        with m.If(node & self.held_stats):
            for k in range(1, N):
                with m.If(wcount == k):
                    m.d.sync += [rank[k].eq(kids_p), kids[k].eq(0)]
            for k in range(N - 1):  # node N-1 has no child
                with m.If(self.w_parent == k):
                    m.d.sync += kids[k].eq(kids_p + 1)

        with m.Switch(state):
            with m.Case(FREE):
                with m.If(self.take):
                    m.d.sync += [
                        state.eq(BUILD),
                        self.held_stats.eq(self.stats),
                        wcount.eq(1),
                    ]
                    with m.If(self.stats):
                        m.d.sync += kids[0].eq(0)
            with m.Case(BUILD):
                with m.If(self.w_fire & self.w_end):
                    m.d.sync += [state.eq(JOIN), n.eq(wcount), j.eq(1)]
                with m.Elif(node):
                    m.d.sync += wcount.eq(wcount + 1)
                with m.Elif(~self.builder_busy):
                    m.d.sync += [state.eq(FREE), self.dropped.eq(1)]

        # ---- JOIN: pq beats joined with the held nodes, then the end beat
        joining = state == JOIN
        at_end = Signal()
        m.d.comb += at_end.eq(j == n)
        out = self.o.payload
        m.d.comb += [
            out.parent.eq(rd.data.parent),
            out.token.eq(rd.data.token),
            out.pt.eq(self.pq.payload.pt),
            out.qt.eq(self.pq.payload.qt),
            out.end.eq(at_end),
            self.o.valid.eq(joining & (at_end | self.pq.valid)),
            self.pq.ready.eq(joining & ~at_end & self.o.ready),
        ]
        fire = self.o.valid & self.o.ready
        with m.If(fire):
            with m.If(at_end):
                m.d.sync += state.eq(FREE)
            with m.Else():
                m.d.sync += j.eq(j + 1)
        # read one cycle ahead: node 1 while building, then the node after each beat taken
        nxt = Mux(fire & ~at_end, j + 1, j)
        m.d.comb += rd.addr.eq(Mux(joining, nxt[:B], Const(1, B)))
        return m
