"""The nets the pool's steps hand each other, one bundle per step.

No logic here: each bundle is filled by the step named in its docstring and
read by the later ones (``hw.kv_pool.pool`` calls them in order).
"""

from dataclasses import dataclass

from amaranth import Signal, Value
from amaranth.lib import data

__all__ = ["Decoded", "InsertChecks", "Sets", "Enables", "EntryOps", "Writes"]


@dataclass(frozen=True)
class Decoded:
    """The beat on offer at ``op``, decoded (``hw.kv_pool.ops.decode``)."""

    o: data.View  #: the payload
    is_ins: Value
    is_com: Value
    is_fork: Value
    is_rel: Value
    seq_ok: Signal  #: ``seq`` (a fork's ``src``) < ``SEQS``
    dst_ok: Signal  #: ``dst`` < ``SEQS``
    own_ok: Signal  #: ``owner`` < ``N_NODES``
    seq_oh: Signal  #: ``seq``, one-hot
    dst_oh: Signal  #: ``dst``, one-hot
    sbit: Signal  #: per entry: seen by ``seq`` (registers)
    dbit: Signal  #: per entry: seen by ``dst`` (registers)
    okey: Value  #: ``Cat(layer, pos)``
    key: Signal  #: per entry: ``(layer, pos)`` matches
    p_seq: Signal  #: the pending entry, accepted, is seen by ``seq``
    p_dst: Signal  #: ... by ``dst``


@dataclass(frozen=True)
class InsertChecks:
    """An insert's conflict checks and allocation (``hw.kv_pool.insert.checks``)."""

    conf_com: Signal  #: per entry: ``seq`` sees the key committed
    conf_dup: Signal  #: per entry: a speculative duplicate
    pc_com: Value  #: the same against the pending entry
    pc_dup: Value
    low_e: Signal  #: the lowest free entry, one-hot
    e_idx: Signal  #: its index
    any_e: Signal  #: a free entry exists
    any_p: Signal  #: a free page exists


@dataclass(frozen=True)
class Sets:
    """The entries a commit, fork or release acts on (``hw.kv_pool.ops.operand_sets``)."""

    spec: Signal  #: commit: ``seq``'s speculative entries
    spec_any: Value
    acc: Signal  #: per entry: ``accept[owner]``
    shared: Signal  #: fork: committed entries ``src`` sees
    shared_any: Value
    seen: Signal  #: release: entries ``seq`` sees
    seen_any: Value
    others: Signal  #: per entry: seen by a sequence other than ``seq``
    dst_busy: Signal  #: fork: ``dst`` sees an entry


@dataclass(frozen=True)
class Enables:
    """The operation taken, past its error checks (``hw.kv_pool.ops.enables``)."""

    ins_chk: Signal  #: an insert past its range checks
    ins_go: Signal  #: ... with a free entry and page: pending next cycle
    com_ok: Signal
    rel_ok: Signal
    fork_ok: Signal


@dataclass(frozen=True)
class EntryOps:
    """Per entry, what a commit or release does (``Variant.entry_ops``)."""

    keep: Signal  #: speculative entries a commit makes committed
    fr: Signal  #: entries freed (a commit's rejected ones, a release's last-seen ones)
    rel_s: list[Value]  #: per sequence ``s``: the entries a release of ``s`` clears it from


@dataclass(frozen=True)
class Writes:
    """What the operation taken writes besides the fields (``Variant.insert_writes``)."""

    go_e: Value  #: the entry an insert takes (pending next cycle), one-hot
    w_p: Signal  #: the page it reserves (cleared in the bitmap)
    fork_add: Signal  #: entries a fork adds ``dst`` to
