"""Acceptance sampler (SPEC §3.2, §3.3, §6): the accept / path decision, node by node."""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import (
    Param,
    carry_save,
    check_params,
    csa_levels,
    csa_rows,
    idx_bits,
    mux_tree,
    net,
    prefix_or_below,
    priority_tree,
    sign_of_sum,
)

__all__ = ["AcceptSampler", "node_layout", "result_layout", "token_layout"]


def node_layout(n_nodes: int, token_bits: int, prob_bits: int) -> data.StructLayout:
    """Input beat: one tree node (index, parent, token, ``pt``, ``qt``, mask row)."""
    b = idx_bits(n_nodes)
    return data.StructLayout(
        {
            "node": b,
            "parent": b,
            "token": token_bits,
            "pt": prob_bits,
            "qt": prob_bits,
            "row": n_nodes,
            "last": 1,
        }
    )


def result_layout(n_nodes: int) -> data.StructLayout:
    """Result beat, one per tree: ``last``, ``path_mask = row[last]``, ``accepted``."""
    b = idx_bits(n_nodes)
    return data.StructLayout({"last": b, "path_mask": n_nodes, "accepted": b})


def token_layout(token_bits: int) -> data.StructLayout:
    """Token beat: one accepted draft token, ``last`` on the tree's final one."""
    return data.StructLayout({"token": token_bits, "last": 1})


class _Registers:
    """The acceptance sampler's storage, pipeline and output registers and its memories,
    declared in :meth:`AcceptSampler.elaborate` and shared by its stages.

    Tree storage: ``dep[i]``, the depth of node ``i`` (registers); the mask rows in
    a memory (``N_NODES`` words of ``N_NODES`` bits, row ``i`` in word ``i``),
    read for a node's parent to check its row. The decision's state is two
    ``N_NODES``-bit vectors: ``took[p]`` (a child of ``p`` accepted so far) and
    ``onp[i]`` (node ``i`` on the path), with the highest path node and its
    depth. Storage has no reset: every slot a tree uses is written by that tree
    before it is read; a tree's first node clears the vectors.
    """

    def __init__(self, m: Module, N: int, T: int) -> None:
        B = self.B = idx_bits(N)
        self.dep = [Const(0, B)] + [Signal(B, name=f"dep{i}", reset_less=True) for i in range(1, N)]
        m.submodules.row_mem = row_mem = memory.Memory(shape=N, depth=N, init=[])
        self.row_wr = row_mem.write_port()
        self.row_rd = row_mem.read_port()  # synchronous: the parent's row in stage 1

        # tokens: two banks, the loading tree writes one, the emitting tree reads the other
        # bank = address bit B, so each bank has 2**B words (N rounded up to a power of 2)
        m.submodules.tok_mem = tok_mem = memory.Memory(shape=T, depth=2 << B, init=[])
        self.tok_wr = tok_mem.write_port()
        self.tok_rd = tok_mem.read_port()

        # control
        self.count = Signal(B + 1)  # index the next beat must carry
        self.drop = Signal()  # after an error: drop beats through last = 1
        self.pending = Signal()  # a tree's last beat taken, its decision not yet output
        self.bank_load = Signal()
        self.bank_out = Signal()

        # stage 1: a beat taken (its checks and the accept test's second half)
        self.s1_valid = Signal()
        self.s1_bad = Signal(reset_less=True)  # index, parent or node count wrong
        self.s1_node = Signal(B, reset_less=True)
        self.s1_parent = Signal(B, reset_less=True)
        self.s1_row = Signal(N, reset_less=True)
        self.s1_dep = Signal(B, reset_less=True)
        self.s1_first = Signal(reset_less=True)
        self.s1_last = Signal(reset_less=True)
        # stage 2: a checked node into the decision
        self.s2_valid = Signal()
        self.s2_node = Signal(B, reset_less=True)
        self.s2_parent = Signal(B, reset_less=True)
        self.s2_dep = Signal(B, reset_less=True)
        self.s2_acc = Signal(reset_less=True)
        self.s2_first = Signal(reset_less=True)
        self.s2_last = Signal(reset_less=True)
        # the decision, node by node
        self.took = Signal(N, reset_less=True)
        self.onp = Signal(N, reset_less=True)
        self.top = Signal(B, reset_less=True)  # the highest path node so far
        self.top_dep = Signal(B, reset_less=True)
        self.dec_done = Signal()  # the decision complete: waiting to move out

        # output stage
        self.res_valid = Signal()
        self.res_last = Signal(B, reset_less=True)
        self.res_path = Signal(N, reset_less=True)
        self.res_acc = Signal(B, reset_less=True)
        self.rem = Signal(N)  # path nodes whose tokens are still to be read
        self.rem_nz = Signal()  # rem != 0, registered
        self.rd_busy = Signal()  # a token read is in flight (data next cycle)
        self.rd_last = Signal(reset_less=True)


class AcceptSampler(wiring.Component):
    """Acceptance sampler: tree nodes in, the accepted path and its tokens out.

    Computes the parallel decision of SPEC §3.2 in the fixed point of §3.3,
    bit-exact with ``golden.accept.decide_detail``:

    * ``accept[i] = u[i] * qt[i] < pt[i] << RAND_BITS`` for every node ``i >= 1``
      (``qt = 0`` accepts iff ``pt > 0``);
    * ``chosen[i] = accept[i]`` and no earlier sibling of ``i`` accepted (first
      accepted sibling wins);
    * ``on_path[i] = chosen[i] & on_path[parent[i]]`` (``on_path[0] = 1``):
      SPEC §3.2's ``(row[i] & ~chosen & ~1) == 0``, since the row is the
      ancestor chain;
    * ``last`` = the highest index with ``on_path``; ``path_mask = row[last]``
      (the ``on_path`` vector itself, which equals ``row[last]`` because rows
      are checked against the tree); ``accepted = depth[last]``.

    Nodes arrive in index order with ``parent[i] < i``, so the decision is
    made one node per cycle as the tree streams in (a *streaming* form of
    the parallel decision): ``took[p]`` (a child of ``p`` already accepted)
    gives ``chosen``, the ``on_path`` bits of earlier nodes give the new one,
    and the highest path node is a running register. Nothing is ``N^2`` but
    the row memory of the input check: the decision's state is two
    ``N_NODES``-bit vectors and the depths.

    Protocol. A tree of ``n`` nodes (``1 <= n <= N_NODES``, SPEC §2) arrives as
    ``n`` beats on ``i``, nodes ``0 .. n-1`` in order, ``last`` set on node
    ``n - 1``; node 0 (the root) only carries its index and ``row = 1`` (its
    ``parent``, ``token``, ``pt``, ``qt`` are ignored). ``u[i]`` is sampled in
    the cycle node ``i``'s beat is taken, so ``u`` must hold the tree's values
    from its first beat until its last beat is taken (``u[0]`` is unused); it
    may change from the cycle after. For every valid tree the block emits one
    beat on ``result`` and ``accepted`` beats on ``tokens`` (the tokens of the
    path nodes ``1 ..`` in depth order = index order, ``last`` on the final
    one; none when ``accepted == 0``). ``result`` and ``tokens`` are
    independent streams, each in tree order: a tree's result beat becomes
    valid two cycles before its first token, and neither stream waits for the
    other to be taken (a consumer may take them in either order, but must
    drain tree ``k``'s tokens to get tree ``k + 1``'s result).

    Invalid input (SPEC §2): a node index out of sequence, ``parent >= node``
    for a node ``>= 1``, more than ``N_NODES`` nodes, or a row inconsistent
    with the tree (``row[0] != 1``, ``row[i] != row[parent[i]] | (1 << i)``).
    Beats are checked in stage 1 (the parent's row is read from the row
    memory in the take cycle): the block pulses ``error`` for one cycle, the
    second cycle after it takes the bad beat (from edge ``e + 1`` to
    ``e + 2``, ``e`` the edge that takes it), emits nothing for that tree,
    consumes and drops the rest of its beats through ``last = 1`` (none if
    the bad beat has ``last``), and then takes the next tree.

    Latency (SPEC §6), counting rising clock edges after the edge that takes
    the last beat (E0), with no stalls:

    * E1: the last node's accept bit is registered (the multiply is split
      over two load stages: the take cycle selects ``u[i]``, forms the partial
      products and the first carry-save levels; the next cycle finishes the
      carry-save tree and the compare, and checks the beat), i.e. 1 cycle
      after the last node, whatever ``N_NODES``;
    * E2: its ``on_path`` bit, and with it the whole path, ``last`` and
      ``accepted`` (every earlier node was decided as it arrived);
    * E3: ``path_mask``, ``last`` and ``accepted`` in the output registers:
      path and ``last`` 2 cycles after the accept bit;
    * the ``result`` beat is valid from E3 and taken at E4 at the earliest;
    * tokens are read one per cycle from a token memory: the first is valid
      from E5 (taken at E6), then one per cycle, the last taken at E5 +
      ``accepted``.

    Throughput and overlap. The next tree's beats are taken from the cycle in
    which the previous decision moves into the output registers (E3 with a
    free output stage: two idle input cycles between trees), so a tree of
    ``n`` nodes costs ``n + 2`` input cycles back to back. Tokens live in a
    two-bank memory, so the next tree loads while the previous one's result
    and tokens are emitted; a tree's decision waits in its pipeline (and input
    stays blocked) until the previous tree's result is taken and its tokens
    have all been read out (into a ``TOKEN_FIFO``-deep output FIFO).

    Storage: the depths in registers, the rows in a memory (``N_NODES`` x
    ``N_NODES`` bits, an SRAM macro), the tokens in a two-bank memory.
    Design rationale: ``docs/blocks/accept_sampler.md``.

    Parameters
    ----------
    N_NODES : int
        Largest tree, ``4 .. 1024`` (default 64, SPEC §5).
    TOKEN_BITS : int
        Token width, ``1 .. 17`` (default 17: vocabularies up to 131072).
    PROB_BITS : int
        Width of ``pt`` / ``qt``, ``8 .. 32`` (default 16, SPEC §3.3).
    RAND_BITS : int
        Width of the uniforms ``u``, ``8 .. 32`` (default 16, SPEC §3.3).

    Members
    -------
    u : In(data.ArrayLayout(RAND_BITS, N_NODES))
        ``u[i]``: node ``i``'s uniform (RNG lane ``i``'s output
        ``>> (32 - RAND_BITS)``, SPEC §3.4).
    i : In(stream.Signature(node_layout(N_NODES, TOKEN_BITS, PROB_BITS)))
        Node beats.
    result : Out(stream.Signature(result_layout(N_NODES)))
        One beat per valid tree.
    tokens : Out(stream.Signature(token_layout(TOKEN_BITS)))
        The accepted draft tokens, in depth order.
    error : Out(1)
        One-cycle pulse on invalid input.
    """

    TOKEN_FIFO = 4

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "N_NODES": Param(default=64, lo=4, hi=1024, small=4),
        "TOKEN_BITS": Param(default=17, lo=1, hi=17, small=4),
        "PROB_BITS": Param(default=16, lo=8, hi=32, small=8),
        "RAND_BITS": Param(default=16, lo=8, hi=32, small=8),
    }

    def __init__(
        self,
        *,
        N_NODES: int = PARAMS["N_NODES"].default,
        TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default,
        PROB_BITS: int = PARAMS["PROB_BITS"].default,
        RAND_BITS: int = PARAMS["RAND_BITS"].default,
    ) -> None:
        given = {"N_NODES": N_NODES, "TOKEN_BITS": TOKEN_BITS}
        given |= {"PROB_BITS": PROB_BITS, "RAND_BITS": RAND_BITS}
        p = check_params(self.PARAMS, given)  # Python ints from here on
        N_NODES, TOKEN_BITS, PROB_BITS, RAND_BITS = (p[k] for k in given)
        self.N_NODES, self.TOKEN_BITS, self.PROB_BITS, self.RAND_BITS = (
            N_NODES,
            TOKEN_BITS,
            PROB_BITS,
            RAND_BITS,
        )
        super().__init__(
            {
                "u": In(data.ArrayLayout(RAND_BITS, N_NODES)),
                "i": In(stream.Signature(node_layout(N_NODES, TOKEN_BITS, PROB_BITS))),
                "result": Out(stream.Signature(result_layout(N_NODES))),
                "tokens": Out(stream.Signature(token_layout(TOKEN_BITS))),
                "error": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        r = _Registers(m, self.N_NODES, self.TOKEN_BITS)
        m.d.sync += self.error.eq(0)
        out_free = self._output_stage(m, r)
        moving_out = self._decision(m, r, out_free)
        self._load(m, r, moving_out)
        return m

    def _output_stage(self, m: Module, r: _Registers) -> Signal:
        """``result`` and the token emitter; returns ``out_free`` (the stage is empty)."""
        N, B = self.N_NODES, r.B
        m.submodules.tok_q = q = fifo.SyncFIFO(width=self.TOKEN_BITS + 1, depth=self.TOKEN_FIFO)
        m.d.comb += [
            self.tokens.valid.eq(q.r_rdy),
            self.tokens.payload.eq(q.r_data),
            q.r_en.eq(self.tokens.ready),
            self.result.valid.eq(r.res_valid),
            self.result.payload.last.eq(r.res_last),
            self.result.payload.path_mask.eq(r.res_path),
            self.result.payload.accepted.eq(r.res_acc),
        ]
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += r.res_valid.eq(0)

        rem = r.rem
        _, rem_idx = priority_tree(
            m, rem, [Const(k, B) for k in range(N)], highest=False, name="rem"
        )
        # clear the lowest set bit: keep the bits with a set bit below them
        rem_next = Signal(N)
        m.d.comb += rem_next.eq(rem & prefix_or_below(m, rem, "rem_below"))
        room = Signal()
        m.d.comb += room.eq(q.level + r.rd_busy < self.TOKEN_FIFO)
        m.d.comb += r.tok_rd.addr.eq(Cat(rem_idx, r.bank_out))
        m.d.sync += r.rd_busy.eq(0)
        rem_next_nz = Signal()
        m.d.comb += rem_next_nz.eq(rem_next.any())
        with m.If(r.rem_nz & room):
            m.d.sync += [
                rem.eq(rem_next),
                r.rem_nz.eq(rem_next_nz),
                r.rd_busy.eq(1),
                r.rd_last.eq(~rem_next_nz),
            ]
        m.d.comb += [
            q.w_en.eq(r.rd_busy),
            q.w_data.eq(Cat(r.tok_rd.data, r.rd_last)),
        ]
        out_free = Signal()
        m.d.comb += out_free.eq(~r.res_valid & ~r.rem_nz & ~r.rd_busy)
        return out_free

    def _decision(self, m: Module, r: _Registers, out_free: Value) -> Signal:
        """Stage 2: one node into the decision (``took``, ``onp``, the highest path node);
        the complete decision into the output stage (E3); returns ``moving_out`` (the
        decision moves into the output stage this cycle)."""
        N = self.N_NODES
        # nets built outside any `m.If` (a net assigned under a condition is gated by it)
        took_p = net(m, r.took.bit_select(r.s2_parent, 1), "took_p")
        onp_p = net(m, r.onp.bit_select(r.s2_parent, 1), "onp_p")
        on = net(m, r.s2_acc & ~took_p & onp_p, "on")
        node_oh = net(m, Cat(*[r.s2_node == k for k in range(N)]), "node_oh")
        par_oh = net(m, Cat(*[r.s2_parent == k for k in range(N)]), "par_oh")
        with m.If(r.s2_valid):
            with m.If(r.s2_first):  # the root: a new tree's state
                m.d.sync += [r.took.eq(0), r.onp.eq(1), r.top.eq(0), r.top_dep.eq(0)]
            with m.Else():
                m.d.sync += [
                    r.took.eq(r.took | Mux(r.s2_acc, par_oh, 0)),
                    r.onp.eq(r.onp | Mux(on, node_oh, 0)),
                ]
                with m.If(on):
                    m.d.sync += [r.top.eq(r.s2_node), r.top_dep.eq(r.s2_dep)]
            with m.If(r.s2_last):
                m.d.sync += r.dec_done.eq(1)

        moving_out = Signal()
        m.d.comb += moving_out.eq(r.dec_done & out_free)
        with m.If(moving_out):
            m.d.sync += [
                r.dec_done.eq(0),
                r.pending.eq(0),
                r.res_valid.eq(1),
                r.res_last.eq(r.top),
                r.res_path.eq(r.onp),
                r.res_acc.eq(r.top_dep),
                r.rem.eq(r.onp & ~Const(1, N)),
                r.rem_nz.eq(r.top_dep.any()),  # a path beyond the root has depth > 0
                r.bank_out.eq(r.bank_load),
                r.bank_load.eq(~r.bank_load),
            ]
        return moving_out

    def _load(self, m: Module, r: _Registers, moving_out: Value) -> None:
        """Stage 0 (take a beat: the cheap checks, the stores, the parent's row read),
        stage 1 (the row check, the accept bit) and the input control."""
        N, B = self.N_NODES, r.B
        beat, count, drop = self.i.payload, r.count, r.drop

        # ------------------------------------------------------------ stage 0 (take)
        m.d.comb += self.i.ready.eq(~r.pending | moving_out)
        fire = Signal()
        m.d.comb += fire.eq(self.i.valid & self.i.ready)
        cnt = count[:B]
        first = Signal()
        m.d.comb += first.eq(count == 0)
        bad0 = Signal()  # the beat's index, parent or the node count is wrong
        m.d.comb += bad0.eq((count == N) | (beat.node != cnt) | (~first & (beat.parent >= count)))
        # dropping: the beats of a tree that failed a check, through its last; not once
        # that last beat is in stage 1 (taken the cycle its tree failed)
        dropping = Signal()
        m.d.comb += dropping.eq(drop & ~(r.s1_valid & r.s1_last))
        # Stores are not gated by a check: an invalid beat ends its tree, and the
        # next tree rewrites every slot it uses before using it.
        store = Signal()
        m.d.comb += store.eq(fire & ~dropping)
        new_dep = Signal(B)
        m.d.comb += new_dep.eq(mux_tree(r.dep, beat.parent) + 1)
        for i in range(1, N):
            with m.If(store & (count == i)):
                m.d.sync += r.dep[i].eq(new_dep)
        m.d.comb += [
            r.row_wr.addr.eq(cnt),
            r.row_wr.data.eq(beat.row),
            r.row_wr.en.eq(store),
            r.row_rd.addr.eq(beat.parent),
            r.tok_wr.addr.eq(Cat(cnt, r.bank_load)),
            r.tok_wr.data.eq(beat.token),
            r.tok_wr.en.eq(store & ~first),
        ]
        m.d.sync += [
            r.s1_valid.eq(store),
            r.s1_bad.eq(bad0),
            r.s1_node.eq(cnt),
            r.s1_parent.eq(beat.parent),
            r.s1_row.eq(beat.row),
            r.s1_dep.eq(Mux(first, 0, new_dep)),
            r.s1_first.eq(first),
            r.s1_last.eq(beat.last),
        ]
        acc_bit = self._accept_test(m, r, cnt)

        # ------------------------------------------------------------ stage 1 (check)
        # row[0] = 1; row[i] = row[parent[i]] | (1 << i) (the parent's row, read at take)
        exp_row = Mux(r.s1_first, Const(1, N), r.row_rd.data | (Const(1, N) << r.s1_node))
        bad1 = net(m, r.s1_bad | (r.s1_row ^ exp_row).any(), "bad1")
        check = Signal()  # stage 1 holds a beat of a tree not being dropped
        m.d.comb += check.eq(r.s1_valid & ~drop)
        m.d.sync += [
            self.error.eq(check & bad1),
            r.s2_valid.eq(check & ~bad1),
            r.s2_node.eq(r.s1_node),
            r.s2_parent.eq(r.s1_parent),
            r.s2_dep.eq(r.s1_dep),
            r.s2_acc.eq(acc_bit),
            r.s2_first.eq(r.s1_first),
            r.s2_last.eq(r.s1_last),
        ]

        # ------------------------------------------------------------ control
        # stage 0 counts the beats of a tree and marks a complete one pending; stage 1
        # ends a tree that fails its checks (``fails``: the beat taken now, if any, is
        # of that tree: dropped, and it cannot complete it)
        fails = Signal()
        m.d.comb += fails.eq(check & bad1 & ~r.s1_last)
        with m.If(fire & dropping & beat.last):
            m.d.sync += drop.eq(0)
        with m.If(r.s1_valid & drop & r.s1_last):
            m.d.sync += drop.eq(0)  # the failed tree's last beat has passed stage 1
        with m.If(store):
            with m.If(beat.last):
                m.d.sync += count.eq(0)
                with m.If(~bad0 & ~fails):
                    m.d.sync += r.pending.eq(1)
            with m.Else():
                m.d.sync += count.eq(count + 1)
        with m.If(fails):  # the rest of the tree: beats taken from now on are dropped
            m.d.sync += [count.eq(0), drop.eq(1)]
        with m.If(check & bad1 & r.s1_last & ~r.s1_bad):
            m.d.sync += r.pending.eq(0)  # a complete tree whose last row was wrong

    def _accept_test(self, m: Module, r: _Registers, cnt: Value) -> Value:
        """``accept = u[i] * qt[i] < pt[i] << RAND_BITS`` of the beat taken, over stages 0
        and 1; returns stage 1's accept bit."""
        N, P, R = self.N_NODES, self.PROB_BITS, self.RAND_BITS
        W = R + P  # product width; the compare works modulo 2**(W + 1)
        beat = self.i.payload
        # u[i] * qt[i] + (2**W - 1 - (pt[i] << R)) + 1 as carry-save rows of W + 1
        # bits, the first half of the levels in stage 0; accept = bit W of the sum
        # is 0, i.e. u[i] * qt[i] < pt[i] << R.
        u_sel = Signal(R)
        m.d.comb += u_sel.eq(mux_tree([self.u[k] for k in range(N)], cnt))
        pp = [net(m, Mux(beat.qt[k], u_sel, 0), f"pp{k}") for k in range(P)]
        ops = [*pp, Cat(Const((1 << R) - 1, R), ~beat.pt), Const(1, W + 1)]
        shifts = [*range(P), 0, 0]
        half = (csa_levels(len(ops)) + 1) // 2
        ops = carry_save(m, ops, W + 1, "csa", shifts, levels=half)
        s1_ops = [Signal(W + 1, name=f"s1_op{k}", reset_less=True) for k in range(len(ops))]
        m.d.sync += [s.eq(o) for s, o in zip(s1_ops, ops, strict=True)]
        rows = csa_rows(m, s1_ops, W + 1, "csb")
        return ~sign_of_sum(m, rows[0], rows[1], W + 1, "acc")
