"""The tree builder's static engine (SPEC §3.8): a shape in, its top-K tree out."""

from amaranth import Cat, Const, Module, Mux, Signal
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


class StaticBuilder(wiring.Component):
    """Static engine: builds the tree of a shape from its nodes' top-K results.

    Started by ``start`` (one cycle, with ``k`` valid and held until ``busy``
    falls), the engine

    1. **loads** the shape from ``shape`` (the mask generator's parent format:
       parents of nodes ``1 .. n-1``, then an ``end`` beat): ``parent[i]``,
       ``rank[i] = kids[parent[i]]++`` and the set of nodes with children;
    2. **decides**: a *decision pointer* visits the nodes with children only
       (a priority encoder over the undecided ones), in order. Node ``i`` is
       *alive* if it is the root, or its parent is alive and its rank is below
       the number of entries of its parent's top-K result (SPEC §3.8); the
       pointer waits at ``i`` until the result of its alive parent is in;
    3. **expands**: a *record pointer* visits nodes ``1 .. n-1`` in order,
       waiting for its parent's decision and, if the parent is alive, its
       result. An alive node gets its new number (a running count), its token
       and ``q`` (the rank's entry of its parent's result) and its confidence
       ``(c_parent * q) >> PROB_BITS`` (SPEC §3.7), stored as an output
       record; an alive node with children issues its request on ``req``
       (``{node, parent, token}``, shape indices). The root's request (all
       zero) goes first. The top-K results come back on ``res`` in request
       order and are stored per node (``K_MAX`` entries and ``n``);
    4. **emits** the records on ``o``, new numbers ``1 ..`` in order, then the
       ``end`` beat, once every node with children is decided, every alive
       one requested and every request answered (no error can follow),
       concurrently with the record pointer's last nodes.

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

    def __init__(self, *, N_NODES: int, TOKEN_BITS: int, PROB_BITS: int, CONF_BITS: int) -> None:
        self.N_NODES, self.TOKEN_BITS = N_NODES, TOKEN_BITS
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
        B = idx_bits(N)
        RW = K_BITS - 1  # a rank, 0 .. 15
        rl = record_layout(N, TB, PB, CW)

        IDLE, LOAD, DROP, EXPAND, DRAIN = range(5)
        phase = Signal(range(5))
        m.d.comb += self.busy.eq(phase != IDLE)
        m.d.sync += self.error.eq(0)

        def mem(
            name: str, shape: int | data.StructLayout, *, sync_read: bool = False
        ) -> tuple[memory.WritePort, memory.ReadPort]:
            mm = memory.Memory(shape=shape, depth=N, init=[])
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
        par_wr, par_rd = par_mem.write_port(), par_mem.read_port(domain="comb")
        rank_wr, rank_rd = rank_mem.write_port(), rank_mem.read_port(domain="comb")
        nent_wr, nent_rd = nent_mem.write_port(), nent_mem.read_port(domain="comb")
        kids_wr, kids_rd = mem("kids_mem", K_BITS)  # children of node p so far (LOAD)
        nid_wr, nid_rd = mem("nid_mem", B)  # new number of node p
        rn_wr, rn_rd = mem("rn_mem", B)  # node of request number r
        ent_wr, ent_rd = mem("ent_mem", K_MAX * (TB + PB), sync_read=True)  # top-K entries
        conf_wr, conf_rd = mem("conf_mem", CW, sync_read=True)  # confidence of node p
        rec_wr, rec_rd = mem("rec_mem", rl, sync_read=True)  # output record by new number

        touched = Signal(N)  # kids_mem entry valid (LOAD)
        internal = Signal(N)  # node has a child
        count = Signal(B + 1)  # LOAD: the node the next beat defines
        n = Signal(B + 1)  # nodes in the shape

        alive = Signal(N)
        has = Signal(N)  # the node's top-K result is stored
        i = Signal(B + 1)  # pointer
        cnt_alive = Signal(B + 1)  # new numbers given
        issued = Signal(B + 1)
        answered = Signal(B + 1)
        todo = Signal(N)  # internal nodes the decision pointer has not decided yet
        ip = Signal(B)  # decision pointer: the next internal node to decide
        ip_valid = Signal()
        nreq = Signal(B + 1)  # requests the tree needs (alive internal nodes decided so far)
        wcount = Signal(B + 1)  # records written (record 0, the root, is never emitted)
        j = Signal(B + 1)  # next record to emit
        end_sent = Signal()

        req_valid = Signal()
        req_pl = Signal(req_layout(B, TB))
        m.d.comb += [self.req.valid.eq(req_valid), self.req.payload.eq(req_pl)]
        with m.If(self.req.ready):
            m.d.sync += req_valid.eq(0)

        # ------------------------------------------------------------------ LOAD
        sh = self.shape.payload
        m.d.comb += self.shape.ready.eq((phase == LOAD) | (phase == DROP))
        sh_fire = self.shape.valid & self.shape.ready
        m.d.comb += kids_rd.addr.eq(sh.parent)
        kids_eff = net(m, Mux(touched.bit_select(sh.parent, 1), kids_rd.data, 0), "kids_eff")
        bad = net(
            m,
            ~sh.end
            & (
                ~less_than(m, sh.parent, count, "par_lt")
                | (count == N)
                | ~less_than(m, kids_eff, self.k, "kids_lt")
            ),
            "shape_bad",
        )

        with m.Switch(phase):
            with m.Case(IDLE):
                with m.If(self.start):
                    m.d.sync += [
                        phase.eq(LOAD),
                        count.eq(1),
                        touched.eq(0),
                        internal.eq(0),
                    ]
            with m.Case(LOAD):
                with m.If(sh_fire):
                    with m.If(sh.end):
                        m.d.sync += [
                            n.eq(count),
                            phase.eq(EXPAND),
                            i.eq(1),
                            alive.eq(1),
                            has.eq(0),
                            cnt_alive.eq(1),
                            wcount.eq(1),
                            j.eq(1),
                            end_sent.eq(0),
                            answered.eq(0),
                            todo.eq(internal),
                            ip.eq(0),
                            ip_valid.eq(count != 1),
                            nreq.eq(count != 1),
                        ]
                        m.d.comb += [nid_wr.addr.eq(0), nid_wr.data.eq(0), nid_wr.en.eq(1)]
                        with m.If(count != 1):  # the root has children: its request first
                            m.d.sync += [req_valid.eq(1), req_pl.eq(0), issued.eq(1)]
                            m.d.comb += [rn_wr.addr.eq(0), rn_wr.data.eq(0), rn_wr.en.eq(1)]
                        with m.Else():
                            m.d.sync += issued.eq(0)
                    with m.Elif(bad):
                        m.d.sync += [self.error.eq(1), phase.eq(DROP)]
                    with m.Else():
                        m.d.comb += [
                            par_wr.addr.eq(count[:B]),
                            par_wr.data.eq(sh.parent),
                            par_wr.en.eq(1),
                            rank_wr.addr.eq(count[:B]),
                            rank_wr.data.eq(kids_eff),
                            rank_wr.en.eq(1),
                            kids_wr.addr.eq(sh.parent),
                            kids_wr.data.eq(kids_eff + 1),
                            kids_wr.en.eq(1),
                        ]
                        m.d.sync += [
                            touched.bit_select(sh.parent, 1).eq(1),
                            internal.bit_select(sh.parent, 1).eq(1),
                            count.eq(count + 1),
                        ]
            with m.Case(DROP):
                with m.If(sh_fire & sh.end):
                    m.d.sync += phase.eq(IDLE)

        # ------------------------------------------------------------------ EXPAND: decisions
        # The decision pointer visits the internal nodes only (a priority encoder over
        # `todo`), in order, and decides whether each is alive: the record pointer
        # below reads the decision for a node's parent, and the tree is closed (no
        # request can follow) as soon as every internal node is decided, whatever the
        # leaves after it.
        expanding = phase == EXPAND
        par_rd2 = par_mem.read_port(domain="comb")
        rank_rd2 = rank_mem.read_port(domain="comb")
        nent_rd2 = nent_mem.read_port(domain="comb")
        m.d.comb += [par_rd2.addr.eq(ip), rank_rd2.addr.eq(ip)]
        ip_p = par_rd2.data
        m.d.comb += nent_rd2.addr.eq(ip_p)
        ip_root = ip == 0
        ip_alive_p = alive.bit_select(ip_p, 1)
        ip_go = net(
            m,
            expanding & ip_valid & (ip_root | ~ip_alive_p | has.bit_select(ip_p, 1)),
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
            m.d.sync += [todo.eq(rest), ip.eq(nxt), ip_valid.eq(or_tree(rest))]
            with m.If(ip_alive):
                m.d.sync += [alive.bit_select(ip, 1).eq(1), nreq.eq(nreq + 1)]

        # ------------------------------------------------------------------ EXPAND: P0
        s1_valid = Signal()
        s1_node = Signal(B)
        s1_parent = Signal(B)
        s1_rank = Signal(RW)
        s1_alive = Signal()
        s1_internal = Signal()
        s1_proot = Signal()  # the parent is the root
        s1_pnew = Signal(B)  # the parent's new number
        s1_newid = Signal(B)

        need_req = s1_valid & s1_alive & s1_internal
        stall = net(m, need_req & req_valid & ~self.req.ready, "stall")

        m.d.comb += [par_rd.addr.eq(i[:B]), rank_rd.addr.eq(i[:B])]
        p = par_rd.data
        r = rank_rd.data
        alive_p = alive.bit_select(p, 1)
        has_p = has.bit_select(p, 1)
        m.d.comb += [nent_rd.addr.eq(p), nid_rd.addr.eq(p)]
        decided_p = ~todo.bit_select(p, 1)
        go = net(m, expanding & (i != n) & ~stall & decided_p & (~alive_p | has_p), "go")
        alive_i = net(m, alive_p & less_than(m, r, nent_rd.data, "rank_lt"), "alive_i")
        m.d.comb += [
            ent_rd.addr.eq(p),
            ent_rd.en.eq(~stall),
            conf_rd.addr.eq(p),
            conf_rd.en.eq(~stall),
        ]
        with m.If(~stall):
            m.d.sync += s1_valid.eq(go)
        with m.If(go):
            m.d.sync += [
                i.eq(i + 1),
                s1_node.eq(i[:B]),
                s1_parent.eq(p),
                s1_rank.eq(r),
                s1_alive.eq(alive_i),
                s1_internal.eq(internal.bit_select(i[:B], 1)),
                s1_proot.eq(p == 0),
                s1_pnew.eq(nid_rd.data),
                s1_newid.eq(cnt_alive[:B]),
            ]
            with m.If(alive_i):
                m.d.sync += cnt_alive.eq(cnt_alive + 1)
                m.d.comb += [nid_wr.addr.eq(i[:B]), nid_wr.data.eq(cnt_alive), nid_wr.en.eq(1)]

        # ------------------------------------------------------------------ EXPAND: P1
        word = ent_rd.data
        tok = net(m, word[: K_MAX * TB].word_select(s1_rank, TB), "p1_token")
        q = net(m, word[K_MAX * TB :].word_select(s1_rank, PB), "p1_q")
        conf_p = Mux(s1_proot, (1 << CW) - 1, conf_rd.data)
        conf_i = net(m, conf_product(m, conf_p, q, PB, CW, "conf"), "p1_conf")
        rec = Signal(rl)
        m.d.comb += [rec.parent.eq(s1_pnew), rec.token.eq(tok), rec.q.eq(q), rec.conf.eq(conf_i)]
        p1 = net(m, expanding & s1_valid & ~stall, "p1")
        p1_write = net(m, p1 & s1_alive, "p1_write")
        with m.If(p1_write):
            m.d.comb += [
                conf_wr.addr.eq(s1_node),
                conf_wr.data.eq(conf_i),
                conf_wr.en.eq(1),
                rec_wr.addr.eq(s1_newid),
                rec_wr.data.eq(rec),
                rec_wr.en.eq(1),
            ]
            m.d.sync += wcount.eq(wcount + 1)
            with m.If(s1_internal):
                m.d.sync += [
                    req_valid.eq(1),
                    req_pl.node.eq(s1_node),
                    req_pl.parent.eq(s1_parent),
                    req_pl.token.eq(tok),
                    issued.eq(issued + 1),
                ]
                m.d.comb += [rn_wr.addr.eq(issued[:B]), rn_wr.data.eq(s1_node), rn_wr.en.eq(1)]

        # ------------------------------------------------------------------ results
        m.d.comb += self.res.ready.eq(expanding | (phase == DRAIN))
        res_fire = self.res.valid & self.res.ready
        m.d.comb += rn_rd.addr.eq(answered[:B])
        rnode = rn_rd.data
        with m.If(expanding & res_fire):
            m.d.comb += [
                ent_wr.addr.eq(rnode),
                ent_wr.data.eq(Cat(self.res.payload.token, self.res.payload.q)),
                ent_wr.en.eq(1),
                nent_wr.addr.eq(rnode),
                nent_wr.data.eq(self.res.payload.n),
                nent_wr.en.eq(1),
            ]
            m.d.sync += has.bit_select(rnode, 1).eq(1)
        with m.If(expanding | (phase == DRAIN)):
            m.d.sync += answered.eq(answered + res_fire + self.res_err)
        with m.If(expanding & self.res_err):
            m.d.sync += [self.error.eq(1), phase.eq(DRAIN), s1_valid.eq(0)]
        with m.If((phase == DRAIN) & (answered == issued)):
            m.d.sync += phase.eq(IDLE)

        # ------------------------------------------------------------------ emit
        r1_valid = Signal()
        r1_end = Signal()
        r1_fwd = Signal()
        fwd = Signal(rl)
        adv = net(m, ~r1_valid | self.o.ready, "o_adv")
        out_go = net(
            m,
            expanding & (todo == 0) & (issued == nreq) & (answered == issued) & ~end_sent & adv,
            "out_go",
        )
        ptr_done = (i == n) & ~s1_valid
        m.d.comb += [rec_rd.addr.eq(j[:B]), rec_rd.en.eq(adv)]
        with m.If(self.o.ready):
            m.d.sync += r1_valid.eq(0)
        with m.If(out_go):
            with m.If(j != wcount):  # record j is in the memory
                m.d.sync += [r1_valid.eq(1), r1_end.eq(0), r1_fwd.eq(0), j.eq(j + 1)]
            with m.Elif(p1_write):  # record j is written this cycle: forwarded
                m.d.sync += [r1_valid.eq(1), r1_end.eq(0), r1_fwd.eq(1), fwd.eq(rec), j.eq(j + 1)]
            with m.Elif(ptr_done):
                m.d.sync += [r1_valid.eq(1), r1_end.eq(1), end_sent.eq(1)]
        out_rec = Signal(rl)
        m.d.comb += out_rec.eq(Mux(r1_fwd, fwd, rec_rd.data))
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
            m.d.sync += phase.eq(IDLE)
        return m
