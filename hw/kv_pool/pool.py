"""The KV pool component: ports, parameters, and the order its steps are built in."""

from dataclasses import dataclass

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import Param, check_params, check_target
from hw.common.params import TARGETS
from hw.kv_pool import errors, insert, ops
from hw.kv_pool.asic import Asic
from hw.kv_pool.asic_staged import AsicStaged
from hw.kv_pool.fpga import Fpga, Replicas
from hw.kv_pool.layouts import PORTS, op_layout, query_layout, reply_layout, result_layout
from hw.kv_pool.lookup import lookup
from hw.kv_pool.result import handshake, results
from hw.kv_pool.staged import lookup_cycles
from hw.kv_pool.state import Dims, PendingInsert, Table
from hw.kv_pool.variant import Variant

__all__ = ["KVPool", "Internals", "TARGETS"]


@dataclass(frozen=True)
class Internals:
    """The pool's internal signals, for harnesses (``formal/``) and waveform readers:
    read them, drive none.

    Attributes
    ----------
    table : hw.kv_pool.state.Table
        The table's registers, planes and architectural state.
    pending : hw.kv_pool.state.PendingInsert
        The pending insert's registers and outcome.
    r1_valid : Signal
        The result pipeline's first stage holds a beat.
    replicas : hw.kv_pool.fpga.Replicas or None
        ``TARGET="fpga"``: the per-group copies and the lookups' first-stage
        state; ``None`` otherwise.
    """

    table: Table
    pending: PendingInsert
    r1_valid: Signal
    replicas: Replicas | None


class KVPool(wiring.Component):
    """The shared KV-cache pool (SPEC §4, §6): block-table CAM, commit/rollback unit,
    page allocator. Reference: ``golden.kvcache.BlockTable``, matched operation for
    operation (results, freed pages, error classes, the whole table).

    State (SPEC §4.1): ``ENTRIES`` entries of ``valid``, ``committed``,
    ``seqs`` (``SEQS`` bits), ``layer``, ``pos`` and ``owner``, and a
    free-page bitmap of ``PAGES`` bits; reset empties the table and frees
    every page. The ``page`` field is not stored (a deviation from SPEC §4.1
    with no visible effect): under SPEC §4.2's allocation rule (the lowest
    free entry and the lowest free page, taken and freed together) entry
    ``i`` always holds page ``i``, so every page returned is the entry's
    index; pages ``>= ENTRIES`` and entries ``>= PAGES`` are never used.

    Operations (SPEC §4.2), one per beat on ``op``, one per cycle sustained,
    each taking effect at the edge that takes its beat:

    * ``INSERT(seq, layer, pos, owner, committed)``: the lowest free entry and
      its page become an entry seen by ``seq`` only; ``page`` / ``entry`` in
      the result.
    * ``COMMIT(seq, accept)``: every speculative entry of ``seq`` whose
      ``owner`` bit is set in ``accept`` becomes committed; every other one is
      invalidated and its page freed.
    * ``FORK(seq = src, dst)``: ``dst`` is added to the ``seqs`` of every
      committed entry ``src`` sees.
    * ``RELEASE(seq)``: ``seq`` is cleared from every ``seqs``; entries left
      with none are invalidated and their pages freed.

    A commit or release frees all its pages at one edge (``freed`` in the
    result). ``free_pages + valid_entries == PAGES`` at every edge.

    Lookups (ports ``draft`` and ``verify``, independent): the page of the
    lowest-numbered valid entry with ``seqs[seq]``, ``layer``, ``pos`` and
    (``committed`` or ``view[owner]``); ``hit = 0, page = 0`` on a miss. A
    lookup sees the state before any operation taken in the same cycle.

    Errors (SPEC §4.3) leave the state unchanged and return ``error = 1``
    and ``code`` (:class:`~hw.kv_pool.layouts.ErrorCode`), the first failing
    check in ``golden.kvcache``'s precedence:

    ========== ==============================================================
    opcode     checks, first wins
    ========== ==============================================================
    (any)      ``SEQ_RANGE``: ``seq`` (``src``) >= ``SEQS``
    INSERT     ``OWNER_RANGE``: ``owner`` >= ``N_NODES``; ``SEEN_COMMITTED``:
               ``seq`` already sees ``(layer, pos)`` committed; ``SPEC_DUP``:
               a speculative ``(seq, layer, pos, owner)`` exists (speculative
               insert only); ``TABLE_FULL``: no free entry; ``NO_PAGE``: no
               free page
    COMMIT     ``NO_SPEC``: ``seq`` has no speculative entry; ``ROOT_CLEAR``:
               ``accept[0]`` clear
    FORK       ``DST_RANGE``: ``dst`` >= ``SEQS``; ``SAME_SEQ``: ``src ==
               dst``; ``SRC_EMPTY``: ``src`` sees no committed entry;
               ``DST_BUSY``: ``dst`` sees an entry
    RELEASE    ``NOTHING_SEEN``: ``seq`` sees no entry
    ========== ==============================================================

    A lookup with ``seq >= SEQS`` replies ``error = 1``, ``hit = 0``.

    Invalid input the RTL does not check (SPEC §4.3 allows it): a commit that
    would leave ``seq`` seeing two committed entries at one ``(layer, pos)``.
    ``accept`` is meant to be the acceptance sampler's ``last`` mask row, an
    ancestor chain, which cannot do that; fed anything else, the RTL commits
    every selected entry, and lookups return the lowest-numbered one
    (``golden.kvcache`` raises ``KVErr.TWO_COMMITTED``). Fields an opcode does
    not use are ignored. The port widths cannot express the other invalid
    inputs (``ErrorCode.FIELD``).

    Latency (SPEC §6), with no backpressure:

    * lookup: a query taken at edge E0 has its reply valid from E0 (one
      cycle; from E1, two cycles, with ``TARGET="fpga"`` or ``N_NODES > 256``:
      :attr:`lookup_cycles`); one query per cycle per port;
    * operation: takes effect at E0 (a lookup or operation in the next cycle
      sees it); one per cycle sustained, inserts included;
    * result beat: valid from E1, two cycles after the operation's cycle, with
      the counts of the state after the operation.

    Backpressure: a port stalls only on its own output (``op`` while its
    two-stage result pipeline is full; a query port while its reply waits).

    Parameters
    ----------
    ENTRIES : int
        Block-table entries, ``2 .. 4096`` (default 256, SPEC §5).
    PAGES : int
        Physical pages, ``2 .. 4096`` (default 256).
    SEQS : int
        Sequences (width of ``seqs``), ``1 .. 64`` (default 8).
    N_NODES : int
        Draft-tree nodes (``owner`` range, ``view`` / ``accept`` width),
        ``2 .. 1024`` (default 64).
    LAYER_BITS : int
        ``1 .. 16`` (default 5).
    POS_BITS : int
        ``1 .. 32`` (default 17).
    TARGET : str
        ``"asic"`` (default, :mod:`hw.kv_pool.asic`): the counts above; at
        ``N_NODES > 256`` (:mod:`hw.kv_pool.asic_staged`) the same
        decisions with lookup latency **2** (docs/spec.md §6: the entry's
        ``view[owner]`` select and the first hit among every entry exceed the
        40-level budget in one cycle at 1,024 nodes).
        ``"fpga"`` (:mod:`hw.kv_pool.fpga`): the same operations, results,
        error classes and replies, with lookup latency **2** (a deviation
        from SPEC §6; a lookup still sees the state of the cycle it is taken
        in); per-group copies of its decisions (``*_rep_g<g>``) for routing.

    Members
    -------
    op : In(stream.Signature(op_layout(SEQS, N_NODES, LAYER_BITS, POS_BITS)))
        Operations.
    res : Out(stream.Signature(result_layout(ENTRIES, PAGES)))
        One result per operation, in order.
    draft_q, verify_q : In(stream.Signature(query_layout(...)))
        Lookup queries.
    draft_r, verify_r : Out(stream.Signature(reply_layout(PAGES)))
        Lookup replies, one per query, in order.
    free_pages : Out(bits_for(PAGES))
    valid_entries : Out(bits_for(ENTRIES))
        Status: registered counts of the state one cycle earlier, updated
        every cycle.
    error : Out(1)
        One-cycle pulse the cycle after an operation or a query with an error
        is taken (from registers: no path from an input).

    Raises
    ------
    ValueError
        A parameter out of range (naming it), or an unknown ``TARGET``.

    Attributes
    ----------
    lookup_cycles : int
        The lookup latency, 1 or 2 (:func:`hw.kv_pool.staged.lookup_cycles`).
    internals : Internals
        The internal signals, for formal harnesses. The Verilog keeps the
        names ``valid_now``, ``free_now`` (the architectural state),
        ``committed`` and the planes ``seqs_b<s>``, ``layer_b<b>``,
        ``pos_b<b>``, ``owner_b<b>`` for testbenches that read them.
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "ENTRIES": Param(default=256, lo=2, hi=4096, small=4),
        "PAGES": Param(default=256, lo=2, hi=4096, small=4),
        "SEQS": Param(default=8, lo=1, hi=64, small=2),
        "N_NODES": Param(default=64, lo=2, hi=1024, small=4),
        "LAYER_BITS": Param(default=5, lo=1, hi=16, small=2),
        "POS_BITS": Param(default=17, lo=1, hi=32, small=3),
    }

    def __init__(
        self,
        *,
        ENTRIES: int = PARAMS["ENTRIES"].default,
        PAGES: int = PARAMS["PAGES"].default,
        SEQS: int = PARAMS["SEQS"].default,
        N_NODES: int = PARAMS["N_NODES"].default,
        LAYER_BITS: int = PARAMS["LAYER_BITS"].default,
        POS_BITS: int = PARAMS["POS_BITS"].default,
        TARGET: str = "asic",
    ) -> None:
        TARGET = check_target(TARGET)
        given = {"ENTRIES": ENTRIES, "PAGES": PAGES, "SEQS": SEQS, "N_NODES": N_NODES}
        given |= {"LAYER_BITS": LAYER_BITS, "POS_BITS": POS_BITS}
        p = check_params(self.PARAMS, given)  # Python ints from here on
        ENTRIES, PAGES, SEQS, N_NODES, LAYER_BITS, POS_BITS = (p[k] for k in given)
        self.ENTRIES, self.PAGES, self.SEQS, self.N_NODES = ENTRIES, PAGES, SEQS, N_NODES
        self.LAYER_BITS, self.POS_BITS = LAYER_BITS, POS_BITS
        self.TARGET = TARGET
        self.lookup_cycles = lookup_cycles(N_NODES, TARGET)
        q = query_layout(SEQS, N_NODES, LAYER_BITS, POS_BITS)
        r = reply_layout(PAGES)
        super().__init__(
            {
                "op": In(stream.Signature(op_layout(SEQS, N_NODES, LAYER_BITS, POS_BITS))),
                "res": Out(stream.Signature(result_layout(ENTRIES, PAGES))),
                "draft_q": In(stream.Signature(q)),
                "draft_r": Out(stream.Signature(r)),
                "verify_q": In(stream.Signature(q)),
                "verify_r": Out(stream.Signature(r)),
                "free_pages": Out(bits_for(PAGES), init=PAGES),
                "valid_entries": Out(bits_for(ENTRIES)),
                "error": Out(1),
            }
        )
        self._dims = Dims(ENTRIES, PAGES, SEQS, N_NODES, LAYER_BITS, POS_BITS)
        fpga = TARGET == "fpga"
        self.internals = Internals(
            table=Table(self._dims),
            pending=PendingInsert(self._dims, reset_checks=fpga),
            r1_valid=Signal(name="r1_valid"),
            replicas=Replicas(self._dims) if fpga else None,
        )

    def _variant(self, m: Module) -> Variant:
        it = self.internals
        if it.replicas is not None:
            return Fpga(m, self._dims, it.table, it.pending, it.replicas)
        if self.lookup_cycles == 2:
            return AsicStaged(m, self._dims, it.table, it.pending)
        return Asic(m, self._dims, it.table, it.pending)

    def elaborate(self, platform) -> Module:
        # The steps in the order they are built. The order is also the order of
        # the statements, which numbers the Verilog's anonymous nets: reordering
        # changes the netlist's text (and so its placement), not its function.
        m = Module()
        dims, it = self._dims, self.internals
        table, pend = it.table, it.pending
        variant = self._variant(m)
        finished = insert.resolve_pending(m, dims, table, pend, variant)
        for port in PORTS:
            rp = getattr(self, f"{port}_r")
            lookup(m, dims, table, variant, port, getattr(self, f"{port}_q"), rp)
        st = handshake(m, dims, self.op, self.res, it.r1_valid)
        take_vec = variant.take(st.take, st.move, it.r1_valid, self.op, self.res)
        d = ops.decode(m, dims, table, pend, self.op.payload)
        ins = insert.checks(m, table, pend, d, variant)
        sets = ops.operand_sets(m, dims, table, pend, d)
        code = errors.error_code(m, d.o.op, errors.checks(d, ins, sets))
        en = ops.enables(m, st.take, d, ins, sets)
        freed = ops.update(m, dims, table, pend, variant, d, ins, sets, en, take_vec)
        checks_d = insert.check_groups(m, dims, d, ins)
        variant.copy_checks(*checks_d)
        results(m, self, st, d, code, ins, en, freed, checks_d, finished)
        return m
