"""Shared KV-cache pool (SPEC §4, §6): block-table CAM, commit/rollback unit, page allocator.

:class:`KVPool` is the block (Verilog module ``kv_pool``); its two
micro-architectures are :mod:`hw.kv_pool.asic` (``TARGET="asic"``, the
default; :mod:`hw.kv_pool.asic_staged` above 256 nodes) and
:mod:`hw.kv_pool.fpga` (``TARGET="fpga"``). Design notes and
measurements: ``docs/blocks/kv_pool.md``.

=================  ============================================================
module             holds
=================  ============================================================
``layouts``        ``Op``, ``ErrorCode``, the stream layouts, ``GROUP``
``state``          the registers: ``Table``, ``PendingInsert``, ``Dims``
``vectors``        per-entry vector helpers (matches, selects, first set bit)
``insert``         the pending insert, an insert's checks and allocation
``ops``            decode, commit / fork / release sets, enables, the update
``errors``         the error precedence table
``lookup``         the lookups' match vector
``result``         the op handshake, the result pipeline, counts, ``error``
``variant``        the steps in which the ``TARGET`` variants differ
``asic``           ``TARGET="asic"``: one net per decision, one-cycle lookups
``staged``         the two-stage lookup, ``lookup_cycles`` (the latency rule)
``asic_staged``    ``TARGET="asic"`` at ``N_NODES > 256``: two-cycle lookups
``fpga``           ``TARGET="fpga"``: per-group copies, two-cycle lookups
``pool``           ``KVPool``, ``Internals``
=================  ============================================================
"""

from hw.kv_pool.layouts import (
    GROUP,
    ErrorCode,
    Op,
    op_layout,
    query_layout,
    reply_layout,
    result_layout,
)
from hw.kv_pool.pool import TARGETS, Internals, KVPool
from hw.kv_pool.staged import STAGED_NODES, lookup_cycles

__all__ = [
    "KVPool",
    "Internals",
    "TARGETS",
    "STAGED_NODES",
    "lookup_cycles",
    "GROUP",
    "Op",
    "ErrorCode",
    "op_layout",
    "result_layout",
    "query_layout",
    "reply_layout",
]
