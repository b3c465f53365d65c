"""Shared KV-cache pool (SPEC §4, §6): block-table CAM, commit/rollback unit, page allocator.

The Python reference is ``golden.kvcache.BlockTable``; this block matches it
operation for operation (results, freed pages, error classes, the whole table).
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import (
    and_tree,
    check_param,
    idx_bits,
    net,
    or_tree,
    popcount,
    prefix_or_below,
)

#: implementation styles (``TARGET``), see :class:`KVPool`
TARGETS = ("asic", "fpga")

#: entries per group: the insert's per-group check bits, and (``TARGET="fpga"``)
#: the entries one replica of a decision drives
GROUP = 16

__all__ = [
    "KVPool",
    "TARGETS",
    "GROUP",
    "Op",
    "ErrorCode",
    "op_layout",
    "result_layout",
    "query_layout",
    "reply_layout",
]


class Op(enum.Enum, shape=2):
    """Operation port opcodes (SPEC §4.2)."""

    INSERT = 0
    COMMIT = 1
    FORK = 2
    RELEASE = 3


class ErrorCode(enum.Enum, shape=4):
    """Result ``code``: the error class of SPEC §4.3, numbered as ``golden.kvcache.KVErr``.

    ``TWO_COMMITTED`` (10) and ``FIELD`` (15) are never reported by the RTL:
    the port widths cannot express a ``layer``, ``pos``, ``view`` or
    ``accept`` out of range, and the commit check is left to the caller (see
    :class:`KVPool`).
    """

    NONE = 0
    SEQ_RANGE = 1
    DST_RANGE = 2
    OWNER_RANGE = 3
    SEEN_COMMITTED = 4
    SPEC_DUP = 5
    TABLE_FULL = 6
    NO_PAGE = 7
    NO_SPEC = 8
    ROOT_CLEAR = 9
    TWO_COMMITTED = 10
    SAME_SEQ = 11
    SRC_EMPTY = 12
    DST_BUSY = 13
    NOTHING_SEEN = 14
    FIELD = 15


def op_layout(seqs: int, n_nodes: int, layer_bits: int, pos_bits: int) -> data.StructLayout:
    """Operation beat: ``op`` and its fields (``seq`` is fork's ``src``; ``accept`` is
    commit's mask; fields an opcode does not use are ignored)."""
    sb = idx_bits(seqs)
    return data.StructLayout(
        {
            "op": Op,
            "seq": sb,
            "dst": sb,
            "layer": layer_bits,
            "pos": pos_bits,
            "owner": idx_bits(n_nodes),
            "committed": 1,
            "accept": n_nodes,
        }
    )


def result_layout(entries: int, pages: int) -> data.StructLayout:
    """Result beat, one per operation: ``page`` / ``entry`` taken by an insert,
    ``freed`` (bit ``p``: page ``p`` freed by this commit or release), and the
    ``free_pages`` / ``valid_entries`` counts after the operation."""
    return data.StructLayout(
        {
            "op": Op,
            "error": 1,
            "code": ErrorCode,
            "page": idx_bits(pages),
            "entry": idx_bits(entries),
            "freed": pages,
            "free_pages": bits_for(pages),
            "valid_entries": bits_for(entries),
        }
    )


def query_layout(seqs: int, n_nodes: int, layer_bits: int, pos_bits: int) -> data.StructLayout:
    """Lookup query: the key and the requesting node's mask row ``view``."""
    return data.StructLayout(
        {"seq": idx_bits(seqs), "layer": layer_bits, "pos": pos_bits, "view": n_nodes}
    )


def reply_layout(pages: int) -> data.StructLayout:
    """Lookup reply: ``hit`` and ``page`` (0 on a miss); ``error``: ``seq`` out of range."""
    return data.StructLayout({"hit": 1, "error": 1, "page": idx_bits(pages)})


class KVPool(wiring.Component):
    """The shared KV-cache pool: block-table CAM, commit/rollback unit, page allocator.

    State (SPEC §4.1): ``ENTRIES`` entries of ``valid``, ``committed``,
    ``seqs`` (``SEQS`` bits), ``layer``, ``pos`` and ``owner``, and the
    allocator's free-page bitmap of ``PAGES`` bits (bit ``p`` set: page ``p``
    free). Registers ``valid``, ``committed``, ``seqs`` and the bitmap are
    reset (empty table, every page free). Every field but ``valid`` is
    don't-care while an entry is invalid (every use is gated by ``valid``):
    ``layer``, ``pos`` and ``owner`` have no reset, and an insert beat writes
    its fields into every free entry (the one it takes among them), before its
    checks are known and without waiting for the priority encoder (a rejected
    insert leaves every one of them invalid; the table, its valid entries and
    the bitmap, is unchanged). The fields are stored as bit
    planes (``layer_b3`` holds bit 3 of every entry's ``layer``; ``seqs_b<s>``
    bit ``s`` of every ``seqs``): each per-entry match, multiplexer and update
    is then a few ``ENTRIES``-wide operations, for every entry at once.

    The ``page`` field is not stored: under SPEC §4.2's allocation rule (the
    lowest free entry and the lowest free page, taken together by an insert
    and freed together by a commit or release) entry ``i`` always holds page
    ``i``. By induction from reset: if every valid entry ``i`` holds page
    ``i``, page ``j < min(ENTRIES, PAGES)`` is free exactly when entry ``j``
    is, so the lowest free entry ``e`` and the lowest free page are the same
    index, or ``e >= PAGES`` and no page is free (``NO_PAGE``): one priority
    encoder serves both. ``formal/`` proves the consequence (the bitmap is
    the complement of ``valid``, pages ``>= ENTRIES`` stay free, no valid
    entry ``>= PAGES``),
    and the testbench compares every lookup's and insert's page with
    ``golden.kvcache``, which stores the field. Storing it would cost
    ``ENTRIES x log2(PAGES)`` flip-flops and, for the bulk free, an
    ``ENTRIES x PAGES`` decode (most of the block's area on an FPGA). The
    per-entry view :attr:`page` is therefore the constant ``i``.

    Operations (SPEC §4.2), one per beat on ``op``, each one cycle whatever
    the number of entries it touches; the table state after the edge that
    takes the beat is the state after the operation (the *architectural*
    state :attr:`valid_now` / :attr:`free_now`, see "pending insert"):

    * ``INSERT(seq, layer, pos, owner, committed)``: the lowest free entry and
      its page (a tree priority encoder: a Kogge-Stone prefix OR gives the
      one-hot write enables, an OR tree per index bit the index) become an
      entry seen by ``seq`` only; ``page`` / ``entry`` in the result. One per
      cycle, sustained.
    * ``COMMIT(seq, accept)``: every speculative entry of ``seq`` whose
      ``owner`` bit is set in ``accept`` becomes committed, every other one is
      invalidated and its page freed (``accept[owner]`` for every entry: a
      ``N_NODES``-to-1 multiplexer tree over the owner planes).
    * ``FORK(seq = src, dst)``: ``dst`` is added to the ``seqs`` of every
      committed entry ``src`` sees.
    * ``RELEASE(seq)``: ``seq`` is cleared from every ``seqs``; entries left
      with none are invalidated and their pages freed.

    A commit or release frees all its pages in the same edge: the vector of
    freed entries is the vector of freed pages (entry ``i`` holds page
    ``i``), written into the bitmap and the result's ``freed``. Allocation and
    freeing move an entry and a page together, so ``free_pages +
    valid_entries == PAGES`` holds at every clock edge (proved in
    ``formal/``, with "no page held by two valid entries").

    Pending insert. An insert's two wide checks (``seq`` already sees the key
    committed; a speculative duplicate exists: a key match over every entry
    and an ``ENTRIES``-wide OR, then a broadcast of the outcome to every
    entry) would be one long path. They are split at a register: the edge
    that takes the insert (E0) stores one OR per group of 16 entries, writes
    its fields (into every free entry, above) and reserves its page (clears
    it in ``free_p``); the
    next cycle ORs the groups and resolves the insert: accepted, ``valid`` is
    set at E1; rejected, the page returns to the bitmap at E1. In that cycle
    everything that reads the table (both lookup ports, the operation taken
    then, the counts, the ``error`` pulse) reads :attr:`valid_now` and
    :attr:`free_now`, the registers with the insert resolved, and forwards the
    pending entry where a reduction needs it (from a copy of its fields, so
    the resolution enters those paths at their end: a lookup computes its
    first hit with and without the entry and picks one). Seen from the ports
    this is an insert that took effect at E0 (SPEC §6), and the wide OR and
    the broadcast of its result are in different cycles. ``formal/`` proves
    the invariants on the architectural state and that a pending entry is
    invalid, below ``PAGES`` and its page reserved; ``tb/test_kv_pool.py``'s
    ``pending_insert`` runs every operation and a lookup right after one.

    Errors (SPEC §4.3) leave the state unchanged and return ``error = 1`` and
    ``code`` (:class:`ErrorCode`), with ``golden.kvcache``'s precedence:
    ``seq`` (or ``src``) >= ``SEQS``, ``dst`` >= ``SEQS``, ``owner`` >=
    ``N_NODES``; insert: ``seq`` already sees ``(layer, pos)`` committed, a
    speculative ``(seq, layer, pos, owner)`` exists (speculative insert only),
    no free entry, no free page; commit: ``seq`` has no speculative entry,
    ``accept[0]`` clear; fork: ``src == dst``, ``src`` sees no committed
    entry, ``dst`` sees an entry; release: ``seq`` sees no entry.

    Deviation (allowed by SPEC §4.3): the RTL does not check that a commit
    would leave ``seq`` seeing two committed entries at one ``(layer, pos)``
    (an ``ENTRIES x ENTRIES`` comparison). ``accept`` is the mask row of the
    acceptance sampler's ``last``, an ancestor chain, which keeps at most one
    speculative entry per position; fed anything else, the RTL commits every
    selected entry as asked, and lookups then return the lowest-numbered one.
    The golden model raises ``ValueError`` (``KVErr.TWO_COMMITTED``) instead.

    Lookups (two independent ports, ``draft`` and ``verify``): the page (the
    index of the first hit, found in 16-entry groups: every group's first hit
    and index in parallel with the first group that has one) of the lowest-numbered
    valid entry with ``seqs[seq]``, ``layer``, ``pos`` and
    (``committed`` or ``view[owner]``); ``hit = 0, page = 0`` on a miss;
    ``error`` (and no hit) if ``seq >= SEQS``. A lookup sees the state before
    any operation taken in the same cycle.

    Latency (SPEC §6), with no backpressure:

    * lookup: a query taken at edge E0 has its reply valid from E0 (registered),
      i.e. one cycle (``TARGET="fpga"``: from E1, two cycles); one query per
      cycle per port;
    * every operation: takes effect at the edge that takes its beat (E0; a
      lookup or operation in the next cycle sees it); one operation per cycle
      sustained (inserts included);
    * the result beat is valid from E1, two cycles after the operation's
      cycle (its counts are population counts of the state after the
      operation: a second stage; carry-save trees, ``hw.common.popcount``).

    Backpressure: a port stalls only on its own output (``op`` waits while its
    two-stage result pipeline is full; a query port while its reply waits).
    ``free_pages`` / ``valid_entries`` (status outputs) are registered
    population counts of the state one cycle earlier, updated every cycle.

    Logic depth: ``python -m flows.depth kv_pool`` (budget 40 levels); figures in
    the README.

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
        ``"asic"`` (default): as above, SPEC §6's cycle counts. ``"fpga"``:
        the same operations, results, error classes and lookups, with the
        lookup's latency **2** (a deviation from SPEC §6's "KV lookup: 1
        cycle"; one query per cycle per port still, and a lookup still sees
        the state of the cycle it is taken in), built so that no net that
        decides an operation has to reach every entry. On an ECP5 such a
        net costs 9-14 ns of routing at 256 entries, and the ``"asic"``
        build has several per cycle (34 MHz). Every decision that gates the
        entries' writes is made once per group of :data:`GROUP` (16)
        entries, from registers that group owns: its copies of the pending
        insert's check bits (``ckc_rep_g<g>``, ``ckd_rep_g<g>``,
        ``pok_rep_g<g>``), of whether the op port takes a beat
        (``r1v_rep_g<g>``, ``resv_rep_g<g>``: ``r1_valid`` and ``res.valid``)
        and of "group ``j`` has a valid entry seen by sequence ``s``" for
        every ``j`` and ``s`` (``busy_rep_g<g>``, the fork's ``dst`` check,
        updated every cycle from the next state). A lookup registers every
        group's first hit and whether the pending insert's entry matches
        (its outcome is known by then), and picks the lower in its second
        cycle; its first stage loads from per-group copies of the port's
        state (``<port>_s1v_rep_g<g>``, ``<port>_rpv_rep_g<g>``). The wide
        reductions left (the result's error codes, the allocation's index,
        the counts) end in registers. ``flows.synth_fpga``
        marks the ``*_rep_g*`` flip-flops ``keep`` (Yosys would merge
        identical ones); ``formal/`` proves every copy equal to what it
        copies.

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
        Status: the counts of the state one cycle earlier.
    error : Out(1)
        One-cycle pulse the cycle after an operation or a query with an
        error is taken (a register, ORed with the pending insert's rejection,
        which is decoded from registers: no path from an input).

    Attributes
    ----------
    valid, committed, free_p : Signal
        The registers (``valid`` and ``free_p`` lag the architectural state
        while an insert is pending).
    valid_now, free_now : Signal
        The architectural ``valid`` / free-page bitmap: the registers with
        the pending insert (if any) resolved.
    pend_r, pend_e : Signal
        An insert is pending; its entry, one-hot (0 if none).
    pend_seq, pend_com, pend_key, pend_own : Signal
        The pending insert's fields (also in its entry's planes).
    ck_com, ck_dup, ck_pcom, ck_pdup : Signal
        Its check bits: per group of 16 entries, an entry ``seq`` sees
        committed at the key / a speculative duplicate; the same against the
        insert pending before it.
    """

    def __init__(
        self,
        *,
        ENTRIES: int = 256,
        PAGES: int = 256,
        SEQS: int = 8,
        N_NODES: int = 64,
        LAYER_BITS: int = 5,
        POS_BITS: int = 17,
        TARGET: str = "asic",
    ) -> None:
        if TARGET not in TARGETS:
            raise ValueError(f"TARGET = {TARGET!r}: must be one of {', '.join(map(repr, TARGETS))}")
        self.TARGET = TARGET
        self.ENTRIES = check_param("ENTRIES", ENTRIES, 2, 4096)
        self.PAGES = check_param("PAGES", PAGES, 2, 4096)
        self.SEQS = check_param("SEQS", SEQS, 1, 64)
        self.N_NODES = check_param("N_NODES", N_NODES, 2, 1024)
        self.LAYER_BITS = check_param("LAYER_BITS", LAYER_BITS, 1, 16)
        self.POS_BITS = check_param("POS_BITS", POS_BITS, 1, 32)
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
        # The state (SPEC §4.1), stored as bit planes: plane ``b`` of a field holds
        # bit ``b`` of that field for every entry (bit ``i`` = entry ``i``), so
        # that every per-entry comparison is a handful of ENTRIES-wide operations.
        E, P, S = ENTRIES, PAGES, SEQS
        self.valid = Signal(E)
        self.committed = Signal(E)
        self.free_p = Signal(P, init=(1 << P) - 1)
        # the insert taken at the last edge, resolved in this cycle (see elaborate)
        self.pend_r = Signal()
        self.pend_e = Signal(E)
        # the architectural state: the registers with the pending insert resolved
        self.valid_now = Signal(E)
        self.free_now = Signal(P)
        self.r1_valid = Signal()  # the result pipeline's first stage holds a beat
        self.ins_ok = Signal()  # the pending insert is accepted / rejected (this cycle)
        self.ins_rej = Signal()
        # (reset with their copies in the FPGA build, so that the copies stay equal)
        fpga = TARGET == "fpga"
        self.ck_com = Signal((E + GROUP - 1) // GROUP, reset_less=not fpga)  # its check bits
        self.ck_dup = Signal((E + GROUP - 1) // GROUP, reset_less=not fpga)
        self.ck_pcom = Signal(reset_less=True)
        self.pend_seq = Signal(idx_bits(S), reset_less=True)  # its fields
        self.pend_com = Signal(reset_less=True)
        self.pend_key = Signal(LAYER_BITS + POS_BITS, reset_less=True)
        self.pend_own = Signal(idx_bits(N_NODES), reset_less=True)
        self.ck_pdup = Signal(reset_less=True)
        # TARGET="fpga": registers replicated once per GROUP entries (names *_rep_g<n>)
        ng = (E + GROUP - 1) // GROUP if TARGET == "fpga" else 0
        self.ckc_rep = [Signal(ng, name=f"ckc_rep_g{g}") for g in range(ng)]
        self.ckd_rep = [Signal(ng, name=f"ckd_rep_g{g}") for g in range(ng)]
        self.r1v_rep = [Signal(name=f"r1v_rep_g{g}") for g in range(ng)]  # = r1_valid
        self.resv_rep = [Signal(name=f"resv_rep_g{g}") for g in range(ng)]  # = res.valid
        # busy_rep[g][j * SEQS + s]: group j has a valid entry seen by sequence s
        self.busy_rep = [Signal(ng * S, name=f"busy_rep_g{g}") for g in range(ng)]
        # pok_rep[g] = ~ck_pcom & ~ck_pdup while an insert is pending (not rejected by
        # the insert pending before it)
        self.pok_rep = [Signal(name=f"pok_rep_g{g}") for g in range(ng)]
        # the lookup ports' first stage holds a query; per port, copies of it and of
        # the reply's valid, one per group of the entries that can hold a page
        self.s1_valid = {port: Signal(name=f"{port}_s1_valid") for port in ("draft", "verify")}
        ngp = (min(E, PAGES) + GROUP - 1) // GROUP if TARGET == "fpga" else 0
        self.lk_rep = {
            port: (
                [Signal(name=f"{port}_s1v_rep_g{g}") for g in range(ngp)],
                [Signal(name=f"{port}_rpv_rep_g{g}") for g in range(ngp)],
            )
            for port in ("draft", "verify")
        }
        self.pend_i = Signal(idx_bits(E))  # the pending entry's index

        def planes(name: str, n: int, reset: bool = False) -> list[Signal]:
            return [Signal(E, name=f"{name}_b{b}", reset_less=not reset) for b in range(n)]

        self.seqs_p = planes("seqs", S, reset=True)  # seqs_p[s][i]: entry i seen by s
        self.layer_p = planes("layer", LAYER_BITS)
        self.pos_p = planes("pos", POS_BITS)
        self.owner_p = planes("owner", idx_bits(N_NODES))
        # per-entry views of the planes (for assertions and readers)
        for name in ("seqs", "layer", "pos", "owner"):
            pl = getattr(self, f"{name}_p")
            setattr(self, name, [Cat(*[q[i] for q in pl]) for i in range(E)])
        # entry i holds page i (see above); wide enough for every entry index,
        # since an entry >= PAGES (which never becomes valid) has no page
        self.page = [Const(i, idx_bits(max(E, PAGES))) for i in range(E)]

    def elaborate(self, platform) -> Module:
        m = Module()
        E, P, S, N = self.ENTRIES, self.PAGES, self.SEQS, self.N_NODES
        EB, PGB = idx_bits(E), idx_bits(P)
        valid, committed, free_p = self.valid, self.committed, self.free_p
        seqs_p, layer_p, pos_p = self.seqs_p, self.layer_p, self.pos_p
        owner_p = self.owner_p
        EP = min(E, P)  # entries that can hold a page (entry i holds page i)

        def wide(bit: Value) -> Value:
            """A 1-bit value copied to every entry (a mux, not a replicate: Amaranth
            writes ``replicate`` out bit by bit, with the expression each time)."""
            return Mux(bit, Const((1 << E) - 1, E), Const(0, E))

        def onehot(idx: Value, width: int, name: str) -> Signal:
            return net(m, (Const(1, 1) << idx)[:width], name)

        def match(pl: list[Signal], value: Value, name: str) -> Signal:
            """Entries whose field (planes ``pl``) equals ``value``."""
            return net(m, and_tree([~(pl[b] ^ wide(value[b])) for b in range(len(pl))]), name)

        def per_entry(pl: list[Signal], i: int) -> Value:
            """Entry ``i``'s field, from its planes."""
            return Cat(*[q[i] for q in pl])

        def seq_vec(idx: Value, name: str) -> Signal:
            """Entries seen by sequence ``idx`` (``seqs[idx]`` of every entry: a
            ``SEQS``-to-1 multiplexer per entry, selected by the query; 0 if ``idx``
            is out of range)."""
            if S == 1:
                return net(m, seqs_p[0] & wide(idx == 0), name)
            return net(m, Cat(*[per_entry(seqs_p, i).bit_select(idx, 1) for i in range(E)]), name)

        def select(vec: Value, name: str) -> Signal:
            """Per entry, ``vec[owner]``: an ``N_NODES``-to-1 multiplexer per entry,
            selected by its ``owner`` (0 for an owner ``>= len(vec)``). Written as a
            bit select (a mux tree after synthesis), so that an FPGA flow can cover
            it with its wide multiplexers (``flows.synth_fpga``: 8-to-1 in two
            slices)."""
            return net(m, Cat(*[vec.bit_select(per_entry(owner_p, i), 1) for i in range(E)]), name)

        def encode(oh: Value, width: int, name: str) -> Signal:
            """Index of the one set bit of ``oh`` (0 if none)."""
            bits = []
            for b in range(width):
                mask = sum(1 << k for k in range(len(oh)) if (k >> b) & 1)
                bits.append((oh & Const(mask, len(oh))).any())
            return net(m, Cat(*bits), name)

        def first(vec: Value, name: str) -> Signal:
            """The lowest set bit of ``vec``, one-hot (radix-4 Kogge-Stone prefix OR)."""
            below = prefix_or_below(m, vec, f"{name}_below", radix=4)
            return net(m, vec & ~below, name, keep=True)

        def group_index(gsel: Value, locs: list[Value], width: int, name: str) -> Signal:
            """Index (``width`` bits) of the first group's first bit, from the first
            group that has one (``gsel``, one-hot) and every group's local index
            (``locs``): the chosen local index (low bits) and group number (high
            bits)."""
            lb = len(locs[0])
            lo = or_tree([locs[j] & Mux(gsel[j], (1 << lb) - 1, 0) for j in range(len(locs))])
            hi = encode(gsel, max(1, idx_bits(len(locs))), f"{name}_hi")
            return net(m, Cat(lo, hi)[:width], name + "_idx")

        def first_grouped(vec: Value, name: str) -> tuple[Signal, Signal]:
            """The lowest set bit of ``vec``, one-hot, and its index (0 if none), in
            groups of ``GROUP``: every group's first bit and index, in parallel
            with the first group that has one."""
            spans = [(k, min(len(vec), k + G)) for k in range(0, len(vec), G)]
            loc = [first(vec[a:b], f"{name}_g{j}") for j, (a, b) in enumerate(spans)]
            loc_i = [encode(x, idx_bits(G), f"{name}_g{j}_idx") for j, x in enumerate(loc)]
            anys = net(m, Cat(*[vec[a:b].any() for a, b in spans]), f"{name}_any")
            gsel = first(anys, f"{name}_gsel")
            oh = net(m, Cat(*[loc[j] & Mux(gsel[j], (1 << len(loc[j])) - 1, 0)
                              for j in range(len(spans))]), name)  # fmt: skip
            return oh, group_index(gsel, loc_i, idx_bits(len(vec)), name)

        def first_index(vec: Value, width: int, name: str) -> Signal:
            """Index (``width`` bits) of the lowest set bit of ``vec`` (0 if none): for
            more than 32 bits in 16-wide groups (:func:`first_grouped`), shallower
            than a ``len(vec)``-wide prefix OR and encoder."""
            if len(vec) <= 32:
                return encode(first(vec, name), width, name + "_idx")
            return first_grouped(vec, name)[1][:width]

        # ------------------------------------------------------------ pending insert
        # An insert's two wide checks (``seq`` already sees the key committed; a
        # speculative duplicate exists) are reduced to one bit per group of
        # ``G`` entries at the edge that takes it (E0), and the groups' OR is
        # finished in the next cycle, where the insert is resolved (``ins_ok``
        # or ``ins_rej``). Between E0 and E1 the insert is *pending*: its fields
        # are in the planes, its page is reserved (cleared in ``free_p`` at E0,
        # given back at E1 if rejected) and its ``valid`` bit is set at E1 if
        # accepted. Everything that reads the table in that cycle (lookups, the
        # next operation, the counts) reads the architectural state
        # ``valid_now`` / ``free_now``, the registers with the pending insert
        # resolved: the behaviour is that of an insert that took effect at E0
        # (SPEC §6), while the wide OR and the broadcast of its outcome fall in
        # different cycles.
        fpga = self.TARGET == "fpga"
        G = GROUP
        NG = (E + G - 1) // G
        pend_r, pend_e = self.pend_r, self.pend_e
        # its fields (also in the planes)
        pend_seq, pend_com = self.pend_seq, self.pend_com
        pend_key, pend_own = self.pend_key, self.pend_own
        ck_com = self.ck_com  # per group: an entry seen committed at the key
        ck_dup = self.ck_dup  # per group: a speculative duplicate
        ck_pcom, ck_pdup = self.ck_pcom, self.ck_pdup  # the same, against the one pending then
        seen_com = net(m, ck_com.any() | ck_pcom, "seen_com")
        spec_dup = net(m, ck_dup.any() | ck_pdup, "spec_dup")
        ins_ok, ins_rej = self.ins_ok, self.ins_rej
        m.d.comb += [
            ins_ok.eq(pend_r & ~seen_com & ~spec_dup),  # 0 if none pending
            ins_rej.eq(pend_r & (seen_com | spec_dup)),
        ]
        pend_ep = pend_e[:P] if E >= P else Cat(pend_e, Const(0, P - E))  # its page
        if fpga:
            # the outcome again in every group of G entries, from that group's own
            # copy of the check bits (registers: identical logic on shared
            # registers would be merged into one net reaching every entry)
            ok_g = [
                net(
                    m,
                    self.pok_rep[g] & ~(self.ckc_rep[g].any() | self.ckd_rep[g].any()),
                    f"ins_ok_g{g}",
                )
                for g in range(NG)
            ]
            ok_vec = Cat(*[ok_g[i // G] for i in range(E)])
            # (a pending entry's page is given back if the insert is rejected: pend_ep
            # is set only while one is pending)
            rej_pvec = Cat(*[~ok_g[min(i, E - 1) // G] for i in range(P)])
        else:
            ok_vec = wide(ins_ok)
            rej_pvec = Mux(ins_rej, Const((1 << P) - 1, P), 0)
        m.d.comb += [
            self.valid_now.eq(valid | (pend_e & ok_vec)),
            self.free_now.eq(free_p | (pend_ep & rej_pvec)),
        ]
        valid_now, free_now = self.valid_now, self.free_now

        # ------------------------------------------------------------ lookup ports
        for port in ("draft", "verify"):
            qp, rp = getattr(self, f"{port}_q"), getattr(self, f"{port}_r")
            qq = qp.payload
            q_seq_ok = qq.seq < S
            s_vec = net(
                m,
                seq_vec(qq.seq, f"{port}_sbit")
                & match(layer_p, qq.layer, f"{port}_lay")
                & match(pos_p, qq.pos, f"{port}_pos")
                & (committed | select(qq.view, f"{port}_vis")),
                f"{port}_match",
            )
            if fpga:
                # two stages: every group's first hit among the registered valid
                # entries, and whether the pending insert's entry (if accepted)
                # matches, registered (s1); then the first group that has a hit,
                # and the pending entry if it is lower (the reply register)
                lb = idx_bits(G)
                ng = (EP + G - 1) // G
                hit_v = net(m, valid[:EP] & s_vec[:EP], f"{port}_hits")
                s1_valid = self.s1_valid[port]
                s1_ok = Signal(name=f"{port}_s1_ok")
                s1_any = Signal(ng, name=f"{port}_s1_any")
                s1_loc = [Signal(lb, name=f"{port}_s1_loc{j}") for j in range(ng)]
                s1_pend = Signal(name=f"{port}_s1_pend")  # the pending entry, accepted, hits
                s1_pi = Signal(PGB, name=f"{port}_s1_pi")  # its index
                p_hit = net(
                    m,
                    ins_ok
                    & (pend_seq == qq.seq)
                    & (pend_key == Cat(qq.layer, qq.pos))
                    & (pend_com | qq.view.bit_select(pend_own, 1)),
                    f"{port}_phit",
                )
                s1_move = ~rp.valid | rp.ready
                m.d.comb += qp.ready.eq(~s1_valid | s1_move)
                q_take = qp.valid & qp.ready
                with m.If(q_take):
                    m.d.sync += [
                        s1_valid.eq(1),
                        s1_ok.eq(q_seq_ok),
                        s1_pend.eq(p_hit),
                        s1_pi.eq(self.pend_i[:PGB]),
                    ]
                with m.Elif(s1_move):
                    m.d.sync += s1_valid.eq(0)
                # every group's stage-1 registers load whenever the stage can take a
                # query (s1_valid says whether one came), from that group's copies
                # of s1_valid and the reply's valid
                s1v_rep, rpv_rep = self.lk_rep[port]
                s1v_next = Mux(q_take, 1, Mux(s1_move, 0, s1_valid))
                rpv_next = Mux(s1_valid & s1_move, 1, Mux(rp.ready, 0, rp.valid))
                m.d.sync += [x.eq(s1v_next) for x in s1v_rep] + [x.eq(rpv_next) for x in rpv_rep]
                for j in range(ng):
                    gv = hit_v[j * G : (j + 1) * G]
                    with m.If(~s1v_rep[j] | ~rpv_rep[j] | rp.ready):
                        m.d.sync += [
                            s1_any[j].eq(gv.any()),
                            s1_loc[j].eq(encode(first(gv, f"{port}_g{j}"), lb, f"{port}_g{j}_i")),
                        ]
                gsel = first(s1_any, f"{port}_gsel")
                b_idx = group_index(gsel, s1_loc, PGB, f"{port}_b")
                b_any = s1_any.any()
                use_p = s1_pend & (~b_any | (s1_pi < b_idx))
                hit2 = (b_any | s1_pend) & s1_ok
                with m.If(s1_valid & s1_move):
                    m.d.sync += [
                        rp.valid.eq(1),
                        rp.payload.hit.eq(hit2),
                        rp.payload.page.eq(Mux(hit2, Mux(use_p, s1_pi, b_idx), 0)),
                        rp.payload.error.eq(~s1_ok),
                    ]
                with m.Elif(rp.ready):
                    m.d.sync += rp.valid.eq(0)
                continue
            # hits without and with the pending insert's entry, resolved last
            hit_b = net(m, valid & s_vec, f"{port}_hits")
            hit_w = net(m, (valid | pend_e) & s_vec, f"{port}_hitsp")
            hit_page = Mux(
                ins_ok,
                first_index(hit_w[:EP], PGB, f"{port}_pagep"),
                first_index(hit_b[:EP], PGB, f"{port}_page"),
            )
            any_hit = Mux(ins_ok, hit_w.any(), hit_b.any())
            m.d.comb += qp.ready.eq(~rp.valid | rp.ready)
            with m.If(qp.valid & qp.ready):
                m.d.sync += [
                    rp.valid.eq(1),
                    rp.payload.hit.eq(any_hit & q_seq_ok),
                    rp.payload.page.eq(Mux(any_hit & q_seq_ok, hit_page, 0)),
                    rp.payload.error.eq(~q_seq_ok),
                ]
            with m.Elif(rp.ready):
                m.d.sync += rp.valid.eq(0)

        # ------------------------------------------------------------ operation decode
        o = self.op.payload
        r1_valid = self.r1_valid
        r1 = Signal(result_layout(E, P))
        r1_chk = Signal()  # r1 is an insert past its range checks
        r1_go = Signal()  # ... and there was a free entry and page: it was pending
        res_free = ~self.res.valid | self.res.ready
        move = net(m, r1_valid & res_free, "move")
        m.d.comb += self.op.ready.eq(~r1_valid | move)
        take = net(m, self.op.valid & self.op.ready, "take")
        if fpga:
            # whether the op port takes a beat, per group: r1_valid and res.valid
            # replicated (their next values); ready = ~r1 | ~res | res.ready
            r1v_next = Mux(take, 1, Mux(move, 0, r1_valid))
            resv_next = Mux(move, 1, Mux(self.res.ready, 0, self.res.valid))
            m.d.sync += [x.eq(r1v_next) for x in self.r1v_rep]
            m.d.sync += [x.eq(resv_next) for x in self.resv_rep]
            take_g = [
                net(
                    m,
                    self.op.valid & (~self.r1v_rep[g] | ~self.resv_rep[g] | self.res.ready),
                    f"take_g{g}",
                )
                for g in range(NG)
            ]
            take_vec = Cat(*[take_g[i // G] for i in range(E)])
        else:
            take_vec = wide(take)

        is_ins = o.op == Op.INSERT
        is_com = o.op == Op.COMMIT
        is_fork = o.op == Op.FORK
        is_rel = o.op == Op.RELEASE
        seq_ok = net(m, o.seq < S, "seq_ok")
        dst_ok = net(m, o.dst < S, "dst_ok")
        own_ok = net(m, o.owner < N, "own_ok")
        seq_oh = onehot(o.seq, S, "seq_oh")
        dst_oh = onehot(o.dst, S, "dst_oh")
        sbit = seq_vec(o.seq, "sbit")
        dbit = seq_vec(o.dst, "dbit")
        okey = Cat(o.layer, o.pos)
        key = net(m, match(layer_p, o.layer, "lay") & match(pos_p, o.pos, "pos"), "key")
        # the pending insert's entry, as the per-entry vectors see it (its seqs
        # are one-hot pend_seq, its committed bit pend_com)
        p_seq = net(m, ins_ok & (pend_seq == o.seq), "p_seq")
        p_dst = net(m, ins_ok & (pend_seq == o.dst), "p_dst")

        # insert: its conflict checks, reduced per group here and finished next cycle
        own_eq = match(owner_p, o.owner, "own_eq")
        conf_com = net(m, valid & committed & sbit & key, "conf_com")
        conf_dup = net(m, valid & sbit & key & own_eq, "conf_dup")

        def groups(vec: Value) -> Value:
            return Cat(*[vec[k : k + G].any() for k in range(0, E, G)])

        p_key = net(m, p_seq & (pend_key == okey), "p_key")
        pc_com = p_key & pend_com
        pc_dup = p_key & ~pend_com & (pend_own == o.owner) & ~o.committed
        # allocation: the lowest free entry (its page is the same index), without
        # and with the pending insert's entry taken
        free_e = net(m, ~valid, "free_e")
        free_e2 = net(m, free_e & ~pend_e, "free_e2")
        if fpga:
            # in groups: every group's first free entry, in parallel with the first
            # group that has one; chosen per group by that group's ins_ok, and
            # the index chosen by ins_ok last (to r1 and pend_i only)
            low1, idx1 = first_grouped(free_e, "low1")
            low2, idx2 = first_grouped(free_e2, "low2")
            low_e = net(m, (low2 & ok_vec) | (low1 & ~ok_vec), "low_e")
            e_idx = net(m, Mux(ins_ok, idx2, idx1), "e_idx")
        else:
            low1 = first(free_e, "low1")
            low2 = first(free_e2, "low2")
            low_e = net(m, Mux(ins_ok, low2, low1), "low_e")
            e_idx = encode(low_e, EB, "e_idx")  # to r1 only: no need to resolve it late
        any_e = net(m, Mux(ins_ok, free_e2.any(), free_e.any()), "any_e")
        any_p = net(m, free_p.any() | ins_rej, "any_p")

        # commit: keep / drop among seq's speculative entries
        spec = net(m, valid_now & ~committed & sbit, "spec")
        spec_any = (valid & ~committed & sbit).any() | (p_seq & ~pend_com)
        acc = select(o.accept, "acc")
        # fork: committed entries src sees
        shared = net(m, valid_now & committed & sbit, "shared")
        shared_any = (valid & committed & sbit).any() | (p_seq & pend_com)
        # release: entries seq sees, and those no other sequence sees
        seen = net(m, valid_now & sbit, "seen")
        seen_any = (valid & sbit).any() | p_seq
        others = net(m, or_tree([seqs_p[s] & wide(~seq_oh[s]) for s in range(S)]), "others")
        dst_busy = net(m, (valid & dbit).any() | p_dst, "dst_busy")

        # error checks per opcode, in golden.kvcache's precedence: the first wins
        # (an insert's SEEN_COMMITTED and SPEC_DUP, between OWNER_RANGE and
        # TABLE_FULL, are added to the result next cycle)
        checks = {
            Op.INSERT: [
                (~seq_ok, ErrorCode.SEQ_RANGE),
                (~own_ok, ErrorCode.OWNER_RANGE),
                (~any_e, ErrorCode.TABLE_FULL),
                (~any_p, ErrorCode.NO_PAGE),
            ],
            Op.COMMIT: [
                (~seq_ok, ErrorCode.SEQ_RANGE),
                (~spec_any, ErrorCode.NO_SPEC),
                (~o.accept[0], ErrorCode.ROOT_CLEAR),
            ],
            Op.FORK: [
                (~seq_ok, ErrorCode.SEQ_RANGE),
                (~dst_ok, ErrorCode.DST_RANGE),
                (o.seq == o.dst, ErrorCode.SAME_SEQ),
                (~shared_any, ErrorCode.SRC_EMPTY),
                (dst_busy, ErrorCode.DST_BUSY),
            ],
            Op.RELEASE: [
                (~seq_ok, ErrorCode.SEQ_RANGE),
                (~seen_any, ErrorCode.NOTHING_SEEN),
            ],
        }
        code = Signal(ErrorCode)
        with m.Switch(o.op):
            for op, conds in checks.items():
                with m.Case(op):
                    for k, (cond, c) in enumerate(conds):
                        with (m.If if k == 0 else m.Elif)(cond):
                            m.d.comb += code.eq(c)

        # Enables. A commit or release whose only possible error is an empty set
        # (no speculative entry / nothing seen) needs no error gating: the set
        # it acts on is empty then. This keeps the wide reductions off the
        # bulk-free path.
        ins_chk = net(m, take & is_ins & seq_ok & own_ok, "ins_chk")
        ins_go = net(m, ins_chk & any_e & any_p, "ins_go")  # pending at the next cycle
        com_ok = net(m, take & is_com & seq_ok & o.accept[0], "com_ok")
        rel_ok = net(m, take & is_rel & seq_ok, "rel_ok")
        fork_ok = net(m, take & is_fork & seq_ok & dst_ok & (o.seq != o.dst) & ~dst_busy, "fork_ok")

        if fpga:  # per entry: the operation's enables (take_vec: the beat is taken)
            com_c = is_com & seq_ok & o.accept[0]
            rel_c = is_rel & seq_ok
            keep = net(m, spec & acc & take_vec & wide(com_c), "keep")
            fr = net(
                m, take_vec & ((spec & ~acc & wide(com_c)) | (seen & ~others & wide(rel_c))), "fr"
            )  # entries freed
            rel_s = [net(m, take_vec & wide(rel_c & seq_oh[s_]), f"rel_s{s_}") for s_ in range(S)]
            # the fork's dst check, per group: from the group's copy of every
            # group's "sees a valid entry" bits, and the pending insert's entry
            fork_c = is_fork & seq_ok & dst_ok & (o.seq != o.dst)
            busy_g = [
                or_tree(
                    [self.busy_rep[g][j * S : (j + 1) * S].bit_select(o.dst, 1) for j in range(NG)]
                )
                | (pend_r & ok_g[g] & (pend_seq == o.dst))
                for g in range(NG)
            ]
            fork_g = [net(m, take_g[g] & fork_c & ~busy_g[g], f"fork_ok_g{g}") for g in range(NG)]
            fork_vec = Cat(*[fork_g[i // G] for i in range(E)])
        else:
            keep = net(m, spec & acc & wide(com_ok), "keep")
            fr = net(
                m, (spec & ~acc & wide(com_ok)) | (seen & ~others & wide(rel_ok)), "fr"
            )  # entries freed
            rel_s = [wide(rel_ok & seq_oh[s_]) for s_ in range(S)]
        # pages freed: entry i holds page i
        freed = net(m, fr[:EP] if EP == P else Cat(fr[:EP], Const(0, P - EP)), "freed")
        # An insert beat writes its fields (and ``committed``, ``seqs``) into
        # every free entry, whether or not it succeeds: they are don't-care
        # while an entry is invalid, so the one it takes gets them, and neither
        # the priority encoder nor the checks are on the path to the planes
        # (only ``valid`` waits, for the checks, next cycle: above). A pending
        # insert's entry is not free (``valid_now``) if it is accepted.
        w_f = net(m, ~valid_now & take_vec & wide(is_ins), "w_f")  # the fields written
        if fpga:
            # the entry (and page) taken, without the wide "any free entry / page"
            # reductions: low_e is 0 when no entry is free, and an entry >= PAGES
            # is the lowest free one only when no page is free
            ins_c = is_ins & seq_ok & own_ok
            go = net(m, low_e[:EP] & take_vec[:EP] & Mux(ins_c, (1 << EP) - 1, 0), "go")
            go_e = Cat(go, Const(0, E - EP)) if E > EP else go
            w_p = net(m, Cat(go, Const(0, P - EP)) if P > EP else go, "w_p")
            fork_add = net(m, shared & fork_vec, "fork_add")
        else:
            go_e = low_e & wide(ins_go)
            w_p = net(
                m, Mux(ins_go, low_e[:P] if E >= P else Cat(low_e, Const(0, P - E)), 0), "w_p"
            )
            fork_add = net(m, shared & wide(fork_ok), "fork_add")

        def write(pl: list[Signal], value: Value) -> list:
            # a 2-to-1 multiplexer per bit (a flip-flop enable after synthesis)
            return [
                q.eq(Cat(*[Mux(w_f[i], value[b], q[i]) for i in range(E)]))
                for b, q in enumerate(pl)
            ]

        m.d.sync += [
            valid.eq(valid_now & ~fr),
            committed.eq((committed & ~w_f) | (w_f & wide(o.committed)) | keep),
            free_p.eq((free_now & ~w_p) | freed),
            *write(layer_p, o.layer),
            *write(pos_p, o.pos),
            *write(owner_p, o.owner),
            pend_r.eq(ins_go),
            # (not ANDed with ins_go: every use of ok_g is gated by the pending entry)
            *[x.eq(~pc_com & ~pc_dup) for x in self.pok_rep],
            pend_e.eq(go_e),
            pend_seq.eq(o.seq),
            pend_com.eq(o.committed),
            pend_key.eq(okey),
            pend_own.eq(o.owner),
        ]
        for s_ in range(S):
            q = seqs_p[s_]
            m.d.sync += q.eq(
                ((q & ~w_f) | (w_f & wide(seq_oh[s_])) | (fork_add & wide(dst_oh[s_]))) & ~rel_s[s_]
            )
        if fpga:
            m.d.sync += self.pend_i.eq(e_idx)
            # "group j has a valid entry seen by s" after the operation, copied into
            # every group: the valid registers' entries that stay valid (fr_b: the
            # entries freed, from valid rather than valid_now, so that the pending
            # insert's outcome is not on this path), the pending insert's entry if
            # accepted and not freed now, and the fork's additions; the outcome
            # and the fork's decision enter last (an insert taken now is pending
            # next cycle, not valid)
            spec_b = valid & ~committed & sbit
            fr_b = take_vec & (
                (spec_b & ~acc & wide(com_c)) | (valid & sbit & ~others & wide(rel_c))
            )
            v_b = net(m, valid & ~fr_b, "v_b")
            p_acc = o.accept.bit_select(pend_own, 1)
            p_fr = net(
                m, (pend_seq == o.seq) & ((com_c & ~pend_com & ~p_acc) | rel_c), "p_fr"
            )  # freed if the beat is taken
            p_oh = onehot(pend_seq, S, "p_oh")
            p_shared = net(m, pend_com & (pend_seq == o.seq), "p_shared")  # a fork's src sees it
            bnext = []
            for j in range(NG):
                sl = slice(j * G, min(E, (j + 1) * G))
                p_here = pend_e[sl].any() & ok_g[j]  # the pending entry, accepted, is here
                sh_j = (valid & committed & sbit)[sl].any() | (p_here & p_shared)
                p_in = p_here & ~(take_g[j] & p_fr)
                for s_ in range(S):
                    stay = (seqs_p[s_][sl] & v_b[sl] & ~rel_s[s_][sl]).any()
                    bnext.append(stay | (p_in & p_oh[s_]) | (fork_g[j] & dst_oh[s_] & sh_j))
            bnext_v = net(m, Cat(*bnext), "busy_next")
            m.d.sync += [x.eq(bnext_v) for x in self.busy_rep]

        ck_com_d = net(m, groups(conf_com), "ck_com_d")
        ck_dup_d = net(m, groups(conf_dup) & Mux(o.committed, 0, (1 << NG) - 1), "ck_dup_d")
        if fpga:  # the copies, one per group
            for g in range(NG):
                with m.If(take_g[g]):
                    m.d.sync += [self.ckc_rep[g].eq(ck_com_d), self.ckd_rep[g].eq(ck_dup_d)]

        # ------------------------------------------------------------ result pipeline
        # stage 1 (r1): the operation's own results, registered at the take edge
        # (an insert's are completed in r1's first cycle, from the group bits);
        # stage 2 (res): + the counts, which are population counts of the state
        # after the operation (no other operation is taken while r1 waits).
        n_free = popcount(m, free_p, "pc_free", late=ins_rej)
        n_valid = popcount(m, valid, "pc_valid", late=ins_ok)
        err = net(m, code != ErrorCode.NONE, "err")
        with m.If(take):
            m.d.sync += [
                r1_valid.eq(1),
                r1_chk.eq(ins_chk),
                r1_go.eq(ins_go),
                r1.op.eq(o.op),
                r1.code.eq(code),
                r1.page.eq(e_idx),
                r1.entry.eq(e_idx),
                r1.freed.eq(freed),
                ck_com.eq(ck_com_d),
                ck_dup.eq(ck_dup_d),
                ck_pcom.eq(pc_com),
                ck_pdup.eq(pc_dup),
            ]
        with m.Elif(move):
            m.d.sync += r1_valid.eq(0)
        r1_ok = r1_go & ~seen_com & ~spec_dup
        code_f = Mux(
            r1_chk & seen_com,
            ErrorCode.SEEN_COMMITTED,
            Mux(r1_chk & spec_dup, ErrorCode.SPEC_DUP, r1.code),
        )
        with m.If(move):
            m.d.sync += [
                self.res.valid.eq(1),
                self.res.payload.eq(r1),
                self.res.payload.error.eq(code_f != ErrorCode.NONE),
                self.res.payload.code.eq(code_f),
                self.res.payload.page.eq(Mux(r1_ok, r1.page, 0)),
                self.res.payload.entry.eq(Mux(r1_ok, r1.entry, 0)),
                self.res.payload.free_pages.eq(n_free),
                self.res.payload.valid_entries.eq(n_valid),
            ]
        with m.Elif(self.res.ready):
            m.d.sync += self.res.valid.eq(0)

        error_r = Signal()
        m.d.sync += [
            self.free_pages.eq(n_free),
            self.valid_entries.eq(n_valid),
            error_r.eq(
                (take & err)
                | (self.draft_q.valid & self.draft_q.ready & (self.draft_q.payload.seq >= S))
                | (self.verify_q.valid & self.verify_q.ready & (self.verify_q.payload.seq >= S))
            ),
        ]
        # an insert rejected by its conflict checks is known one cycle after its take
        m.d.comb += self.error.eq(error_r | ins_rej)
        return m
