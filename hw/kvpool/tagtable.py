"""The scaled pool's dedup tag table (SPEC §4.6 *Tags*): ``tag -> (sequence, block)``."""

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hw.common import Param, check_params, idx_bits, mux_tree, net, prefix_or_below, priority_tree

__all__ = [
    "TagTable",
    "TagCmd",
    "TAG_BITS",
    "block_bits",
    "cmd_layout",
    "rsp_layout",
    "entry_layout",
]

#: bits of a dedup tag (CRC-64)
TAG_BITS = 64


class TagCmd(enum.Enum, shape=1):
    """Command kinds of :class:`TagTable`."""

    ENTER = 0
    PROBE = 1


def block_bits(pos_bits: int) -> int:
    """Bits of a block number ``k < 2**pos_bits / 16`` (at least 1)."""
    return max(1, pos_bits - 4)


def cmd_layout(seqs: int, pos_bits: int) -> data.StructLayout:
    """A command: ``kind``, the tag, ENTER's sequence and block (PROBE ignores them)."""
    return data.StructLayout(
        {"kind": TagCmd, "tag": TAG_BITS, "seq": idx_bits(seqs), "block": block_bits(pos_bits)}
    )


def rsp_layout(seqs: int, pos_bits: int) -> data.StructLayout:
    """A PROBE's response: ``found`` and the entry's sequence and block (0 if not found)."""
    return data.StructLayout({"found": 1, "seq": idx_bits(seqs), "block": block_bits(pos_bits)})


def entry_layout(sets: int, seqs: int, pos_bits: int) -> data.StructLayout:
    """One way of a memory word: the tag's bits above the set index, sequence, block."""
    return data.StructLayout(
        {
            "tag_hi": TAG_BITS - exact_log2(sets),
            "seq": idx_bits(seqs),
            "block": block_bits(pos_bits),
        }
    )


class TagTable(wiring.Component):
    """The dedup tag table: ``TAG_SETS x TAG_WAYS`` entries, round-robin replacement.

    SPEC §4.6 *Tags*, bit-exact with ``golden.kvpool.tags.TagTable``
    (``enter``, ``find``). Entries of ``valid``, ``tag`` (64 bits), ``seq``
    (``idx_bits(SEQS)`` bits) and ``block`` (``max(1, POS_BITS - 4)`` bits);
    set ``tag mod TAG_SETS``; a round-robin pointer per set (0 after reset).
    Entries are never invalidated; reset clears every ``valid`` bit and
    pointer.

    Commands (``cmd``, a stream; ``cmd.ready`` is always high: one command
    per cycle sustained, in any mix; each command sees the effect of every
    command accepted before it):

    * **ENTER** (``tag``, ``seq``, ``block``): unless a valid entry of the
      set has this tag, write ``(tag, seq, block)`` into the lowest invalid
      way, else into the set's round-robin way and advance that pointer
      (modulo ``TAG_WAYS``); writing an invalid way leaves the pointer. No
      response.
    * **PROBE** (``tag``; ``seq`` and ``block`` ignored): ``found`` and the
      ``seq`` and ``block`` of the valid entry with that tag (the lowest
      way if several, which ENTER never makes), 0 and 0 if none.

    Protocol and latency (cycle ``a``: the command is accepted,
    ``cmd.valid & cmd.ready``): a PROBE's response is on ``rsp`` with
    ``rsp_valid`` in cycle ``a + 2`` (registered outputs; ``rsp`` is 0
    in every cycle ``rsp_valid`` is low). An ENTER's write takes effect for
    the commands accepted from ``a + 1`` on (a PROBE of the tag in
    ``a + 1`` finds it). A command presented while ``rst`` is high is lost.
    No input is invalid: a ``seq`` ``>= SEQS`` (``SEQS`` not a power of two)
    is stored and returned as given.

    Implementation: ``valid`` (``TAG_WAYS`` bits per set) and the pointers
    (``log2 TAG_WAYS`` bits per set) are flip-flops; the tags, sequences and
    blocks are one ``amaranth.lib.memory.Memory`` (an SRAM macro) of
    ``TAG_SETS`` words of ``TAG_WAYS`` entries, each entry holding the tag's
    ``64 - log2 TAG_SETS`` bits above the set index (the set number holds
    the rest: the compare is the full 64-bit one), written per way, with one
    synchronous read port, not transparent. Two stages: in cycle ``a`` the
    set's word is read and its ``valid`` row and pointer are selected from
    the flops (the ``TAG_SETS``-to-1 selects, by the command's tag) and
    registered with the command; in ``a + 1`` each way compares its tag,
    an ENTER chooses its way and writes the word's way, the set's ``valid``
    bit and pointer, and a PROBE's response is registered. The set's state
    as the command in ``a + 1`` leaves it (word, row, pointer) is kept in a
    forwarding register: a command in ``a + 2`` on the same set takes it
    instead of what it read in ``a + 1`` (the read missed that write; a
    read during a write of its word may return anything: it is replaced),
    so no read result is used unless its ``valid`` bit was set since reset.
    Design notes: ``docs/blocks/kvpool_leaves.md``.

    Parameters
    ----------
    TAG_SETS : int
        Sets, a power of two in ``1 .. 65536`` (default 1024; SPEC §4.9
        ``TAG_SETS``).
    TAG_WAYS : int
        Ways per set, a power of two in ``1 .. 8`` (default 4; ``TAG_WAYS``).
    SEQS : int
        Sequences (a ``seq`` has ``idx_bits(SEQS)`` bits), ``1 .. 64``
        (default 64).
    POS_BITS : int
        Bits of a position, ``5 .. 20`` (default 17); a block number has
        ``POS_BITS - 4`` bits.

    Members
    -------
    cmd : In(stream.Signature(cmd_layout(SEQS, POS_BITS)))
        Commands (``valid``, ``ready``, ``payload``: ``kind``, ``tag``,
        ``seq``, ``block``); ``ready`` is always 1.
    rsp_valid : Out(1)
        The response of the PROBE accepted two cycles before is on ``rsp``.
    rsp : Out(rsp_layout(SEQS, POS_BITS))
        ``found``, ``seq``, ``block`` (all 0 unless ``rsp_valid``; ``seq``
        and ``block`` 0 unless ``found``).

    Raises
    ------
    ValueError
        A parameter out of range or not an integer (naming it), or
        ``TAG_SETS`` / ``TAG_WAYS`` not a power of two.
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "TAG_SETS": Param(default=1024, lo=1, hi=65536, small=2),
        "TAG_WAYS": Param(default=4, lo=1, hi=8, small=2),
        "SEQS": Param(default=64, lo=1, hi=64, small=2),
        "POS_BITS": Param(default=17, lo=5, hi=20, small=5),
    }
    #: parameters that must be powers of two
    POWERS_OF_TWO = ("TAG_SETS", "TAG_WAYS")

    def __init__(
        self,
        *,
        TAG_SETS: int = PARAMS["TAG_SETS"].default,
        TAG_WAYS: int = PARAMS["TAG_WAYS"].default,
        SEQS: int = PARAMS["SEQS"].default,
        POS_BITS: int = PARAMS["POS_BITS"].default,
    ) -> None:
        given = {"TAG_SETS": TAG_SETS, "TAG_WAYS": TAG_WAYS, "SEQS": SEQS, "POS_BITS": POS_BITS}
        p = check_params(self.PARAMS, given, powers_of_two=self.POWERS_OF_TWO)
        self.TAG_SETS, self.TAG_WAYS = p["TAG_SETS"], p["TAG_WAYS"]
        self.SEQS, self.POS_BITS = p["SEQS"], p["POS_BITS"]
        super().__init__(
            {
                "cmd": In(stream.Signature(cmd_layout(self.SEQS, self.POS_BITS))),
                "rsp_valid": Out(1),
                "rsp": Out(rsp_layout(self.SEQS, self.POS_BITS)),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        S, W = self.TAG_SETS, self.TAG_WAYS
        sb = exact_log2(S)  # set index bits (0: one set)
        pb = exact_log2(W)  # pointer bits (0: one way, no pointer)
        el = entry_layout(S, self.SEQS, self.POS_BITS)
        ew = el.size

        # state: flops (valid rows, pointers) and the memory (tag_hi, seq, block per way)
        st = _State(
            valid=[Signal(W, name=f"valid_{s}") for s in range(S)],
            ptr=[Signal(max(1, pb), name=f"ptr_{s}") for s in range(S)],
        )
        m.submodules.mem = mem = memory.Memory(shape=W * ew, depth=S, init=[])
        wr = mem.write_port(granularity=ew)
        rd = mem.read_port()

        # cycle a: accept, read the set's word, select its valid row and pointer
        cmd = self.cmd.payload
        m.d.comb += self.cmd.ready.eq(1)
        a_set = cmd.tag[:sb] if sb else Const(0, 1)
        r = _Stage(
            valid=Signal(name="r_valid"),
            kind=Signal(TagCmd, name="r_kind"),
            set=Signal(max(1, sb), name="r_set"),
            tag_hi=Signal(TAG_BITS - sb, name="r_tag_hi"),
            entry=Signal(ew, name="r_entry"),
            row=Signal(W, name="r_row"),
            ptr=Signal(max(1, pb), name="r_ptr"),
        )
        m.d.comb += rd.addr.eq(a_set)
        m.d.sync += [
            r.valid.eq(self.cmd.valid),
            r.kind.eq(cmd.kind),
            r.set.eq(a_set),
            r.tag_hi.eq(cmd.tag[sb:]),
            r.entry.eq(Cat(cmd.tag[sb:], cmd.seq, cmd.block)),
            r.row.eq(mux_tree(st.valid, a_set)),
            r.ptr.eq(mux_tree(st.ptr, a_set)),
        ]
        self._stage_b(m, st, r, rd, wr)
        return m

    def _stage_b(self, m: Module, st: "_State", r: "_Stage", rd, wr) -> None:
        """Cycle ``a + 1``: the set's state (read, or forwarded), the compares, an
        ENTER's write and state update, a PROBE's registered response."""
        S, W = self.TAG_SETS, self.TAG_WAYS
        pb = exact_log2(W)
        el = entry_layout(S, self.SEQS, self.POS_BITS)
        ew = el.size

        # forwarding: the set's state as the previous cycle's command left it
        f_valid = Signal(name="fwd_valid")
        f_set = Signal(len(r.set), name="fwd_set")
        f_word = Signal(W * ew, name="fwd_word")
        f_row = Signal(W, name="fwd_row")
        f_ptr = Signal(len(r.ptr), name="fwd_ptr")
        hit = net(m, f_valid & (f_set == r.set), "fwd_hit")
        word = net(m, Mux(hit, f_word, rd.data), "set_word")
        row = net(m, Mux(hit, f_row, r.row), "set_row")
        ptr = net(m, Mux(hit, f_ptr, r.ptr), "set_ptr")

        ways = [data.View(el, word[w * ew : (w + 1) * ew]) for w in range(W)]
        match = net(m, Cat(row[w] & (ways[w].tag_hi == r.tag_hi) for w in range(W)), "match")
        found, sel = priority_tree(
            m, match, [Cat(v.seq, v.block) for v in ways], highest=False, name="probe"
        )
        found = net(m, found, "found", keep=True)

        # ENTER: the lowest invalid way (one-hot), else the pointer's way
        inv = ~row
        inv_low = net(m, inv & ~prefix_or_below(m, inv, "inv_below"), "inv_low")
        any_inv = net(m, inv.any(), "any_inv")
        ptr_hot = (Const(1, W) << ptr[:pb])[:W] if pb else Const(1, 1)
        way_hot = net(m, Mux(any_inv, inv_low, ptr_hot), "enter_way")
        write = net(m, r.valid & (r.kind == TagCmd.ENTER) & ~found, "enter_write", keep=True)
        advance = net(m, write & ~any_inv, "ptr_advance")
        mask = net(m, Mux(write, way_hot, 0), "write_mask")
        new_ptr = (ptr + 1)[: len(ptr)] if pb else Const(0, 1)
        nxt_ptr = net(m, Mux(advance, new_ptr, ptr), "next_ptr")
        m.d.comb += [
            wr.addr.eq(r.set),
            wr.data.eq(Cat(*[r.entry] * W)),
            wr.en.eq(mask),
        ]
        nxt_word = Cat(Mux(mask[w], r.entry, word[w * ew : (w + 1) * ew]) for w in range(W))
        m.d.sync += [
            f_valid.eq(r.valid),
            f_set.eq(r.set),
            f_word.eq(nxt_word),
            f_row.eq(row | mask),
            f_ptr.eq(nxt_ptr),
        ]
        for s in range(S):
            here = net(m, r.set == s, f"here_{s}") if S > 1 else Const(1, 1)
            with m.If(here):
                m.d.sync += st.valid[s].eq(st.valid[s] | mask)
            if pb:
                with m.If(here & advance):
                    m.d.sync += st.ptr[s].eq(new_ptr)

        # PROBE: the registered response
        probe = r.valid & (r.kind == TagCmd.PROBE)
        sb_bits = len(self.rsp.seq)
        m.d.sync += [
            self.rsp_valid.eq(probe),
            self.rsp.found.eq(probe & found),
            self.rsp.seq.eq(Mux(probe & found, sel[:sb_bits], 0)),
            self.rsp.block.eq(Mux(probe & found, sel[sb_bits:], 0)),
        ]


@dataclass
class _State:
    """The flip-flops: per set, ``valid`` (a bit per way) and the round-robin pointer."""

    valid: list[Signal]
    ptr: list[Signal]


@dataclass
class _Stage:
    """The command's registers from cycle ``a`` to ``a + 1``: valid, kind, set, the
    tag's bits above the set, the entry an ENTER writes, the set's ``valid`` row and
    pointer as the flops held them in cycle ``a``."""

    valid: Signal
    kind: Signal
    set: Signal
    tag_hi: Signal
    entry: Signal
    row: Signal
    ptr: Signal
