"""Acceptance sampler (SPEC §3.2, §3.3, §6): the parallel accept / path decision."""

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
    """The acceptance sampler's storage, pipeline and output registers and its token
    memory, declared in :meth:`AcceptSampler.elaborate` and shared by its stages.

    Tree storage: ``par[j]``, the parent of node ``j >= 1``; ``sib[i][j - 1] =
    S[i][j]`` for ``1 <= j < i``; ``tri[i][j - 1] = row[i][j]`` for ``1 <= j < i``
    (row bit 0 and bit ``i`` are 1, bits above ``i`` are 0: checked on input);
    ``dep[i]``, the depth of node ``i``. Storage has no reset: every slot a tree
    uses is written by that tree before it is read, and slots above ``n`` are
    masked.
    """

    def __init__(self, m: Module, N: int, T: int) -> None:
        B = self.B = idx_bits(N)
        self.par = [None] + [Signal(B, name=f"par{j}", reset_less=True) for j in range(1, N)]
        self.sib = [None, None] + [
            Signal(i - 1, name=f"sib{i}", reset_less=True) for i in range(2, N)
        ]
        self.tri = [None, None] + [
            Signal(i - 1, name=f"tri{i}", reset_less=True) for i in range(2, N)
        ]
        self.dep = [Const(0, B)] + [Signal(B, name=f"dep{i}", reset_less=True) for i in range(1, N)]
        self.accept = Signal(N, reset_less=True)  # bit 0 unused

        # tokens: two banks, the loading tree writes one, the emitting tree reads the other
        # bank = address bit B, so each bank has 2**B words (N rounded up to a power of 2)
        m.submodules.tok_mem = tok_mem = memory.Memory(shape=T, depth=2 << B, init=[])
        self.tok_wr = tok_mem.write_port()
        self.tok_rd = tok_mem.read_port()

        # control
        self.count = Signal(B + 1)  # index the next beat must carry
        self.drop = Signal()  # after an error: drop beats through last = 1
        self.pending = Signal()  # a valid tree is loaded, its decision not yet output
        self.dec_n = Signal(B + 1, reset_less=True)  # node count of the tree being decided
        self.bank_load = Signal()
        self.bank_out = Signal()

        self.s1_valid = Signal()
        self.s1_node = Signal(B + 1, reset_less=True)
        self.s1_start = Signal()  # s1 holds the last node of a valid tree
        self.acc_done = Signal()  # accept bits complete: chosen computed this cycle
        self.ch_done = Signal()  # chosen registered: waiting to move to the output stage
        self.chosen = Signal(N, reset_less=True)

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
    * ``chosen[i] = accept[i] & ~|(accept & S[i])`` with the sibling matrix
      ``S[i][j] = parent[i] == parent[j] and 0 < j < i`` (first accepted
      sibling wins);
    * ``on_path[i] = (row[i] & ~chosen & ~1) == 0`` (``on_path[0] = 1``);
    * ``last`` = the highest index with ``on_path`` (tree priority encoder);
      ``path_mask = row[last]`` (the ``on_path`` vector itself, which equals
      ``row[last]`` because rows are checked against the tree);
      ``accepted = depth[last]``.

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
    The block pulses ``error`` for one cycle (the cycle after it takes the bad
    beat), emits nothing for that tree, consumes and drops the rest of its
    beats through ``last = 1`` (none if the bad beat has ``last``), and then
    takes the next tree.

    Latency (SPEC §6), counting rising clock edges after the edge that takes
    the last beat (E0), with no stalls:

    * E1: the accept bits of all nodes are registered (the multiply is split
      over two load stages: the take cycle selects ``u[i]``, forms the partial
      products and the first carry-save levels; the next cycle finishes the
      carry-save tree and the compare), i.e. 1 cycle after the last node;
    * E2: ``chosen`` registered (the sibling matrix is built while nodes load);
    * E3: ``on_path`` (= ``path_mask``), ``last`` and ``accepted`` registered:
      path and ``last`` 2 cycles after the accept bits;
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

    Tree storage is registers (the sibling matrix and the mask rows as
    ``N^2 / 2``-bit triangles), hence ``N_NODES <= 256``; tokens are a two-bank
    memory. Design rationale: ``docs/blocks/accept_sampler.md``.

    Parameters
    ----------
    N_NODES : int
        Largest tree, ``4 .. 256`` (default 64, SPEC §5).
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
        "N_NODES": Param(default=64, lo=4, hi=256, small=4),
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
        """``chosen`` (E2), then path, ``last``, ``accepted`` into the output stage (E3);
        returns ``moving_out`` (the decision moves into the output stage this cycle)."""
        N, B = self.N_NODES, r.B
        accept, chosen = r.accept, r.chosen
        # ------------------------------------------------------------ decision, E1 -> E2
        # chosen[i] = accept[i] & present[i] & ~|(accept & S[i]); present[i]: node i
        # belongs to the tree being decided (masks stale accept bits above n).
        # Each row is one vector AND and one OR reduction (``Value.any()``).
        present = Signal(N)
        m.d.comb += present.eq(~(Const((1 << N) - 1, N) << r.dec_n))
        acc_p = Signal(N)
        m.d.comb += acc_p.eq(accept & present)
        chosen_next = [Const(0, 1), acc_p[1]]
        for i in range(2, N):
            chosen_next.append(acc_p[i] & ~(accept[1:i] & r.sib[i]).any())
        m.d.sync += r.acc_done.eq(r.s1_start)
        with m.If(r.acc_done):
            m.d.sync += [chosen.eq(Cat(*chosen_next)), r.ch_done.eq(1)]

        # ------------------------------------------------------------ decision, E2 -> E3
        # on_path[i] = (row[i] & ~chosen & ~1) == 0; with row bit i implicit:
        # chosen[i] & ~|(row[i][1:i] & ~chosen[1:i]).
        on_path = Signal(N)
        not_chosen = Signal(N)
        m.d.comb += not_chosen.eq(~chosen)
        onp = [Const(1, 1), chosen[1]]
        for i in range(2, N):
            onp.append(chosen[i] & ~(r.tri[i] & not_chosen[1:i]).any())
        m.d.comb += on_path.eq(Cat(*onp))
        # last = highest index with on_path, by a priority tree that carries depth[i]
        # along with the index: accepted = depth[last] without a multiplexer.
        _, last_pl = priority_tree(
            m, on_path, [Cat(r.dep[k], Const(k, B)) for k in range(N)], highest=True, name="last"
        )
        last_idx, last_dep = last_pl[B:], last_pl[:B]
        moving_out = Signal()
        m.d.comb += moving_out.eq(r.ch_done & out_free)
        with m.If(moving_out):
            m.d.sync += [
                r.ch_done.eq(0),
                r.pending.eq(0),
                r.res_valid.eq(1),
                r.res_last.eq(last_idx),
                r.res_path.eq(on_path),
                r.res_acc.eq(last_dep),
                r.rem.eq(on_path & ~Const(1, N)),
                r.rem_nz.eq(last_dep.any()),  # a path beyond the root has depth > 0
                r.bank_out.eq(r.bank_load),
                r.bank_load.eq(~r.bank_load),
            ]
        return moving_out

    def _load(self, m: Module, r: _Registers, moving_out: Value) -> None:
        """Load stages 0 (take a beat: checks, stores) and 1 (the accept bit), and the
        input control."""
        N, B = self.N_NODES, r.B
        beat, count, drop = self.i.payload, r.count, r.drop
        par, sib, tri, dep = r.par, r.sib, r.tri, r.dep

        def full_row(p: int) -> Value:
            if p == 0:
                return Const(1, N)
            mid = [tri[p]] if p >= 2 else []
            return Cat(Const(1, 1), *mid, Const(1, 1), Const(0, N - p - 1))

        # ------------------------------------------------------------ load stage 0 (take)
        m.d.comb += self.i.ready.eq(~r.pending | moving_out)
        fire = Signal()
        m.d.comb += fire.eq(self.i.valid & self.i.ready)
        cnt = count[:B]
        first = Signal()
        m.d.comb += first.eq(count == 0)

        bad_seq = Signal()
        bad_par = Signal()
        bad_row = Signal()
        exp_row = Signal(N)
        m.d.comb += [
            bad_seq.eq((count == N) | (beat.node != cnt)),
            bad_par.eq(~first & (beat.parent >= count)),
            exp_row.eq(
                Mux(
                    first,
                    Const(1, N),
                    mux_tree([full_row(p) for p in range(N)], beat.parent) | (Const(1, N) << cnt),
                )
            ),
            bad_row.eq((beat.row ^ exp_row).any()),
        ]
        bad = Signal()
        m.d.comb += bad.eq(bad_seq | bad_par | bad_row)

        # Stores are not gated by `bad`: an invalid beat ends its tree, and the
        # next tree rewrites every slot it uses before using it.
        store = Signal()
        m.d.comb += store.eq(fire & ~drop)
        new_dep = Signal(B)
        m.d.comb += new_dep.eq(mux_tree(dep, beat.parent) + 1)
        # the new node's parent against every stored parent, once: row `count` of S
        # keeps bits 1 .. count - 1 (earlier siblings only)
        same_par = Signal(N)
        m.d.comb += same_par.eq(Cat(Const(0, 1), *[beat.parent == par[j] for j in range(1, N)]))
        for i in range(1, N):
            with m.If(store & (count == i)):
                m.d.sync += [par[i].eq(beat.parent), dep[i].eq(new_dep)]
                if i >= 2:
                    m.d.sync += [sib[i].eq(same_par[1:i]), tri[i].eq(beat.row[1:i])]
        m.d.comb += [
            r.tok_wr.addr.eq(Cat(cnt, r.bank_load)),
            r.tok_wr.data.eq(beat.token),
            r.tok_wr.en.eq(store & ~first),
        ]
        self._accept_test(m, r, cnt, store)

        # ------------------------------------------------------------ take: control
        with m.If(fire):
            with m.If(drop):
                with m.If(beat.last):
                    m.d.sync += drop.eq(0)
            with m.Elif(bad):
                m.d.sync += [self.error.eq(1), count.eq(0), drop.eq(~beat.last)]
            with m.Else():
                with m.If(beat.last):
                    m.d.sync += [
                        count.eq(0),
                        r.pending.eq(1),
                        r.dec_n.eq(count + 1),
                        r.s1_start.eq(1),
                    ]
                with m.Else():
                    m.d.sync += count.eq(count + 1)

    def _accept_test(self, m: Module, r: _Registers, cnt: Value, store: Value) -> None:
        """``accept[i] = u[i] * qt[i] < pt[i] << RAND_BITS`` over load stages 0 and 1."""
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
        m.d.sync += [r.s1_valid.eq(store), r.s1_node.eq(r.count), r.s1_start.eq(0)]

        # ------------------------------------------------------------ load stage 1
        rows = csa_rows(m, s1_ops, W + 1, "csb")
        acc_bit = Signal()
        m.d.comb += acc_bit.eq(~sign_of_sum(m, rows[0], rows[1], W + 1, "acc"))
        for i in range(1, N):
            with m.If(r.s1_valid & (r.s1_node == i)):
                m.d.sync += r.accept[i].eq(acc_bit)
