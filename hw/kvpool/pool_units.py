"""What the scaled pool's operation FSM drives and keeps: its units and registers."""

from dataclasses import dataclass

from amaranth.hdl import Signal

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
