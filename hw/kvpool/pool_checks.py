"""The scaled pool's operation checks: SPEC §4.8's error precedence, per opcode.

Every check reads registers only (the segment table, the sequence lengths,
the tree slots' status, the counts) and the registered operation, so an
operation's error code is known in its first cycle, before anything changes
(fill's ``ON_CHIP`` and ``NO_PAGE``, which need its PTE, come from
:func:`fill_code` after the read). The first failing check of the opcode's
list is reported:

==========  ===============================================================
opcode      checks in order
==========  ===============================================================
INSERT      ``SEQ_RANGE``, ``OWNER_RANGE``, ``SEEN_COMMITTED``; committed:
            ``POS_GAP``, ``TABLE_FULL`` (no own segment, none free);
            speculative: ``SPEC_DUP``, ``DEPTH_RANGE``, ``TABLE_FULL`` (no
            tree, no free slot); then ``NO_PAGE``
COMMIT      ``SEQ_RANGE``, ``NO_SPEC``, ``ROOT_CLEAR``, ``TABLE_FULL``
            (something accepted, no own segment, none free)
FORK        ``SEQ_RANGE`` (src), ``DST_RANGE``, ``SAME_SEQ``, ``SRC_EMPTY``,
            ``DST_BUSY``
RELEASE     ``SEQ_RANGE``, ``NOTHING_SEEN``
SPILL       ``FIELD`` (``n > PAGES``)
FILL        ``SEQ_RANGE``, ``NOT_COMMITTED``; after the PTE: ``ON_CHIP``,
            ``NO_PAGE`` (no free page and none committed on chip)
SCORE       ``SEQ_RANGE``, ``NOT_COMMITTED``
SHARE       ``DST_RANGE``, ``FIELD`` (``n > 2**POS_BITS`` tokens),
            ``DST_BUSY``; after the search: ``TABLE_FULL`` (a split needs a
            segment and none is free)
==========  ===============================================================
"""

from dataclasses import dataclass

from amaranth.hdl import Module, Signal, Value

from hw.kvpool.layouts import PoolCode, PoolOp

__all__ = ["Facts", "op_code", "fill_code"]


@dataclass
class Facts:
    """The conditions the checks read (comb values of the first cycle)."""

    seq_ok: Value
    dst_ok: Value
    owner_ok: Value
    ln: Value  # len(seq)
    pos_lt_len: Value  # pos < len(seq) (a prefix comparator)
    pos_gt_len: Value  # pos > len(seq)
    pos_eq_len: Value  # pos == len(seq)
    ln_nz: Value  # len(seq) != 0
    dst_nz: Value  # len(dst) != 0
    has_tree: Value
    dst_tree: Value
    node_valid: Value  # node owner of seq's tree is valid
    in_window: Value  # lo <= pos < lo + MAX_DEPTH of seq's tree
    tree_free: Value  # a tree slot is free
    acc_any: Value  # a valid node of seq's tree is in accept
    has_own: Value
    seg_free: Value
    page_free: Value  # a page can be allocated without a spill
    can_spill: Value
    n_ok: Value  # spill's n <= PAGES
    ntok_ok: Value  # share's n <= 2**POS_BITS


def _first(m: Module, checks: list[tuple[Value, PoolCode]], name: str) -> Signal:
    """The code of the first true check (``NONE`` if none)."""
    code = Signal(PoolCode, name=name)
    with m.If(checks[0][0]):
        m.d.comb += code.eq(checks[0][1])
    for cond, c in checks[1:]:
        with m.Elif(cond):
            m.d.comb += code.eq(c)
    return code


def op_code(m: Module, o: Value, f: Facts) -> Signal:
    """The error code of operation ``o`` (a ``pool_op_layout`` view) in its first cycle."""
    C = PoolCode
    no_page = ~f.page_free & ~f.can_spill
    committed_insert = [
        (f.pos_gt_len, C.POS_GAP),
        (~f.has_own & ~f.seg_free, C.TABLE_FULL),
    ]
    spec_insert = [
        (f.has_tree & f.node_valid, C.SPEC_DUP),
        (f.has_tree & ~f.in_window, C.DEPTH_RANGE),
        (~f.has_tree & ~f.tree_free, C.TABLE_FULL),
    ]
    lists = {
        PoolOp.INSERT: [
            (~f.seq_ok, C.SEQ_RANGE),
            (~f.owner_ok, C.OWNER_RANGE),
            (f.pos_lt_len, C.SEEN_COMMITTED),
            *[(o.committed & c, k) for c, k in committed_insert],
            *[(~o.committed & c, k) for c, k in spec_insert],
            (no_page, C.NO_PAGE),
        ],
        PoolOp.COMMIT: [
            (~f.seq_ok, C.SEQ_RANGE),
            (~f.has_tree, C.NO_SPEC),
            (~o.accept[0], C.ROOT_CLEAR),
            (f.acc_any & ~f.has_own & ~f.seg_free, C.TABLE_FULL),
        ],
        PoolOp.FORK: [
            (~f.seq_ok, C.SEQ_RANGE),
            (~f.dst_ok, C.DST_RANGE),
            (o.seq == o.dst, C.SAME_SEQ),
            (~f.ln_nz, C.SRC_EMPTY),
            (f.dst_nz | f.dst_tree, C.DST_BUSY),
        ],
        PoolOp.RELEASE: [
            (~f.seq_ok, C.SEQ_RANGE),
            (~f.ln_nz & ~f.has_tree, C.NOTHING_SEEN),
        ],
        PoolOp.SPILL: [(~f.n_ok, C.FIELD)],
        PoolOp.FILL: [(~f.seq_ok, C.SEQ_RANGE), (~f.pos_lt_len, C.NOT_COMMITTED)],
        PoolOp.SCORE: [(~f.seq_ok, C.SEQ_RANGE), (~f.pos_lt_len, C.NOT_COMMITTED)],
        PoolOp.SHARE: [
            (~f.dst_ok, C.DST_RANGE),
            (~f.ntok_ok, C.FIELD),
            (f.dst_nz | f.dst_tree, C.DST_BUSY),
        ],
    }
    code = Signal(PoolCode, name="op_code")
    with m.Switch(o.op):
        for op, checks in lists.items():
            with m.Case(op):
                m.d.comb += code.eq(_first(m, checks, f"code_{op.name.lower()}"))
    return code


def fill_code(m: Module, loc: Value, page_free: Value, committed_pages: Value) -> Signal:
    """Fill's checks after its PTE is read: ``ON_CHIP``, ``NO_PAGE``."""
    return _first(
        m,
        [(~loc, PoolCode.ON_CHIP), (~page_free & (committed_pages == 0), PoolCode.NO_PAGE)],
        "code_fill2",
    )
