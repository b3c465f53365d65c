"""Token tree manager: mask generator -> acceptance sampler -> token sampler (SPEC §1, §3)."""

from amaranth import Module
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.accept_sampler import AcceptSampler, result_layout
from hw.accept_sampler import token_layout as accepted_token_layout
from hw.common import check_params, idx_bits, merge_params, pick
from hw.rng_lanes import RngLanes
from hw.token_sampler import TokenSampler, beat_layout
from hw.token_sampler import token_layout as extra_layout
from hw.tree_mask_gen import TreeMaskGen, row_layout

__all__ = ["TreeManager", "draft_layout", "error_layout"]


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


error_layout = data.StructLayout({"mask": 1, "accept": 1, "token": 1, "rng": 1})


class TreeManager(wiring.Component):
    """The token tree manager's blocks wired the way the chip uses them.

    One verification step:

    1. ``advance`` (one cycle) steps every RNG lane (after a ``seed`` once);
    2. the draft tree arrives on ``i`` as in :class:`hw.tree_mask_gen.TreeMaskGen`:
       nodes ``1 .. n-1`` in order (parent, token and the verifier's ``pt``,
       ``qt``), then an ``end`` beat. The mask generator turns parents into
       mask rows; each row is joined with its node's token, ``pt`` and ``qt``
       and loaded into the acceptance sampler, whose uniforms are the lanes'
       outputs ``out[i] >> (32 - RAND_BITS)``;
    3. ``result`` (``last``, ``path_mask``, ``accepted``) and ``tokens`` (the
       accepted draft tokens in depth order) come out of the sampler;
    4. the verifier streams the residual weights of ``last`` twice on ``w``
       (:class:`hw.token_sampler.TokenSampler`), which draws the extra token
       on ``extra`` with lane 0's full 32-bit output.

    ``advance`` must not be raised between the first beat of a tree and the
    extra token of that step (the lanes' outputs are the step's randomness).
    ``rows`` mirrors the mask rows for the verifier's tree attention (SPEC §2);
    it is a copy of what the sampler loads and must be taken (``ready``) or the
    tree stalls; tie ``rows.ready`` high if unused.

    Invalid input: the RNG lanes' and the token sampler's errors are theirs (a
    refused ``advance`` changes nothing; an invalid draw is dropped and the
    next one works). An invalid draft tree (a parent ``>=`` its node, more than
    ``N_NODES`` nodes) pulses ``error.mask``, but the block does not recover
    from it: node data of the dropped beats stays in the side FIFO and the
    acceptance sampler holds the rows emitted before the error, so later
    trees are joined with stale data (and ``error.accept`` pulses). Reset the
    block after an ``error.mask`` pulse; validate trees before sending them.

    Latency: the blocks' own (see their docstrings) plus nothing: the join is
    combinational between the mask generator's output and the sampler's input.
    Design rationale: ``docs/blocks/tree_manager.md``.

    Parameters
    ----------
    N_NODES, TOKEN_BITS, PROB_BITS, RAND_BITS, WEIGHT_BITS, LANES : int
        As in the blocks (SPEC §5). ``N_NODES`` is limited to 4 .. 256 by the
        acceptance sampler.

    Members
    -------
    seed : In(stream.Signature(64))
    busy : Out(1)
    advance : In(1)
    i : In(stream.Signature(draft_layout(...)))
    rows : Out(stream.Signature(tree_mask_gen.row_layout(N_NODES)))
    result, tokens : Out(stream.Signature(...)) of the acceptance sampler
    w : In(stream.Signature(...)) of the token sampler
    extra : Out(stream.Signature(...)) of the token sampler
    error : Out(error_layout)
        One-cycle error pulses of each block.
    """

    SIDE_DEPTH = 8

    #: the blocks' parameters, a shared name accepting what every block accepts
    PARAMS = merge_params(
        TreeMaskGen.PARAMS, RngLanes.PARAMS, AcceptSampler.PARAMS, TokenSampler.PARAMS
    )

    def __init__(self, **params: int) -> None:
        # check everything before building any block (no half-built blocks left over)
        p = check_params(self.PARAMS, params)
        for name, value in p.items():
            setattr(self, name, value)
        N_NODES, TOKEN_BITS, PROB_BITS = p["N_NODES"], p["TOKEN_BITS"], p["PROB_BITS"]
        LANES, WEIGHT_BITS = p["LANES"], p["WEIGHT_BITS"]
        self.mask = TreeMaskGen(**pick(p, TreeMaskGen.PARAMS))
        self.rng = RngLanes(**pick(p, RngLanes.PARAMS))
        self.acc = AcceptSampler(**pick(p, AcceptSampler.PARAMS))
        self.tok = TokenSampler(**pick(p, TokenSampler.PARAMS))
        super().__init__(
            {
                "seed": In(stream.Signature(64)),
                "busy": Out(1),
                "advance": In(1),
                "i": In(stream.Signature(draft_layout(N_NODES, TOKEN_BITS, PROB_BITS))),
                "rows": Out(stream.Signature(row_layout(N_NODES))),
                "result": Out(stream.Signature(result_layout(N_NODES))),
                "tokens": Out(stream.Signature(accepted_token_layout(TOKEN_BITS))),
                "w": In(stream.Signature(beat_layout(LANES, WEIGHT_BITS))),
                "extra": Out(stream.Signature(extra_layout(TOKEN_BITS))),
                "error": Out(error_layout),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.mask_gen = mask = self.mask
        m.submodules.rng_lanes = rng = self.rng
        m.submodules.accept_sampler = acc = self.acc
        m.submodules.token_sampler = tok = self.tok
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

        wiring.connect(m, acc.result, wiring.flipped(self.result))
        wiring.connect(m, acc.tokens, wiring.flipped(self.tokens))
        wiring.connect(m, wiring.flipped(self.w), tok.i)
        wiring.connect(m, tok.o, wiring.flipped(self.extra))
        m.d.comb += [
            self.error.mask.eq(mask.error),
            self.error.accept.eq(acc.error),
            self.error.token.eq(tok.error),
            self.error.rng.eq(rng.error),
        ]
        return m
