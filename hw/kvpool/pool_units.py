"""What the scaled pool's operation FSM drives and keeps: its units and registers."""

from dataclasses import dataclass, field

from amaranth.hdl import Const, Signal, Value

from hw.common import prefix_add, prefix_sub
from hw.kvpool.segtable import SegState

__all__ = ["Units", "OpRegs"]


@dataclass
class Units:
    """The units the FSM drives, and the pool's counters it keeps."""

    alloc: object
    halloc: object
    tlbs: tuple
    bt: object
    ts: object
    ps: object
    seg: SegState
    spec_pages: Signal
    committed_pages: Signal
    hbm_used: Signal
    # the drain (hw.kvpool.pool_ops): the tree slots' stream of a finished commit or
    # release is its own, and its rejected pages still to push to the free FIFO
    drain: Signal
    pending: Signal
    # its first phase, a fast commit's accepted path: appended to table ``drain_t`` of
    # segment ``drain_g`` at ``drain_pos`` on (the length of ``drain_seq`` moved already)
    drain_acc: Signal
    drain_seq: Signal
    drain_g: Signal
    drain_t: Signal
    drain_pos: Signal
    # a release's cut job (hw.kvpool.pool_release) is running
    cutting: Signal
    killing: Signal  # its first pass: the dead segments killed in the TLBs (comb)
    # a posted score is pending (hw.kvpool.pool_score); it reads port 0 this cycle (comb)
    scoring: Signal
    score_rd: Signal
    _sums: dict = field(default_factory=dict)

    def add(self, a: Value, b: Value | int, name: str, *, sub: bool = False) -> Signal:
        """``a + b`` (``sub``: ``a - b``) in ``len(a)`` bits as a kept prefix adder,
        built once per ``name`` in the segment table's query module: unconditional
        wherever it is used (a net assigned inside an FSM state depends on it), and no
        ``$add`` that synthesis could share behind the FSM's multiplexers."""
        key = (repr(a), repr(b), sub)
        if name not in self._sums:
            w, q = len(a), self.seg.q
            bb = Const(b, w) if isinstance(b, int) else b
            out = prefix_sub(q, a, bb, w, name) if sub else prefix_add(q, a, bb, w, name, keep=True)
            self._sums[name] = (key, out)
        if self._sums[name][0] != key:
            raise ValueError(f"name = {name!r}: already names a different sum")
        return self._sums[name][1]


@dataclass
class OpRegs:
    """The FSM's registers (each created by :func:`op_fsm`)."""

    o: Signal
    code: Signal
    value: Signal
    value2: Signal
    spilled: Signal
    done: Signal  # the result is shown this cycle
    idle: Signal  # the FSM is in IDLE (lookups may be accepted)
