"""Tree mask generator (SPEC §2, §6): one tree-attention mask row per cycle."""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import Param, check_params, idx_bits

__all__ = ["TreeMaskGen", "parent_layout", "row_layout"]


def parent_layout(n_nodes: int) -> data.StructLayout:
    """Input beat: the parent of the next node, or the end-of-tree marker."""
    return data.StructLayout({"parent": idx_bits(n_nodes), "end": 1})


def row_layout(n_nodes: int) -> data.StructLayout:
    """Output beat: one node's mask row and depth."""
    b = idx_bits(n_nodes)
    return data.StructLayout({"node": b, "depth": b, "row": n_nodes, "last": 1})


class TreeMaskGen(wiring.Component):
    """Tree mask generator: parent indices in, mask rows out, one per cycle.

    A tree of ``n`` nodes arrives as ``n`` beats on ``i``: the parents of nodes
    ``1 .. n-1`` in order (``end = 0``), then one end-of-tree beat (``end = 1``,
    ``parent`` ignored). A root-only tree is just the end beat. For every tree
    the block emits ``n`` beats on ``o``, nodes ``0 .. n-1`` in order, with
    ``row[i] = row[parent[i]] | (1 << i)`` (``row[0] = 1``, SPEC §2), the
    node's depth, and ``last`` set on node ``n - 1``.

    Rows live in an ``amaranth.lib.memory`` (``N_NODES`` words of ``N_NODES``
    bits, one synchronous read port, not transparent: a parent written in
    the cycle it is read is forwarded from the held row instead); the logic
    per cycle is one read, one OR of a one-hot bit, one increment and one
    write. Row 0 is not stored: a node whose parent is the root gets the
    constant row. On an FPGA a small row memory is hinted to LUT RAM (see
    :meth:`_mem_attrs`). Design rationale: ``docs/blocks/tree_mask_gen.md``.

    Invalid input: a parent ``>=`` its node's index, or more than ``N_NODES``
    nodes. If node ``L`` is the first invalid one, the block pulses ``error``
    for one cycle when it takes that beat, has emitted exactly rows
    ``0 .. L-2`` of the tree (none with ``last``; row ``L-1`` is never
    emitted), emits nothing more for it, consumes and drops the rest of the
    tree up to and including its end beat, and then takes the next tree.

    Latency (SPEC §6 target: ``n`` cycles + at most 2): with no stalls the rows
    of an ``n``-node tree leave on ``n`` consecutive cycles, the first two
    cycles after the first beat is taken and the last two cycles after the end
    beat is taken. Throughput: one beat in and one row out per cycle,
    back to back across trees.

    Parameters
    ----------
    N_NODES : int
        Largest tree, ``4 .. 1024`` (SPEC §5, default 64).

    Members
    -------
    i : In(stream.Signature(parent_layout(N_NODES)))
        Parent beats.
    o : Out(stream.Signature(row_layout(N_NODES)))
        Mask rows, with ``node``, ``depth`` and ``last``.
    error : Out(1)
        One-cycle pulse on invalid input.
    """

    OUT_DEPTH = 4

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {"N_NODES": Param(default=64, lo=4, hi=1024, small=4)}

    def __init__(self, *, N_NODES: int = PARAMS["N_NODES"].default) -> None:
        N_NODES = self.N_NODES = check_params(self.PARAMS, {"N_NODES": N_NODES})["N_NODES"]
        super().__init__(
            {
                "i": In(stream.Signature(parent_layout(N_NODES))),
                "o": Out(stream.Signature(row_layout(N_NODES))),
                "error": Out(1),
            }
        )

    #: FPGA mapping hint: row memories up to this many bits go to LUT RAM
    LUTRAM_MAX_BITS = 16384

    @classmethod
    def _mem_attrs(cls, bits: int) -> dict[str, str]:
        """``ram_style`` of a row memory of ``bits`` bits for FPGA synthesis.

        ``"distributed"`` (LUT RAM: asynchronous read behind the read port's
        register) up to ``LUTRAM_MAX_BITS``, none (block RAM) above; a generic
        or ASIC flow ignores it. Why: ``docs/blocks/tree_mask_gen.md``.
        """
        return {"ram_style": "distributed"} if bits <= cls.LUTRAM_MAX_BITS else {}

    def elaborate(self, platform) -> Module:
        m = Module()
        N = self.N_NODES
        B = idx_bits(N)
        rl = row_layout(N)

        # rows and depths of the current tree
        m.submodules.mem = mem = memory.Memory(
            shape=N + B, depth=N, init=[], attrs=self._mem_attrs(N * (N + B))
        )
        wr = mem.write_port()
        rd = mem.read_port()  # not transparent: the write of this cycle is forwarded

        m.submodules.out = q = fifo.SyncFIFO(width=rl.size, depth=self.OUT_DEPTH)
        m.d.comb += [
            self.o.valid.eq(q.r_rdy),
            self.o.payload.eq(q.r_data),
            q.r_en.eq(self.o.ready),
        ]

        count = Signal(B + 1, init=1)  # index of the node the next parent beat defines
        in_tree = Signal()  # row 0 of the current tree is held / emitted
        drop = Signal()  # after an error: drop beats up to the end marker

        held = Signal(rl)  # most recent row, emitted once the next beat says if it is last
        held_valid = Signal()

        s1_valid = Signal()
        s1_end = Signal()
        s1_node = Signal(B)
        s1_root = Signal()  # the stage-1 node's parent is the root
        s1_fwd = Signal()  # ... is the node stage 1 wrote as this one was read: in `held`
        s1_first = Signal()  # first beat of a tree (row 0 goes out before this node's)

        # room for what is in flight: stage 1 and the beat taken this cycle
        room = Signal()
        m.d.comb += room.eq(q.level + s1_valid < self.OUT_DEPTH)
        m.d.comb += self.i.ready.eq(drop | room)

        fire = Signal()
        m.d.comb += fire.eq(self.i.valid & self.i.ready)
        beat = self.i.payload
        bad = Signal()
        m.d.comb += bad.eq(~beat.end & ((beat.parent >= count) | (count == N)))

        m.d.sync += self.error.eq(0)
        m.d.comb += rd.addr.eq(beat.parent)

        # ---- stage 1: the read of row[parent] is back
        # the root's row is a constant (never written: the write port is
        # driven by stage-1 registers only, off the input's validity checks);
        # a parent written in the cycle it was read is forwarded from `held`
        par_row = Signal(N)
        par_depth = Signal(B)
        with m.If(s1_root):
            m.d.comb += [par_row.eq(1), par_depth.eq(0)]
        with m.Elif(s1_fwd):
            m.d.comb += [par_row.eq(held.row), par_depth.eq(held.depth)]
        with m.Else():
            m.d.comb += [par_row.eq(rd.data[:N]), par_depth.eq(rd.data[N:])]
        new_row = Signal(N)
        new_depth = Signal(B)
        m.d.comb += [
            new_row.eq(par_row | (Const(1, N) << s1_node)),
            new_depth.eq(par_depth + 1),
        ]
        # the row before this node's: row 0 (a constant) on a tree's first beat
        prev = Signal(rl)
        prev_valid = Signal()
        with m.If(s1_first):
            m.d.comb += [prev.row.eq(1), prev_valid.eq(1)]
        with m.Else():
            m.d.comb += [prev.eq(held), prev_valid.eq(held_valid)]
        push = Signal(rl)
        m.d.comb += [q.w_data.eq(push), q.w_en.eq(0)]
        with m.If(s1_valid):
            with m.If(s1_end):
                m.d.comb += [push.eq(prev), push.last.eq(1), q.w_en.eq(prev_valid)]
                m.d.sync += held_valid.eq(0)
            with m.Else():
                m.d.comb += [push.eq(prev), push.last.eq(0), q.w_en.eq(prev_valid)]
                m.d.sync += [
                    held.node.eq(s1_node),
                    held.depth.eq(new_depth),
                    held.row.eq(new_row),
                    held.last.eq(0),
                    held_valid.eq(1),
                ]
                m.d.comb += [
                    wr.addr.eq(s1_node),
                    wr.data.eq(Cat(new_row, new_depth)),
                    wr.en.eq(1),
                ]
        m.d.sync += s1_valid.eq(0)

        # ---- stage 0: take a beat
        with m.If(fire):
            with m.If(drop):
                with m.If(beat.end):
                    m.d.sync += [drop.eq(0), in_tree.eq(0), count.eq(1)]
            with m.Elif(bad):
                m.d.sync += [
                    self.error.eq(1),
                    drop.eq(1),
                    in_tree.eq(0),
                    count.eq(1),
                    held_valid.eq(0),
                    s1_valid.eq(0),
                ]
            with m.Else():
                m.d.sync += [
                    s1_valid.eq(1),
                    s1_end.eq(beat.end),
                    s1_node.eq(count[:B]),
                    s1_root.eq(beat.parent == 0),
                    s1_fwd.eq(s1_valid & ~s1_end & (beat.parent == s1_node)),
                    s1_first.eq(~in_tree),
                ]
                with m.If(beat.end):
                    m.d.sync += [in_tree.eq(0), count.eq(1)]
                with m.Else():
                    m.d.sync += [in_tree.eq(1), count.eq(count + 1)]
        return m
