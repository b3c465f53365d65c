"""The tree builder's dynamic engine (SPEC §3.9, EAGLE-2): expansion by confidence, rerank."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import idx_bits, mux_tree, net
from hw.tree_builder.common import (
    K_BITS,
    K_MAX,
    W_MAX,
    conf_product,
    out_layout,
    req_layout,
    result_layout,
)
from hw.tree_builder.kept import KeptList, KeptPriority
from hw.tree_builder.sorted_list import SortedList, groups

__all__ = ["DynamicBuilder", "candidate_layout", "frontier_layout"]


def candidate_layout(
    c_max: int, token_bits: int, prob_bits: int, conf_bits: int
) -> data.StructLayout:
    """A candidate as the candidate table stores it."""
    return data.StructLayout(
        {"parent": idx_bits(c_max), "token": token_bits, "q": prob_bits, "conf": conf_bits}
    )


def frontier_layout(c_max: int, token_bits: int) -> data.StructLayout:
    """What a frontier cell carries besides its confidence: the request's fields."""
    cb = idx_bits(c_max)
    return data.StructLayout({"idx": cb, "parent": cb, "token": token_bits})


#: the engine's phases (:attr:`_Registers.phase`)
_IDLE, _ROUND, _OUT, _DRAIN = range(4)


class _Registers:
    """The dynamic engine's lists, memories and registers, declared in
    :meth:`DynamicBuilder.elaborate` and shared by its stages.

    Units: ``front`` (the frontier list, ``W_MAX`` cells, limit ``lim_f``) and
    ``rr`` (the rerank list, ``N_NODES - 1`` cells, limit ``lim_r``), both
    :class:`SortedList`. Memories: the candidate table (``tbl_wr``,
    ``tbl_rd``: ``C_MAX`` words, read one cycle ahead) and the new numbers
    (``nid_wr``, ``nid_rd``: combinational read), both indexed by candidate.
    Registers: the frontier being expanded (``f_data``, ``f_conf``, ``fcnt``
    nodes), the held result (``cur_*``, ``rem`` entries left), the insertion
    stage (``ins_*``) and the kept set (``kept``, :mod:`hw.tree_builder.kept`).
    """

    def __init__(self, m: Module, N: int, TB: int, PB: int, CW: int, CM: int, fpga: bool) -> None:
        B = idx_bits(N)
        CB = idx_bits(CM)
        MB = bits_for(N)
        NR = N - 1  # rerank cells
        fl = frontier_layout(CM, TB)
        cl = candidate_layout(CM, TB, PB, CW)
        self.phase = Signal(range(4))

        m.submodules.frontier = SortedList(CELLS=W_MAX, KEY_BITS=CW, DATA_BITS=fl.size, fpga=fpga)
        m.submodules.rerank = SortedList(CELLS=NR, KEY_BITS=CW, DATA_BITS=CB, fpga=fpga)
        self.front, self.rr = m.submodules.frontier, m.submodules.rerank
        self.lim_f = Signal(W_MAX)
        self.lim_r = Signal(NR)

        m.submodules.table = table = memory.Memory(shape=cl, depth=CM, init=[])
        self.tbl_wr = table.write_port()
        self.tbl_rd = table.read_port()
        m.submodules.newid = nid_mem = memory.Memory(shape=B, depth=CM, init=[])
        self.nid_wr = nid_mem.write_port()
        self.nid_rd = nid_mem.read_port(domain="comb")

        self.rounds = Signal(MB)  # R = min(d, m - 1)
        self.rnd = Signal(MB)  # rounds done
        # the frontier being expanded: request fields and confidence
        self.f_data = [Signal(fl, name=f"f{x}_data") for x in range(W_MAX)]
        self.f_conf = [Signal(CW, name=f"f{x}_conf") for x in range(W_MAX)]
        self.fcnt = Signal(range(W_MAX + 1))
        self.qj = Signal(range(W_MAX + 1))  # next frontier node to request
        self.rj = Signal(range(W_MAX + 1))  # frontier node of the next result
        self.iss = Signal(CB + 1)  # requests issued, this tree
        self.ans = Signal(CB + 1)  # results and errors taken, this tree
        self.cidx = Signal(CB + 1)  # next candidate index

        self.req_valid = Signal()
        self.req_pl = Signal(req_layout(CB, TB))

        # the held result
        self.cur_tok = [Signal(TB, name=f"cur_tok{x}") for x in range(K_MAX)]
        self.cur_q = [Signal(PB, name=f"cur_q{x}") for x in range(K_MAX)]
        self.rem = Signal(range(K_MAX + 1))  # entries of the held result still to create
        self.cur_par = Signal(CB)
        self.cur_conf = Signal(CW)

        # the insertion stage: the candidate created in the cycle before
        self.ins_valid = Signal()
        self.ins_idx = Signal(CB)
        self.ins_par = Signal(CB)
        self.ins_tok = Signal(TB)
        self.ins_q = Signal(PB)
        self.ins_conf = Signal(CW)
        m.submodules.kept = KeptList(CELLS=CM, CAPACITY=NR) if fpga else KeptPriority(CELLS=CM)
        self.kept = m.submodules.kept
        # fpga: copies of ins_conf, one per group of each list's cells (kept apart
        # by flows.synth_fpga)
        ng = groups(W_MAX) + groups(NR) if fpga else 0
        self.conf_rep = [Signal(CW, name=f"ins_conf_rep_g{g}") for g in range(ng)]


class DynamicBuilder(wiring.Component):
    """Dynamic engine: EAGLE-2's expansion and rerank in fixed point (SPEC §3.9).

    Started by ``start`` (one cycle, with ``m``, ``d``, ``w`` valid and held
    until ``busy`` falls; checked by the caller: ``1 <= m <= N_NODES``,
    ``1 <= d``, ``1 <= w <= 16`` and at most ``C_MAX`` candidates, root
    included, in the worst case), the engine runs ``R = min(d, m - 1)``
    rounds. Candidate 0 is the root (confidence ``2**CONF_BITS - 1``), the
    first round's frontier.

    * **Round**: the frontier's requests go out on ``req`` back to back, in
      frontier order (``{node, parent, token}``, candidate indices; the root's
      all zero). Each top-K result on ``res`` (request order) creates its
      entries, rank order, one per cycle, as the next candidates: index,
      parent, token, ``q``, confidence ``(c_parent * q) >> PROB_BITS`` (one
      cycle: a carry-save product), written to the candidate table (``C_MAX``
      words) and inserted the next cycle into two :class:`SortedList` s: the
      *frontier list* (``W_MAX`` cells, limit ``w``: the round's ``w`` most
      confident new candidates, cleared every round) and the *rerank list*
      (``N_NODES - 1`` cells, limit ``m - 1``: the ``m - 1`` most confident
      candidates of the tree). Equal confidences keep creation order (SPEC
      §3.7). The *kept set* follows the rerank list: a candidate joins when it
      lands inside its limit and leaves when it is pushed out
      (:meth:`_start`, :meth:`_requests`, :meth:`_create`, :meth:`_insert`).
    * **Round end** (every result taken, every entry inserted): the frontier
      list becomes the next frontier (in its order) and is cleared. After
      round ``R``, or a round that created no candidate, the engine emits
      (:meth:`_round_end`).
    * **Output**: the kept candidates in creation order (one per cycle from
      the kept set), each read from the candidate table
      with its parent's new number (a register file written as nodes leave:
      parents leave first), then the ``end`` beat (:meth:`_emit`).

    Invalid input: ``res_err`` (a top-K error on one of the tree's
    distributions): one-cycle ``error`` pulse, no further request, nothing
    emitted; the engine takes (and drops) a result or an error for every
    request it issued before it is idle again.

    Parameters
    ----------
    N_NODES, TOKEN_BITS, PROB_BITS, CONF_BITS, C_MAX : int
        As :class:`hw.tree_builder.TreeBuilder`'s (checked there).
    fpga : bool
        ``TARGET="fpga"``: the product is ``*``, the lists take per-group copies
        of the confidence and the kept set is a :class:`~hw.tree_builder.kept.KeptList`
        (:meth:`_insert`); same trees, cycle for cycle.

    Members
    -------
    start : In(1)
        Start a tree (taken while ``busy`` is low).
    m, d : In(bits_for(N_NODES))
        The budget ``M`` and the rounds ``D``.
    w : In(5)
        The width ``W``.
    res : In(stream.Signature(hw.topk.result_layout(TOKEN_BITS, PROB_BITS)))
        Top-K results, one per request, in request order.
    res_err : In(1)
        The top-K unit's error pulse.
    req : Out(stream.Signature(req_layout(idx_bits(C_MAX), TOKEN_BITS)))
        Requests.
    o : Out(stream.Signature(out_layout(N_NODES, TOKEN_BITS, PROB_BITS, CONF_BITS)))
        The built tree.
    error, busy : Out(1)
    """

    def __init__(
        self,
        *,
        N_NODES: int,
        TOKEN_BITS: int,
        PROB_BITS: int,
        CONF_BITS: int,
        C_MAX: int,
        fpga: bool = False,
    ) -> None:
        self.N_NODES, self.TOKEN_BITS, self.fpga = N_NODES, TOKEN_BITS, fpga
        self.PROB_BITS, self.CONF_BITS, self.C_MAX = PROB_BITS, CONF_BITS, C_MAX
        mb = bits_for(N_NODES)
        super().__init__(
            {
                "start": In(1),
                "m": In(mb),
                "d": In(mb),
                "w": In(K_BITS),
                "res": In(stream.Signature(result_layout(TOKEN_BITS, PROB_BITS))),
                "res_err": In(1),
                "req": Out(stream.Signature(req_layout(idx_bits(C_MAX), TOKEN_BITS))),
                "o": Out(stream.Signature(out_layout(N_NODES, TOKEN_BITS, PROB_BITS, CONF_BITS))),
                "error": Out(1),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        s = _Registers(
            m, self.N_NODES, self.TOKEN_BITS, self.PROB_BITS, self.CONF_BITS, self.C_MAX, self.fpga
        )
        m.d.comb += self.busy.eq(s.phase != _IDLE)
        m.d.sync += self.error.eq(0)
        m.d.comb += [s.front.limit.eq(s.lim_f), s.rr.limit.eq(s.lim_r)]
        self._start(m, s)
        self._requests(m, s)
        self._create(m, s)
        self._insert(m, s)
        self._round_end(m, s)
        self._emit(m, s)
        return m

    def _start(self, m: Module, s: "_Registers") -> None:
        """``IDLE``: a ``start`` sets the limits, the rounds ``R`` and the root as the
        frontier, clears both lists and goes to ``ROUND`` (``OUT`` if ``m = 1``)."""
        N, MB = self.N_NODES, bits_for(self.N_NODES)
        NR = N - 1
        mm1 = Signal(MB)
        m.d.comb += mm1.eq(self.m - 1)
        with m.If((s.phase == _IDLE) & self.start):
            m.d.sync += [
                s.lim_f.eq(Cat(self.w > x for x in range(W_MAX))),
                s.lim_r.eq(Cat(self.m > x + 1 for x in range(NR))),
                s.rounds.eq(Mux(self.d < mm1, self.d, mm1)),
                s.rnd.eq(0),
                s.f_data[0].eq(0),
                s.f_conf[0].eq((1 << self.CONF_BITS) - 1),
                s.fcnt.eq(1),
                s.qj.eq(0),
                s.rj.eq(0),
                s.iss.eq(0),
                s.ans.eq(0),
                s.cidx.eq(1),
                s.phase.eq(Mux(self.m > 1, _ROUND, _OUT)),
            ]
            m.d.comb += [s.front.clear.eq(1), s.rr.clear.eq(1)]

    def _requests(self, m: Module, s: "_Registers") -> None:
        """``ROUND``: the frontier's requests on ``req``, back to back, in frontier order."""
        fl = frontier_layout(self.C_MAX, self.TOKEN_BITS)
        req_valid, req_pl, qj = s.req_valid, s.req_pl, s.qj
        m.d.comb += [self.req.valid.eq(req_valid), self.req.payload.eq(req_pl)]
        with m.If(self.req.ready):
            m.d.sync += req_valid.eq(0)
        sel_q = Signal(fl)
        m.d.comb += sel_q.eq(mux_tree([f.as_value() for f in s.f_data], qj[: idx_bits(W_MAX)]))
        with m.If((s.phase == _ROUND) & (qj != s.fcnt) & (~req_valid | self.req.ready)):
            m.d.sync += [
                req_valid.eq(1),
                req_pl.node.eq(sel_q.idx),
                req_pl.parent.eq(sel_q.parent),
                req_pl.token.eq(sel_q.token),
                qj.eq(qj + 1),
                s.iss.eq(s.iss + 1),
            ]

    def _create(self, m: Module, s: "_Registers") -> None:
        """``ROUND``: take the results and create their entries as candidates.

        A result is held (``cur_*``, its frontier node's index and confidence)
        and its entries, rank order, become candidates ``cidx ..``, one a
        cycle: the confidence product, then the insertion registers
        (``ins_*``, :meth:`_insert`). The next result is taken as the held
        one's last entry is created. ``DRAIN`` takes every result.
        """
        PB, CW, CB = self.PROB_BITS, self.CONF_BITS, idx_bits(self.C_MAX)
        fl = frontier_layout(self.C_MAX, self.TOKEN_BITS)
        phase, rem, rj, cur_tok, cur_q = s.phase, s.rem, s.rj, s.cur_tok, s.cur_q
        res = self.res.payload
        m.d.comb += self.res.ready.eq(
            (phase == _DRAIN) | ((phase == _ROUND) & (rem <= 1) & (rj != s.fcnt))
        )
        res_fire = self.res.valid & self.res.ready
        with m.If((phase == _ROUND) | (phase == _DRAIN)):
            m.d.sync += s.ans.eq(s.ans + res_fire + self.res_err)

        # creation: the held result's rank-0 entry becomes candidate cidx
        product = net(
            m, conf_product(m, s.cur_conf, cur_q[0], PB, CW, "conf", fpga=self.fpga), "product"
        )
        creating = (phase == _ROUND) & (rem != 0)
        m.d.sync += s.ins_valid.eq(creating)
        with m.If(creating):
            m.d.sync += [
                s.ins_idx.eq(s.cidx[:CB]),
                s.ins_par.eq(s.cur_par),
                s.ins_tok.eq(cur_tok[0]),
                s.ins_q.eq(cur_q[0]),
                s.ins_conf.eq(product),
                *(r.eq(product) for r in s.conf_rep),
                s.cidx.eq(s.cidx + 1),
                rem.eq(rem - 1),
            ]
            m.d.sync += [cur_tok[x].eq(cur_tok[x + 1]) for x in range(K_MAX - 1)]
            m.d.sync += [cur_q[x].eq(cur_q[x + 1]) for x in range(K_MAX - 1)]
        sel_r = Signal(fl)
        m.d.comb += sel_r.eq(mux_tree([f.as_value() for f in s.f_data], rj[: idx_bits(W_MAX)]))
        sel_rc = mux_tree(s.f_conf, rj[: idx_bits(W_MAX)])
        with m.If((phase == _ROUND) & res_fire):
            m.d.sync += [cur_tok[x].eq(res.token[x]) for x in range(K_MAX)]
            m.d.sync += [cur_q[x].eq(res.q[x]) for x in range(K_MAX)]
            m.d.sync += [
                rem.eq(res.n),
                s.cur_par.eq(sel_r.idx),
                s.cur_conf.eq(sel_rc),
                rj.eq(rj + 1),
            ]

    def _insert(self, m: Module, s: "_Registers") -> None:
        """A created candidate into the table and both lists; the kept set follows the
        rerank list (the candidate joins when it lands inside its limit, the one
        pushed out leaves).

        ``fpga``: the lists compare with per-group copies of the confidence, and
        the kept set takes the list's verdict one cycle later (registered). It
        is read only in ``OUT``, at least two cycles after the last insertion
        (:meth:`_round_end` waits for ``ins_valid`` to fall), so the tree and
        its timing are the same.
        """
        CM = self.C_MAX
        fl = frontier_layout(CM, self.TOKEN_BITS)
        front, rr, tbl_wr = s.front, s.rr, s.tbl_wr
        ins_valid, ins_idx, ins_conf, kept = s.ins_valid, s.ins_idx, s.ins_conf, s.kept
        ins_fd = Signal(fl)
        m.d.comb += [
            ins_fd.idx.eq(ins_idx),
            ins_fd.parent.eq(s.ins_par),
            ins_fd.token.eq(s.ins_tok),
        ]
        m.d.comb += [
            front.ins.eq(ins_valid),
            front.key.eq(ins_conf),
            front.data.eq(ins_fd),
            rr.ins.eq(ins_valid),
            rr.key.eq(ins_conf),
            rr.data.eq(ins_idx),
            tbl_wr.addr.eq(ins_idx),
            tbl_wr.data.parent.eq(s.ins_par),
            tbl_wr.data.token.eq(s.ins_tok),
            tbl_wr.data.q.eq(s.ins_q),
            tbl_wr.data.conf.eq(ins_conf),
            tbl_wr.en.eq(ins_valid),
        ]
        if self.fpga:
            nf = groups(W_MAX)
            m.d.comb += [front.key_rep[g].eq(s.conf_rep[g]) for g in range(nf)]
            m.d.comb += [rr.key_rep[g].eq(r) for g, r in enumerate(s.conf_rep[nf:])]
        m.d.comb += [
            kept.upd.eq(ins_valid),
            kept.set.eq(rr.kept),
            kept.set_idx.eq(ins_idx),
            kept.evict.eq(rr.evict),
            kept.evict_idx.eq(rr.evict_data),
        ]

    def _round_end(self, m: Module, s: "_Registers") -> None:
        """``ROUND``'s end (every result taken, every entry inserted): the frontier list
        becomes the next frontier and is cleared; ``OUT`` after round ``R`` or an empty
        round. Errors: ``res_err`` pulses ``error`` and drains to ``IDLE``."""
        phase, front, rnd = s.phase, s.front, s.rnd
        round_end = net(
            m, (phase == _ROUND) & (s.rj == s.fcnt) & (s.rem == 0) & ~s.ins_valid, "round_end"
        )
        with m.If(round_end):
            m.d.comb += front.clear.eq(1)
            for x in range(W_MAX):
                m.d.sync += [
                    s.f_data[x].eq(front.cells[x].data),
                    s.f_conf[x].eq(front.cells[x].key),
                ]
            m.d.sync += [s.fcnt.eq(front.count), s.qj.eq(0), s.rj.eq(0), rnd.eq(rnd + 1)]
            with m.If((rnd + 1 == s.rounds) | (front.count == 0)):
                m.d.sync += phase.eq(_OUT)

        # errors
        with m.If((phase == _ROUND) & self.res_err):
            m.d.sync += [self.error.eq(1), phase.eq(_DRAIN), s.rem.eq(0)]
        with m.If((phase == _DRAIN) & (s.ans == s.iss)):
            m.d.sync += phase.eq(_IDLE)

    def _emit(self, m: Module, s: "_Registers") -> None:
        """``OUT``: the kept candidates on ``o`` in creation order, then the ``end`` beat.

        The kept set (:mod:`hw.tree_builder.kept`) gives its members in order, one a
        cycle; each one's table
        word is read for the next cycle, its parent renumbered through the
        new-number file (written as nodes leave: parents leave first). Taking
        the ``end`` beat ends the tree (``IDLE``).
        """
        CM = self.C_MAX
        B, CB = idx_bits(self.N_NODES), idx_bits(CM)
        kept, tbl_rd, nid_rd, nid_wr = s.kept, s.tbl_rd, s.nid_rd, s.nid_wr
        o1_valid = Signal()
        o1_end = Signal()
        o1_idx = Signal(CB)
        ocount = Signal(B + 1)
        end_sent = Signal()
        start = (s.phase == _IDLE) & self.start
        with m.If(start):
            m.d.sync += [ocount.eq(1), end_sent.eq(0)]
        adv = net(m, ~o1_valid | self.o.ready, "o_adv")
        step = net(m, (s.phase == _OUT) & adv & ~end_sent, "o_step")
        m.d.comb += [
            kept.clear.eq(start),
            kept.walk.eq(s.phase == _OUT),
            kept.take.eq(step & kept.valid),
            tbl_rd.addr.eq(kept.idx),
            tbl_rd.en.eq(adv),
        ]
        with m.If(self.o.ready):
            m.d.sync += o1_valid.eq(0)
        with m.If(step & kept.valid):
            m.d.sync += [o1_valid.eq(1), o1_end.eq(0), o1_idx.eq(kept.idx)]
        with m.Elif(step & kept.done):
            m.d.sync += [o1_valid.eq(1), o1_end.eq(1), end_sent.eq(1)]
        cand = tbl_rd.data
        m.d.comb += nid_rd.addr.eq(cand.parent)
        m.d.comb += self.o.valid.eq(o1_valid)
        with m.If(o1_end):
            m.d.comb += self.o.payload.end.eq(1)
        with m.Else():
            m.d.comb += [
                self.o.payload.parent.eq(Mux(cand.parent == 0, 0, nid_rd.data)),
                self.o.payload.token.eq(cand.token),
                self.o.payload.q.eq(cand.q),
                self.o.payload.conf.eq(cand.conf),
            ]
        o_fire = o1_valid & self.o.ready
        with m.If(o_fire & ~o1_end):
            m.d.comb += [nid_wr.addr.eq(o1_idx), nid_wr.data.eq(ocount), nid_wr.en.eq(1)]
            m.d.sync += ocount.eq(ocount + 1)
        with m.If(o_fire & o1_end):
            m.d.sync += s.phase.eq(_IDLE)
