"""The tree builder's static engine (SPEC §3.8): a shape in, its top-K tree out."""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import idx_bits, less_than, net, or_tree, prefix_or_below
from hw.tree_builder.common import (
    K_BITS,
    K_MAX,
    conf_product,
    out_layout,
    req_layout,
    result_layout,
)
from hw.tree_mask_gen import parent_layout

__all__ = ["StaticBuilder", "record_layout"]


def record_layout(
    n_nodes: int, token_bits: int, prob_bits: int, conf_bits: int
) -> data.StructLayout:
    """A built node as the engine stores it until it is emitted (new parent, payload)."""
    return data.StructLayout(
        {"parent": idx_bits(n_nodes), "token": token_bits, "q": prob_bits, "conf": conf_bits}
    )


#: ``TARGET="fpga"``: bits of ``q`` selected by one copy of the rank (:class:`_Registers`)
RANK_GROUP = 4

#: the engine's phases (:attr:`_Registers.phase`)
_IDLE, _LOAD, _DROP, _EXPAND, _DRAIN = range(5)


class _Registers:
    """The static engine's storage and registers, declared in
    :meth:`StaticBuilder.elaborate` and shared by its stages.

    Register files (combinational read), indexed by shape node: ``par``
    (parent), ``rank``, ``nent`` (entries of the node's top-K result),
    ``kids`` (children so far, while loading), ``nid`` (new number); ``rn``,
    the node of request number ``r``. Memories read one cycle ahead: ``ent``
    (the node's top-K entries, ``K_MAX * (TOKEN_BITS + PROB_BITS)`` bits a
    word), ``conf`` (its confidence), ``rec`` (output record, by new number).
    ``<name>_wr`` and ``<name>_rd`` are their ports; ``par_mem``, ``rank_mem``
    and ``nent_mem`` are kept for the decision pointer's own read ports.
    """

    def __init__(self, m: Module, N: int, TB: int, PB: int, CW: int, fpga: bool) -> None:
        B = idx_bits(N)
        RW = K_BITS - 1  # a rank, 0 .. 15
        self.rl = rl = record_layout(N, TB, PB, CW)
        self.phase = Signal(range(5))

        def mem(
            name: str,
            shape: int | data.StructLayout,
            *,
            sync_read: bool = False,
            lutram: bool = False,
        ) -> tuple[memory.WritePort, memory.ReadPort]:
            attrs = {"ram_style": "distributed"} if lutram else None
            mm = memory.Memory(shape=shape, depth=N, init=[], attrs=attrs)
            m.submodules[name] = mm
            return mm.write_port(), mm.read_port(domain="sync" if sync_read else "comb")

        par_mem = memory.Memory(shape=B, depth=N, init=[])  # parent of node i
        rank_mem = memory.Memory(shape=RW, depth=N, init=[])  # rank of node i
        nent_mem = memory.Memory(shape=K_BITS, depth=N, init=[])  # entries of p's top-K result
        m.submodules.par_mem, m.submodules.rank_mem, m.submodules.nent_mem = (
            par_mem,
            rank_mem,
            nent_mem,
        )
        self.par_mem, self.rank_mem, self.nent_mem = par_mem, rank_mem, nent_mem
        # ports made in pairs and kept as locals first: Amaranth names a port's nets after
        # the variable it is assigned to, so this form keeps the Verilog's net names
        par_wr, par_rd = par_mem.write_port(), par_mem.read_port(domain="comb")
        rank_wr, rank_rd = rank_mem.write_port(), rank_mem.read_port(domain="comb")
        nent_wr, nent_rd = nent_mem.write_port(), nent_mem.read_port(domain="comb")
        self.par_wr, self.par_rd = par_wr, par_rd
        self.rank_wr, self.rank_rd = rank_wr, rank_rd
        self.nent_wr, self.nent_rd = nent_wr, nent_rd
        self.kids_wr, self.kids_rd = mem("kids_mem", K_BITS)  # children of node p so far (LOAD)
        self.nid_wr, self.nid_rd = mem("nid_mem", B)  # new number of node p
        self.rn_wr, self.rn_rd = mem("rn_mem", B)  # node of request number r
        # FPGA (decision 0043): the entries and confidences in LUT RAM, so that P1 starts at
        # flip-flops rather than at a block RAM's clock-to-out
        self.ent_wr, self.ent_rd = mem("ent_mem", K_MAX * (TB + PB), sync_read=True, lutram=fpga)
        self.conf_wr, self.conf_rd = mem("conf_mem", CW, sync_read=True, lutram=fpga)
        self.rec_wr, self.rec_rd = mem("rec_mem", rl, sync_read=True)  # record by new number

        self.touched = Signal(N)  # kids_mem entry valid (LOAD)
        self.internal = Signal(N)  # node has a child
        self.count = Signal(B + 1)  # LOAD: the node the next beat defines
        self.n = Signal(B + 1)  # nodes in the shape

        self.alive = Signal(N)
        self.has = Signal(N)  # the node's top-K result is stored
        self.i = Signal(B + 1)  # pointer
        self.cnt_alive = Signal(B + 1)  # new numbers given
        self.issued = Signal(B + 1)
        self.answered = Signal(B + 1)
        self.todo = Signal(N)  # internal nodes the decision pointer has not decided yet
        self.ip = Signal(B)  # decision pointer: the next internal node to decide
        self.ip_valid = Signal()
        self.nreq = Signal(B + 1)  # requests the tree needs (alive internal nodes decided)
        self.wcount = Signal(B + 1)  # records written (record 0, the root, is never emitted)
        self.j = Signal(B + 1)  # next record to emit
        self.end_sent = Signal()

        self.req_valid = Signal()
        self.req_pl = Signal(req_layout(B, TB))

        # stage P1's registers, written by P0
        self.s1_valid = Signal()
        self.s1_node = Signal(B)
        self.s1_parent = Signal(B)
        self.s1_rank = Signal(RW)
        # FPGA: copies of s1_rank (kept apart by flows.synth_fpga), one selecting the token
        # and one per RANK_GROUP bits of q, so that no rank net reaches every entry bit
        n_rep = 1 + -(-PB // RANK_GROUP) if fpga else 0
        self.s1_rank_rep = [Signal(RW, name=f"s1_rank_rep_g{g}") for g in range(n_rep)]
        self.s1_alive = Signal()
        self.s1_internal = Signal()
        self.s1_proot = Signal()  # the parent is the root
        self.s1_pnew = Signal(B)  # the parent's new number
        self.s1_newid = Signal(B)


class StaticBuilder(wiring.Component):
    """Static engine: builds the tree of a shape from its nodes' top-K results.

    Started by ``start`` (one cycle, with ``k`` valid and held until ``busy``
    falls), the engine

    1. **loads** the shape from ``shape`` (the mask generator's parent
       format: parents of nodes ``1 .. n-1``, then an ``end`` beat):
       ``parent[i]``, ``rank[i] = kids[parent[i]]++`` and the set of nodes
       with children (:meth:`_load`);
    2. **decides**: a *decision pointer* visits the nodes with children only
       (a priority encoder over the undecided ones), in order. Node ``i`` is
       *alive* if it is the root, or its parent is alive and its rank is below
       the number of entries of its parent's top-K result (SPEC §3.8); the
       pointer waits at ``i`` until the result of its alive parent is in
       (:meth:`_decide`);
    3. **expands**: a *record pointer* visits nodes ``1 .. n-1`` in order,
       waiting for its parent's decision and, if the parent is alive, its
       result. An alive node gets its new number (a running count), its token
       and ``q`` (the rank's entry of its parent's result) and its confidence
       ``(c_parent * q) >> PROB_BITS`` (SPEC §3.7), stored as an output
       record; an alive node with children issues its request on ``req``
       (``{node, parent, token}``, shape indices). The root's request (all
       zero) goes first. The top-K results come back on ``res`` in request
       order and are stored per node (``K_MAX`` entries and ``n``)
       (:meth:`_pointer`, :meth:`_record`, :meth:`_results`);
    4. **emits** the records on ``o``, new numbers ``1 ..`` in order, then the
       ``end`` beat, once every node with children is decided, every alive
       one requested and every request answered (no error can follow),
       concurrently with the record pointer's last nodes (:meth:`_emit`).

    Storage, all indexed by shape node: parents, ranks, children counts,
    entry counts, new numbers and the request order in register files
    (combinational read); the top-K entries (``K_MAX * (TOKEN_BITS +
    PROB_BITS)`` bits a word), the confidences and the output records in
    memories read one cycle ahead.

    Record pipeline: ``P0`` (parent, rank, its parent's state, memory
    addresses) and ``P1`` (the entry, the confidence product, the record
    write and the request). A child's request cannot be answered before its
    parent's ``P1`` has written the parent's confidence, so ``P0`` reads it
    without forwarding. The emitter reads a record one cycle after ``P1``
    wrote it, or takes it from ``P1`` in the cycle it is written.

    Invalid input (one-cycle ``error`` pulse, nothing emitted for the tree):
    in the shape, a parent ``>=`` its node, more than ``N_NODES`` nodes, or a
    node of rank ``>= k``: the rest of the shape is dropped up to its ``end``
    beat. ``res_err`` (a top-K error on one of the tree's distributions) while
    expanding: no further request is issued and the engine takes (and drops)
    a result or an error for every request it issued before it is idle again.

    Parameters
    ----------
    N_NODES, TOKEN_BITS, PROB_BITS, CONF_BITS : int
        As :class:`hw.tree_builder.TreeBuilder`'s (checked there).

    Members
    -------
    start : In(1)
        Start a tree (taken while ``busy`` is low).
    k : In(5)
        ``K`` of the tree, ``1 .. 16`` (checked by the caller).
    shape : In(stream.Signature(parent_layout(N_NODES)))
        The shape.
    res : In(stream.Signature(hw.topk.result_layout(TOKEN_BITS, PROB_BITS)))
        Top-K results, one per request, in request order.
    res_err : In(1)
        The top-K unit's error pulse.
    req : Out(stream.Signature(req_layout(idx_bits(N_NODES), TOKEN_BITS)))
        Requests.
    o : Out(stream.Signature(out_layout(N_NODES, TOKEN_BITS, PROB_BITS, CONF_BITS)))
        The built tree.
    error, busy : Out(1)
    """

    def __init__(
        self, *, N_NODES: int, TOKEN_BITS: int, PROB_BITS: int, CONF_BITS: int, fpga: bool = False
    ) -> None:
        self.N_NODES, self.TOKEN_BITS, self.fpga = N_NODES, TOKEN_BITS, fpga
        self.PROB_BITS, self.CONF_BITS = PROB_BITS, CONF_BITS
        B = idx_bits(N_NODES)
        super().__init__(
            {
                "start": In(1),
                "k": In(K_BITS),
                "shape": In(stream.Signature(parent_layout(N_NODES))),
                "res": In(stream.Signature(result_layout(TOKEN_BITS, PROB_BITS))),
                "res_err": In(1),
                "req": Out(stream.Signature(req_layout(B, TOKEN_BITS))),
                "o": Out(stream.Signature(out_layout(N_NODES, TOKEN_BITS, PROB_BITS, CONF_BITS))),
                "error": Out(1),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        N, TB, PB, CW = self.N_NODES, self.TOKEN_BITS, self.PROB_BITS, self.CONF_BITS
        s = _Registers(m, N, TB, PB, CW, self.fpga)
        m.d.comb += self.busy.eq(s.phase != _IDLE)
        m.d.sync += self.error.eq(0)
        m.d.comb += [self.req.valid.eq(s.req_valid), self.req.payload.eq(s.req_pl)]
        with m.If(self.req.ready):
            m.d.sync += s.req_valid.eq(0)
        self._load(m, s)
        self._decide(m, s)
        stall = self._pointer(m, s)
        rec, p1_write = self._record(m, s, stall)
        self._results(m, s)
        self._emit(m, s, rec, p1_write)
        return m

    def _load(self, m: Module, s: "_Registers") -> None:
        """``IDLE`` and ``LOAD`` (and ``DROP``): take the shape, one beat a cycle.

        A beat defines node ``count``: its parent and rank (the parent's children
        so far) are written, the parent marked internal. The ``end`` beat starts
        ``EXPAND`` (the root's request first, if it has children); a bad beat
        (parent ``>= count``, more than ``N_NODES`` nodes, rank ``>= k``) pulses
        ``error`` and drops the rest of the shape.
        """
        N, B = self.N_NODES, idx_bits(self.N_NODES)
        phase = s.phase
        sh = self.shape.payload
        m.d.comb += self.shape.ready.eq((phase == _LOAD) | (phase == _DROP))
        sh_fire = self.shape.valid & self.shape.ready
        m.d.comb += s.kids_rd.addr.eq(sh.parent)
        kids_eff = net(m, Mux(s.touched.bit_select(sh.parent, 1), s.kids_rd.data, 0), "kids_eff")
        bad = net(
            m,
            ~sh.end
            & (
                ~less_than(m, sh.parent, s.count, "par_lt")
                | (s.count == N)
                | ~less_than(m, kids_eff, self.k, "kids_lt")
            ),
            "shape_bad",
        )

        with m.Switch(phase):
            with m.Case(_IDLE):
                with m.If(self.start):
                    m.d.sync += [
                        phase.eq(_LOAD),
                        s.count.eq(1),
                        s.touched.eq(0),
                        s.internal.eq(0),
                    ]
            with m.Case(_LOAD):
                with m.If(sh_fire):
                    with m.If(sh.end):
                        m.d.sync += [
                            s.n.eq(s.count),
                            phase.eq(_EXPAND),
                            s.i.eq(1),
                            s.alive.eq(1),
                            s.has.eq(0),
                            s.cnt_alive.eq(1),
                            s.wcount.eq(1),
                            s.j.eq(1),
                            s.end_sent.eq(0),
                            s.answered.eq(0),
                            s.todo.eq(s.internal),
                            s.ip.eq(0),
                            s.ip_valid.eq(s.count != 1),
                            s.nreq.eq(s.count != 1),
                        ]
                        m.d.comb += [s.nid_wr.addr.eq(0), s.nid_wr.data.eq(0), s.nid_wr.en.eq(1)]
                        with m.If(s.count != 1):  # the root has children: its request first
                            m.d.sync += [s.req_valid.eq(1), s.req_pl.eq(0), s.issued.eq(1)]
                            m.d.comb += [s.rn_wr.addr.eq(0), s.rn_wr.data.eq(0), s.rn_wr.en.eq(1)]
                        with m.Else():
                            m.d.sync += s.issued.eq(0)
                    with m.Elif(bad):
                        m.d.sync += [self.error.eq(1), phase.eq(_DROP)]
                    with m.Else():
                        m.d.comb += [
                            s.par_wr.addr.eq(s.count[:B]),
                            s.par_wr.data.eq(sh.parent),
                            s.par_wr.en.eq(1),
                            s.rank_wr.addr.eq(s.count[:B]),
                            s.rank_wr.data.eq(kids_eff),
                            s.rank_wr.en.eq(1),
                            s.kids_wr.addr.eq(sh.parent),
                            s.kids_wr.data.eq(kids_eff + 1),
                            s.kids_wr.en.eq(1),
                        ]
                        m.d.sync += [
                            s.touched.bit_select(sh.parent, 1).eq(1),
                            s.internal.bit_select(sh.parent, 1).eq(1),
                            s.count.eq(s.count + 1),
                        ]
            with m.Case(_DROP):
                with m.If(sh_fire & sh.end):
                    m.d.sync += phase.eq(_IDLE)

    def _decide(self, m: Module, s: "_Registers") -> None:
        """``EXPAND``, the decision pointer: decides whether each internal node is alive.

        The pointer visits the internal nodes only (a priority encoder over
        ``todo``), in order: the record pointer (:meth:`_pointer`) reads the
        decision for a node's parent, and the tree is closed (no request can
        follow) as soon as every internal node is decided, whatever the leaves
        after it. Node ``ip`` waits until its alive parent's result is in.
        """
        N, B = self.N_NODES, idx_bits(self.N_NODES)
        todo, ip, alive, has = s.todo, s.ip, s.alive, s.has
        expanding = s.phase == _EXPAND
        par_rd2 = s.par_mem.read_port(domain="comb")
        rank_rd2 = s.rank_mem.read_port(domain="comb")
        nent_rd2 = s.nent_mem.read_port(domain="comb")
        m.d.comb += [par_rd2.addr.eq(ip), rank_rd2.addr.eq(ip)]
        ip_p = par_rd2.data
        m.d.comb += nent_rd2.addr.eq(ip_p)
        ip_root = ip == 0
        ip_alive_p = alive.bit_select(ip_p, 1)
        ip_go = net(
            m,
            expanding & s.ip_valid & (ip_root | ~ip_alive_p | has.bit_select(ip_p, 1)),
            "ip_go",
        )
        ip_alive = net(
            m,
            ~ip_root & ip_alive_p & less_than(m, rank_rd2.data, nent_rd2.data, "ip_rank_lt"),
            "ip_alive",
        )
        rest = net(m, todo & ~(Const(1, N) << ip)[:N], "todo_rest")
        rest_first = net(m, rest & ~prefix_or_below(m, rest, "todo_below"), "todo_first")
        nxt = net(
            m,
            Cat(or_tree([rest_first[x] for x in range(N) if x >> b & 1]) for b in range(B)),
            "ip_next",
        )
        with m.If(ip_go):
            m.d.sync += [todo.eq(rest), ip.eq(nxt), s.ip_valid.eq(or_tree(rest))]
            with m.If(ip_alive):
                m.d.sync += [alive.bit_select(ip, 1).eq(1), s.nreq.eq(s.nreq + 1)]

    def _pointer(self, m: Module, s: "_Registers") -> Value:
        """``EXPAND``, the record pointer and stage ``P0``; returns the pipeline's ``stall``.

        Node ``i`` goes once its parent is decided and, if alive, has its
        result: ``P0`` reads its parent and rank, the parent's state and new
        number, and addresses the parent's entries and confidence for ``P1``;
        an alive node gets the next new number.
        """
        B = idx_bits(self.N_NODES)
        i, alive, has = s.i, s.alive, s.has
        expanding = s.phase == _EXPAND
        need_req = s.s1_valid & s.s1_alive & s.s1_internal
        stall = net(m, need_req & s.req_valid & ~self.req.ready, "stall")

        m.d.comb += [s.par_rd.addr.eq(i[:B]), s.rank_rd.addr.eq(i[:B])]
        p = s.par_rd.data
        r = s.rank_rd.data
        alive_p = alive.bit_select(p, 1)
        has_p = has.bit_select(p, 1)
        m.d.comb += [s.nent_rd.addr.eq(p), s.nid_rd.addr.eq(p)]
        decided_p = ~s.todo.bit_select(p, 1)
        go = net(m, expanding & (i != s.n) & ~stall & decided_p & (~alive_p | has_p), "go")
        alive_i = net(m, alive_p & less_than(m, r, s.nent_rd.data, "rank_lt"), "alive_i")
        m.d.comb += [
            s.ent_rd.addr.eq(p),
            s.ent_rd.en.eq(~stall),
            s.conf_rd.addr.eq(p),
            s.conf_rd.en.eq(~stall),
        ]
        with m.If(~stall):
            m.d.sync += s.s1_valid.eq(go)
        with m.If(go):
            m.d.sync += [
                i.eq(i + 1),
                s.s1_node.eq(i[:B]),
                s.s1_parent.eq(p),
                s.s1_rank.eq(r),
                *(rep.eq(r) for rep in s.s1_rank_rep),
                s.s1_alive.eq(alive_i),
                s.s1_internal.eq(s.internal.bit_select(i[:B], 1)),
                s.s1_proot.eq(p == 0),
                s.s1_pnew.eq(s.nid_rd.data),
                s.s1_newid.eq(s.cnt_alive[:B]),
            ]
            with m.If(alive_i):
                m.d.sync += s.cnt_alive.eq(s.cnt_alive + 1)
                m.d.comb += [
                    s.nid_wr.addr.eq(i[:B]),
                    s.nid_wr.data.eq(s.cnt_alive),
                    s.nid_wr.en.eq(1),
                ]
        return stall

    def _record(self, m: Module, s: "_Registers", stall: Value) -> tuple[Value, Value]:
        """``EXPAND``, stage ``P1``: an alive node's record and, if internal, its request.

        The rank's entry of the parent's result (token, ``q``), the confidence
        ``(c_parent * q) >> PROB_BITS`` (the root's parent confidence is all
        ones), written with the record; the request is issued here. Returns the
        record and ``p1_write`` (it is written this cycle), for the emitter.
        """
        B = idx_bits(self.N_NODES)
        PB, CW = self.PROB_BITS, self.CONF_BITS
        expanding = s.phase == _EXPAND
        tok, q = self._entry(m, s.ent_rd.data, s.s1_rank, s.s1_rank_rep)
        conf_p = Mux(s.s1_proot, (1 << CW) - 1, s.conf_rd.data)
        conf_i = net(m, conf_product(m, conf_p, q, PB, CW, "conf", fpga=self.fpga), "p1_conf")
        rec = Signal(s.rl)
        m.d.comb += [rec.parent.eq(s.s1_pnew), rec.token.eq(tok), rec.q.eq(q), rec.conf.eq(conf_i)]
        p1 = net(m, expanding & s.s1_valid & ~stall, "p1")
        p1_write = net(m, p1 & s.s1_alive, "p1_write")
        with m.If(p1_write):
            m.d.comb += [
                s.conf_wr.addr.eq(s.s1_node),
                s.conf_wr.data.eq(conf_i),
                s.conf_wr.en.eq(1),
                s.rec_wr.addr.eq(s.s1_newid),
                s.rec_wr.data.eq(rec),
                s.rec_wr.en.eq(1),
            ]
            m.d.sync += s.wcount.eq(s.wcount + 1)
            with m.If(s.s1_internal):
                m.d.sync += [
                    s.req_valid.eq(1),
                    s.req_pl.node.eq(s.s1_node),
                    s.req_pl.parent.eq(s.s1_parent),
                    s.req_pl.token.eq(tok),
                    s.issued.eq(s.issued + 1),
                ]
                m.d.comb += [
                    s.rn_wr.addr.eq(s.issued[:B]),
                    s.rn_wr.data.eq(s.s1_node),
                    s.rn_wr.en.eq(1),
                ]
        return rec, p1_write

    def _entry(
        self, m: Module, word: Value, rank: Value, reps: list[Signal]
    ) -> tuple[Value, Value]:
        """The ``rank``-th entry (token, ``q``) of a stored top-K result ``word``; with
        ``reps`` (the FPGA build's copies of the rank), the token's select reads ``reps[0]``
        and each ``RANK_GROUP`` bits of ``q`` their own copy."""
        TB, PB = self.TOKEN_BITS, self.PROB_BITS
        toks, qs = word[: K_MAX * TB], word[K_MAX * TB :]
        if not reps:
            tok, q = toks.word_select(rank, TB), qs.word_select(rank, PB)
        else:
            tok = toks.word_select(reps[0], TB)
            q = Cat(
                qs.word_select(rep, PB)[g * RANK_GROUP : (g + 1) * RANK_GROUP]
                for g, rep in enumerate(reps[1:])
            )
        return net(m, tok, "p1_token"), net(m, q, "p1_q")

    def _results(self, m: Module, s: "_Registers") -> None:
        """``EXPAND`` and ``DRAIN``: take the top-K results and errors, in request order.

        A result is stored for the node of its request number (entries, entry
        count, ``has``). A ``res_err`` while expanding pulses ``error`` and
        drains: every request issued is answered (and dropped) before ``IDLE``.
        """
        B = idx_bits(self.N_NODES)
        phase, answered = s.phase, s.answered
        expanding = phase == _EXPAND
        m.d.comb += self.res.ready.eq(expanding | (phase == _DRAIN))
        res_fire = self.res.valid & self.res.ready
        m.d.comb += s.rn_rd.addr.eq(answered[:B])
        rnode = s.rn_rd.data
        with m.If(expanding & res_fire):
            m.d.comb += [
                s.ent_wr.addr.eq(rnode),
                s.ent_wr.data.eq(Cat(self.res.payload.token, self.res.payload.q)),
                s.ent_wr.en.eq(1),
                s.nent_wr.addr.eq(rnode),
                s.nent_wr.data.eq(self.res.payload.n),
                s.nent_wr.en.eq(1),
            ]
            m.d.sync += s.has.bit_select(rnode, 1).eq(1)
        with m.If(expanding | (phase == _DRAIN)):
            m.d.sync += answered.eq(answered + res_fire + self.res_err)
        with m.If(expanding & self.res_err):
            m.d.sync += [self.error.eq(1), phase.eq(_DRAIN), s.s1_valid.eq(0)]
        with m.If((phase == _DRAIN) & (answered == s.issued)):
            m.d.sync += phase.eq(_IDLE)

    def _emit(self, m: Module, s: "_Registers", rec: Value, p1_write: Value) -> None:
        """``EXPAND``: the records on ``o`` in new-number order, then the ``end`` beat.

        Starts once the tree is closed (every internal node decided, every
        alive one requested and answered); record ``j`` is read from the record
        memory, or forwarded from ``P1`` in the cycle it is written. The
        ``end`` beat goes once the record pointer is done; taking it ends the
        tree (``IDLE``).
        """
        B = idx_bits(self.N_NODES)
        j, issued = s.j, s.issued
        expanding = s.phase == _EXPAND
        r1_valid = Signal()
        r1_end = Signal()
        r1_fwd = Signal()
        fwd = Signal(s.rl)
        adv = net(m, ~r1_valid | self.o.ready, "o_adv")
        out_go = net(
            m,
            expanding
            & (s.todo == 0)
            & (issued == s.nreq)
            & (s.answered == issued)
            & ~s.end_sent
            & adv,
            "out_go",
        )
        ptr_done = (s.i == s.n) & ~s.s1_valid
        m.d.comb += [s.rec_rd.addr.eq(j[:B]), s.rec_rd.en.eq(adv)]
        with m.If(self.o.ready):
            m.d.sync += r1_valid.eq(0)
        with m.If(out_go):
            with m.If(j != s.wcount):  # record j is in the memory
                m.d.sync += [r1_valid.eq(1), r1_end.eq(0), r1_fwd.eq(0), j.eq(j + 1)]
            with m.Elif(p1_write):  # record j is written this cycle: forwarded
                m.d.sync += [r1_valid.eq(1), r1_end.eq(0), r1_fwd.eq(1), fwd.eq(rec), j.eq(j + 1)]
            with m.Elif(ptr_done):
                m.d.sync += [r1_valid.eq(1), r1_end.eq(1), s.end_sent.eq(1)]
        out_rec = Signal(s.rl)
        m.d.comb += out_rec.eq(Mux(r1_fwd, fwd, s.rec_rd.data))
        m.d.comb += self.o.valid.eq(r1_valid)
        with m.If(r1_end):
            m.d.comb += self.o.payload.end.eq(1)
        with m.Else():
            m.d.comb += [
                self.o.payload.parent.eq(out_rec.parent),
                self.o.payload.token.eq(out_rec.token),
                self.o.payload.q.eq(out_rec.q),
                self.o.payload.conf.eq(out_rec.conf),
            ]
        with m.If(r1_valid & r1_end & self.o.ready):
            m.d.sync += s.phase.eq(_IDLE)
