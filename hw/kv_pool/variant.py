"""The steps in which the pool's micro-architectures (``TARGET``) differ.

:class:`Variant` is the interface; ``hw.kv_pool.asic`` (SPEC §6's cycle counts,
every decision broadcast from one net) and ``hw.kv_pool.fpga`` (decisions
replicated per group of :data:`~hw.kv_pool.layouts.GROUP` entries, two-cycle
lookups) implement it. The shared steps (``hw.kv_pool.insert``,
``hw.kv_pool.ops``, ``hw.kv_pool.lookup``, ``hw.kv_pool.result``) call it in
a fixed order during one elaboration; a variant object lives for one
elaboration and may keep what an earlier step built for a later one.
"""

from abc import ABC, abstractmethod
from typing import Any

from amaranth import Module, Signal, Value

from hw.kv_pool.bundles import Decoded, Enables, EntryOps, InsertChecks, Sets, Writes
from hw.kv_pool.state import Dims, PendingInsert, Table

__all__ = ["Variant", "Stream"]

#: an ``amaranth.lib.stream`` interface (``valid``, ``ready``, ``payload``)
Stream = Any


class Variant(ABC):
    """One micro-architecture, built into ``m`` for one elaboration.

    Parameters
    ----------
    m : Module
        The pool's module.
    dims : Dims
        Its parameters.
    table, pend : Table, PendingInsert
        Its shared state.
    """

    def __init__(self, m: Module, dims: Dims, table: Table, pend: PendingInsert) -> None:
        self.m, self.dims, self.table, self.pend = m, dims, table, pend

    @abstractmethod
    def outcome(self) -> tuple[Value, Value]:
        """``(ok_vec, rej_pvec)``: per entry, the pending insert is accepted; per page,
        it is rejected (ANDed with its entry / page by the caller)."""

    @abstractmethod
    def lookup(self, port: str, qp: Stream, rp: Stream, s_vec: Signal, q_seq_ok: Value) -> None:
        """Reply to ``qp``'s queries on ``rp``: ``s_vec`` is the per-entry match of the
        query on offer (every condition but ``valid``), ``q_seq_ok`` its range check."""

    @abstractmethod
    def take(self, take: Signal, move: Signal, r1_valid: Signal, op: Stream, res: Stream) -> Value:
        """Per entry, the op port takes a beat (``take``, as the entries' writes see it)."""

    @abstractmethod
    def allocate(self, free_e: Signal, free_e2: Signal) -> tuple[Signal, Signal]:
        """``(low_e, e_idx)``: the lowest free entry, one-hot, and its index, among
        ``free_e`` (no insert pending or rejected) or ``free_e2`` (the pending one
        accepted)."""

    @abstractmethod
    def entry_ops(self, d: Decoded, sets: Sets, en: Enables) -> EntryOps:
        """The commit's and release's per-entry enables."""

    @abstractmethod
    def insert_writes(self, d: Decoded, ins: InsertChecks, sets: Sets, en: Enables) -> Writes:
        """The insert's entry and page, the fork's additions."""

    def pending_copies(self, pc_com: Value, pc_dup: Value) -> list:
        """Statements (at the take edge) loading copies of "the insert taken is not
        rejected by the one pending" (none by default)."""
        return []

    def after_update(self, d: Decoded, ins: InsertChecks, sets: Sets, ops: EntryOps) -> None:
        """Registers the variant updates from the operation's next state (none by
        default)."""
        return None

    def copy_checks(self, ck_com_d: Signal, ck_dup_d: Signal) -> None:
        """Copies of the insert's per-group check bits (none by default)."""
        return None
