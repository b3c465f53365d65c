"""The tree manager's verify path: mask generator -> acceptance sampler -> token sampler.

:class:`VerifyPath` is the token tree manager as it was before the tree builder
joined it (SPEC §1, §2, §3): draft beats in (:func:`draft_layout`), mask rows,
the decision, the accepted tokens and the extra token out, the RNG lanes
giving every node its uniform. The extra token is drawn by the two-pass
token sampler (SPEC §3.5) or, with ``SELECT_LANES > 0``, by the one-pass
token select (spec §3.12), which the decision's ``last`` starts.
:class:`hw.tree_manager.TreeManager` feeds it from its ``i`` port or from the
held tree's ``pq`` join.
"""

from amaranth import Module, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.accept_sampler import AcceptSampler, result_layout
from hw.accept_sampler import token_layout as accepted_token_layout
from hw.common import idx_bits, pick
from hw.rng_lanes import RngLanes
from hw.token_sampler import TokenSampler, beat_layout
from hw.token_sampler import token_layout as extra_layout
from hw.token_select import TokenSelect, tot_layout
from hw.tree_mask_gen import TreeMaskGen, row_layout

__all__ = ["VerifyPath", "draft_layout", "verify_error_layout"]


def draft_layout(n_nodes: int, token_bits: int, prob_bits: int) -> data.StructLayout:
    """Input beat: one draft node (parent, token, ``pt``, ``qt``) or the end of the tree."""
    return data.StructLayout(
        {
            "parent": idx_bits(n_nodes),
            "token": token_bits,
            "pt": prob_bits,
            "qt": prob_bits,
            "end": 1,
        }
    )


#: the verify path's one-cycle error pulses, one per block
verify_error_layout = data.StructLayout({"mask": 1, "accept": 1, "token": 1, "rng": 1})


class VerifyPath(wiring.Component):
    """Mask generator, acceptance sampler, token sampler and RNG lanes, one step at a time.

    A tree arrives on ``i`` as in :class:`hw.tree_mask_gen.TreeMaskGen`: nodes
    ``1 .. n-1`` in order (parent, token and the verifier's ``pt``, ``qt``),
    then an ``end`` beat. Each beat's parent goes to the mask generator, the
    rest of a node beat into a side FIFO (``SIDE_DEPTH`` entries; a beat is
    taken only when both can take it). Each mask row leaving the generator is
    joined with the head of the side FIFO (node 0, the root, with zeros),
    loaded into the acceptance sampler (uniforms ``out[i] >> (32 -
    RAND_BITS)`` of the lanes) and mirrored on ``rows`` in the same cycle: the
    join is combinational. ``result`` and ``tokens`` come out of the sampler.
    The extra token's uniform is lane 0's full output. ``SELECT_LANES = 0``:
    ``w`` and ``extra`` are the two-pass token sampler's. ``SELECT_LANES >
    0``: ``tot``, ``w`` and ``extra`` are the one-pass token select's
    (:class:`hw.token_select.TokenSelect`, ``LANES = SELECT_LANES``); a
    ``result`` beat taken becomes its ``sel`` beat (``node = last``) at the
    next edge, and ``result`` is held (not valid) until that selection is
    taken. Protocol, invalid input and latency: the tree manager's
    (:class:`hw.tree_manager.TreeManager`).

    Parameters
    ----------
    params : dict
        ``N_NODES``, ``TOKEN_BITS``, ``PROB_BITS``, ``RAND_BITS``,
        ``WEIGHT_BITS``, ``LANES``, ``SELECT_LANES``, already checked by the
        tree manager.

    Members
    -------
    seed : In(stream.Signature(64))
    busy : Out(1)
    advance : In(1)
    i : In(stream.Signature(draft_layout(...)))
    rows : Out(stream.Signature(tree_mask_gen.row_layout(N_NODES)))
    result, tokens : Out(stream.Signature(...)) of the acceptance sampler
    tot : In(stream.Signature(token_select.tot_layout(...)))
        Only with ``SELECT_LANES > 0``: the token select's totals.
    w : In(stream.Signature(...)) of the token sampler (or select)
    extra : Out(stream.Signature(...)) of the token sampler (or select)
    error : Out(verify_error_layout)
    """

    #: entries of the side FIFO (node data waiting for its mask row)
    SIDE_DEPTH = 8

    def __init__(self, params: dict) -> None:
        p = dict(params)
        self.N_NODES, self.TOKEN_BITS, self.PROB_BITS = (
            p["N_NODES"],
            p["TOKEN_BITS"],
            p["PROB_BITS"],
        )
        self.RAND_BITS = p["RAND_BITS"]
        self.mask = TreeMaskGen(**pick(p, TreeMaskGen.PARAMS))
        self.rng = RngLanes(**pick(p, RngLanes.PARAMS))
        self.acc = AcceptSampler(**pick(p, AcceptSampler.PARAMS))
        N, TB, PB, WB = self.N_NODES, self.TOKEN_BITS, self.PROB_BITS, p["WEIGHT_BITS"]
        #: weights per ``w`` beat; the one-pass select is used when ``SELECT_LANES > 0``
        self.SELECT_LANES = p.get("SELECT_LANES", 0)
        self.W_LANES = self.SELECT_LANES or p["LANES"]
        if self.SELECT_LANES:
            sel = {"LANES": self.SELECT_LANES, "WEIGHT_BITS": WB, "TOKEN_BITS": TB}
            self.tok = TokenSelect(**sel, N_NODES=N)
        else:
            self.tok = TokenSampler(**pick(p, TokenSampler.PARAMS))
        totals = {"tot": In(stream.Signature(tot_layout(self.W_LANES, WB, N)))}
        super().__init__(
            {
                "seed": In(stream.Signature(64)),
                "busy": Out(1),
                "advance": In(1),
                "i": In(stream.Signature(draft_layout(N, TB, PB))),
                "rows": Out(stream.Signature(row_layout(N))),
                "result": Out(stream.Signature(result_layout(N))),
                "tokens": Out(stream.Signature(accepted_token_layout(TB))),
                **(totals if self.SELECT_LANES else {}),
                "w": In(stream.Signature(beat_layout(self.W_LANES, WB))),
                "extra": Out(stream.Signature(extra_layout(TB))),
                "error": Out(verify_error_layout),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.mask_gen = mask = self.mask
        m.submodules.rng_lanes = rng = self.rng
        m.submodules.accept_sampler = acc = self.acc
        tok = self.tok
        m.submodules["token_select" if self.SELECT_LANES else "token_sampler"] = tok
        N, RB = self.N_NODES, self.RAND_BITS
        side_l = data.StructLayout(
            {
                "parent": idx_bits(N),
                "token": self.TOKEN_BITS,
                "pt": self.PROB_BITS,
                "qt": self.PROB_BITS,
            }
        )
        m.submodules.side_fifo = side = fifo.SyncFIFO(width=side_l.size, depth=self.SIDE_DEPTH)

        # RNG lanes
        wiring.connect(m, wiring.flipped(self.seed), rng.seed)
        m.d.comb += [self.busy.eq(rng.busy), rng.advance.eq(self.advance)]
        for k in range(N):
            m.d.comb += acc.u[k].eq(rng.out[k][32 - RB :])
        m.d.comb += tok.u.eq(rng.out[0])

        # split the draft beats: parents to the mask generator, the rest aside
        beat = self.i.payload
        side_in = data.View(side_l, side.w_data)
        m.d.comb += [
            mask.i.payload.parent.eq(beat.parent),
            mask.i.payload.end.eq(beat.end),
            side_in.parent.eq(beat.parent),
            side_in.token.eq(beat.token),
            side_in.pt.eq(beat.pt),
            side_in.qt.eq(beat.qt),
            mask.i.valid.eq(self.i.valid & (beat.end | side.w_rdy)),
            side.w_en.eq(self.i.valid & ~beat.end & mask.i.ready),
            self.i.ready.eq(mask.i.ready & (beat.end | side.w_rdy)),
        ]

        # join each mask row with its node's data (node 0, the root, has none)
        row = mask.o.payload
        side_out = data.View(side_l, side.r_data)
        root = row.node == 0
        load = acc.i.payload
        m.d.comb += [
            load.node.eq(row.node),
            load.row.eq(row.row),
            load.last.eq(row.last),
            load.parent.eq(0),
            load.token.eq(0),
            load.pt.eq(0),
            load.qt.eq(0),
        ]
        with m.If(~root):
            m.d.comb += [
                load.parent.eq(side_out.parent),
                load.token.eq(side_out.token),
                load.pt.eq(side_out.pt),
                load.qt.eq(side_out.qt),
            ]
        joined = mask.o.valid & (root | side.r_rdy)
        m.d.comb += [
            acc.i.valid.eq(joined & self.rows.ready),
            self.rows.valid.eq(joined & acc.i.ready),
            self.rows.payload.eq(row),
            mask.o.ready.eq(acc.i.ready & self.rows.ready & (root | side.r_rdy)),
            side.r_en.eq(mask.o.valid & ~root & acc.i.ready & self.rows.ready),
        ]

        wiring.connect(m, acc.tokens, wiring.flipped(self.tokens))
        if self.SELECT_LANES:
            self._select(m, acc, tok)
        else:
            wiring.connect(m, acc.result, wiring.flipped(self.result))
            wiring.connect(m, wiring.flipped(self.w), tok.i)
        wiring.connect(m, tok.o, wiring.flipped(self.extra))
        m.d.comb += [
            self.error.mask.eq(mask.error),
            self.error.accept.eq(acc.error),
            self.error.token.eq(tok.error),
            self.error.rng.eq(rng.error),
        ]
        return m

    def _select(self, m: Module, acc: AcceptSampler, tok: TokenSelect) -> None:
        """The one-pass select: totals and weights in; each ``result`` beat taken
        becomes a ``sel`` beat (``node = last``), and the next result waits for it."""
        wiring.connect(m, wiring.flipped(self.tot), tok.tot)
        wiring.connect(m, wiring.flipped(self.w), tok.w)
        pending = Signal()  # a decision taken whose selection is not yet
        node = Signal(idx_bits(self.N_NODES))
        m.d.comb += [
            self.result.payload.eq(acc.result.payload),
            self.result.valid.eq(acc.result.valid & ~pending),
            acc.result.ready.eq(self.result.ready & ~pending),
            tok.sel.valid.eq(pending),
            tok.sel.payload.node.eq(node),
        ]
        with m.If(tok.sel.valid & tok.sel.ready):
            m.d.sync += pending.eq(0)
        with m.If(acc.result.valid & acc.result.ready):
            m.d.sync += [pending.eq(1), node.eq(acc.result.payload.last)]
