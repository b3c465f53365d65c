"""``TARGET="asic"`` at ``N_NODES >`` :data:`~hw.kv_pool.staged.STAGED_NODES`:
:mod:`hw.kv_pool.asic`'s decisions and cycle counts, two-cycle lookups.

Every operation is :class:`~hw.kv_pool.asic.Asic`'s (one net per decision,
SPEC §6's operation counts); a lookup is the two-stage one of
:mod:`hw.kv_pool.staged` (reply 2 cycles after the query, one query per
cycle per port, the state of the cycle it is taken in), which needs the
pending insert's entry index as a register (``pend_i``).
"""

from amaranth import Module, Signal, Value

from hw.common import idx_bits
from hw.kv_pool.asic import Asic
from hw.kv_pool.bundles import Decoded, EntryOps, InsertChecks, Sets
from hw.kv_pool.layouts import PORTS
from hw.kv_pool.staged import staged_lookup
from hw.kv_pool.state import Dims, PendingInsert, Table
from hw.kv_pool.variant import Stream

__all__ = ["AsicStaged"]


class AsicStaged(Asic):
    """The one-net-per-decision micro-architecture with two-stage lookups (see
    :class:`~hw.kv_pool.variant.Variant`)."""

    def __init__(self, m: Module, dims: Dims, table: Table, pend: PendingInsert) -> None:
        super().__init__(m, dims, table, pend)
        self.pend_i = Signal(idx_bits(dims.entries), name="pend_i")
        self.s1_valid = {port: Signal(name=f"{port}_s1_valid") for port in PORTS}

    def lookup(self, port: str, qp: Stream, rp: Stream, s_vec: Signal, q_seq_ok: Value) -> None:
        staged_lookup(
            self.m, self.dims, self.table, self.pend, self.pend_i, port, qp, rp, s_vec,
            q_seq_ok, self.s1_valid[port],
        )  # fmt: skip

    def after_update(self, d: Decoded, ins: InsertChecks, sets: Sets, ops: EntryOps) -> None:
        self.m.d.sync += self.pend_i.eq(ins.e_idx)
