"""The error precedence table (SPEC §4.3, ``golden.kvcache``'s order).

An operation with an error leaves the table unchanged; its result carries
``error = 1`` and the ``code`` of the first check that fails, in this order:

========== =================================================================
opcode     checks, first wins
========== =================================================================
INSERT     ``SEQ_RANGE``, ``OWNER_RANGE``, ``SEEN_COMMITTED``, ``SPEC_DUP``,
           ``TABLE_FULL``, ``NO_PAGE``
COMMIT     ``SEQ_RANGE``, ``NO_SPEC``, ``ROOT_CLEAR``
FORK       ``SEQ_RANGE``, ``DST_RANGE``, ``SAME_SEQ``, ``SRC_EMPTY``,
           ``DST_BUSY``
RELEASE    ``SEQ_RANGE``, ``NOTHING_SEEN``
========== =================================================================

An insert's ``SEEN_COMMITTED`` and ``SPEC_DUP`` are finished in the cycle
after its take (``hw.kv_pool.insert``) and put in front of the others in the
result's second stage (``hw.kv_pool.result``); :func:`checks` holds the rest.
"""

from amaranth import Module, Signal, Value

from hw.kv_pool.bundles import Decoded, InsertChecks, Sets
from hw.kv_pool.layouts import ErrorCode, Op

__all__ = ["checks", "error_code"]


def checks(d: Decoded, ins: InsertChecks, sets: Sets) -> dict[Op, list[tuple[Value, ErrorCode]]]:
    """Per opcode, ``(condition, code)`` pairs in precedence order (the first whose
    condition holds is the error)."""
    o = d.o
    return {
        Op.INSERT: [
            (~d.seq_ok, ErrorCode.SEQ_RANGE),
            (~d.own_ok, ErrorCode.OWNER_RANGE),
            (~ins.any_e, ErrorCode.TABLE_FULL),
            (~ins.any_p, ErrorCode.NO_PAGE),
        ],
        Op.COMMIT: [
            (~d.seq_ok, ErrorCode.SEQ_RANGE),
            (~sets.spec_any, ErrorCode.NO_SPEC),
            (~o.accept[0], ErrorCode.ROOT_CLEAR),
        ],
        Op.FORK: [
            (~d.seq_ok, ErrorCode.SEQ_RANGE),
            (~d.dst_ok, ErrorCode.DST_RANGE),
            (o.seq == o.dst, ErrorCode.SAME_SEQ),
            (~sets.shared_any, ErrorCode.SRC_EMPTY),
            (sets.dst_busy, ErrorCode.DST_BUSY),
        ],
        Op.RELEASE: [
            (~d.seq_ok, ErrorCode.SEQ_RANGE),
            (~sets.seen_any, ErrorCode.NOTHING_SEEN),
        ],
    }


def error_code(m: Module, op: Value, table: dict[Op, list[tuple[Value, ErrorCode]]]) -> Signal:
    """The code of the first failing check of ``op``'s list in ``table`` (``NONE``)."""
    code = Signal(ErrorCode)
    with m.Switch(op):
        for kind, conds in table.items():
            with m.Case(kind):
                for k, (cond, c) in enumerate(conds):
                    with (m.If if k == 0 else m.Elif)(cond):
                        m.d.comb += code.eq(c)
    return code
