"""The KV pool's shared state (SPEC §4.1): the table's registers, the pending insert,
and the parameters every step reads (:class:`Dims`).

Every signal here is created with the pool (before elaboration), so that a
harness that instantiates the pool can refer to it; the names given are the
Verilog names (the testbench reads ``valid_now``, ``committed``, ``free_now``
and the planes ``<field>_b<bit>`` by name).
"""

from dataclasses import dataclass

from amaranth import Cat, Const, Signal, Value

from hw.common import idx_bits
from hw.kv_pool.layouts import GROUP

__all__ = ["Dims", "Table", "PendingInsert"]


def _planes(entries: int, name: str, n: int, *, reset: bool = False) -> list[Signal]:
    """``n`` planes of a field, ``<name>_b<bit>`` (no reset unless ``reset``)."""
    return [Signal(entries, name=f"{name}_b{b}", reset_less=not reset) for b in range(n)]


@dataclass(frozen=True)
class Dims:
    """The pool's size parameters (checked by :class:`hw.kv_pool.KVPool`)."""

    entries: int
    pages: int
    seqs: int
    n_nodes: int
    layer_bits: int
    pos_bits: int

    @property
    def ep(self) -> int:
        """Entries that can hold a page (entry ``i`` holds page ``i``)."""
        return min(self.entries, self.pages)

    @property
    def groups(self) -> int:
        """Groups of :data:`~hw.kv_pool.layouts.GROUP` entries."""
        return (self.entries + GROUP - 1) // GROUP


class Table:
    """The block table and the free-page bitmap, as bit planes.

    Registers ``valid``, ``committed``, ``seqs`` and the bitmap are reset
    (empty table, every page free); ``layer``, ``pos`` and ``owner`` are not
    (every use of a field is gated by ``valid``). No ``page`` field is stored:
    entry ``i`` holds page ``i`` (:attr:`page`).

    Attributes
    ----------
    valid, committed : Signal(ENTRIES)
        Registers (``valid`` lags the architectural state while an insert is
        pending).
    free_p : Signal(PAGES)
        The free-page bitmap register (bit ``p`` set: page ``p`` free; lags
        like ``valid``).
    valid_now, free_now : Signal
        The architectural ``valid`` and bitmap: the registers with the pending
        insert (if any) resolved. Everything that reads the table reads these.
    seqs_p, layer_p, pos_p, owner_p : list of Signal(ENTRIES)
        The field planes ``seqs_b<s>`` (entry ``i`` seen by sequence ``s``),
        ``layer_b<b>``, ``pos_b<b>``, ``owner_b<b>``.
    seqs, layer, pos, owner : list of Value
        Per-entry views of the planes (entry ``i``'s field).
    page : list of Const
        Entry ``i``'s page, the constant ``i`` (wide enough for every entry
        index: an entry ``>= PAGES`` never becomes valid).
    """

    def __init__(self, dims: Dims) -> None:
        entries, pages = dims.entries, dims.pages
        self.valid = Signal(entries, name="valid")
        self.committed = Signal(entries, name="committed")
        self.free_p = Signal(pages, init=(1 << pages) - 1, name="free_p")
        self.valid_now = Signal(entries, name="valid_now")
        self.free_now = Signal(pages, name="free_now")
        self.seqs_p = _planes(entries, "seqs", dims.seqs, reset=True)
        self.layer_p = _planes(entries, "layer", dims.layer_bits)
        self.pos_p = _planes(entries, "pos", dims.pos_bits)
        self.owner_p = _planes(entries, "owner", idx_bits(dims.n_nodes))
        self.seqs = self._views(self.seqs_p)
        self.layer = self._views(self.layer_p)
        self.pos = self._views(self.pos_p)
        self.owner = self._views(self.owner_p)
        self.page = [Const(i, idx_bits(max(entries, pages))) for i in range(entries)]

    @staticmethod
    def _views(planes: list[Signal]) -> list[Value]:
        return [Cat(*[q[i] for q in planes]) for i in range(len(planes[0]))]


class PendingInsert:
    """The insert taken at the last edge, resolved in this cycle.

    Attributes
    ----------
    pend_r : Signal
        An insert is pending.
    pend_e : Signal(ENTRIES)
        Its entry, one-hot (0 if none).
    pend_seq, pend_com, pend_key, pend_own : Signal
        Its fields (also in its entry's planes); ``pend_key`` is
        ``Cat(layer, pos)``.
    ck_com, ck_dup : Signal(ceil(ENTRIES / GROUP))
        Its check bits, one per group of :data:`~hw.kv_pool.layouts.GROUP`
        entries: an entry ``seq`` sees committed at the key; a speculative
        duplicate.
    ck_pcom, ck_pdup : Signal
        The same two checks against the insert pending before it.
    ins_ok, ins_rej : Signal
        Combinational: the pending insert is accepted / rejected (both 0 if
        none is pending).
    """

    def __init__(self, dims: Dims, *, reset_checks: bool) -> None:
        groups, entries = dims.groups, dims.entries
        self.pend_r = Signal(name="pend_r")
        self.pend_e = Signal(entries, name="pend_e")
        self.ins_ok = Signal(name="ins_ok")
        self.ins_rej = Signal(name="ins_rej")
        # reset only where copies of them are reset too (TARGET="fpga"), so that
        # the copies stay equal
        self.ck_com = Signal(groups, reset_less=not reset_checks, name="ck_com")
        self.ck_dup = Signal(groups, reset_less=not reset_checks, name="ck_dup")
        self.ck_pcom = Signal(reset_less=True, name="ck_pcom")
        self.ck_pdup = Signal(reset_less=True, name="ck_pdup")
        self.pend_seq = Signal(idx_bits(dims.seqs), reset_less=True, name="pend_seq")
        self.pend_com = Signal(reset_less=True, name="pend_com")
        self.pend_key = Signal(dims.layer_bits + dims.pos_bits, reset_less=True, name="pend_key")
        self.pend_own = Signal(idx_bits(dims.n_nodes), reset_less=True, name="pend_own")
