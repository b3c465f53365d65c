"""The scaled pool's block buffers: each sequence's tokens of its open 16-token block.

A block's tag (SPEC §4.6 *Tags*) hashes its 16 tokens. Every committed
append (a fast or sequential insert, a commit's accepted path, sequential
or drained) writes its token into its sequence's buffer at lane
``pos mod 16`` (lanes 0 .. 14): the append that ends a block (lane 15) has
the block's other 15 tokens at hand and its tag is computed in its cycle,
without reading the block back from the block table.

A sequence's buffer is complete (``ok``) from an append at lane 0 on: every
later append of the block writes its lane. A fork clears the destination's
``ok`` (its open block's tokens are the source's, not copied), so its next
block end reads the block back (the tag states of
:mod:`hw.kvpool.pool_share`); so does a reset. Lengths set to a multiple of
16 (release, share) need nothing: the next append is at lane 0.

Storage: a memory of ``SEQS`` words x ``15 x TOKEN_BITS`` bits (255 bits at
17-bit tokens) with one write port (granularity ``TOKEN_BITS``: one lane
per append) and one read port transparent for it (address ``raddr``: the
sequence that may end a block in the next cycle), and ``SEQS`` ``ok``
flip-flops.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import memory

__all__ = ["BLOCK", "LANES", "BlockBuf"]

BLOCK = 16  # SPEC §4.6 *Tags*
LANES = BLOCK - 1  # the 16th token ends the block: not stored


class BlockBuf:
    """The buffers, their ``ok`` flags, and the hooks the operation FSM drives.

    Parameters
    ----------
    m : Module
        Where the memory and its logic go (the memory as submodule ``bbuf``).
    seqs : int
        ``SEQS``.
    token_bits : int
        ``TOKEN_BITS``.
    seq_shape : Value
        A signal as wide as a sequence id (``raddr``, the hooks' sequences).
    """

    def __init__(self, m: Module, seqs: int, token_bits: int, seq_shape: Value) -> None:
        self.tb = token_bits
        m.submodules.bbuf = mem = memory.Memory(
            shape=LANES * token_bits, depth=max(2, seqs), init=[]
        )
        self._wp = wp = mem.write_port(granularity=token_bits)
        self._rp = rp = mem.read_port(transparent_for=(wp,))
        self.ok = Signal(seqs, name="bb_ok")
        #: the sequence whose buffer ``data`` shows in the next cycle (comb, set by the FSM)
        self.raddr = Signal.like(seq_shape, name="bb_raddr")
        self.data = rp.data
        # a write's operands: the fast insert's (driven always, chosen by a register,
        # so that its late decision meets them only in the enable) or another's
        self._fast_sel = Signal(name="bb_fast_sel")
        self._fast_we = Signal(name="bb_fast_we")
        self._fast = [Signal.like(seq_shape, name="bb_fast_seq"), Signal(4, name="bb_fast_lane"),
                      Signal(token_bits, name="bb_fast_tok")]  # fmt: skip
        self._slow_we = Signal(name="bb_slow_we")
        self._slow = [Signal.like(seq_shape, name="bb_slow_seq"), Signal(4, name="bb_slow_lane"),
                      Signal(token_bits, name="bb_slow_tok")]  # fmt: skip
        self._we = Signal(name="bb_we")
        self._wseq = Signal.like(seq_shape, name="bb_wseq")
        self._lane = Signal(4, name="bb_lane")
        self._wtok = Signal(token_bits, name="bb_wtok")
        self._clr = Signal(name="bb_clr")
        self._cseq = Signal.like(seq_shape, name="bb_cseq")
        sel = self._fast_sel
        m.d.comb += [
            self._we.eq(self._fast_we | self._slow_we),
            Cat(self._wseq, self._lane, self._wtok).eq(
                Mux(sel, Cat(*self._fast), Cat(*self._slow))
            ),
        ]
        keep = (self._lane != LANES) & self._we
        m.d.comb += [
            rp.addr.eq(self.raddr),
            wp.addr.eq(self._wseq),
            wp.data.eq(Cat(*[self._wtok] * LANES)),
            wp.en.eq(Cat(*[keep & (self._lane == i) for i in range(LANES)])),
        ]
        first = self._lane == 0
        for s in range(seqs):  # the enable last: it is the late term
            with m.If(first & (self._wseq == s) & self._we):
                m.d.sync += self.ok[s].eq(1)
        with m.If(self._clr):  # a fork's destination (never appended in the same cycle)
            m.d.sync += self.ok.bit_select(self._cseq, 1).eq(0)

    def write(self, m: Module, seq: Value, pos: Value, token: Value) -> None:
        """Comb, at an append (not the fast insert's): ``token`` at position ``pos`` of
        sequence ``seq``. Only while :meth:`fast_operands`' ``sel`` is low."""
        s = self._slow
        m.d.comb += [self._slow_we.eq(1), s[0].eq(seq), s[1].eq(pos[:4]), s[2].eq(token)]

    def fast_operands(self, m: Module, sel: Value, seq: Value, pos: Value, token: Value) -> None:
        """Driven always (outside any ``If``): the fast insert's operands and ``sel``,
        high when no other append can write (the FSM idle, no drain appending)."""
        f = self._fast
        m.d.comb += [self._fast_sel.eq(sel), f[0].eq(seq), f[1].eq(pos[:4]), f[2].eq(token)]

    def write_fast(self, m: Module) -> None:
        """Comb, in the cycle a fast insert is taken: its operands written."""
        m.d.comb += self._fast_we.eq(1)

    def clear(self, m: Module, seq: Value) -> None:
        """Comb, at a fork: ``seq``'s buffer no longer complete."""
        m.d.comb += [self._clr.eq(1), self._cseq.eq(seq)]

    def ok_of(self, seq: Value) -> Value:
        """``seq``'s buffer is complete."""
        return self.ok.bit_select(seq, 1)

    def block(self, last: Value) -> Value:
        """The 16 tokens of the block that ``last`` ends (``data`` of this cycle, then
        ``last``), in position order: the CRC unit's ``tokens``."""
        return Cat(self.data, last)
